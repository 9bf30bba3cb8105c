//! Sub-dealers (spec document 2, `/panel/subpaas/…`, clarification 51): a
//! PaaS dealer's own dealers. A sub-dealer is a dealer row with a parent,
//! its own panel account (its login is its id) and a block state that
//! follows the table of document 2: it starts in `INITIAL_BLOCK` (no panel
//! login) and only the operator moves it out of it.

use chrono::{DateTime, Utc};
use schemas::DealerId;
use serde::Serialize;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::dealers::DealerExtras;
use crate::listing::{ListRules, OrderedQuery};
use crate::secret::hash_password;
use crate::{
    BlockStatus, ContractType, Error, NewDealer, Result, Store, check_login, check_printable,
    records, trimmed_text,
};

/// A sub-dealer to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSubdealer {
    /// Its panel password, 6 to 20 printable characters.
    pub password: String,
    /// Its name, 1 to 50 characters.
    pub title: String,
    /// Its company e-mail.
    pub email: String,
    /// Its legal company name, at most 100 characters.
    pub jur_name: String,
    /// Its company's country, at most 100 characters.
    pub jur_country: String,
    /// Its monitoring domain.
    pub link_monitoring: String,
}

/// What `subpaas/update` changes: each member given (the rest stays).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubdealerChange {
    /// A new panel password (ends its panel sessions).
    pub password: Option<String>,
    /// Name.
    pub title: Option<String>,
    /// Company e-mail.
    pub email: Option<String>,
    /// Legal company name.
    pub jur_name: Option<String>,
    /// Country.
    pub jur_country: Option<String>,
    /// Monitoring domain.
    pub link_monitoring: Option<String>,
    /// Contact person, at most 100 characters.
    pub contact_fio: Option<String>,
    /// Contact position, at most 50 characters.
    pub contact_post: Option<String>,
    /// Contact phone, at most 50 characters.
    pub contact_phone: Option<String>,
    /// The block state (`DELETED` is refused: 13).
    pub block_type: Option<String>,
}

/// A sub-dealer as `subpaas/list` answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ListedSubdealer {
    /// Its id.
    pub subpaas_id: i64,
    /// Its name.
    pub title: String,
    /// Its legal company name.
    pub jur_name: String,
    /// Its panel login (its id).
    pub login: String,
    /// When it was made (UTC, `YYYY-MM-DD HH:MM:SS`).
    pub creation_date: String,
    /// `NOT_BLOCKED`, `INITIAL_BLOCK`, `BLOCK_LOGIN`, `CLIENTS_BLOCKED` or `DELETED`.
    pub block_type: String,
    /// Its master users.
    pub users_count: i64,
    /// Those activated.
    pub active_users_count: i64,
    /// Its users' trackers (clones not counted).
    pub trackers_count: i64,
    /// Those not blocked.
    pub active_trackers_count: i64,
}

/// A sub-dealer as `subpaas/read` answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Subdealer {
    /// Its id.
    pub subpaas_id: i64,
    /// Its block state.
    pub block_type: String,
    /// Its name.
    pub title: String,
    /// Its legal company name.
    pub jur_name: String,
    /// Its company e-mail.
    pub email: String,
    /// Its company's country.
    pub jur_country: String,
    /// Its monitoring domain.
    pub link_monitoring: String,
    /// Contact person.
    pub contact_fio: String,
    /// Contact position.
    pub contact_post: String,
    /// Contact phone.
    pub contact_phone: String,
}

/// `subpaas/list`: ordered by one property, by id without one.
const SUBDEALER_LIST_RULES: ListRules = ListRules {
    max_sort_items: 1,
    max_filter_chars: 0,
    properties: &[
        ("subpaas_id", "d.id"),
        ("title", "d.title COLLATE NOCASE"),
        ("jur_name", "d.legal_name COLLATE NOCASE"),
        // The login is the id as text: ordered as text, as logins are.
        ("login", "CAST(d.id AS TEXT)"),
        ("block_type", "block_type"),
        ("creation_date", "d.created_at"),
    ],
    tie_breaker: "d.id",
    min_limit: 0,
};

/// The block state as answered: `DELETED` for a deleted account.
const BLOCK_TYPE: &str = "CASE WHEN d.deleted THEN 'DELETED' ELSE d.block_status END";

/// A domain name: labels of letters, digits and hyphens (not at either
/// end), at least two, at most 253 characters; stored lower-cased.
fn domain(field: &'static str, text: &str) -> Result<String> {
    let name = text.trim().trim_end_matches('.').to_ascii_lowercase();
    let labels: Vec<&str> = name.split('.').collect();
    let valid = name.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(|l| {
            (1..=63).contains(&l.len())
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
        && labels
            .last()
            .is_some_and(|tld| !tld.bytes().all(|b| b.is_ascii_digit()));
    if valid {
        Ok(name)
    } else {
        Err(Error::invalid(
            field,
            "must be a domain name like fleet.example.com",
        ))
    }
}

fn utc(instant: DateTime<Utc>) -> String {
    instant.format("%Y-%m-%d %H:%M:%S").to_string()
}

impl ListedSubdealer {
    fn from_row(row: &SqliteRow) -> Result<Self> {
        let id: i64 = row.try_get("id")?;
        Ok(Self {
            subpaas_id: id,
            title: row.try_get("title")?,
            jur_name: row.try_get("legal_name")?,
            login: id.to_string(),
            creation_date: utc(row.try_get("created_at")?),
            block_type: row.try_get("block_type")?,
            users_count: row.try_get("users_count")?,
            active_users_count: row.try_get("active_users_count")?,
            trackers_count: row.try_get("trackers_count")?,
            active_trackers_count: row.try_get("active_trackers_count")?,
        })
    }
}

impl Store {
    /// 13 unless `dealer` is a PaaS dealer, not blocked, whose PaaS plan
    /// allows sub-dealers (document 2: every `subpaas` call).
    pub async fn check_subdealer_rights(&self, dealer: DealerId) -> Result<()> {
        let row = sqlx::query(
            "SELECT d.contract_type, d.block_status, d.deleted, t.allows_subpaas FROM dealers d \
             JOIN paas_tariffs t ON t.id = d.paas_plan_id WHERE d.id = $1",
        )
        .bind(dealer.0)
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| records::not_found("dealer", dealer.0))?;
        let refuse = |reason: &str| {
            Err(Error::NotPermitted {
                reason: format!("Operation not permitted: {reason}"),
            })
        };
        if row.try_get::<String, _>("contract_type")? != ContractType::Paas.as_str() {
            return refuse("only PaaS dealers have sub-dealers");
        }
        if row.try_get::<bool, _>("deleted")?
            || row.try_get::<String, _>("block_status")? != BlockStatus::NotBlocked.as_str()
        {
            return refuse("the dealer is blocked");
        }
        if !row.try_get::<bool, _>("allows_subpaas")? {
            return refuse("the dealer's PaaS plan does not allow sub-dealers");
        }
        Ok(())
    }

    /// `subpaas/create`: a sub-dealer of `parent` in `INITIAL_BLOCK`, on
    /// its parent's PaaS plan and default user time zone; its id (and panel login).
    pub async fn create_subdealer(&self, parent: DealerId, new: NewSubdealer) -> Result<DealerId> {
        self.check_subdealer_rights(parent).await?;
        check_printable("password", &new.password, 6, 20)?;
        let title = trimmed_text("title", &new.title, 1, 50)?;
        let (zone, tariff): (String, i64) = sqlx::query_as(
            "SELECT default_user_time_zone, paas_plan_id FROM dealers WHERE id = $1",
        )
        .bind(parent.0)
        .fetch_one(&self.pool)
        .await?;
        let extras = DealerExtras {
            parent: Some(parent),
            paas_tariff: Some(tariff),
            block_status: BlockStatus::InitialBlock,
            legal_name: trimmed_text("jur_name", &new.jur_name, 0, 100)?,
            email: check_login("email", &new.email)?,
            jur_country: trimmed_text("jur_country", &new.jur_country, 0, 100)?,
            domain: domain("link_monitoring", &new.link_monitoring)?,
            ..DealerExtras::default()
        };
        let dealer = NewDealer {
            id: None,
            title,
            panel_password: new.password,
            contract_type: ContractType::Paas,
            permissions: None,
            default_user_time_zone: zone,
        };
        self.insert_dealer(&dealer, &extras).await
    }

    /// `subpaas/list`: a page of `parent`'s sub-dealers with their counts, and how many there are.
    pub async fn list_subdealers(
        &self,
        parent: DealerId,
        query: &OrderedQuery,
    ) -> Result<(Vec<ListedSubdealer>, i64)> {
        self.check_subdealer_rights(parent).await?;
        let page = query.checked(&SUBDEALER_LIST_RULES)?;
        let rows = sqlx::query(&format!(
            "SELECT d.id, d.title, d.legal_name, d.created_at, {BLOCK_TYPE} AS block_type, \
             (SELECT count(*) FROM users u WHERE u.dealer_id = d.id AND u.master_user_id IS NULL \
              AND u.deleted = FALSE) AS users_count, \
             (SELECT count(*) FROM users u WHERE u.dealer_id = d.id AND u.master_user_id IS NULL \
              AND u.deleted = FALSE AND u.activated = TRUE) AS active_users_count, \
             (SELECT count(*) FROM trackers t JOIN users u ON u.id = t.user_id WHERE u.dealer_id = d.id \
              AND t.deleted = FALSE AND t.clone_of IS NULL) AS trackers_count, \
             (SELECT count(*) FROM trackers t JOIN users u ON u.id = t.user_id WHERE u.dealer_id = d.id \
              AND t.deleted = FALSE AND t.clone_of IS NULL AND t.blocked = FALSE) AS active_trackers_count \
             FROM dealers d WHERE d.parent_dealer_id = $1 ORDER BY {} LIMIT $2 OFFSET $3",
            page.order_by
        ))
        .bind(parent.0)
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(&self.pool)
        .await?;
        let count: i64 =
            sqlx::query_scalar("SELECT count(*) FROM dealers WHERE parent_dealer_id = $1")
                .bind(parent.0)
                .fetch_one(&self.pool)
                .await?;
        let list = rows
            .iter()
            .map(ListedSubdealer::from_row)
            .collect::<Result<_>>()?;
        Ok((list, count))
    }

    /// `subpaas/read`: one sub-dealer of `parent`; 201 for any other dealer.
    pub async fn read_subdealer(&self, parent: DealerId, id: i64) -> Result<Subdealer> {
        self.check_subdealer_rights(parent).await?;
        let row = sqlx::query(&format!(
            "SELECT d.*, {BLOCK_TYPE} AS block_type FROM dealers d \
             WHERE d.id = $1 AND d.parent_dealer_id = $2"
        ))
        .bind(id)
        .bind(parent.0)
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| records::not_found("sub-dealer", id))?;
        Ok(Subdealer {
            subpaas_id: id,
            block_type: row.try_get("block_type")?,
            title: row.try_get("title")?,
            jur_name: row.try_get("legal_name")?,
            email: row.try_get("email")?,
            jur_country: row.try_get("jur_country")?,
            link_monitoring: row.try_get("domain")?,
            contact_fio: row.try_get("contact_fio")?,
            contact_post: row.try_get("contact_post")?,
            contact_phone: row.try_get("contact_phone")?,
        })
    }

    /// `subpaas/update`: changes the members given of `parent`'s sub-dealer
    /// `id`. The block state follows document 2's table: 13 for `DELETED`,
    /// for a deleted account, for `INITIAL_BLOCK` asked of an account not in
    /// it, and for any other state asked of an account in `INITIAL_BLOCK`.
    /// A new password ends the sub-dealer's panel sessions.
    pub async fn update_subdealer(
        &self,
        parent: DealerId,
        id: i64,
        change: SubdealerChange,
    ) -> Result<()> {
        let current = self.read_subdealer(parent, id).await?;
        let refuse = |reason: String| Err(Error::NotPermitted { reason });
        if current.block_type == "DELETED" {
            return refuse(format!(
                "Operation not permitted: sub-dealer {id} is deleted"
            ));
        }
        let block = match change.block_type.as_deref().map(str::trim) {
            None => None,
            Some("DELETED") => {
                return refuse("Operation not permitted: block_type DELETED cannot be set".into());
            }
            Some(text) => Some(BlockStatus::parse("block_type", text)?),
        };
        let initial = current.block_type == BlockStatus::InitialBlock.as_str();
        match block {
            Some(BlockStatus::InitialBlock) if !initial => {
                return refuse(format!(
                    "Operation not permitted: sub-dealer {id} is {}, and INITIAL_BLOCK cannot be set again",
                    current.block_type
                ));
            }
            Some(b) if initial && b != BlockStatus::InitialBlock => {
                return refuse(format!(
                    "Operation not permitted: sub-dealer {id} is in INITIAL_BLOCK, which only the \
                     platform operator lifts"
                ));
            }
            _ => {}
        }
        let text = |field: &'static str, value: &Option<String>, min: usize, max: usize| {
            value
                .as_deref()
                .map(|v| trimmed_text(field, v, min, max))
                .transpose()
        };
        let title = text("title", &change.title, 1, 50)?;
        let jur_name = text("jur_name", &change.jur_name, 0, 100)?;
        let jur_country = text("jur_country", &change.jur_country, 0, 100)?;
        let contact_fio = text("contact_fio", &change.contact_fio, 0, 100)?;
        let contact_post = text("contact_post", &change.contact_post, 0, 50)?;
        let contact_phone = text("contact_phone", &change.contact_phone, 0, 50)?;
        let email = change
            .email
            .as_deref()
            .map(|e| check_login("email", e))
            .transpose()?;
        let link = change
            .link_monitoring
            .as_deref()
            .map(|d| domain("link_monitoring", d))
            .transpose()?;
        let password_hash = match change.password.as_deref() {
            Some(p) => {
                check_printable("password", p, 6, 20)?;
                Some(hash_password(p).await?)
            }
            None => None,
        };
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "UPDATE dealers SET title = COALESCE($1, title), legal_name = COALESCE($2, legal_name), \
             jur_country = COALESCE($3, jur_country), contact_fio = COALESCE($4, contact_fio), \
             contact_post = COALESCE($5, contact_post), contact_phone = COALESCE($6, contact_phone), \
             email = COALESCE($7, email), domain = COALESCE($8, domain), \
             block_status = COALESCE($9, block_status) \
             WHERE id = $10 AND parent_dealer_id = $11 AND deleted = FALSE",
        )
        .bind(title)
        .bind(jur_name)
        .bind(jur_country)
        .bind(contact_fio)
        .bind(contact_post)
        .bind(contact_phone)
        .bind(email)
        .bind(link)
        .bind(block.map(BlockStatus::as_str))
        .bind(id)
        .bind(parent.0)
        .execute(&mut *tx)
        .await?;
        if let Some(hash) = password_hash {
            sqlx::query("UPDATE panel_accounts SET password_hash = $1 WHERE dealer_id = $2")
                .bind(hash)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM panel_sessions WHERE dealer_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_are_checked_and_lower_cased() {
        assert_eq!(
            domain("d", " Fleet.Example.COM. ").unwrap(),
            "fleet.example.com"
        );
        assert_eq!(domain("d", "a-b.io").unwrap(), "a-b.io");
        for bad in [
            "localhost",
            "-a.com",
            "a-.com",
            "a..com",
            "a_b.com",
            "1.2.3.4",
            "",
            "a.com/x",
        ] {
            assert!(domain("d", bad).is_err(), "{bad:?}");
        }
        assert!(domain("d", &format!("{}.com", "a".repeat(64))).is_err());
    }
}
