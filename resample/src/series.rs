use arrow_array::{Array, Float64Array};

use crate::error::{Error, Result};

/// A validated input series: sorted epoch-millisecond timestamps with finite values.
///
/// Timestamps are non-decreasing; equal timestamps (ties) are allowed and
/// keep their input order, which decides ties (see the crate docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Series<'a> {
    times: &'a [i64],
    values: &'a [f64],
}

impl<'a> Series<'a> {
    /// Checks that the columns have equal lengths, `times` is sorted and every value is finite.
    pub fn try_new(times: &'a [i64], values: &'a [f64]) -> Result<Self> {
        if times.len() != values.len() {
            return Err(Error::LengthMismatch {
                times: times.len(),
                values: values.len(),
            });
        }
        check_sorted(times)?;
        if let Some(index) = values.iter().position(|v| !v.is_finite()) {
            return Err(Error::NonFiniteValue { index });
        }
        Ok(Self { times, values })
    }

    /// A series with no reading.
    pub const fn empty() -> Self {
        Self {
            times: &[],
            values: &[],
        }
    }

    /// The timestamps, epoch milliseconds, non-decreasing.
    pub const fn times(&self) -> &'a [i64] {
        self.times
    }

    /// The values, all finite, one per timestamp.
    pub const fn values(&self) -> &'a [f64] {
        self.values
    }

    /// The number of readings.
    pub const fn len(&self) -> usize {
        self.times.len()
    }

    /// Whether the series has no reading.
    pub const fn is_empty(&self) -> bool {
        self.times.is_empty()
    }
}

/// Timestamps checked sorted once, to pair with several value columns
/// ([`Series::try_with_times`], [`SeriesBuf::fill_finite`]) without checking
/// them again for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortedTimes<'a>(&'a [i64]);

impl<'a> SortedTimes<'a> {
    /// Checks that `times` (epoch milliseconds) is non-decreasing.
    pub fn try_new(times: &'a [i64]) -> Result<Self> {
        check_sorted(times)?;
        Ok(Self(times))
    }

    /// The timestamps.
    pub const fn as_slice(&self) -> &'a [i64] {
        self.0
    }
}

impl<'a> Series<'a> {
    /// A series of timestamps already checked sorted: checks the lengths
    /// match and every value is finite.
    pub fn try_with_times(times: SortedTimes<'a>, values: &'a [f64]) -> Result<Self> {
        let times = times.as_slice();
        if times.len() != values.len() {
            return Err(Error::LengthMismatch {
                times: times.len(),
                values: values.len(),
            });
        }
        if let Some(index) = values.iter().position(|v| !v.is_finite()) {
            return Err(Error::NonFiniteValue { index });
        }
        Ok(Self { times, values })
    }
}

fn check_sorted(times: &[i64]) -> Result<()> {
    if times.is_sorted() {
        return Ok(());
    }
    let index = times
        .windows(2)
        .position(|pair| pair.first() > pair.get(1))
        .map_or(0, |before| before + 1);
    Err(Error::Unsorted { index })
}

/// Reusable buffers that gather a [`Series`] from Arrow columns.
///
/// Keeping one per column across requests makes gathering allocation-free
/// once the buffers have grown to the largest series seen.
#[derive(Debug, Clone, Default)]
pub struct SeriesBuf {
    times: Vec<i64>,
    values: Vec<f64>,
}

impl SeriesBuf {
    /// Empty buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the contents with the readings whose value is non-null and finite.
    ///
    /// `times` must be sorted (non-decreasing) and as long as `values`; on
    /// error the buffer is left empty. Dropping null and non-finite values is
    /// the spec's "the caller drops those"; their timestamps go with them.
    pub fn fill_from(&mut self, times: &[i64], values: &Float64Array) -> Result<()> {
        self.clear();
        self.extend_from(times, values)
    }

    /// Replaces the contents with the readings of two aligned slices whose
    /// value is finite: a NaN (or infinite) value marks a reading without
    /// one, dropped with its time. `times` must be as long as `values`; on
    /// error the buffer is left empty.
    pub fn fill_finite(&mut self, times: SortedTimes<'_>, values: &[f64]) -> Result<()> {
        self.clear();
        let times = times.as_slice();
        if times.len() != values.len() {
            return Err(Error::LengthMismatch {
                times: times.len(),
                values: values.len(),
            });
        }
        self.push_kept(times.iter().zip(values).map(|(&t, &v)| (t, v, true)));
        Ok(())
    }

    /// Empties the buffers, keeping their memory.
    pub fn clear(&mut self) {
        self.times.clear();
        self.values.clear();
    }

    /// Appends the non-null, finite readings of one more chunk (a record
    /// batch of a scan, say), so a series is gathered without concatenating
    /// the chunks first. The chunk's times must be sorted and not before the
    /// last time gathered; on error the buffer is left empty.
    pub fn extend_from(&mut self, times: &[i64], values: &Float64Array) -> Result<()> {
        if times.len() != values.len() {
            self.clear();
            return Err(Error::LengthMismatch {
                times: times.len(),
                values: values.len(),
            });
        }
        let continues = match (self.times.last(), times.first()) {
            (Some(last), Some(first)) => last <= first,
            _ => true,
        };
        // A chunk that starts before the last gathered time is out of order at its first reading.
        let sorted = if continues {
            check_sorted(times)
        } else {
            Err(Error::Unsorted { index: 0 })
        };
        if let Err(e) = sorted {
            self.clear();
            return Err(e);
        }
        let raw = values.values();
        match values.nulls() {
            None if raw.iter().all(|v| v.is_finite()) => {
                self.times.extend_from_slice(times);
                self.values.extend_from_slice(raw);
            }
            None => self.push_kept(times.iter().zip(raw.iter()).map(|(&t, &v)| (t, v, true))),
            Some(nulls) => self.push_kept(
                times
                    .iter()
                    .zip(raw.iter())
                    .zip(nulls.iter())
                    .map(|((&t, &v), valid)| (t, v, valid)),
            ),
        }
        Ok(())
    }

    /// Makes room for `additional` more readings, so gathering a series of
    /// known size copies each reading once (no regrowth).
    pub fn reserve(&mut self, additional: usize) {
        self.times.reserve(additional);
        self.values.reserve(additional);
    }

    /// Readings the buffers hold without growing.
    pub fn capacity(&self) -> usize {
        self.times.capacity().min(self.values.capacity())
    }

    fn push_kept(&mut self, readings: impl ExactSizeIterator<Item = (i64, f64, bool)>) {
        self.times.reserve(readings.len());
        self.values.reserve(readings.len());
        for (time, value, valid) in readings {
            if valid && value.is_finite() {
                self.times.push(time);
                self.values.push(value);
            }
        }
    }

    /// The gathered readings as a series.
    pub fn as_series(&self) -> Series<'_> {
        // `fill_from` upholds the invariants: equal lengths, sorted, finite.
        Series {
            times: &self.times,
            values: &self.values,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_finite_drops_readings_without_a_value() {
        let mut buffer = SeriesBuf::new();
        let times = SortedTimes::try_new(&[1, 2, 3, 4]).unwrap();
        buffer
            .fill_finite(times, &[1.0, f64::NAN, f64::INFINITY, 4.0])
            .unwrap();
        assert_eq!(buffer.as_series().times(), &[1, 4]);
        assert_eq!(buffer.as_series().values(), &[1.0, 4.0]);
        assert_eq!(
            SortedTimes::try_new(&[2, 1]),
            Err(Error::Unsorted { index: 1 })
        );
        assert_eq!(
            buffer.fill_finite(SortedTimes::try_new(&[1]).unwrap(), &[]),
            Err(Error::LengthMismatch {
                times: 1,
                values: 0
            })
        );
    }

    #[test]
    fn try_with_times_checks_lengths_and_values() {
        let times = SortedTimes::try_new(&[1, 1, 2]).unwrap();
        let series = Series::try_with_times(times, &[0.0, 1.0, 2.0]).unwrap();
        assert_eq!(
            series,
            Series::try_new(&[1, 1, 2], &[0.0, 1.0, 2.0]).unwrap()
        );
        assert_eq!(
            Series::try_with_times(times, &[0.0]),
            Err(Error::LengthMismatch {
                times: 3,
                values: 1
            })
        );
        assert_eq!(
            Series::try_with_times(times, &[0.0, f64::NAN, 1.0]),
            Err(Error::NonFiniteValue { index: 1 })
        );
    }

    #[test]
    fn try_new_checks_invariants() {
        assert!(Series::try_new(&[1, 1, 2], &[0.0, 1.0, 2.0]).is_ok());
        assert_eq!(
            Series::try_new(&[1, 2], &[0.0]),
            Err(Error::LengthMismatch {
                times: 2,
                values: 1
            })
        );
        assert_eq!(
            Series::try_new(&[1, 3, 2], &[0.0; 3]),
            Err(Error::Unsorted { index: 2 })
        );
        assert_eq!(
            Series::try_new(&[1, 2, 3], &[0.0, f64::NAN, 1.0]),
            Err(Error::NonFiniteValue { index: 1 })
        );
        assert_eq!(
            Series::try_new(&[1], &[f64::NEG_INFINITY]),
            Err(Error::NonFiniteValue { index: 0 })
        );
        assert!(Series::empty().is_empty());
        assert_eq!(Series::try_new(&[], &[]), Ok(Series::empty()));
    }

    #[test]
    fn fill_from_drops_null_and_non_finite_readings() {
        let mut buf = SeriesBuf::new();
        let values = Float64Array::from(vec![
            Some(1.0),
            None,
            Some(f64::NAN),
            Some(4.0),
            Some(f64::INFINITY),
            Some(6.0),
        ]);
        buf.fill_from(&[10, 20, 30, 40, 50, 60], &values).unwrap();
        let series = buf.as_series();
        assert_eq!(series.times(), [10, 40, 60]);
        assert_eq!(series.values(), [1.0, 4.0, 6.0]);

        let no_nulls = Float64Array::from(vec![1.0, f64::NAN, 3.0]);
        buf.fill_from(&[1, 2, 3], &no_nulls).unwrap();
        assert_eq!(buf.as_series().times(), [1, 3]);
        assert_eq!(buf.as_series().values(), [1.0, 3.0]);
    }

    #[test]
    fn fill_from_replaces_and_reuses_buffers() {
        let mut buf = SeriesBuf::new();
        let values = Float64Array::from(vec![1.0, 2.0, 3.0]);
        buf.fill_from(&[1, 2, 3], &values).unwrap();
        let capacity = buf.times.capacity();
        buf.fill_from(&[4, 5], &Float64Array::from(vec![5.0, 6.0]))
            .unwrap();
        assert_eq!(buf.as_series().times(), [4, 5]);
        assert_eq!(buf.as_series().values(), [5.0, 6.0]);
        assert_eq!(buf.times.capacity(), capacity);
    }

    #[test]
    fn fill_from_rejects_bad_columns_and_leaves_buffer_empty() {
        let mut buf = SeriesBuf::new();
        let values = Float64Array::from(vec![1.0, 2.0]);
        buf.fill_from(&[1, 2], &values).unwrap();
        assert_eq!(
            buf.fill_from(&[2, 1], &values),
            Err(Error::Unsorted { index: 1 })
        );
        assert!(buf.as_series().is_empty());
        assert!(buf.fill_from(&[1], &values).is_err());
        assert!(buf.as_series().is_empty());
    }

    #[test]
    fn extend_from_gathers_chunks_in_order() {
        let mut buf = SeriesBuf::new();
        buf.extend_from(&[1, 2], &Float64Array::from(vec![Some(1.0), None]))
            .unwrap();
        buf.extend_from(&[2, 5], &Float64Array::from(vec![2.0, f64::NAN]))
            .unwrap();
        buf.extend_from(&[], &Float64Array::from(Vec::<f64>::new()))
            .unwrap();
        buf.extend_from(&[7], &Float64Array::from(vec![7.0]))
            .unwrap();
        assert_eq!(buf.as_series().times(), [1, 2, 7]);
        assert_eq!(buf.as_series().values(), [1.0, 2.0, 7.0]);
        // A chunk starting before the last time gathered is refused, and empties the buffer.
        assert_eq!(
            buf.extend_from(&[6], &Float64Array::from(vec![6.0])),
            Err(Error::Unsorted { index: 0 })
        );
        assert!(buf.as_series().is_empty());
    }
}
