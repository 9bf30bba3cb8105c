//! Pure, vectorized resampling of telemetry series onto a uniform time grid.
//!
//! This crate owns the kernels behind `/eco_fleet/v1/trackers/{id}/resampling`:
//! the five `resampling_method`s, each one forward pass over sorted
//! timestamps and values, plus the per-reading inputs they run on
//! (calibrated litres, movement codes). It does no I/O and nothing async:
//! callers hand it slices and Arrow arrays and get one
//! [`Float64Array`](arrow_array::Float64Array) per column back. It does not
//! own reading the data (`query`), choosing the grid from the request,
//! validating calibration tables, or writing the CSV (`api`).
//!
//! ```text
//! times + Float64Array ──SeriesBuf::fill_from──▶ Series ──resample(series, grid, rule)──▶ Float64Array
//!                         (drops nulls, NaN)        ▲
//!    raw fuel ──calibrate──▶ litres ────────────────┤
//!    speed (+ ignition) ──movement──▶ codes ────────┘
//! ```
//!
//! # Entry points
//!
//! - [`resample`] with a [`Series`], a [`Grid`] and a [`Rule`] ([`Method`] + `fixed_value`);
//!   [`median_in_window`] is `MEDIAN_IN_WINDOW` with a forced [`MedianStrategy`].
//! - [`SeriesBuf`] gathers a [`Series`] from Arrow columns, reusing its buffers;
//!   [`SortedTimes`] checks shared timestamps once for several value columns
//!   ([`Series::try_with_times`]).
//! - [`calibrate`] turns raw fuel-sensor readings into litres ([`Calibration`]
//!   one reading at a time).
//! - [`movement`] turns speed and ignition into `MOVEMENT` codes
//!   ([`movement_code`] one reading at a time).
//!
//! # The rules
//!
//! T is a grid instant and D the delta in milliseconds (≥ 0; 0 makes a
//! window of the single instant T). Where a method finds no reading, the
//! result is the rule's `fixed_value`, or null (`\N`) when that is `None`;
//! an empty series finds nothing. A reading exactly at T is the value at T
//! for `FOLLOWING`, `PREVIOUS` and `AVERAGE`, with or without delta.
//!
//! | method | without delta | with delta D |
//! |---|---|---|
//! | `FOLLOWING` | the first reading after T; after the last reading, the last | the reading closest to T (the last one ≤ T) in [T-D, T] |
//! | `PREVIOUS` | the last reading before T; before the first reading, the first | the reading closest to T (the first one ≥ T) in [T, T+D] |
//! | `AVERAGE` | the mean of the last reading before T and the first after; at the head or tail, the only neighbour | the same with neighbours in [T-D, T) and (T, T+D] only; one side empty: the other |
//! | `MEDIAN_IN_WINDOW` | (delta required) | the median of all readings in [T-D, T+D]; of an even count, the mean of the two middle values |
//! | `AVERAGE_IN_WINDOW` | (delta required) | the arithmetic mean of all readings in [T-D, T+D] |
//!
//! **Ties.** Several readings may share a timestamp. Where a method picks a
//! single reading (the one at T, before T, after T, or closest to T), the
//! *last* of the tied readings in input order wins. The window aggregates
//! use every one of them.
//!
//! # Cost
//!
//! Every method walks the grid once while two cursors move forward through
//! the timestamps by exponential search, so finding the readings costs
//! O(n + len) comparisons. Nothing is allocated per row: a call allocates
//! its output once, and the median also one scratch buffer or two heaps,
//! which grow by doubling to the largest window.
//!
//! - `AVERAGE_IN_WINDOW` keeps a running sum, recomputed from scratch
//!   whenever that is cheaper than sliding it, and at the latest once every
//!   reading of the last recomputed window has left. So rounding never
//!   accumulates over more than two windows' readings (a plain running sum
//!   drifts for ever; global prefix sums lose a small window's digits next
//!   to a large total), and each reading is summed O(1) times.
//! - `MEDIAN_IN_WINDOW` picks its strategy per call
//!   ([`MedianStrategy::for_windows`]). A reading falls in at most
//!   ⌊2D/step⌋ + 1 windows; up to 24 (D = 11.5 min on a one-minute grid) it
//!   copies each window to a reused scratch buffer and quickselects on
//!   integer order keys: O(w) per window, at most 24·n in total, and the
//!   fastest where windows are disjoint or overlap a little. Beyond that it
//!   slides two heaps with lazy deletion, O(log w) per reading entering or
//!   leaving, whose cost stays flat as windows grow. 24 is the measured
//!   crossover; [`median_in_window`] forces either strategy.
//!
//! `BENCHMARKS.md` ("Resampling kernels") has the measured throughput.

mod calibrate;
mod error;
mod grid;
mod kernel;
mod movement;
mod rule;
mod series;

pub use calibrate::{Calibration, calibrate};
pub use error::{Error, Result};
pub use grid::Grid;
pub use kernel::{MedianStrategy, median_in_window, resample};
pub use movement::{movement, movement_code};
pub use rule::{DeltaMs, Method, Rule};
pub use series::{Series, SeriesBuf, SortedTimes};
