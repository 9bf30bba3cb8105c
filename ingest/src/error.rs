use std::path::PathBuf;

use schemas::{ErrorCode, HasCode};

/// Result of ingest operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong between intake and storage.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The writer is behind: the caller should retry after a pause.
    #[error("the writer is behind ({reason}); retry later")]
    Backpressure {
        /// What is full.
        reason: &'static str,
    },
    /// The disk under the write-ahead log does not take writes (full, or
    /// failing): nothing of the write was stored; retry after a pause (the
    /// log heals by itself once the disk takes writes again).
    #[error("storage cannot take writes now: {reason}; retry later")]
    StorageUnavailable {
        /// What failed.
        reason: String,
    },
    /// The ingest service is shutting down or its writer stopped.
    #[error("the ingest writer has stopped")]
    Stopped,
    /// The write-ahead log failed.
    #[error("write-ahead log")]
    Wal(#[source] crate::wal::WalError),
    /// Building or converting Arrow data failed.
    #[error("arrow")]
    Arrow(#[source] arrow::error::ArrowError),
    /// Writing or reading a Parquet file failed.
    #[error("parquet file {path}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// The failure.
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// A file-system operation failed.
    #[error("{what} {path}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// On which path.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// Encoding or decoding a WAL record failed.
    #[error("encoding a WAL record")]
    Encode(#[source] postcard::Error),
    /// The catalog file is unreadable.
    #[error("catalog {path} is malformed")]
    Catalog {
        /// The file.
        path: PathBuf,
        /// The failure.
        #[source]
        source: serde_json::Error,
    },
    /// The catalog cannot be used as it is (a gap in its log, a newer format).
    #[error("catalog {path}: {reason}")]
    CatalogState {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A batch that does not have the stored layout (a bug, not bad input).
    #[error("a stored batch {0}")]
    Layout(String),
    /// ClickHouse refused or did not answer (an INSERT: after retrying gave up).
    #[error("ClickHouse: {what}")]
    ClickHouse {
        /// What was being done.
        what: &'static str,
        /// The failure.
        #[source]
        source: clickhouse::error::Error,
    },
    /// The storage settings are unusable.
    #[error("configuration: {0}")]
    Config(String),
}

impl HasCode for Error {
    fn code(&self) -> ErrorCode {
        match self {
            Self::Backpressure { .. } | Self::StorageUnavailable { .. } | Self::Stopped => {
                ErrorCode::QueueUnavailable
            }
            Self::Wal(inner) => inner.code(),
            Self::Arrow(_) | Self::Encode(_) | Self::Layout(_) | Self::Config(_) => {
                ErrorCode::Unexpected
            }
            Self::Parquet { .. } | Self::Io { .. } => ErrorCode::CannotSaveFile,
            Self::Catalog { .. } | Self::CatalogState { .. } | Self::ClickHouse { .. } => {
                ErrorCode::Database
            }
        }
    }
}

impl Error {
    pub(crate) fn clickhouse(what: &'static str) -> impl FnOnce(clickhouse::error::Error) -> Self {
        move |source| Self::ClickHouse { what, source }
    }

    pub(crate) fn io(
        what: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { what, path, source }
    }
}
