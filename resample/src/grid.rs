use crate::error::{Error, Result};

/// The instants T_k = `start_ms` + k·`step_ms`, k in 0..`len`, in epoch milliseconds.
///
/// Every instant fits in an `i64`; the constructor checks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    start_ms: i64,
    step_ms: i64,
    len: usize,
}

impl Grid {
    /// Builds the grid; fails if `step_ms` ≤ 0 or the last instant overflows.
    pub fn try_new(start_ms: i64, step_ms: i64, len: usize) -> Result<Self> {
        if step_ms <= 0 {
            return Err(Error::NonPositiveStep { step_ms });
        }
        // In i128 the product cannot overflow: both factors are below 2^64.
        let last = i128::from(start_ms) + len.saturating_sub(1) as i128 * i128::from(step_ms);
        if i64::try_from(last).is_err() {
            return Err(Error::GridOverflow {
                start_ms,
                step_ms,
                len,
            });
        }
        Ok(Self {
            start_ms,
            step_ms,
            len,
        })
    }

    /// The first instant, epoch milliseconds.
    pub const fn start_ms(&self) -> i64 {
        self.start_ms
    }

    /// The distance between consecutive instants, milliseconds (positive).
    pub const fn step_ms(&self) -> i64 {
        self.step_ms
    }

    /// The number of instants.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether the grid has no instant.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The instants in increasing order.
    pub fn instants(&self) -> impl ExactSizeIterator<Item = i64> + use<> {
        let Self {
            start_ms, step_ms, ..
        } = *self;
        // `try_new` proved start + k·step fits in an i64 for every k < len,
        // so the result is right even where the wrapping steps wrap.
        (0..self.len).map(move |k| start_ms.wrapping_add((k as i64).wrapping_mul(step_ms)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_step_from_start() {
        let grid = Grid::try_new(-120_000, 60_000, 4).unwrap();
        let instants: Vec<i64> = grid.instants().collect();
        assert_eq!(instants, [-120_000, -60_000, 0, 60_000]);
        assert_eq!(grid.instants().len(), 4);
        assert!(!grid.is_empty());
        assert!(Grid::try_new(0, 1, 0).unwrap().is_empty());
    }

    #[test]
    fn rejects_non_positive_step() {
        assert_eq!(
            Grid::try_new(0, 0, 3),
            Err(Error::NonPositiveStep { step_ms: 0 })
        );
        assert!(Grid::try_new(0, -60_000, 3).is_err());
    }

    #[test]
    fn rejects_overflowing_last_instant() {
        assert!(Grid::try_new(i64::MAX - 10, 10, 2).is_ok());
        assert!(Grid::try_new(i64::MAX - 10, 10, 3).is_err());
        assert!(Grid::try_new(0, i64::MAX, 2).is_ok());
        assert!(Grid::try_new(0, 2, usize::MAX).is_err());
        let full = Grid::try_new(i64::MIN, i64::MAX, 3).unwrap();
        assert_eq!(
            full.instants().collect::<Vec<_>>(),
            [i64::MIN, -1, i64::MAX - 1]
        );
        assert!(Grid::try_new(i64::MIN, 1, usize::MAX).is_ok());
        assert_eq!(
            Grid::try_new(i64::MAX, 1, 1).unwrap().instants().last(),
            Some(i64::MAX)
        );
    }
}
