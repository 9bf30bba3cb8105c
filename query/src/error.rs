use schemas::{ErrorCode, HasCode};

/// Result of query operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong reading telemetry.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A requested column does not exist.
    #[error("unknown column `{column}`")]
    UnknownColumn {
        /// The column as requested.
        column: String,
    },
    /// More columns were asked for than a read may have.
    #[error("asks for {columns} columns after expansion; at most {max} may be read at once")]
    TooManyColumns {
        /// Columns asked for (after `.*` expansion, repeats dropped).
        columns: usize,
        /// The limit.
        max: usize,
    },
    /// Planning or executing a DataFusion plan failed.
    #[error("query plan")]
    Plan(#[source] datafusion::error::DataFusionError),
    /// An Arrow computation failed.
    #[error("arrow")]
    Arrow(#[source] datafusion::arrow::error::ArrowError),
    /// Encoding CSV failed.
    #[error("csv encoding")]
    Csv(#[source] crate::csv::CsvError),
    /// ClickHouse refused a query or could not be reached.
    #[error("ClickHouse: {what}")]
    ClickHouse {
        /// What was being read.
        what: &'static str,
        /// The failure.
        #[source]
        source: clickhouse::error::Error,
    },
    /// A stored file's path cannot be named to the object store (the data
    /// directory's path holds a control character or is not UTF-8).
    #[error("file path {path} cannot be read through the object store")]
    FilePath {
        /// The file.
        path: std::path::PathBuf,
        /// The failure.
        #[source]
        source: datafusion::object_store::path::Error,
    },
    /// An invariant of the stored data did not hold (a bug).
    #[error("internal: {0}")]
    Internal(String),
}

impl HasCode for Error {
    fn code(&self) -> ErrorCode {
        match self {
            Self::UnknownColumn { .. } | Self::TooManyColumns { .. } => {
                ErrorCode::InvalidParameters
            }
            Self::Plan(_)
            | Self::Arrow(_)
            | Self::Csv(_)
            | Self::FilePath { .. }
            | Self::Internal(_) => ErrorCode::Unexpected,
            Self::ClickHouse {
                source: clickhouse::error::Error::Network(_),
                ..
            } => ErrorCode::DatabaseUnavailable,
            Self::ClickHouse { .. } => ErrorCode::Database,
        }
    }
}

impl Error {
    pub(crate) fn clickhouse(what: &'static str) -> impl FnOnce(clickhouse::error::Error) -> Self {
        move |source| Self::ClickHouse { what, source }
    }
}
