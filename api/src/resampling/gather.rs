//! The read's batches gathered into the contiguous series the kernels take.
//!
//! The scan hands its batches over as they came (a few per day). The times
//! are gathered once per request, checked sorted once, and shared by every
//! output column; each column's values are gathered into a buffer aligned
//! with them, NaN where a reading has no value. A column without gaps is
//! resampled straight from the two slices; one with gaps is first compacted
//! (its empty readings dropped with their times), which is the spec's
//! "readings without a value are skipped".
//!
//! The buffers live in a [`ScratchPool`] kept across requests. A week at
//! 1 Hz is 4.8 MB per buffer, and on a VM first-touching fresh pages (a
//! page fault per 4 KiB) costs more than the copy itself.

use std::sync::Mutex;

use arrow::array::{Array, Float64Array};
use query::series::{Chunk, Readings};
use resample::{Calibration, Series, SeriesBuf, SortedTimes, movement_code};

use super::{Job, fuel_input, ignition_of, internal};
use crate::ApiResult;
use platform::Tracker;

/// Most bytes of buffers a pooled [`Scratch`] may keep: enough for two weeks
/// at 1 Hz in the times and five columns; a larger request's scratch is
/// freed after it instead of being kept.
const MAX_KEPT_BYTES: usize = 96 << 20;

/// Scratches kept idle: one per request computing at a time is typical.
const MAX_IDLE: usize = 2;

/// A request's gathering buffers: the shared times and one [`Lane`] per
/// output column.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    times: Vec<i64>,
    lanes: Vec<Lane>,
}

impl Scratch {
    /// Gathers the message times of every batch, checks they are sorted,
    /// and hands them out with `columns` lanes, one per output column.
    pub(super) fn gather_times(
        &mut self,
        readings: &Readings,
        columns: usize,
    ) -> ApiResult<(SortedTimes<'_>, &mut [Lane])> {
        if self.lanes.len() < columns {
            self.lanes.resize_with(columns, Lane::default);
        }
        self.times.clear();
        self.times.reserve(readings.len());
        for (times, _) in readings
            .chunks(schemas::columns::MESSAGE_TIME)?
            .unwrap_or_default()
        {
            self.times.extend_from_slice(times);
        }
        let times = SortedTimes::try_new(&self.times)
            .map_err(|e| internal(format!("the series read is out of order: {e}")))?;
        Ok((times, &mut self.lanes[..columns]))
    }

    fn bytes(&self) -> usize {
        self.times.capacity() * 8 + self.lanes.iter().map(Lane::bytes).sum::<usize>()
    }
}

/// One column's buffers: its values aligned with the times, and its
/// compacted series when it has gaps.
#[derive(Debug, Default)]
pub(super) struct Lane {
    values: Vec<f64>,
    compact: SeriesBuf,
}

impl Lane {
    /// The series of `job`'s column: its values at `times` (every row of
    /// `readings`), readings without a value left out.
    pub(super) fn gather<'a>(
        &'a mut self,
        times: SortedTimes<'a>,
        readings: &Readings,
        job: Job<'_>,
        tracker: &Tracker,
    ) -> ApiResult<Series<'a>> {
        self.values.clear();
        self.values.reserve(times.as_slice().len());
        match job {
            Job::Fuel(sensor, table) => {
                let name = fuel_input(sensor);
                // A table `calibrate` would refuse leaves every reading without litres.
                let curve = Calibration::new(table);
                for (_, column) in chunks(readings, &name)? {
                    push_mapped(&mut self.values, float(&name, column)?, |raw| {
                        curve.as_ref().map_or(f64::NAN, |c| c.litres(raw))
                    });
                }
            }
            Job::Movement => {
                let threshold = tracker.idle_speed_threshold_kmh;
                let ignition = readings.chunks(&tracker.ignition_source)?;
                for (i, (_, column)) in chunks(readings, "speed")?.into_iter().enumerate() {
                    // On = true and not null; a missing or short column is off.
                    let on =
                        ignition
                            .as_ref()
                            .and_then(|chunks| chunks.get(i))
                            .map(|(_, column)| {
                                let on = ignition_of(column.as_ref());
                                match on.nulls() {
                                    Some(nulls) => on.values() & nulls.inner(),
                                    None => on.values().clone(),
                                }
                            });
                    let on = |row: usize| {
                        on.as_ref()
                            .is_some_and(|on| row < on.len() && on.value(row))
                    };
                    let speed = float("speed", column)?;
                    let codes = speed.values().iter().enumerate().map(|(row, &kmh)| {
                        if speed.is_valid(row) {
                            movement_code(kmh, on(row), threshold)
                        } else {
                            f64::NAN
                        }
                    });
                    self.values.extend(codes);
                }
            }
            Job::Plain(name) => {
                for (_, column) in chunks(readings, name)? {
                    push_mapped(&mut self.values, float(name, column)?, |v| v);
                }
            }
        }
        let gathered = |e: resample::Error| internal(format!("gathering a series: {e}"));
        match Series::try_with_times(times, &self.values) {
            Err(resample::Error::NonFiniteValue { .. }) => {
                self.compact
                    .fill_finite(times, &self.values)
                    .map_err(gathered)?;
                Ok(self.compact.as_series())
            }
            series => series.map_err(gathered),
        }
    }

    fn bytes(&self) -> usize {
        self.values.capacity() * 8 + self.compact.capacity() * 16
    }
}

/// Appends `map` of each of a column's values, NaN for its nulls.
#[inline]
fn push_mapped(values: &mut Vec<f64>, column: &Float64Array, map: impl Fn(f64) -> f64) {
    match column.nulls() {
        None => values.extend(column.values().iter().map(|&v| map(v))),
        Some(nulls) => values.extend(
            column
                .values()
                .iter()
                .zip(nulls.iter())
                .map(|(&v, valid)| if valid { map(v) } else { f64::NAN }),
        ),
    }
}

fn chunks<'a>(readings: &'a Readings, name: &str) -> ApiResult<Vec<Chunk<'a>>> {
    readings
        .chunks(name)?
        .ok_or_else(|| internal(format!("the series read lacks {name}")))
}

fn float<'a>(name: &str, column: &'a std::sync::Arc<dyn Array>) -> ApiResult<&'a Float64Array> {
    column
        .as_any()
        .downcast_ref::<Float64Array>()
        .ok_or_else(|| internal(format!("{name} is not Float64")))
}

/// Scratches kept between requests (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct ScratchPool {
    idle: Mutex<Vec<Scratch>>,
}

impl ScratchPool {
    /// An idle scratch, or a new one.
    pub(super) fn take(&self) -> Scratch {
        self.idle
            .lock()
            .ok()
            .and_then(|mut idle| idle.pop())
            .unwrap_or_default()
    }

    /// Keeps `scratch` for a later request unless enough are kept or it grew too large.
    pub(super) fn give_back(&self, scratch: Scratch) {
        if scratch.bytes() > MAX_KEPT_BYTES {
            return;
        }
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < MAX_IDLE {
                idle.push(scratch);
            }
        }
    }
}
