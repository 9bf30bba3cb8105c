//! Tokens that authorise device data intake (`/ingest/v1`).

use chrono::{DateTime, Utc};
use schemas::{IngestTokenId, UserId};
use sqlx::Row;

use crate::{Error, Result, Secret, Store};

/// An ingest token as resolved for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngestToken {
    /// The token's id.
    pub id: IngestTokenId,
    /// Whether lines may carry their own `server_time` (backfills).
    pub backfill: bool,
    /// The only user whose trackers it may send for; `None`: any tracker.
    pub user: Option<UserId>,
}

/// An ingest token as listed to the operator (never the secret).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IngestTokenInfo {
    /// The token's id.
    pub token_id: i64,
    /// Its title.
    pub title: String,
    /// Whether lines may carry their own `server_time`.
    pub backfill: bool,
    /// The only user whose trackers it may send for.
    pub user_id: Option<i64>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it was revoked, if it was.
    pub revoked_at: Option<DateTime<Utc>>,
}

impl Store {
    /// Creates an ingest token and returns the secret (shown once, stored as a digest).
    pub async fn create_ingest_token(
        &self,
        title: &str,
        backfill: bool,
    ) -> Result<(IngestTokenId, Secret)> {
        self.create_ingest_token_for(title, backfill, None).await
    }

    /// Creates an ingest token that may send only for `user`'s trackers
    /// (any tracker when `None`); 201 when the user is not a live master user.
    pub async fn create_ingest_token_for(
        &self,
        title: &str,
        backfill: bool,
        user: Option<UserId>,
    ) -> Result<(IngestTokenId, Secret)> {
        crate::check_printable("title", title, 1, 255)?;
        if let Some(user) = user {
            let master: Option<bool> = sqlx::query_scalar(
                "SELECT master_user_id IS NULL FROM users WHERE id = $1 AND deleted = FALSE",
            )
            .bind(user.0)
            .fetch_optional(&self.pool)
            .await?;
            if master != Some(true) {
                return Err(Error::NotFound {
                    entity: "master user",
                    id: user.to_string(),
                });
            }
        }
        let secret = Secret::generate()?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO ingest_tokens (token_digest, title, backfill, created_at, user_id) \
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(secret.digest())
        .bind(title)
        .bind(backfill)
        .bind(self.clock.now())
        .bind(user.map(|u| u.0))
        .fetch_one(&self.pool)
        .await?;
        Ok((IngestTokenId(id), secret))
    }

    /// Every ingest token, revoked ones too, oldest first.
    pub async fn list_ingest_tokens(&self) -> Result<Vec<IngestTokenInfo>> {
        let rows = sqlx::query(
            "SELECT id, title, backfill, user_id, created_at, revoked_at FROM ingest_tokens ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(IngestTokenInfo {
                    token_id: row.try_get("id")?,
                    title: row.try_get("title")?,
                    backfill: row.try_get("backfill")?,
                    user_id: row.try_get("user_id")?,
                    created_at: row.try_get("created_at")?,
                    revoked_at: row.try_get("revoked_at")?,
                })
            })
            .collect()
    }

    /// Revokes an ingest token: requests with it are refused from now on
    /// (code 2). Revoking it again keeps the first revocation; 201 when unknown.
    pub async fn revoke_ingest_token(&self, token: IngestTokenId) -> Result<IngestTokenInfo> {
        let done = sqlx::query(
            "UPDATE ingest_tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2",
        )
        .bind(self.clock.now())
        .bind(token.0)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(Error::NotFound {
                entity: "ingest token",
                id: token.0.to_string(),
            });
        }
        self.list_ingest_tokens()
            .await?
            .into_iter()
            .find(|t| t.token_id == token.0)
            .ok_or(Error::NotFound {
                entity: "ingest token",
                id: token.0.to_string(),
            })
    }

    /// Resolves an ingest token; 4 when unknown or revoked.
    pub async fn authenticate_ingest(&self, secret: &Secret) -> Result<IngestToken> {
        let row = sqlx::query(
            "SELECT id, backfill, user_id FROM ingest_tokens WHERE token_digest = $1 AND revoked_at IS NULL",
        )
        .bind(secret.digest())
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::CredentialNotFound)?;
        Ok(IngestToken {
            id: IngestTokenId(row.try_get("id")?),
            backfill: row.try_get("backfill")?,
            user: row.try_get::<Option<i64>, _>("user_id")?.map(UserId),
        })
    }
}
