//! The sub-user object of spec document 3 and `subuser/register|update`:
//! a sub-user's profile, security group and tracker scope, managed by its
//! master user.

use chrono::{DateTime, Utc};
use schemas::{TrackerId, UserId};
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::secret::hash_password;
use crate::{Error, LegalType, Result, Store, check_login, records, trimmed_text};

/// A sub-user: the panel user's shape without `dealer_id`, `verified` and
/// the read-only members (spec document 3). Texts are trimmed and
/// printable; `docs/decisions.md` 81 states each limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Subuser {
    /// The sub-user's id: answered by `list`, required by `update`, ignored by `register`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// Allowed to log in.
    #[serde(default = "yes")]
    pub activated: bool,
    /// E-mail login, unique on the platform (stored lower-cased).
    #[schema(example = "dispatcher@example.com")]
    pub login: String,
    /// First name, at most 100 characters.
    #[serde(default)]
    pub first_name: String,
    /// Middle name, at most 100 characters.
    #[serde(default)]
    pub middle_name: String,
    /// Last name, at most 100 characters.
    #[serde(default)]
    pub last_name: String,
    /// Legal type (`individual` when absent).
    #[serde(default = "individual")]
    pub legal_type: LegalType,
    /// Phone: empty, or 10 to 15 digits without a plus sign.
    #[serde(default)]
    #[schema(pattern = "^([0-9]{10,15})?$")]
    pub phone: String,
    /// Postal address: country (each address part at most 255 characters).
    #[serde(default)]
    pub post_country: String,
    /// Postal address: index.
    #[serde(default)]
    pub post_index: String,
    /// Postal address: region.
    #[serde(default)]
    pub post_region: String,
    /// Postal address: city.
    #[serde(default)]
    pub post_city: String,
    /// Postal address: street address.
    #[serde(default)]
    pub post_street_address: String,
    /// Registered address: country.
    #[serde(default)]
    pub registered_country: String,
    /// Registered address: index.
    #[serde(default)]
    pub registered_index: String,
    /// Registered address: region.
    #[serde(default)]
    pub registered_region: String,
    /// Registered address: city.
    #[serde(default)]
    pub registered_city: String,
    /// Registered address: street address.
    #[serde(default)]
    pub registered_street_address: String,
    /// State registration number, at most 15 characters.
    #[serde(default)]
    #[schema(max_length = 15)]
    pub state_reg_num: String,
    /// Taxpayer number, at most 32 characters.
    #[serde(default)]
    #[schema(max_length = 32)]
    pub tin: String,
    /// Legal name, `legal_entity` only (else it must be empty), at most 255 characters.
    #[serde(default)]
    pub legal_name: String,
    /// Industrial enterprise classifier code, `legal_entity` only (else null), at most 32 characters.
    #[serde(default)]
    pub iec: Option<String>,
    /// The security group of the master account granting the sub-user its
    /// rights; null is the default group, which grants nothing.
    #[serde(default)]
    pub security_group_id: Option<i64>,
    /// When it was registered (UTC); read-only.
    #[serde(skip)]
    pub created_at: DateTime<Utc>,
}

fn yes() -> bool {
    true
}

fn individual() -> LegalType {
    LegalType::Individual
}

/// The profile columns of `users`, in the order [`Subuser`] binds them.
const PROFILE: &str = "activated, login, first_name, middle_name, last_name, legal_type, phone, \
    post_country, post_index, post_region, post_city, post_street_address, registered_country, \
    registered_index, registered_region, registered_city, registered_street_address, state_reg_num, \
    tin, legal_name, iec, security_group_id";

impl Subuser {
    /// The sub-user as stored, or the first member that is not valid,
    /// named by its path (`user.phone`).
    fn checked(self) -> Result<Self> {
        let text =
            |field: &'static str, value: &str, max: usize| trimmed_text(field, value, 0, max);
        let legal_entity = self.legal_type == LegalType::LegalEntity;
        let phone = text("user.phone", &self.phone, 15)?;
        if !phone.is_empty() && (phone.len() < 10 || !phone.bytes().all(|b| b.is_ascii_digit())) {
            return Err(Error::invalid(
                "user.phone",
                "must be 10 to 15 digits without a plus sign",
            ));
        }
        let legal_name = text("user.legal_name", &self.legal_name, 255)?;
        if !legal_entity && !legal_name.is_empty() {
            return Err(Error::invalid(
                "user.legal_name",
                "is for legal_type legal_entity only",
            ));
        }
        let iec = self
            .iec
            .as_deref()
            .map(|iec| text("user.iec", iec, 32))
            .transpose()?;
        if !legal_entity && iec.is_some() {
            return Err(Error::invalid(
                "user.iec",
                "is for legal_type legal_entity only",
            ));
        }
        Ok(Self {
            id: self.id,
            activated: self.activated,
            login: check_login("user.login", &self.login)?,
            first_name: text("user.first_name", &self.first_name, 100)?,
            middle_name: text("user.middle_name", &self.middle_name, 100)?,
            last_name: text("user.last_name", &self.last_name, 100)?,
            legal_type: self.legal_type,
            phone,
            post_country: text("user.post_country", &self.post_country, 255)?,
            post_index: text("user.post_index", &self.post_index, 255)?,
            post_region: text("user.post_region", &self.post_region, 255)?,
            post_city: text("user.post_city", &self.post_city, 255)?,
            post_street_address: text("user.post_street_address", &self.post_street_address, 255)?,
            registered_country: text("user.registered_country", &self.registered_country, 255)?,
            registered_index: text("user.registered_index", &self.registered_index, 255)?,
            registered_region: text("user.registered_region", &self.registered_region, 255)?,
            registered_city: text("user.registered_city", &self.registered_city, 255)?,
            registered_street_address: text(
                "user.registered_street_address",
                &self.registered_street_address,
                255,
            )?,
            state_reg_num: text("user.state_reg_num", &self.state_reg_num, 15)?,
            tin: text("user.tin", &self.tin, 32)?,
            legal_name,
            iec,
            security_group_id: self.security_group_id,
            created_at: self.created_at,
        })
    }

    fn from_row(row: &SqliteRow) -> Result<Self> {
        let legal_type: String = row.try_get("legal_type")?;
        Ok(Self {
            id: Some(row.try_get("id")?),
            activated: row.try_get("activated")?,
            login: row.try_get("login")?,
            first_name: row.try_get("first_name")?,
            middle_name: row.try_get("middle_name")?,
            last_name: row.try_get("last_name")?,
            legal_type: LegalType::parse("legal_type", &legal_type)
                .map_err(|e| Error::corrupt("users.legal_type", e))?,
            phone: row.try_get("phone")?,
            post_country: row.try_get("post_country")?,
            post_index: row.try_get("post_index")?,
            post_region: row.try_get("post_region")?,
            post_city: row.try_get("post_city")?,
            post_street_address: row.try_get("post_street_address")?,
            registered_country: row.try_get("registered_country")?,
            registered_index: row.try_get("registered_index")?,
            registered_region: row.try_get("registered_region")?,
            registered_city: row.try_get("registered_city")?,
            registered_street_address: row.try_get("registered_street_address")?,
            state_reg_num: row.try_get("state_reg_num")?,
            tin: row.try_get("tin")?,
            legal_name: row.try_get("legal_name")?,
            iec: row.try_get("iec")?,
            security_group_id: row.try_get("security_group_id")?,
            created_at: row.try_get("created_at")?,
        })
    }

    /// Binds the [`PROFILE`] columns, in order.
    fn bind<'q>(
        &'q self,
        query: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>>,
    ) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>> {
        query
            .bind(self.activated)
            .bind(&self.login)
            .bind(&self.first_name)
            .bind(&self.middle_name)
            .bind(&self.last_name)
            .bind(self.legal_type.as_str())
            .bind(&self.phone)
            .bind(&self.post_country)
            .bind(&self.post_index)
            .bind(&self.post_region)
            .bind(&self.post_city)
            .bind(&self.post_street_address)
            .bind(&self.registered_country)
            .bind(&self.registered_index)
            .bind(&self.registered_region)
            .bind(&self.registered_city)
            .bind(&self.registered_street_address)
            .bind(&self.state_reg_num)
            .bind(&self.tin)
            .bind(&self.legal_name)
            .bind(&self.iec)
            .bind(self.security_group_id)
    }
}

/// `$from, $from+1, …` for the [`PROFILE`] columns.
fn placeholders(from: usize) -> Vec<String> {
    (from..from + PROFILE.split(',').count())
        .map(|n| format!("${n}"))
        .collect()
}

impl Store {
    /// The sub-users of a master user, by id.
    pub async fn list_subusers(&self, master: UserId) -> Result<Vec<Subuser>> {
        let rows = sqlx::query(&format!(
            "SELECT id, created_at, {PROFILE} FROM users \
             WHERE master_user_id = $1 AND deleted = FALSE ORDER BY id"
        ))
        .bind(master.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Subuser::from_row).collect()
    }

    /// Registers a sub-user of `master` with `password` (6 to 20
    /// characters); it sees no trackers until given some. 201 when
    /// `security_group_id` is not a group of the account, 206 when the
    /// login is taken.
    pub async fn register_subuser(
        &self,
        master: UserId,
        user: Subuser,
        password: &str,
    ) -> Result<UserId> {
        let user = user.checked()?;
        crate::check_printable("password", password, 6, 20)?;
        let master_row = sqlx::query(
            "SELECT dealer_id, time_zone FROM users WHERE id = $1 AND master_user_id IS NULL AND deleted = FALSE",
        )
        .bind(master.0)
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| Error::NotFound {
            entity: "user",
            id: master.to_string(),
        })?;
        self.check_group(master, user.security_group_id).await?;
        let password_hash = hash_password(password).await?;
        let columns = PROFILE;
        let values = placeholders(6).join(", ");
        let insert = format!(
            "INSERT INTO users (dealer_id, master_user_id, password_hash, time_zone, created_at, \
             password_changed_at, {columns}) VALUES ($1, $2, $3, $4, $5, $5, {values}) RETURNING id"
        );
        let query = sqlx::query(&insert)
            .bind(master_row.try_get::<i64, _>("dealer_id")?)
            .bind(master.0)
            .bind(&password_hash)
            .bind(master_row.try_get::<String, _>("time_zone")?)
            .bind(self.clock.now());
        let row = user
            .bind(query)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| crate::users::unique_login(e, &user.login))?;
        Ok(UserId(row.try_get("id")?))
    }

    /// Replaces the profile and group of the sub-user `user.id` of
    /// `master`, and its tracker scope when `trackers` is given (trackers
    /// of the master only, else 217). 201 when it is not a sub-user of
    /// `master` or `security_group_id` is not a group of the account; 206
    /// when the new login is taken. Its sessions stay; a deactivation
    /// refuses them from their next call.
    pub async fn update_subuser(
        &self,
        master: UserId,
        user: Subuser,
        trackers: Option<&[TrackerId]>,
    ) -> Result<()> {
        let id = records::required_id("user.id", user.id)?;
        let user = user.checked()?;
        self.check_group(master, user.security_group_id).await?;
        let mut tx = self.pool.begin().await?;
        let sets: Vec<String> = PROFILE
            .split(',')
            .map(str::trim)
            .zip(placeholders(3))
            .map(|(column, value)| format!("{column} = {value}"))
            .collect();
        let update = format!(
            "UPDATE users SET {} WHERE id = $1 AND master_user_id = $2 AND deleted = FALSE",
            sets.join(", ")
        );
        let done = user
            .bind(sqlx::query(&update).bind(id).bind(master.0))
            .execute(&mut *tx)
            .await
            .map_err(|e| crate::users::unique_login(e, &user.login))?;
        records::one_changed(done.rows_affected(), "sub-user", id)?;
        if let Some(trackers) = trackers {
            let mut unknown = Vec::new();
            for tracker in trackers {
                let owned: Option<i64> = sqlx::query_scalar(
                    "SELECT id FROM trackers WHERE id = $1 AND user_id = $2 AND deleted = FALSE",
                )
                .bind(tracker.0)
                .bind(master.0)
                .fetch_optional(&mut *tx)
                .await?;
                if owned.is_none() {
                    unknown.push(tracker.0);
                }
            }
            if !unknown.is_empty() {
                return Err(Error::NonexistentEntities {
                    entity: "tracker",
                    ids: unknown,
                });
            }
            sqlx::query("DELETE FROM subuser_trackers WHERE user_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            for tracker in trackers {
                sqlx::query(
                    "INSERT INTO subuser_trackers (user_id, tracker_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                )
                .bind(id)
                .bind(tracker.0)
                .execute(&mut *tx)
                .await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    /// 201 unless `group` is null or a security group of `master`.
    async fn check_group(&self, master: UserId, group: Option<i64>) -> Result<()> {
        let Some(group) = group else {
            return Ok(());
        };
        let owned: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM security_groups WHERE id = $1 AND master_user_id = $2",
        )
        .bind(group)
        .bind(master.0)
        .fetch_optional(&self.pool)
        .await?;
        records::one_changed(u64::from(owned.is_some()), "security group", group)
    }
}
