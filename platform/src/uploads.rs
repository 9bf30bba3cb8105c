//! Files an account uploads (`POST /v2/file/upload`, clarification 35) for
//! the calls that take a `file_id`. A file is the account's, kept for
//! [`UploadRules::ttl`], and named by a random key; an account holds at most
//! [`UploadRules::max_files`] at a time (268 beyond), each at most
//! [`UploadRules::max_bytes`] (7 naming `file` beyond).

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::{Error, Result, Secret, Store, UserAuth, trimmed_text};

/// What uploads may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadRules {
    /// Bytes of one file.
    pub max_bytes: usize,
    /// Bytes an XLSX file may expand to when it is read.
    pub max_inflated_bytes: u64,
    /// Files an account holds at a time.
    pub max_files: u32,
    /// How long a file is kept after its upload.
    pub ttl: Duration,
}

impl Default for UploadRules {
    fn default() -> Self {
        Self {
            max_bytes: 10 * 1024 * 1024,
            max_inflated_bytes: 100 * 1024 * 1024,
            max_files: 100,
            ttl: Duration::from_secs(24 * 3600),
        }
    }
}

/// A file as uploaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadedFile {
    /// Its name as the client gave it (may be empty).
    pub name: String,
    /// Its content.
    pub content: Vec<u8>,
}

impl Store {
    /// Keeps a file for the caller's account; its `file_id`. Files older
    /// than `rules.ttl` are dropped first (every account's).
    pub async fn store_upload(
        &self,
        caller: &UserAuth,
        rules: &UploadRules,
        file: &UploadedFile,
    ) -> Result<String> {
        if file.content.len() > rules.max_bytes {
            return Err(Error::invalid(
                "file",
                format!(
                    "is {} bytes; files are at most {} bytes (--max-upload-bytes)",
                    file.content.len(),
                    rules.max_bytes
                ),
            ));
        }
        // A name is informative only: keep what is printable of it.
        let name: String = file
            .name
            .chars()
            .filter(|c| !c.is_control())
            .take(255)
            .collect();
        let name = trimmed_text("file", &name, 0, 255)?;
        let now = self.clock.now();
        sqlx::query("DELETE FROM uploaded_files WHERE created_at < $1")
            .bind(oldest_kept(now, rules.ttl))
            .execute(&self.pool)
            .await?;
        let key = Secret::generate()?;
        let size = i64::try_from(file.content.len()).unwrap_or(i64::MAX);
        let stored = sqlx::query(
            "INSERT INTO uploaded_files (file_key, master_user_id, uploader_id, name, size, content, created_at) \
             SELECT $1, $2, $3, $4, $5, $6, $7 \
             WHERE (SELECT count(*) FROM uploaded_files WHERE master_user_id = $2) < $8",
        )
        .bind(key.expose())
        .bind(caller.master_id.0)
        .bind(caller.user_id.0)
        .bind(&name)
        .bind(size)
        .bind(&file.content)
        .bind(now)
        .bind(i64::from(rules.max_files))
        .execute(&self.pool)
        .await?;
        if stored.rows_affected() == 0 {
            return Err(Error::OverQuota {
                what: "uploaded files",
                limit: rules.max_files,
            });
        }
        Ok(key.expose().to_owned())
    }

    /// The account's file `file_id`, unless it has expired; 201 otherwise
    /// (unknown, expired or another account's).
    pub async fn read_upload(
        &self,
        caller: &UserAuth,
        rules: &UploadRules,
        file_id: &str,
    ) -> Result<UploadedFile> {
        let missing = || Error::NotFound {
            entity: "file",
            id: file_id.to_owned(),
        };
        let key = Secret::parse(file_id.trim()).ok_or_else(missing)?;
        let row: Option<(String, Vec<u8>)> = sqlx::query_as(
            "SELECT name, content FROM uploaded_files \
             WHERE file_key = $1 AND master_user_id = $2 AND created_at >= $3",
        )
        .bind(key.expose())
        .bind(caller.master_id.0)
        .bind(oldest_kept(self.clock.now(), rules.ttl))
        .fetch_optional(&self.pool)
        .await?;
        let (name, content) = row.ok_or_else(missing)?;
        Ok(UploadedFile { name, content })
    }
}

/// The upload time of the oldest file still kept at `now`.
fn oldest_kept(now: DateTime<Utc>, ttl: Duration) -> DateTime<Utc> {
    chrono::TimeDelta::from_std(ttl)
        .ok()
        .and_then(|ttl| now.checked_sub_signed(ttl))
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}
