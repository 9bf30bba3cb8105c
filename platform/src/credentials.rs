//! User sessions and API keys: who a `hash` stands for.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemas::{DealerId, UserId};
use sqlx::Row;

use crate::secret::verify_password;
use crate::{BlockStatus, Error, Permission, Result, Secret, Store};

/// Which kind of user credential a call came with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialKind {
    /// A session from login and password (`/user/auth`).
    Session,
    /// An API key.
    ApiKey {
        /// The key's record id (rate limits count per key).
        key_id: i64,
    },
}

/// The user behind a user credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserAuth {
    /// The user (a sub-user's own id for a sub-user).
    pub user_id: UserId,
    /// The master user of the account (the user itself for a master user).
    pub master_id: UserId,
    /// The dealer of the account.
    pub dealer_id: DealerId,
    /// The credential kind.
    pub kind: CredentialKind,
    /// The account's IANA time zone.
    pub time_zone: String,
}

impl UserAuth {
    /// Whether the caller is a sub-user.
    pub fn is_subuser(&self) -> bool {
        self.user_id != self.master_id
    }
}

/// The dealer behind a panel session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PanelAuth {
    /// The dealer.
    pub dealer_id: DealerId,
    /// Its panel account's permissions, sorted.
    pub permissions: Vec<Permission>,
}

impl PanelAuth {
    /// Whether the panel account holds a permission.
    pub fn has(&self, permission: Permission) -> bool {
        self.permissions.binary_search(&permission).is_ok()
    }

    /// The permissions grouped as the panel answers them.
    pub fn permission_map(&self) -> BTreeMap<&'static str, Vec<&'static str>> {
        crate::dealers::permission_map(&self.permissions)
    }
}

/// An API key as listed to its owner.
#[derive(Debug, Clone)]
pub struct ApiKey {
    /// The key itself.
    pub hash: Secret,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// Its title.
    pub title: String,
}

impl Store {
    /// Logs a user (or sub-user) in with login and password and opens a session.
    ///
    /// 102 for an unknown login, a wrong password or a user of another dealer
    /// than `dealer`; 103 when not activated; 11 when the dealer's clients are blocked.
    pub async fn user_login(
        &self,
        login: &str,
        password: &str,
        dealer: Option<DealerId>,
    ) -> Result<(Secret, UserAuth)> {
        let login = login.trim().to_lowercase();
        let row = sqlx::query(
            "SELECT u.id, u.password_hash, u.activated AND COALESCE(m.activated, TRUE) AS activated, \
             u.dealer_id, d.block_status \
             FROM users u JOIN dealers d ON d.id = u.dealer_id \
             LEFT JOIN users m ON m.id = u.master_user_id \
             WHERE u.login = $1 AND u.deleted = FALSE AND (m.id IS NULL OR m.deleted = FALSE)",
        )
        .bind(&login)
        .fetch_optional(&self.pool)
        .await?;
        let stored_hash = row
            .as_ref()
            .map(|r| r.try_get::<String, _>("password_hash"))
            .transpose()?;
        if !verify_password(password, stored_hash).await? {
            return Err(Error::WrongLoginOrPassword);
        }
        let row = row.ok_or(Error::WrongLoginOrPassword)?;
        let user_id: i64 = row.try_get("id")?;
        let dealer_id: i64 = row.try_get("dealer_id")?;
        if dealer.is_some_and(|d| d.0 != dealer_id) {
            return Err(Error::WrongLoginOrPassword);
        }
        if !row.try_get::<bool, _>("activated")? {
            return Err(Error::UserNotActivated);
        }
        check_clients_allowed(dealer_id, &row.try_get::<String, _>("block_status")?)?;
        let secret = Secret::generate()?;
        let now = self.clock.now();
        sqlx::query("INSERT INTO user_sessions (token_digest, user_id, created_at, last_used_at) VALUES ($1, $2, $3, $3)")
            .bind(secret.digest())
            .bind(user_id)
            .bind(now)
            .execute(&self.pool)
            .await?;
        let auth = self.authenticate_user(&secret).await?;
        Ok((secret, auth))
    }

    /// Resolves a user session or an API key.
    ///
    /// 4 when unknown, expired (30 days unused) or ended; 103 when the user was
    /// deactivated; 11 when the dealer's clients are blocked.
    pub async fn authenticate_user(&self, secret: &Secret) -> Result<UserAuth> {
        let digest = secret.digest();
        let now = self.clock.now();
        let session =
            sqlx::query("SELECT user_id, last_used_at FROM user_sessions WHERE token_digest = $1")
                .bind(&digest)
                .fetch_optional(&self.pool)
                .await?;
        let (user_id, kind) = if let Some(session) = session {
            let last_used: DateTime<Utc> = session.try_get("last_used_at")?;
            if now - last_used > self.config.user_session_idle {
                sqlx::query("DELETE FROM user_sessions WHERE token_digest = $1")
                    .bind(&digest)
                    .execute(&self.pool)
                    .await?;
                return Err(Error::CredentialNotFound);
            }
            if now - last_used > self.config.last_used_refresh {
                sqlx::query("UPDATE user_sessions SET last_used_at = $1 WHERE token_digest = $2")
                    .bind(now)
                    .bind(&digest)
                    .execute(&self.pool)
                    .await?;
            }
            (
                session.try_get::<i64, _>("user_id")?,
                CredentialKind::Session,
            )
        } else {
            let key =
                sqlx::query("SELECT id, user_id, token FROM api_keys WHERE token_digest = $1")
                    .bind(&digest)
                    .fetch_optional(&self.pool)
                    .await?
                    .ok_or(Error::CredentialNotFound)?;
            // The digest matched; the stored key is compared too, in constant time.
            let stored = Secret::parse(&key.try_get::<String, _>("token")?);
            if !stored.is_some_and(|stored| stored.ct_eq(secret)) {
                return Err(Error::CredentialNotFound);
            }
            (
                key.try_get("user_id")?,
                CredentialKind::ApiKey {
                    key_id: key.try_get("id")?,
                },
            )
        };
        let row = sqlx::query(
            "SELECT u.dealer_id, u.activated, u.deleted, COALESCE(u.master_user_id, u.id) AS master_id, \
             COALESCE(m.time_zone, u.time_zone) AS time_zone, COALESCE(m.deleted, FALSE) AS master_deleted, \
             COALESCE(m.activated, TRUE) AS master_activated, \
             d.block_status FROM users u JOIN dealers d ON d.id = u.dealer_id \
             LEFT JOIN users m ON m.id = u.master_user_id WHERE u.id = $1",
        )
        .bind(user_id)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::CredentialNotFound)?;
        if row.try_get::<bool, _>("deleted")? || row.try_get::<bool, _>("master_deleted")? {
            return Err(Error::CredentialNotFound);
        }
        // A sub-user works for its master: deactivating the master stops both.
        if !row.try_get::<bool, _>("activated")? || !row.try_get::<bool, _>("master_activated")? {
            return Err(Error::UserNotActivated);
        }
        let dealer_id: i64 = row.try_get("dealer_id")?;
        check_clients_allowed(dealer_id, &row.try_get::<String, _>("block_status")?)?;
        Ok(UserAuth {
            user_id: UserId(user_id),
            master_id: UserId(row.try_get("master_id")?),
            dealer_id: DealerId(dealer_id),
            kind,
            time_zone: row.try_get("time_zone")?,
        })
    }

    /// Ends a user session; an API key is not a session and is left alone.
    pub async fn user_logout(&self, secret: &Secret) -> Result<()> {
        sqlx::query("DELETE FROM user_sessions WHERE token_digest = $1")
            .bind(secret.digest())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Creates an API key for a user; 268 once the user holds the maximum.
    pub async fn create_api_key(&self, user: UserId, title: &str) -> Result<ApiKey> {
        crate::check_printable("title", title, 1, 255)?;
        let secret = Secret::generate()?;
        let now = self.clock.now();
        // One statement, so two concurrent creations cannot both pass the count.
        let done = sqlx::query(
            "INSERT INTO api_keys (user_id, token_digest, token, title, created_at) \
             SELECT $1, $2, $3, $4, $5 WHERE (SELECT COUNT(*) FROM api_keys WHERE user_id = $1) < $6",
        )
        .bind(user.0)
        .bind(secret.digest())
        .bind(secret.expose())
        .bind(title)
        .bind(now)
        .bind(i64::from(self.config.max_api_keys))
        .execute(&self.pool)
        .await
        .map_err(|e| match &e {
            sqlx::Error::Database(db) if db.is_foreign_key_violation() => {
                Error::NotFound { entity: "user", id: user.to_string() }
            }
            _ => Error::from(e),
        })?;
        if done.rows_affected() == 0 {
            return Err(Error::OverQuota {
                what: "API keys",
                limit: self.config.max_api_keys,
            });
        }
        Ok(ApiKey {
            hash: secret,
            created_at: now,
            title: title.to_owned(),
        })
    }

    /// The user's API keys, oldest first.
    pub async fn list_api_keys(&self, user: UserId) -> Result<Vec<ApiKey>> {
        let rows = sqlx::query(
            "SELECT token, title, created_at FROM api_keys WHERE user_id = $1 ORDER BY id",
        )
        .bind(user.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let token: String = row.try_get("token")?;
                Ok(ApiKey {
                    hash: Secret::parse(&token)
                        .ok_or_else(|| Error::corrupt("api key", "not 32 hex characters"))?,
                    created_at: row.try_get("created_at")?,
                    title: row.try_get("title")?,
                })
            })
            .collect()
    }

    /// Deletes one of the user's API keys; 201 when the user holds no such key.
    pub async fn delete_api_key(&self, user: UserId, key: &str) -> Result<()> {
        let shown: String = key.trim().chars().take(4).collect();
        let not_found = || Error::NotFound {
            entity: "API key",
            id: format!("{shown}…"),
        };
        let secret = Secret::parse(key.trim()).ok_or_else(not_found)?;
        let done = sqlx::query("DELETE FROM api_keys WHERE user_id = $1 AND token_digest = $2")
            .bind(user.0)
            .bind(secret.digest())
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(not_found());
        }
        Ok(())
    }
}

fn check_clients_allowed(dealer_id: i64, status: &str) -> Result<()> {
    let status = BlockStatus::parse("block_status", status)
        .map_err(|e| Error::corrupt("block_status", e))?;
    if status.allows_clients() {
        Ok(())
    } else {
        Err(Error::DealerBlocked {
            dealer_id,
            status: status.as_str(),
        })
    }
}
