//! Tokens that authorise device data intake (`/ingest/v1`).

use schemas::IngestTokenId;
use sqlx::Row;

use crate::{Error, Result, Secret, Store};

/// An ingest token as resolved for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngestToken {
    /// The token's id.
    pub id: IngestTokenId,
    /// Whether lines may carry their own `server_time` (backfills).
    pub backfill: bool,
}

impl Store {
    /// Creates an ingest token and returns the secret (shown once, stored as a digest).
    pub async fn create_ingest_token(
        &self,
        title: &str,
        backfill: bool,
    ) -> Result<(IngestTokenId, Secret)> {
        crate::check_printable("title", title, 1, 255)?;
        let secret = Secret::generate()?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO ingest_tokens (token_digest, title, backfill, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(secret.digest())
        .bind(title)
        .bind(backfill)
        .bind(self.clock.now())
        .fetch_one(&self.pool)
        .await?;
        Ok((IngestTokenId(id), secret))
    }

    /// Resolves an ingest token; 4 when unknown or revoked.
    pub async fn authenticate_ingest(&self, secret: &Secret) -> Result<IngestToken> {
        let row = sqlx::query(
            "SELECT id, backfill FROM ingest_tokens WHERE token_digest = $1 AND revoked_at IS NULL",
        )
        .bind(secret.digest())
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::CredentialNotFound)?;
        Ok(IngestToken {
            id: IngestTokenId(row.try_get("id")?),
            backfill: row.try_get("backfill")?,
        })
    }
}
