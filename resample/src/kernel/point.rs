//! `FOLLOWING`, `PREVIOUS` and `AVERAGE`: each grid instant picks one or two
//! readings next to it.

use arrow_array::Float64Array;

use super::{Output, seek_ge, seek_gt};
use crate::{DeltaMs, Grid, Series};

pub(super) fn following(
    series: &Series<'_>,
    grid: &Grid,
    delta: Option<DeltaMs>,
    fixed: Option<f64>,
) -> Float64Array {
    match delta {
        // After the last reading, `after` is empty and `before` is the last reading.
        None => pass(series, grid, fixed, |at| {
            at.exact()
                .or_else(|| at.after().map(value))
                .or_else(|| at.before().map(value))
        }),
        Some(delta) => pass(series, grid, fixed, |at| {
            let from = at.t.saturating_sub(delta.as_ms());
            at.last_up_to().filter(|&(t, _)| t >= from).map(value)
        }),
    }
}

pub(super) fn previous(
    series: &Series<'_>,
    grid: &Grid,
    delta: Option<DeltaMs>,
    fixed: Option<f64>,
) -> Float64Array {
    match delta {
        // Before the first reading, `before` is empty and `after` is the first reading.
        None => pass(series, grid, fixed, |at| {
            at.exact()
                .or_else(|| at.before().map(value))
                .or_else(|| at.after().map(value))
        }),
        Some(delta) => pass(series, grid, fixed, |at| {
            let to = at.t.saturating_add(delta.as_ms());
            at.exact()
                .or_else(|| at.after().filter(|&(t, _)| t <= to).map(value))
        }),
    }
}

pub(super) fn average(
    series: &Series<'_>,
    grid: &Grid,
    delta: Option<DeltaMs>,
    fixed: Option<f64>,
) -> Float64Array {
    match delta {
        None => pass(series, grid, fixed, |at| {
            at.exact()
                .or_else(|| mean(at.before().map(value), at.after().map(value)))
        }),
        Some(delta) => pass(series, grid, fixed, |at| {
            let from = at.t.saturating_sub(delta.as_ms());
            let to = at.t.saturating_add(delta.as_ms());
            at.exact().or_else(|| {
                mean(
                    at.before().filter(|&(t, _)| t >= from).map(value),
                    at.after().filter(|&(t, _)| t <= to).map(value),
                )
            })
        }),
    }
}

fn value((_, value): (i64, f64)) -> f64 {
    value
}

/// The plain mean of two neighbours, or the only one there is.
fn mean(before: Option<f64>, after: Option<f64>) -> Option<f64> {
    match (before, after) {
        (Some(before), Some(after)) => Some(f64::midpoint(before, after)),
        (before, after) => before.or(after),
    }
}

/// Where grid instant `t` falls in the series.
///
/// Of tied readings (equal timestamps) the last in input order is the one
/// picked, which is why `after` reads at `next_end - 1`.
struct Around<'a> {
    times: &'a [i64],
    values: &'a [f64],
    t: i64,
    /// First index with timestamp ≥ `t`.
    lo: usize,
    /// First index with timestamp > `t`; `lo..hi` are the readings at `t`.
    hi: usize,
    /// One past the last reading tied with `times[hi]`; the length when `hi` is.
    next_end: usize,
}

impl Around<'_> {
    /// The reading at `t`.
    fn exact(&self) -> Option<f64> {
        if self.hi > self.lo {
            self.values.get(self.hi - 1).copied()
        } else {
            None
        }
    }

    /// The last reading before `t`, with its timestamp.
    fn before(&self) -> Option<(i64, f64)> {
        self.reading(self.lo.checked_sub(1)?)
    }

    /// The last reading at or before `t`, with its timestamp.
    fn last_up_to(&self) -> Option<(i64, f64)> {
        self.reading(self.hi.checked_sub(1)?)
    }

    /// The first reading after `t` (the last of its ties), with its timestamp.
    fn after(&self) -> Option<(i64, f64)> {
        let time = *self.times.get(self.hi)?;
        let value = *self.values.get(self.next_end.checked_sub(1)?)?;
        Some((time, value))
    }

    fn reading(&self, index: usize) -> Option<(i64, f64)> {
        Some((*self.times.get(index)?, *self.values.get(index)?))
    }
}

/// Walks the grid once, keeping `lo`, `hi` and `next_end` moving forward.
fn pass(
    series: &Series<'_>,
    grid: &Grid,
    fixed: Option<f64>,
    pick: impl Fn(&Around<'_>) -> Option<f64>,
) -> Float64Array {
    let times = series.times();
    let values = series.values();
    let mut out = Output::new(grid.len(), fixed);
    let (mut lo, mut hi, mut next_end) = (0, 0, 0);
    for t in grid.instants() {
        lo = seek_ge(times, lo, t);
        hi = seek_gt(times, hi.max(lo), t);
        next_end = match times.get(hi) {
            Some(&next) => seek_gt(times, next_end.max(hi + 1), next),
            None => times.len(),
        };
        out.push(pick(&Around {
            times,
            values,
            t,
            lo,
            hi,
            next_end,
        }));
    }
    out.finish()
}
