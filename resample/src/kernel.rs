//! The `resample` entry point and what its passes share: the output writer
//! and the monotone searches over the timestamps.

mod order_key;
mod point;
mod sliding_median;
mod window;

#[cfg(test)]
mod tests;

use arrow_array::Float64Array;
use arrow_array::builder::NullBufferBuilder;

use crate::{DeltaMs, Grid, Method, Rule, Series};

pub use window::MedianStrategy;

/// Resamples `series` onto `grid` following `rule`; one value per grid instant.
///
/// Null where the method finds no reading and `rule.fixed_value` is `None`.
/// Every method is one forward pass over the series and the grid; see the
/// crate docs for the rules, ties and costs.
pub fn resample(series: &Series<'_>, grid: &Grid, rule: &Rule) -> Float64Array {
    let fixed = rule.fixed_value;
    match rule.method {
        Method::Following { delta } => point::following(series, grid, delta, fixed),
        Method::Previous { delta } => point::previous(series, grid, delta, fixed),
        Method::Average { delta } => point::average(series, grid, delta, fixed),
        Method::MedianInWindow { delta } => window::median(series, grid, delta, fixed),
        Method::AverageInWindow { delta } => window::average(series, grid, delta, fixed),
    }
}

/// `MEDIAN_IN_WINDOW` with a forced strategy, for benchmarks that compare them.
///
/// [`resample`] picks the strategy itself ([`MedianStrategy::for_windows`]);
/// both give the same result, only at different costs.
pub fn median_in_window(
    series: &Series<'_>,
    grid: &Grid,
    delta: DeltaMs,
    fixed_value: Option<f64>,
    strategy: MedianStrategy,
) -> Float64Array {
    window::median_with(series, grid, delta, fixed_value, strategy)
}

/// Collects one value per grid instant, substituting the fixed value for misses.
struct Output {
    values: Vec<f64>,
    nulls: NullBufferBuilder,
    fixed: Option<f64>,
}

impl Output {
    fn new(len: usize, fixed: Option<f64>) -> Self {
        Self {
            values: Vec::with_capacity(len),
            nulls: NullBufferBuilder::new(len),
            fixed,
        }
    }

    /// Appends `found`, or the fixed value (null if none) when the method found nothing.
    #[inline]
    fn push(&mut self, found: Option<f64>) {
        match found.or(self.fixed) {
            Some(value) => {
                self.values.push(value);
                self.nulls.append_non_null();
            }
            None => {
                self.values.push(0.0);
                self.nulls.append_null();
            }
        }
    }

    fn finish(mut self) -> Float64Array {
        // One value and one validity bit were pushed together, so the
        // lengths agree and `new` cannot reject them.
        let nulls = self.nulls.finish();
        Float64Array::new(self.values.into(), nulls)
    }
}

/// The first index `i ≥ from` with `times[i] ≥ target`.
///
/// Requires every timestamp before `from` to be `< target`; the passes keep
/// this by only moving forward as T grows.
#[inline]
fn seek_ge(times: &[i64], from: usize, target: i64) -> usize {
    gallop(times, from, |t| t < target)
}

/// The first index `i ≥ from` with `times[i] > target`; same requirement as [`seek_ge`].
#[inline]
fn seek_gt(times: &[i64], from: usize, target: i64) -> usize {
    gallop(times, from, |t| t <= target)
}

/// The first index `i ≥ from` where `before` turns false (it holds on a prefix).
///
/// Exponential search from `from`, then binary search in the last bracket:
/// O(log d) for an advance of d, so a whole pass costs O(n + len) however
/// sparse or dense the grid is relative to the series.
#[inline]
fn gallop(times: &[i64], from: usize, before: impl Fn(i64) -> bool) -> usize {
    let rest = times.get(from..).unwrap_or_default();
    let mut bound = 1usize;
    while rest.get(bound - 1).is_some_and(|&t| before(t)) {
        bound = bound.saturating_mul(2);
    }
    // Every timestamp in rest[..bound / 2] is before the target.
    let low = bound / 2;
    let high = bound.min(rest.len());
    let bracket = rest.get(low..high).unwrap_or_default();
    from + low + bracket.partition_point(|&t| before(t))
}

/// Sum with four independent accumulators: vectorizes, and rounds no worse
/// than a sequential sum.
#[inline]
fn sum(values: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    let chunks = values.chunks_exact(4);
    let tail: f64 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for (a, v) in acc.iter_mut().zip(chunk) {
            *a += v;
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}
