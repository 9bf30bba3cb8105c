use schemas::{ErrorCode, HasCode};

/// Result of building resampling inputs.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An input to a kernel broke an invariant the kernels rely on.
///
/// Every variant is the caller's to fix, so every one maps to
/// [`ErrorCode::InvalidParameters`]. The kernels themselves cannot fail:
/// once a [`Series`](crate::Series), [`Grid`](crate::Grid) and
/// [`Rule`](crate::Rule) exist, resampling returns an array.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The time and value columns of a series differ in length.
    #[error("`values`: {values} values for {times} timestamps")]
    LengthMismatch {
        /// Number of timestamps.
        times: usize,
        /// Number of values.
        values: usize,
    },
    /// A timestamp is smaller than the one before it.
    #[error("`times`: not sorted, timestamp {index} is earlier than the one before it")]
    Unsorted {
        /// Position of the first out-of-order timestamp.
        index: usize,
    },
    /// A value is NaN or infinite (the caller drops those before resampling).
    #[error("`values`: value {index} is not finite")]
    NonFiniteValue {
        /// Position of the first non-finite value.
        index: usize,
    },
    /// The grid step is zero or negative.
    #[error("`step_ms`: must be positive, got {step_ms}")]
    NonPositiveStep {
        /// The step as given.
        step_ms: i64,
    },
    /// The last grid instant does not fit in an `i64` of milliseconds.
    #[error("`len`: {len} instants of {step_ms} ms from {start_ms} overflow the time range")]
    GridOverflow {
        /// First instant, epoch milliseconds.
        start_ms: i64,
        /// Step between instants, milliseconds.
        step_ms: i64,
        /// Number of instants.
        len: usize,
    },
    /// A delta is negative or too large to express in milliseconds.
    #[error("`delta`: must be between 0 and {max_ms} ms, got {given}")]
    DeltaOutOfRange {
        /// The delta as given, in the caller's unit.
        given: i64,
        /// The largest accepted delta, milliseconds.
        max_ms: i64,
    },
}

impl HasCode for Error {
    fn code(&self) -> ErrorCode {
        match self {
            Self::LengthMismatch { .. }
            | Self::Unsorted { .. }
            | Self::NonFiniteValue { .. }
            | Self::NonPositiveStep { .. }
            | Self::GridOverflow { .. }
            | Self::DeltaOutOfRange { .. } => ErrorCode::InvalidParameters,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_is_the_callers() {
        let errors = [
            Error::LengthMismatch {
                times: 1,
                values: 2,
            },
            Error::Unsorted { index: 3 },
            Error::NonFiniteValue { index: 0 },
            Error::NonPositiveStep { step_ms: 0 },
            Error::GridOverflow {
                start_ms: i64::MAX,
                step_ms: 1,
                len: 2,
            },
            Error::DeltaOutOfRange {
                given: -1,
                max_ms: i64::MAX,
            },
        ];
        for error in errors {
            assert_eq!(error.code(), ErrorCode::InvalidParameters, "{error}");
        }
    }

    #[test]
    fn messages_name_the_field() {
        let message = Error::NonPositiveStep { step_ms: -5 }.to_string();
        assert_eq!(message, "`step_ms`: must be positive, got -5");
    }
}
