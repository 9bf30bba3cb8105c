//! `AVERAGE_IN_WINDOW` and `MEDIAN_IN_WINDOW`: aggregates over all readings
//! in [T-D, T+D].

use arrow_array::Float64Array;

use super::sliding_median::SlidingMedian;
use super::{Output, order_key, seek_ge, seek_gt};
use crate::{DeltaMs, Grid, Series};

/// Walks the grid once, yielding each instant's window as `start..end` indices.
///
/// Both ends only move forward, so the walk is one pass over the series.
fn windows<'a>(
    times: &'a [i64],
    grid: &Grid,
    delta: DeltaMs,
) -> impl Iterator<Item = (usize, usize)> + use<'a> {
    let delta = delta.as_ms();
    let (mut start, mut end) = (0, 0);
    grid.instants().map(move |t| {
        start = seek_ge(times, start, t.saturating_sub(delta));
        end = seek_gt(times, end.max(start), t.saturating_add(delta));
        (start, end)
    })
}

/// Window means from a running sum that is recomputed instead of slid
/// whenever that is cheaper, and at the latest once every reading summed
/// from scratch has left the window.
///
/// Why not a plain running sum or global prefix sums: adding and subtracting
/// for ever lets rounding errors of long-gone (possibly much larger) values
/// accumulate, and a global prefix sum loses the digits of a small window
/// next to a large total. With the recompute rule the sum at any instant has
/// seen only the readings of the current window and of the one it was last
/// recomputed for, so its error is bounded by those magnitudes. Each
/// reading is recomputed at most once, so the pass stays O(n + len); with
/// disjoint or barely overlapping windows (2D ≤ step) every window is simply
/// summed afresh.
pub(super) fn average(
    series: &Series<'_>,
    grid: &Grid,
    delta: DeltaMs,
    fixed: Option<f64>,
) -> Float64Array {
    let values = series.values();
    let slice = |start: usize, end: usize| values.get(start..end).unwrap_or_default();
    let mut out = Output::new(grid.len(), fixed);
    let (mut prev_start, mut prev_end) = (0, 0);
    let mut sum = 0.0;
    // End of the window whose sum was last computed from scratch.
    let mut fresh_end = 0;
    for (start, end) in windows(series.times(), grid, delta) {
        let slide_cost = (start - prev_start) + (end - prev_end);
        if start >= fresh_end || end - start <= slide_cost {
            sum = super::sum(slice(start, end));
            fresh_end = end;
        } else {
            // start < fresh_end ≤ prev_end: the window overlaps the previous one.
            sum -= super::sum(slice(prev_start, start));
            sum += super::sum(slice(prev_end, end));
        }
        (prev_start, prev_end) = (start, end);
        let count = end - start;
        out.push((count > 0).then(|| sum / count as f64));
    }
    out.finish()
}

/// How `MEDIAN_IN_WINDOW` finds each window's median; results are identical.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MedianStrategy {
    /// Copy each window to a reused scratch buffer and quickselect: O(w) per window.
    Select,
    /// Slide two heaps along the series: O(log w) per reading entering or leaving.
    Sliding,
}

/// The most windows a reading may fall in for which [`MedianStrategy::Select`]
/// is chosen: the measured crossover (`BENCHMARKS.md`, "Resampling kernels").
const SELECT_MAX_WINDOWS_PER_READING: i64 = 24;

impl MedianStrategy {
    /// The strategy [`resample`](crate::resample) uses for windows of half-width `delta` on `grid`.
    ///
    /// A reading lies in at most ⌊2D/step⌋ + 1 windows, so quickselect
    /// costs at most that many times n in total: linear for a bounded
    /// overlap, and faster than the heaps up to the crossover because it
    /// streams contiguous memory instead of branching on heap order. Past
    /// it, the heaps' O(n log w) wins and keeps winning as windows grow.
    pub fn for_windows(grid: &Grid, delta: DeltaMs) -> Self {
        let windows_per_reading = delta.as_ms().saturating_mul(2) / grid.step_ms() + 1;
        if windows_per_reading <= SELECT_MAX_WINDOWS_PER_READING {
            Self::Select
        } else {
            Self::Sliding
        }
    }
}

pub(super) fn median(
    series: &Series<'_>,
    grid: &Grid,
    delta: DeltaMs,
    fixed: Option<f64>,
) -> Float64Array {
    let strategy = MedianStrategy::for_windows(grid, delta);
    median_with(series, grid, delta, fixed, strategy)
}

pub(super) fn median_with(
    series: &Series<'_>,
    grid: &Grid,
    delta: DeltaMs,
    fixed: Option<f64>,
    strategy: MedianStrategy,
) -> Float64Array {
    let values = series.values();
    let slice = |start: usize, end: usize| values.get(start..end).unwrap_or_default();
    let mut out = Output::new(grid.len(), fixed);
    let windows = windows(series.times(), grid, delta);
    match strategy {
        MedianStrategy::Select => {
            let mut scratch = Vec::new();
            for (start, end) in windows {
                out.push(select_median(slice(start, end), &mut scratch));
            }
        }
        MedianStrategy::Sliding => {
            let mut sliding = SlidingMedian::default();
            let (mut prev_start, mut prev_end) = (0, 0);
            for (start, end) in windows {
                if start >= prev_end {
                    sliding.clear();
                    sliding.insert_all(start, slice(start, end));
                } else {
                    sliding.remove_all(prev_start, slice(prev_start, start));
                    sliding.insert_all(prev_end, slice(prev_end, end));
                }
                sliding.settle(start);
                out.push(sliding.median());
                (prev_start, prev_end) = (start, end);
            }
        }
    }
    out.finish()
}

/// The median of `window`: the middle value, or the mean of the two middle ones.
///
/// Selects on order keys (integers) rather than on `f64::total_cmp`.
fn select_median(window: &[f64], scratch: &mut Vec<u64>) -> Option<f64> {
    match *window {
        [] => None,
        [only] => Some(only),
        [a, b] => Some(f64::midpoint(a, b)),
        _ => {
            scratch.clear();
            scratch.extend(window.iter().map(|&v| order_key::key(v)));
            let len = scratch.len();
            let (lower, &mut upper, _) = scratch.select_nth_unstable(len / 2);
            let upper = order_key::value(upper);
            if len % 2 == 1 {
                Some(upper)
            } else {
                // `lower` holds the len/2 smallest keys; its maximum is the lower middle.
                let lower = lower.iter().copied().max().map_or(upper, order_key::value);
                Some(f64::midpoint(lower, upper))
            }
        }
    }
}
