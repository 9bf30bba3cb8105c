//! A dealer's users as the panel manages them (spec document 2,
//! `/panel/user/…`, clarification 48): master users of the dealer (and,
//! with `users: global`, of its sub-dealers), their discounts, default
//! plans, passwords, sessions, and `corrupt`.

use chrono::{DateTime, NaiveDateTime, Utc};
use schemas::{DealerId, UserId};
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::listing::{ListRules, OrderedQuery, search_text};
use crate::profile::{PROFILE_COLUMNS, Profile, assignments, placeholders};
use crate::secret::hash_password;
use crate::{Error, LegalType, Result, Secret, Store, check_printable, records, trimmed_text};

/// The panel user object of spec document 2 (`comment` and the other
/// read-only members are answered, never taken).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PanelUser {
    /// Its id: answered by read and list, required by update, ignored by create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// Its dealer: the caller's, or with `users: global` one of its sub-dealers (create only).
    #[serde(default)]
    pub dealer_id: Option<i64>,
    /// Allowed to log in.
    #[serde(default = "yes")]
    pub activated: bool,
    /// E-mail verified; `activated`'s value when not given.
    #[serde(default)]
    pub verified: Option<bool>,
    /// E-mail login, unique on the platform (stored lower-cased).
    #[schema(example = "fleet@customer.example")]
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
    /// Legal name, `legal_entity` only, at most 255 characters.
    #[serde(default)]
    pub legal_name: String,
    /// `legal_entity`, `individual` or `sole_trader` (not changed by update).
    #[serde(default = "individual")]
    pub legal_type: LegalType,
    /// 10 to 15 digits, no plus sign, or empty.
    #[serde(default)]
    #[schema(pattern = "^([0-9]{10,15})?$")]
    pub phone: String,
    /// Postal address: country.
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
    pub tin: String,
    /// OKPO code, `legal_entity` or `sole_trader` only, at most 32 characters.
    #[serde(default)]
    pub okpo_code: Option<String>,
    /// Industrial enterprise classifier code, `legal_entity` only, at most 32 characters.
    #[serde(default)]
    pub iec: Option<String>,
    /// Balance (read-only).
    #[serde(default, skip_deserializing)]
    pub balance: f64,
    /// Bonus balance (read-only).
    #[serde(default, skip_deserializing)]
    pub bonus: f64,
    /// When it was made, UTC `YYYY-MM-DD HH:MM:SS` (read-only).
    #[serde(default, skip_deserializing)]
    pub creation_date: String,
    /// Its trackers (read-only).
    #[serde(default, skip_deserializing)]
    pub trackers_count: i64,
    /// The dealer's comment (read-only here: a parameter of create and update).
    #[serde(default, skip_deserializing)]
    pub comment: String,
}

fn yes() -> bool {
    true
}

fn individual() -> LegalType {
    LegalType::Individual
}

crate::profile::profile_members!(PanelUser);

/// How a discount adds up with others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DiscountStrategy {
    /// Not summed.
    NoSumming,
    /// Summed with the progressive discount.
    SumWithProgressive,
}

impl DiscountStrategy {
    fn as_str(self) -> &'static str {
        match self {
            Self::NoSumming => "no_summing",
            Self::SumWithProgressive => "sum_with_progressive",
        }
    }
}

/// A user's discount.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Discount {
    /// Percent, 0 to 100.
    #[schema(minimum = 0, maximum = 100)]
    pub value: f64,
    /// Active trackers needed for it (0 or more).
    #[serde(default)]
    pub min_trackers: i64,
    /// When it ends, `YYYY-MM-DD HH:MM:SS` (UTC); null: never.
    #[serde(default)]
    pub end_date: Option<String>,
    /// How it adds up with others.
    #[serde(default = "no_summing")]
    pub strategy: DiscountStrategy,
}

fn no_summing() -> DiscountStrategy {
    DiscountStrategy::NoSumming
}

impl Default for Discount {
    fn default() -> Self {
        Self {
            value: 0.0,
            min_trackers: 0,
            end_date: None,
            strategy: DiscountStrategy::NoSumming,
        }
    }
}

impl Discount {
    fn checked(&self) -> Result<Option<DateTime<Utc>>> {
        if !(self.value.is_finite() && (0.0..=100.0).contains(&self.value)) {
            return Err(Error::invalid("discount.value", "must be 0 to 100"));
        }
        if self.min_trackers < 0 {
            return Err(Error::invalid("discount.min_trackers", "must be 0 or more"));
        }
        self.end_date
            .as_deref()
            .map(|d| {
                NaiveDateTime::parse_from_str(d.trim(), "%Y-%m-%d %H:%M:%S")
                    .map(|t| t.and_utc())
                    .map_err(|_| Error::invalid("discount.end_date", "must be YYYY-MM-DD HH:MM:SS"))
            })
            .transpose()
    }
}

/// What create and update take beside the user object.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PanelUserTerms {
    /// The discount (none: 0 %).
    pub discount: Option<Discount>,
    /// The plan the user's new trackers get (a tracker plan of its dealer), or none.
    pub default_tariff_id: Option<i64>,
    /// The dealer's comment, at most 255 characters.
    pub comment: Option<String>,
}

/// A user to create in the panel.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPanelUser {
    /// The user.
    pub user: PanelUser,
    /// Password, 6 to 20 printable characters.
    pub password: String,
    /// IANA zone (default: the dealer's `default_user_time_zone`).
    pub time_zone: Option<String>,
    /// Locale (default: the dealer's).
    pub locale: Option<String>,
    /// Discount, default plan, comment.
    pub terms: PanelUserTerms,
}

/// The panel's reach: whose users it sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PanelScope {
    /// The dealer of the panel session.
    pub dealer: DealerId,
    /// `users: global`: the users of its sub-dealers too.
    pub global: bool,
}

/// `user/list`: ordered by one property, filtered over login, names, legal name and phone.
const USER_LIST_RULES: ListRules = ListRules {
    max_sort_items: 1,
    max_filter_chars: 255,
    properties: &[
        ("id", "u.id"),
        ("login", "u.login"),
        ("first_name", "u.first_name COLLATE NOCASE"),
        ("last_name", "u.last_name COLLATE NOCASE"),
        ("legal_name", "u.legal_name COLLATE NOCASE"),
        ("creation_date", "u.created_at"),
        ("activated", "u.activated"),
        ("balance", "u.balance"),
    ],
    tie_breaker: "u.id",
    min_limit: 0,
};

/// Users the scope reaches: its dealer's, and its sub-dealers' with `global` ($2, $3).
const IN_SCOPE: &str = "u.master_user_id IS NULL AND u.deleted = FALSE AND (u.dealer_id = $2 \
     OR ($3 AND u.dealer_id IN (SELECT id FROM dealers WHERE parent_dealer_id = $2)))";

/// The columns a panel user is stored in beside its profile.
const OWN_COLUMNS: &str = "activated, verified, okpo_code, search_text";

pub(crate) fn searchable(p: &Profile) -> String {
    search_text(&[
        &p.login,
        &p.first_name,
        &p.middle_name,
        &p.last_name,
        &p.legal_name,
        &p.phone,
    ])
}

impl PanelUser {
    /// The user as stored, or the first member that is not valid.
    pub(crate) fn checked(mut self) -> Result<Self> {
        let profile = self.profile().checked()?;
        let okpo_code = self
            .okpo_code
            .as_deref()
            .map(|c| trimmed_text("user.okpo_code", c, 0, 32))
            .transpose()?;
        if okpo_code.is_some() && profile.legal_type == LegalType::Individual {
            return Err(Error::invalid(
                "user.okpo_code",
                "is for legal_type legal_entity or sole_trader only",
            ));
        }
        self.set_profile(profile);
        self.okpo_code = okpo_code;
        self.verified = Some(self.verified.unwrap_or(self.activated));
        Ok(self)
    }

    fn from_row(row: &SqliteRow) -> Result<Self> {
        let profile = Profile::from_row(row)?;
        let created: DateTime<Utc> = row.try_get("created_at")?;
        let mut user = Self {
            id: Some(row.try_get("id")?),
            dealer_id: Some(row.try_get("dealer_id")?),
            activated: row.try_get("activated")?,
            verified: Some(row.try_get("verified")?),
            login: String::new(),
            first_name: String::new(),
            middle_name: String::new(),
            last_name: String::new(),
            legal_name: String::new(),
            legal_type: profile.legal_type,
            phone: String::new(),
            post_country: String::new(),
            post_index: String::new(),
            post_region: String::new(),
            post_city: String::new(),
            post_street_address: String::new(),
            registered_country: String::new(),
            registered_index: String::new(),
            registered_region: String::new(),
            registered_city: String::new(),
            registered_street_address: String::new(),
            state_reg_num: String::new(),
            tin: String::new(),
            okpo_code: row.try_get("okpo_code")?,
            iec: None,
            balance: row.try_get("balance")?,
            bonus: row.try_get("bonus")?,
            creation_date: created.format("%Y-%m-%d %H:%M:%S").to_string(),
            trackers_count: row.try_get("trackers_count")?,
            comment: row.try_get("comment")?,
        };
        user.set_profile(profile);
        Ok(user)
    }
}

/// The read answer: the user, its discount and default plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PanelUserRecord {
    /// The user with its read-only members.
    pub user: PanelUser,
    /// Its discount (0 % when none was set).
    pub discount: Discount,
    /// Its default tracker plan, or null.
    pub default_tariff_id: Option<i64>,
}

const SELECT_USER: &str = "SELECT u.*, (SELECT count(*) FROM trackers t WHERE t.user_id = u.id \
     AND t.deleted = FALSE) AS trackers_count FROM users u";

impl Store {
    /// The id of a user the scope reaches; 201 otherwise.
    async fn user_in_scope(&self, scope: PanelScope, user: i64) -> Result<UserId> {
        let found: Option<i64> = sqlx::query_scalar(&format!(
            "SELECT u.id FROM users u WHERE u.id = $1 AND {IN_SCOPE}"
        ))
        .bind(user)
        .bind(scope.dealer.0)
        .bind(scope.global)
        .fetch_optional(&self.pool)
        .await?;
        found
            .map(UserId)
            .ok_or_else(|| records::not_found("user", user))
    }

    /// 201 unless `plan` is a tracker plan of `dealer`.
    async fn check_default_plan(&self, dealer: i64, plan: Option<i64>) -> Result<()> {
        let Some(plan) = plan else { return Ok(()) };
        let found: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM plans WHERE id = $1 AND dealer_id = $2 AND device_type = 'tracker'",
        )
        .bind(plan)
        .bind(dealer)
        .fetch_optional(&self.pool)
        .await?;
        records::one_changed(u64::from(found.is_some()), "tracker plan", plan)
    }

    /// The dealer a new user goes to: the scope's, or with `global` one of
    /// its sub-dealers (13 naming `user.dealer_id` otherwise, 201 for a
    /// dealer that is not its sub-dealer).
    async fn dealer_for_new_user(&self, scope: PanelScope, asked: Option<i64>) -> Result<i64> {
        let Some(asked) = asked.filter(|d| *d != scope.dealer.0) else {
            return Ok(scope.dealer.0);
        };
        if !scope.global {
            return Err(Error::NotPermitted {
                reason: "Operation not permitted: user.dealer_id may name another dealer only \
                         with the panel permission `users: global`"
                    .into(),
            });
        }
        let child: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM dealers WHERE id = $1 AND parent_dealer_id = $2 AND deleted = FALSE",
        )
        .bind(asked)
        .bind(scope.dealer.0)
        .fetch_optional(&self.pool)
        .await?;
        child.ok_or_else(|| records::not_found("sub-dealer", asked))
    }

    async fn write_terms(
        &self,
        tx: &mut sqlx::SqliteConnection,
        user: i64,
        terms: &PanelUserTerms,
    ) -> Result<()> {
        if let Some(discount) = &terms.discount {
            let end = discount.checked()?;
            sqlx::query(
                "INSERT INTO user_discounts (user_id, value, min_trackers, end_date, strategy) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (user_id) DO UPDATE SET \
                 value = excluded.value, min_trackers = excluded.min_trackers, \
                 end_date = excluded.end_date, strategy = excluded.strategy",
            )
            .bind(user)
            .bind(discount.value)
            .bind(discount.min_trackers)
            .bind(end)
            .bind(discount.strategy.as_str())
            .execute(&mut *tx)
            .await?;
        }
        Ok(())
    }

    /// `user/create`: a master user of the dealer (or, with `global`, of a
    /// sub-dealer); its id. 206 for a login in use.
    pub async fn create_panel_user(&self, scope: PanelScope, new: NewPanelUser) -> Result<UserId> {
        let user = new.user.checked()?;
        check_printable("password", &new.password, 6, 20)?;
        let comment = new
            .terms
            .comment
            .as_deref()
            .map(|c| trimmed_text("comment", c, 0, 255))
            .transpose()?
            .unwrap_or_default();
        if let Some(discount) = &new.terms.discount {
            discount.checked()?;
        }
        let dealer = self.dealer_for_new_user(scope, user.dealer_id).await?;
        self.check_default_plan(dealer, new.terms.default_tariff_id)
            .await?;
        let (zone, locale): (String, String) =
            sqlx::query_as("SELECT default_user_time_zone, locale FROM dealers WHERE id = $1")
                .bind(dealer)
                .fetch_one(&self.pool)
                .await?;
        let time_zone = new.time_zone.map_or(zone, |z| z.trim().to_owned());
        crate::check_time_zone("time_zone", &time_zone)?;
        let locale = match new.locale {
            Some(l) => trimmed_text("locale", &l, 2, 10)?,
            None => locale,
        };
        let password_hash = hash_password(&new.password).await?;
        let profile = user.profile();
        let columns = format!("{PROFILE_COLUMNS}, {OWN_COLUMNS}");
        let insert = format!(
            "INSERT INTO users (dealer_id, password_hash, time_zone, locale, default_plan_id, \
             comment, created_at, password_changed_at, {columns}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7, {}) RETURNING id",
            placeholders(&columns, 8)
        );
        let query = sqlx::query(&insert)
            .bind(dealer)
            .bind(&password_hash)
            .bind(&time_zone)
            .bind(&locale)
            .bind(new.terms.default_tariff_id)
            .bind(&comment)
            .bind(self.clock.now());
        let mut tx = self.write_tx().await?;
        let id: i64 = profile
            .bind(query)
            .bind(user.activated)
            .bind(user.verified.unwrap_or(user.activated))
            .bind(&user.okpo_code)
            .bind(searchable(&profile))
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| crate::users::unique_login(e, &profile.login))?
            .try_get("id")?;
        self.write_terms(&mut tx, id, &new.terms).await?;
        tx.commit().await?;
        Ok(UserId(id))
    }

    /// `user/read`: the user, its discount and default plan; 201 beyond the scope.
    pub async fn read_panel_user(&self, scope: PanelScope, user: i64) -> Result<PanelUserRecord> {
        let id = self.user_in_scope(scope, user).await?;
        let row = sqlx::query(&format!("{SELECT_USER} WHERE u.id = $1"))
            .bind(id.0)
            .fetch_one(&self.pool)
            .await?;
        let discount = sqlx::query(
            "SELECT value, min_trackers, end_date, strategy FROM user_discounts WHERE user_id = $1",
        )
        .bind(id.0)
        .fetch_optional(&self.pool)
        .await?
        .map(|d| -> Result<Discount> {
            let end: Option<DateTime<Utc>> = d.try_get("end_date")?;
            let strategy: String = d.try_get("strategy")?;
            Ok(Discount {
                value: d.try_get("value")?,
                min_trackers: d.try_get("min_trackers")?,
                end_date: end.map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string()),
                strategy: if strategy == "sum_with_progressive" {
                    DiscountStrategy::SumWithProgressive
                } else {
                    DiscountStrategy::NoSumming
                },
            })
        })
        .transpose()?
        .unwrap_or_default();
        Ok(PanelUserRecord {
            default_tariff_id: row.try_get("default_plan_id")?,
            user: PanelUser::from_row(&row)?,
            discount,
        })
    }

    /// `user/update`: replaces the profile (but `legal_type`) of the user
    /// `user.id`, and the terms given. 201 beyond the scope, 206 for a login
    /// in use. A deactivation refuses the user's sessions from their next call.
    pub async fn update_panel_user(
        &self,
        scope: PanelScope,
        user: PanelUser,
        terms: PanelUserTerms,
    ) -> Result<()> {
        let id = self
            .user_in_scope(scope, records::required_id("user.id", user.id)?)
            .await?;
        let (dealer, legal_type): (i64, String) =
            sqlx::query_as("SELECT dealer_id, legal_type FROM users WHERE id = $1")
                .bind(id.0)
                .fetch_one(&self.pool)
                .await?;
        let user = PanelUser {
            legal_type: LegalType::parse("legal_type", &legal_type)
                .map_err(|e| Error::corrupt("users.legal_type", e))?,
            ..user
        }
        .checked()?;
        let comment = terms
            .comment
            .as_deref()
            .map(|c| trimmed_text("comment", c, 0, 255))
            .transpose()?;
        self.check_default_plan(dealer, terms.default_tariff_id)
            .await?;
        let profile = user.profile();
        let update = format!(
            "UPDATE users SET {}, default_plan_id = COALESCE($2, default_plan_id), \
             comment = COALESCE($3, comment) WHERE id = $1",
            assignments(&format!("{PROFILE_COLUMNS}, {OWN_COLUMNS}"), 4)
        );
        let query = sqlx::query(&update)
            .bind(id.0)
            .bind(terms.default_tariff_id)
            .bind(comment);
        let mut tx = self.write_tx().await?;
        profile
            .bind(query)
            .bind(user.activated)
            .bind(user.verified.unwrap_or(user.activated))
            .bind(&user.okpo_code)
            .bind(searchable(&profile))
            .execute(&mut *tx)
            .await
            .map_err(|e| crate::users::unique_login(e, &profile.login))?;
        self.write_terms(&mut tx, id.0, &terms).await?;
        tx.commit().await?;
        Ok(())
    }

    /// `user/list`: a page of the users the scope reaches, and how many match.
    ///
    /// Sorted, filtered and paged in SQL (migration 0015): without a
    /// filter, the page walks its order's partial index of the dealer's
    /// users (`panel_users_*`, the id last) and the count reads the
    /// dealer's index entries; a filter of 3 or more characters takes its
    /// candidates from the trigram index `panel_user_search` and counts the
    /// matches in the same pass as it chooses the page. Only the page's
    /// rows are read whole. The page and the count read one snapshot. A
    /// dealer with sub-dealers and `users: global` sorts its users and
    /// theirs (no index holds them in one order).
    pub async fn list_panel_users(
        &self,
        scope: PanelScope,
        query: &OrderedQuery,
    ) -> Result<(Vec<PanelUser>, i64)> {
        let page = query.checked(&USER_LIST_RULES)?;
        let trigrams = page.trigrams();
        let mut tx = self.pool.begin().await?;
        // One dealer: its rows come in the order of an index led by it.
        // With sub-dealers (`users: global` and a dealer that has some),
        // rows of several dealers are merged by a sort.
        let subdealers = scope.global
            && sqlx::query_scalar::<_, i64>("SELECT id FROM dealers WHERE parent_dealer_id = $1")
                .bind(scope.dealer.0)
                .fetch_optional(&mut *tx)
                .await?
                .is_some();
        // The scope's dealers, the dealer's id being the placeholder `p`.
        let dealers_of = |p: &str| {
            if subdealers {
                format!(
                    "u.dealer_id IN (SELECT id FROM dealers WHERE id = {p} OR parent_dealer_id = {p})"
                )
            } else {
                format!("u.dealer_id = {p}")
            }
        };
        let dealers = dealers_of("$2");
        // With candidates from the index, they drive (CROSS JOIN keeps them outside).
        let (source, trigrams_term) = if trigrams.is_some() {
            (
                "(SELECT rowid AS id FROM panel_user_search WHERE panel_user_search MATCH $3) c \
                 CROSS JOIN users u ON u.id = c.id",
                "",
            )
        } else {
            ("users u", " AND $3 IS NULL")
        };
        let filter = if page.pattern.is_some() {
            " AND u.search_text LIKE $1 ESCAPE '\\'"
        } else {
            " AND $1 IS NULL"
        };
        let condition = format!(
            "u.master_user_id IS NULL AND u.deleted = FALSE AND {dealers}{filter}{trigrams_term}"
        );
        let order_by = &page.order_by;
        // A filtered list reads every match anyway: the count comes with
        // the page. Without a filter the page stops early in the index, and
        // the count is the dealers' counts, kept by triggers.
        let total = if page.pattern.is_some() {
            "count(*) OVER ()"
        } else {
            "NULL"
        };
        // The outer query orders the page's rows again by the same (total)
        // order: a subquery's order is not kept by a join.
        let sql = format!(
            "SELECT u.*, (SELECT count(*) FROM trackers t WHERE t.user_id = u.id \
             AND t.deleted = FALSE) AS trackers_count, p.total \
             FROM (SELECT u.id, {total} AS total FROM {source} WHERE {condition} \
                   ORDER BY {order_by} LIMIT $4 OFFSET $5) p \
             CROSS JOIN users u ON u.id = p.id ORDER BY {order_by}"
        );
        let rows = sqlx::query(&sql)
            .bind(page.pattern.as_deref())
            .bind(scope.dealer.0)
            .bind(trigrams.as_deref())
            .bind(page.limit)
            .bind(page.offset)
            .fetch_all(&mut *tx)
            .await?;
        let counted: Option<i64> = match rows.first() {
            Some(row) => row.try_get("total")?,
            None => None,
        };
        let count = match counted {
            Some(count) => count,
            // Without a filter: the dealers' counts (migration 0017).
            None if page.pattern.is_none() => {
                sqlx::query_scalar(&format!(
                    "SELECT coalesce(sum(u.listed), 0) FROM panel_user_counts u WHERE {}",
                    dealers_of("$1")
                ))
                .bind(scope.dealer.0)
                .fetch_one(&mut *tx)
                .await?
            }
            None => {
                sqlx::query_scalar(&format!("SELECT count(*) FROM {source} WHERE {condition}"))
                    .bind(page.pattern.as_deref())
                    .bind(scope.dealer.0)
                    .bind(trigrams.as_deref())
                    .fetch_one(&mut *tx)
                    .await?
            }
        };
        tx.commit().await?;
        let users = rows
            .iter()
            .map(PanelUser::from_row)
            .collect::<Result<_>>()?;
        Ok((users, count))
    }

    /// `user/change_password`: 6 to 20 printable characters; every session
    /// of the user ends (its API keys stay). 201 beyond the scope.
    pub async fn change_panel_user_password(
        &self,
        scope: PanelScope,
        user: i64,
        password: &str,
    ) -> Result<()> {
        check_printable("password", password, 6, 20)?;
        let id = self.user_in_scope(scope, user).await?;
        self.change_user_password(id, password).await
    }

    /// `user/session/create`: a session of the user, as if it had logged in
    /// (a dealer's support acting as its customer). 201 beyond the scope,
    /// 103 for a deactivated user.
    pub async fn create_panel_user_session(&self, scope: PanelScope, user: i64) -> Result<Secret> {
        let id = self.user_in_scope(scope, user).await?;
        let activated: bool = sqlx::query_scalar("SELECT activated FROM users WHERE id = $1")
            .bind(id.0)
            .fetch_one(&self.pool)
            .await?;
        if !activated {
            return Err(Error::UserNotActivated);
        }
        let secret = Secret::generate()?;
        sqlx::query(
            "INSERT INTO user_sessions (token_digest, user_id, created_at, last_used_at) \
             VALUES ($1, $2, $3, $3)",
        )
        .bind(secret.digest())
        .bind(id.0)
        .bind(self.clock.now())
        .execute(&self.pool)
        .await?;
        Ok(secret)
    }

    /// Marks one tracker corrupted (the operator's act; document 2's
    /// `trackers: corrupt` call is not in the spec). Its data stays until
    /// its store period ends.
    pub async fn corrupt_tracker(&self, tracker: schemas::TrackerId) -> Result<()> {
        let done =
            sqlx::query("UPDATE trackers SET deleted = TRUE WHERE id = $1 AND deleted = FALSE")
                .bind(tracker.0)
                .execute(&self.pool)
                .await?;
        records::one_changed(done.rows_affected(), "tracker", tracker.0)
    }

    /// `user/corrupt`: removes the user (whose `login` must be given as
    /// confirmation), its sub-users and its trackers; their sessions and
    /// keys end. Clones of its trackers held by other users go too, unless
    /// `corrupt_clones` is false (then 253 when there are any). 252 when a
    /// tracker of the user is already corrupted. The data stays until the
    /// trackers' store period ends (clarification 50).
    pub async fn corrupt_panel_user(
        &self,
        scope: PanelScope,
        user: i64,
        login: &str,
        corrupt_clones: bool,
    ) -> Result<()> {
        let id = self.user_in_scope(scope, user).await?;
        let mut tx = self.write_tx().await?;
        let stored: String = sqlx::query_scalar("SELECT login FROM users WHERE id = $1")
            .bind(id.0)
            .fetch_one(&mut *tx)
            .await?;
        if stored != login.trim().to_lowercase() {
            return Err(Error::invalid("login", "must be the user's login"));
        }
        let corrupted: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM trackers WHERE user_id = $1 AND deleted = TRUE LIMIT 1",
        )
        .bind(id.0)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(tracker) = corrupted {
            return Err(Error::DeviceCorrupted {
                tracker_id: tracker,
            });
        }
        let clones: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM trackers WHERE deleted = FALSE AND clone_of IN \
             (SELECT id FROM trackers WHERE user_id = $1)",
        )
        .bind(id.0)
        .fetch_one(&mut *tx)
        .await?;
        if clones > 0 && !corrupt_clones {
            return Err(Error::DeviceHasClones { clones });
        }
        for statement in [
            "UPDATE trackers SET deleted = TRUE WHERE deleted = FALSE AND clone_of IN \
             (SELECT id FROM trackers WHERE user_id = $1)",
            "UPDATE trackers SET deleted = TRUE WHERE user_id = $1 \
             OR user_id IN (SELECT id FROM users WHERE master_user_id = $1)",
            "DELETE FROM user_sessions WHERE user_id = $1 \
             OR user_id IN (SELECT id FROM users WHERE master_user_id = $1)",
            "DELETE FROM api_keys WHERE user_id = $1 \
             OR user_id IN (SELECT id FROM users WHERE master_user_id = $1)",
            "UPDATE users SET deleted = TRUE WHERE id = $1 OR master_user_id = $1",
        ] {
            sqlx::query(statement).bind(id.0).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
