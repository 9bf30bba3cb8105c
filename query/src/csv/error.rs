//! What can go wrong when writing a batch: a request plan that does not fit the batch.

use arrow::datatypes::DataType;
use schemas::{ErrorCode, HasCode};

/// A batch that does not fit the encoder's columns: a bug in whoever built
/// the plan, never bad data.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    /// A CSV column reads a batch column that does not exist.
    #[error("CSV column `{header}` reads batch column {column}, but the batch has {columns}")]
    MissingColumn {
        /// The CSV column's header.
        header: String,
        /// The batch column it reads.
        column: usize,
        /// How many columns the batch has.
        columns: usize,
    },
    /// A CSV column reads a batch column of a type its cell cannot write.
    #[error("CSV column `{header}` writes {cell} values, but batch column {column} is {actual}")]
    UnexpectedType {
        /// The CSV column's header.
        header: String,
        /// The batch column it reads.
        column: usize,
        /// What the cell writes (`time`, `number`, `text`, ...).
        cell: &'static str,
        /// The batch column's type.
        actual: DataType,
    },
}

impl HasCode for CsvError {
    fn code(&self) -> ErrorCode {
        match self {
            Self::MissingColumn { .. } | Self::UnexpectedType { .. } => ErrorCode::Unexpected,
        }
    }
}
