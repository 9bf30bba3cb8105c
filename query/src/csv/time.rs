//! Date/times written in a zone: the offset is cached per 15-minute bucket
//! and the digits are formatted by hand.
//!
//! Looking the offset up with chrono-tz costs a binary search per value;
//! exported rows come in message-time order, so consecutive rows almost
//! always share a bucket. For each bucket the offset is looked up at its first
//! and its last second. When both agree, every second between has that
//! offset too, unless the zone changed its offset and changed it back within
//! 15 minutes, which no zone of the tz database does (its transitions are
//! months, in a few historic cases days, apart). When they differ, a
//! transition falls inside the bucket, wherever it falls, and each row of that
//! bucket is looked up on its own. The cache does not rely on transitions
//! being aligned to quarter hours, which they are not before standard time
//! (Asia/Kathmandu left its local mean time +05:41:16 at
//! 1919-12-31T18:18:44Z); the tests compare against chrono's formatting
//! around every transition of the zones they use, and at random instants.

use arrow::array::{Array, AsArray};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{
    DataType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use chrono::{DateTime, Offset, TimeZone};
use chrono_tz::Tz;

use super::number::write_int;

/// Seconds in a cache bucket.
const BUCKET_SECONDS: i64 = 15 * 60;
const DAY_SECONDS: i64 = 86_400;

/// A timestamp batch column written in one zone.
#[derive(Debug)]
pub(super) struct TimeColumn<'a> {
    values: &'a [i64],
    nulls: Option<&'a NullBuffer>,
    units_per_second: i64,
    zone: Tz,
    iso: bool,
    /// The bucket `bucket_offset` belongs to.
    bucket: i64,
    /// The offset of every second of `bucket`; `None` when it holds a
    /// transition (or lies beyond chrono's range).
    bucket_offset: Option<ZoneOffset>,
    /// The local day `date` spells.
    day: i64,
    /// `YYYY-MM-DD` of `day`.
    date: Vec<u8>,
}

impl<'a> TimeColumn<'a> {
    /// The column as timestamps, if it holds timestamps.
    pub(super) fn try_new(array: &'a dyn Array, zone: Tz, iso: bool) -> Option<Self> {
        let DataType::Timestamp(unit, _) = array.data_type() else {
            return None;
        };
        let (values, units_per_second) = match unit {
            TimeUnit::Second => (array.as_primitive_opt::<TimestampSecondType>()?.values(), 1),
            TimeUnit::Millisecond => (
                array
                    .as_primitive_opt::<TimestampMillisecondType>()?
                    .values(),
                1_000,
            ),
            TimeUnit::Microsecond => (
                array
                    .as_primitive_opt::<TimestampMicrosecondType>()?
                    .values(),
                1_000_000,
            ),
            TimeUnit::Nanosecond => (
                array
                    .as_primitive_opt::<TimestampNanosecondType>()?
                    .values(),
                1_000_000_000,
            ),
        };
        Some(Self {
            values,
            nulls: array.nulls(),
            units_per_second,
            zone,
            iso,
            bucket: i64::MIN,
            bucket_offset: None,
            day: i64::MIN,
            date: Vec::with_capacity(16),
        })
    }

    /// Writes the value at `row`; `false` (nothing written) when it is null
    /// or beyond chrono's range.
    #[inline]
    pub(super) fn write(&mut self, row: usize, out: &mut Vec<u8>) -> bool {
        if self.nulls.is_some_and(|nulls| nulls.is_null(row)) {
            return false;
        }
        let Some(&value) = self.values.get(row) else {
            return false;
        };
        let utc = value.div_euclid(self.units_per_second);
        let Some(offset) = self.offset(utc) else {
            return false;
        };
        let Some(local) = utc.checked_add(i64::from(offset.seconds)) else {
            return false;
        };
        let day = local.div_euclid(DAY_SECONDS);
        if day != self.day {
            self.day = day;
            self.date.clear();
            write_date(day, &mut self.date);
        }
        let second_of_day = local.rem_euclid(DAY_SECONDS) as u32;
        let (hour, minute, second) = (
            second_of_day / 3600,
            second_of_day / 60 % 60,
            second_of_day % 60,
        );
        out.push(b'"');
        out.extend_from_slice(&self.date);
        out.extend_from_slice(&[
            if self.iso { b'T' } else { b' ' },
            tens(hour),
            ones(hour),
            b':',
            tens(minute),
            ones(minute),
            b':',
            tens(second),
            ones(second),
        ]);
        if self.iso {
            out.extend_from_slice(offset.text());
        }
        out.push(b'"');
        true
    }

    /// The zone's offset at `utc` (seconds since the epoch).
    #[inline]
    fn offset(&mut self, utc: i64) -> Option<ZoneOffset> {
        let bucket = utc.div_euclid(BUCKET_SECONDS);
        if bucket != self.bucket {
            self.bucket = bucket;
            // Cannot overflow: the bucket's start is at most `utc`.
            let start = bucket * BUCKET_SECONDS;
            let first = offset_at(self.zone, start);
            let last = start
                .checked_add(BUCKET_SECONDS - 1)
                .and_then(|end| offset_at(self.zone, end));
            self.bucket_offset = match (first, last) {
                (Some(first), Some(last)) if first == last => Some(ZoneOffset::new(first)),
                _ => None,
            };
        }
        match self.bucket_offset {
            Some(offset) => Some(offset),
            None => offset_at(self.zone, utc).map(ZoneOffset::new),
        }
    }
}

/// The zone's offset from UTC in seconds at `utc`; `None` beyond chrono's range.
fn offset_at(zone: Tz, utc: i64) -> Option<i32> {
    let instant = DateTime::from_timestamp(utc, 0)?;
    Some(
        zone.offset_from_utc_datetime(&instant.naive_utc())
            .fix()
            .local_minus_utc(),
    )
}

/// An offset and its spelling in ISO date/times.
#[derive(Debug, Clone, Copy)]
struct ZoneOffset {
    seconds: i32,
    /// `Z`, or `+HHMM` rounded to the minute as chrono's `%z` does (offsets
    /// of local mean time have seconds).
    text: [u8; 5],
    len: usize,
}

impl ZoneOffset {
    fn new(seconds: i32) -> Self {
        if seconds == 0 {
            return Self {
                seconds,
                text: *b"Z0000",
                len: 1,
            };
        }
        let minutes = (seconds.unsigned_abs() + 30) / 60;
        let (hours, minutes) = (minutes / 60, minutes % 60);
        Self {
            seconds,
            text: [
                if seconds < 0 { b'-' } else { b'+' },
                tens(hours),
                ones(hours),
                tens(minutes),
                ones(minutes),
            ],
            len: 5,
        }
    }

    fn text(&self) -> &[u8] {
        self.text.get(..self.len).unwrap_or(&self.text)
    }
}

#[inline]
fn tens(n: u32) -> u8 {
    b'0' + (n / 10 % 10) as u8
}

#[inline]
fn ones(n: u32) -> u8 {
    b'0' + (n % 10) as u8
}

/// Writes `YYYY-MM-DD` of a day counted from 1970-01-01; years outside
/// 0..=9999 are written as chrono does (`+10000`, `-0001`).
pub(super) fn write_date(day: i64, out: &mut Vec<u8>) {
    let (year, month, day) = civil_from_days(day);
    if (0..=9999).contains(&year) {
        let year = year as u32;
        out.extend_from_slice(&[tens(year / 100), ones(year / 100), tens(year), ones(year)]);
    } else {
        out.push(if year < 0 { b'-' } else { b'+' });
        let magnitude = year.unsigned_abs();
        for _ in itoa_len(magnitude)..4 {
            out.push(b'0');
        }
        write_int(magnitude, out);
    }
    out.extend_from_slice(&[b'-', tens(month), ones(month), b'-', tens(day), ones(day)]);
}

fn itoa_len(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |digits| digits as usize + 1)
}

/// The proleptic Gregorian (year, month, day) of a day counted from
/// 1970-01-01: Howard Hinnant's `civil_from_days`.
pub(super) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097); // [0, 146096]
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153; // March = 0
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
