//! The sub-user object of spec document 3 and `subuser/register|update`:
//! a sub-user's profile, security group and tracker scope, managed by its
//! master user.

use chrono::{DateTime, Utc};
use schemas::{TrackerId, UserId};
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::profile::{PROFILE_COLUMNS, Profile, assignments, placeholders};
use crate::secret::hash_password;
use crate::{Error, LegalType, Result, Store, records};

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

/// The columns of `users` a [`Subuser`] is stored in, in the order [`bind`] binds them.
fn columns() -> String {
    format!("activated, {PROFILE_COLUMNS}, security_group_id")
}

crate::profile::profile_members!(Subuser);

impl Subuser {
    /// The sub-user as stored, or the first member that is not valid,
    /// named by its path (`user.phone`).
    fn checked(mut self) -> Result<Self> {
        let profile = self.profile().checked()?;
        self.set_profile(profile);
        Ok(self)
    }

    fn from_row(row: &SqliteRow) -> Result<Self> {
        let profile = Profile::from_row(row)?;
        let mut user = Self {
            id: Some(row.try_get("id")?),
            activated: row.try_get("activated")?,
            login: String::new(),
            first_name: String::new(),
            middle_name: String::new(),
            last_name: String::new(),
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
            legal_name: String::new(),
            iec: None,
            security_group_id: row.try_get("security_group_id")?,
            created_at: row.try_get("created_at")?,
        };
        user.set_profile(profile);
        Ok(user)
    }
}

/// Binds the [`columns`] of a checked sub-user, in order.
fn bind<'q>(
    activated: bool,
    profile: &'q Profile,
    security_group_id: Option<i64>,
    query: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>>,
) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>> {
    profile.bind(query.bind(activated)).bind(security_group_id)
}

impl Store {
    /// The sub-users of a master user, by id.
    pub async fn list_subusers(&self, master: UserId) -> Result<Vec<Subuser>> {
        let rows = sqlx::query(&format!(
            "SELECT id, created_at, {} FROM users \
             WHERE master_user_id = $1 AND deleted = FALSE ORDER BY id",
            columns()
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
        let columns = columns();
        let values = placeholders(&columns, 6);
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
        let profile = user.profile();
        let row = bind(user.activated, &profile, user.security_group_id, query)
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
        let mut tx = self.write_tx().await?;
        let update = format!(
            "UPDATE users SET {} WHERE id = $1 AND master_user_id = $2 AND deleted = FALSE",
            assignments(&columns(), 3)
        );
        let profile = user.profile();
        let query = sqlx::query(&update).bind(id).bind(master.0);
        let done = bind(user.activated, &profile, user.security_group_id, query)
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
