//! Retranslators (spec document 3, clarifications 39-40): where an
//! account's device data is forwarded, by protocol. This stores what the
//! forwarding will need; it does not forward yet.

use schemas::UserId;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::{Error, Result, Store, optional_text, records, trimmed_text};

/// Retranslators a user may hold unless `trackhouse admin` set another quota.
pub const DEFAULT_RETRANSLATOR_QUOTA: u32 = 10;

/// A protocol device data can be forwarded in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct RetranslatorProtocol {
    /// Its id, as retranslators name it.
    pub id: i64,
    /// Its name.
    pub name: &'static str,
    /// Whether a retranslator of it has a login.
    pub has_login: bool,
    /// Whether it has a password.
    pub has_password: bool,
    /// A regular expression a fake device id must match, if the login is one.
    pub fake_device_id_pattern: Option<&'static str>,
    /// Whether the login is required.
    pub required_login: bool,
    /// Whether the password is required.
    pub required_password: bool,
}

/// The protocols retranslators forward in (clarification 40).
pub const RETRANSLATOR_PROTOCOLS: &[RetranslatorProtocol] = &[
    RetranslatorProtocol {
        id: 1,
        name: "Wialon IPS",
        has_login: true,
        has_password: true,
        // The login is the device id the receiving server knows the device by.
        fake_device_id_pattern: Some("^[0-9A-Za-z_-]{1,64}$"),
        required_login: true,
        required_password: false,
    },
    RetranslatorProtocol {
        id: 2,
        name: "Wialon Retranslator",
        has_login: false,
        has_password: false,
        fake_device_id_pattern: None,
        required_login: false,
        required_password: false,
    },
];

/// A retranslator: forward the account's device data to `address:port`
/// in protocol `protocol_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Retranslator {
    /// Its id: answered by `list`, required by `update`, ignored by `create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// Its name: 1 to 64 characters.
    #[schema(min_length = 1, max_length = 64, example = "Insurer feed")]
    pub name: String,
    /// A protocol of `retranslator/protocol/list`.
    #[schema(example = 1)]
    pub protocol_id: i64,
    /// Host name or IP address: 1 to 255 characters (stored lower-cased).
    #[schema(min_length = 1, max_length = 255, example = "gps.insurer.example")]
    pub address: String,
    /// Port, 1 to 65535.
    #[schema(minimum = 1, maximum = 65535, example = 20332)]
    pub port: i64,
    /// Login, 1 to 64 characters, or null; required by some protocols.
    #[serde(default)]
    #[schema(max_length = 64)]
    pub login: Option<String>,
    /// Password, 1 to 64 characters, or null; answered as stored.
    #[serde(default)]
    #[schema(max_length = 64)]
    pub password: Option<String>,
    /// Whether data is forwarded (default true).
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn yes() -> bool {
    true
}

impl Retranslator {
    /// The retranslator as stored, or the first member that is not valid,
    /// named by its path (`retranslator.login`).
    fn checked(self) -> Result<Self> {
        let protocol = RETRANSLATOR_PROTOCOLS
            .iter()
            .find(|p| p.id == self.protocol_id)
            .ok_or_else(|| {
                let ids: Vec<String> = RETRANSLATOR_PROTOCOLS
                    .iter()
                    .map(|p| format!("{} ({})", p.id, p.name))
                    .collect();
                Error::invalid(
                    "retranslator.protocol_id",
                    format!("must be one of {}", ids.join(", ")),
                )
            })?;
        if !(1..=65535).contains(&self.port) {
            return Err(Error::invalid(
                "retranslator.port",
                "must be from 1 to 65535",
            ));
        }
        let address = trimmed_text("retranslator.address", &self.address, 1, 255)?;
        if address.chars().any(char::is_whitespace) {
            return Err(Error::invalid(
                "retranslator.address",
                "must be a host name or an IP address",
            ));
        }
        // An empty login or password is none.
        let login = optional_text("retranslator.login", self.login.as_deref(), 64)?
            .filter(|l| !l.is_empty());
        let password = optional_text("retranslator.password", self.password.as_deref(), 64)?
            .filter(|p| !p.is_empty());
        for (given, has, required, field) in [
            (
                login.is_some(),
                protocol.has_login,
                protocol.required_login,
                "retranslator.login",
            ),
            (
                password.is_some(),
                protocol.has_password,
                protocol.required_password,
                "retranslator.password",
            ),
        ] {
            if required && !given {
                return Err(Error::invalid(
                    field,
                    format!("is required by the protocol {}", protocol.name),
                ));
            }
            if given && !has {
                return Err(Error::invalid(
                    field,
                    format!("the protocol {} has none", protocol.name),
                ));
            }
        }
        if let (Some(pattern), Some(login)) = (protocol.fake_device_id_pattern, login.as_deref()) {
            // The one pattern there is, checked by hand (no regex engine for one class).
            let fits = (1..=64).contains(&login.len())
                && login
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !fits {
                return Err(Error::invalid(
                    "retranslator.login",
                    format!("must match {pattern} (the device id sent upstream)"),
                ));
            }
        }
        Ok(Self {
            id: self.id,
            name: trimmed_text("retranslator.name", &self.name, 1, 64)?,
            protocol_id: self.protocol_id,
            address: address.to_lowercase(),
            port: self.port,
            login,
            password,
            enabled: self.enabled,
        })
    }

    fn from_row(row: &SqliteRow) -> Result<Self> {
        Ok(Self {
            id: Some(row.try_get("id")?),
            name: row.try_get("name")?,
            protocol_id: row.try_get("protocol_id")?,
            address: row.try_get("address")?,
            port: row.try_get("port")?,
            login: row.try_get("login")?,
            password: row.try_get("password")?,
            enabled: row.try_get("enabled")?,
        })
    }
}

/// 247 for a write that met the unique (address, port, login) of the account.
fn same_target(error: sqlx::Error, retranslator: &Retranslator) -> Error {
    match &error {
        sqlx::Error::Database(db) if db.is_unique_violation() => Error::SameTarget {
            address: retranslator.address.clone(),
            port: retranslator.port,
        },
        _ => Error::from(error),
    }
}

impl Store {
    /// The master user's retranslators, by id (passwords as stored).
    pub async fn list_retranslators(&self, master: UserId) -> Result<Vec<Retranslator>> {
        let rows = sqlx::query(
            "SELECT id, name, protocol_id, address, port, login, password, enabled \
             FROM retranslators WHERE master_user_id = $1 ORDER BY id",
        )
        .bind(master.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Retranslator::from_row).collect()
    }

    /// Stores a retranslator of the master user; its id. 247 when one with
    /// the same address, port and login exists; 268 beyond the user's quota.
    pub async fn create_retranslator(
        &self,
        master: UserId,
        retranslator: Retranslator,
    ) -> Result<i64> {
        let r = retranslator.checked()?;
        let quota = self.retranslator_quota(master).await?;
        let row = sqlx::query(
            "INSERT INTO retranslators (master_user_id, name, protocol_id, address, port, login, \
             password, enabled, created_at) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 \
             WHERE (SELECT count(*) FROM retranslators WHERE master_user_id = $1) < $10 RETURNING id",
        )
        .bind(master.0)
        .bind(&r.name)
        .bind(r.protocol_id)
        .bind(&r.address)
        .bind(r.port)
        .bind(&r.login)
        .bind(&r.password)
        .bind(r.enabled)
        .bind(self.clock.now())
        .bind(i64::from(quota))
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| same_target(e, &r))?;
        match row {
            Some(row) => Ok(row.try_get("id")?),
            None => Err(Error::OverQuota {
                what: "retranslators",
                limit: quota,
            }),
        }
    }

    /// Replaces the master user's retranslator `retranslator.id`; 201 when
    /// the account has none with it, 247 as for create.
    pub async fn update_retranslator(
        &self,
        master: UserId,
        retranslator: Retranslator,
    ) -> Result<()> {
        let id = records::required_id("retranslator.id", retranslator.id)?;
        let r = retranslator.checked()?;
        let done = sqlx::query(
            "UPDATE retranslators SET name = $3, protocol_id = $4, address = $5, port = $6, \
             login = $7, password = $8, enabled = $9 WHERE id = $1 AND master_user_id = $2",
        )
        .bind(id)
        .bind(master.0)
        .bind(&r.name)
        .bind(r.protocol_id)
        .bind(&r.address)
        .bind(r.port)
        .bind(&r.login)
        .bind(&r.password)
        .bind(r.enabled)
        .execute(&self.pool)
        .await
        .map_err(|e| same_target(e, &r))?;
        records::one_changed(done.rows_affected(), "retranslator", id)
    }

    /// Deletes the master user's retranslator `id`; 201 when none.
    pub async fn delete_retranslator(&self, master: UserId, id: i64) -> Result<()> {
        records::delete_owned(&self.pool, "retranslators", "retranslator", master, id).await
    }

    /// How many retranslators the user may hold.
    pub async fn retranslator_quota(&self, user: UserId) -> Result<u32> {
        let quota: Option<Option<i64>> =
            sqlx::query_scalar("SELECT retranslator_quota FROM users WHERE id = $1")
                .bind(user.0)
                .fetch_optional(&self.pool)
                .await?;
        let quota = quota.ok_or_else(|| records::not_found("user", user.0))?;
        Ok(quota.map_or(DEFAULT_RETRANSLATOR_QUOTA, |q| {
            u32::try_from(q).unwrap_or(u32::MAX)
        }))
    }

    /// Sets the user's retranslator quota (`trackhouse admin`); `None`
    /// returns to the default. Retranslators beyond a lowered quota stay.
    pub async fn set_retranslator_quota(&self, user: UserId, quota: Option<u32>) -> Result<()> {
        let done = sqlx::query(
            "UPDATE users SET retranslator_quota = $2 WHERE id = $1 AND master_user_id IS NULL",
        )
        .bind(user.0)
        .bind(quota.map(i64::from))
        .execute(&self.pool)
        .await?;
        records::one_changed(done.rows_affected(), "user", user.0)
    }
}
