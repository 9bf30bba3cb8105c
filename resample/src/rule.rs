use crate::error::{Error, Result};

/// A non-negative window half-width, in milliseconds.
///
/// Zero is allowed: the window is then the single instant T.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeltaMs(i64);

impl DeltaMs {
    /// A delta of zero: windows of a single instant.
    pub const ZERO: Self = Self(0);

    /// Wraps `ms` milliseconds; fails if it is negative.
    pub fn try_new(ms: i64) -> Result<Self> {
        if ms < 0 {
            return Err(Error::DeltaOutOfRange {
                given: ms,
                max_ms: i64::MAX,
            });
        }
        Ok(Self(ms))
    }

    /// Converts `secs` seconds (the API's unit); fails if negative or too large.
    pub fn try_from_secs(secs: i64) -> Result<Self> {
        match secs.checked_mul(1000) {
            Some(ms) if ms >= 0 => Ok(Self(ms)),
            _ => Err(Error::DeltaOutOfRange {
                given: secs,
                max_ms: i64::MAX,
            }),
        }
    }

    /// The delta in milliseconds, never negative.
    pub const fn as_ms(self) -> i64 {
        self.0
    }
}

/// How a grid instant T gets its value from the readings around it.
///
/// The variants are the spec's `resampling_method`s; the window methods
/// cannot be built without a delta. The exact rules are in the crate docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `FOLLOWING`: the reading at T, else the next one (without delta) or
    /// the closest in [T-D, T] (with delta).
    Following {
        /// Look-back half-width; `None` searches the whole series.
        delta: Option<DeltaMs>,
    },
    /// `PREVIOUS`: the reading at T, else the one before (without delta) or
    /// the closest in [T, T+D] (with delta).
    Previous {
        /// Look-ahead half-width; `None` searches the whole series.
        delta: Option<DeltaMs>,
    },
    /// `AVERAGE`: the reading at T, else the mean of its two neighbours,
    /// searched within [T-D, T+D] when a delta is given.
    Average {
        /// Neighbour search half-width; `None` searches the whole series.
        delta: Option<DeltaMs>,
    },
    /// `MEDIAN_IN_WINDOW`: the median of all readings in [T-D, T+D].
    MedianInWindow {
        /// Window half-width.
        delta: DeltaMs,
    },
    /// `AVERAGE_IN_WINDOW`: the arithmetic mean of all readings in [T-D, T+D].
    AverageInWindow {
        /// Window half-width.
        delta: DeltaMs,
    },
}

/// One column's resampling: a method and what to write when it finds nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// How each grid instant is filled.
    pub method: Method,
    /// Written where the method finds no reading; `None` writes null (`\N`).
    pub fixed_value: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_rejects_negative() {
        assert_eq!(DeltaMs::try_new(0), Ok(DeltaMs::ZERO));
        assert_eq!(DeltaMs::try_new(30_000).map(DeltaMs::as_ms), Ok(30_000));
        assert_eq!(
            DeltaMs::try_new(-1),
            Err(Error::DeltaOutOfRange {
                given: -1,
                max_ms: i64::MAX
            })
        );
    }

    #[test]
    fn delta_from_seconds_checks_range() {
        assert_eq!(DeltaMs::try_from_secs(30).map(DeltaMs::as_ms), Ok(30_000));
        assert!(DeltaMs::try_from_secs(-30).is_err());
        assert!(DeltaMs::try_from_secs(i64::MAX / 999).is_err());
    }
}
