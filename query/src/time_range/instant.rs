//! One instant: `YYYY-MM-DDTHH:MM[:SS[.f…]]` with `Z` or an offset, or, with
//! `iso_datetime=false`, a wall-clock time read in the account's zone.
//!
//! The shape is checked first, then the values, so that `2024-13-01T00:00Z`
//! is reported as a date that does not exist rather than as a wrong format.

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

use super::{TimeContext, local, quoted};

/// Why a text is not an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InstantError {
    /// Not of the shape of a date and time.
    Shape,
    /// Well formed, but no offset follows and `iso_datetime` is on.
    NoZone,
    /// A space between date and time while `iso_datetime` is on.
    SpaceSeparator,
    /// A space where the offset's sign belongs: a `+` decoded from a URL.
    PlusAsSpace,
    /// No such day (month 13, 30 February).
    Date,
    /// No such time of day (hour 24, minute or second 60).
    TimeOfDay,
    /// A malformed offset, or one beyond ±23:59.
    Offset,
    /// Beyond the instants that can be represented.
    OutOfRange,
}

impl InstantError {
    /// The error message for `text`, phrased to follow the parameter name.
    pub(super) fn describe(self, text: &str, iso: bool) -> String {
        let got = quoted(text);
        match self {
            Self::Shape if iso => format!(
                "must be a date and time with an offset, such as 2024-10-10T13:13:14+06:00 \
                 (YYYY-MM-DDTHH:MM[:SS[.fff]] then Z, ±HH:MM, ±HHMM or ±HH), got {got}"
            ),
            Self::Shape => format!(
                "must be a date and time such as 2024-10-10T13:13:14+06:00 or, in the \
                 account's time zone, 2024-10-10 13:13:14, got {got}"
            ),
            Self::NoZone => format!(
                "has no time zone: add Z or an offset such as +06:00 \
                 (or send iso_datetime=false to use the account's zone), got {got}"
            ),
            Self::SpaceSeparator => format!(
                "must have a T between date and time (a space is accepted only with \
                 iso_datetime=false), got {got}"
            ),
            Self::PlusAsSpace => format!(
                "has a space where the sign of the offset belongs: in a URL or form, \
                 `+` must be sent as %2B, got {got}"
            ),
            Self::Date => format!("names a day that does not exist, got {got}"),
            Self::TimeOfDay => format!(
                "names a time of day that does not exist (hours 00-23, minutes and \
                 seconds 00-59), got {got}"
            ),
            Self::Offset => {
                format!("has an invalid offset: Z, ±HH:MM, ±HHMM or ±HH, at most 23:59, got {got}")
            }
            Self::OutOfRange => format!("is out of the supported range of dates, got {got}"),
        }
    }
}

/// Parses an instant (already trimmed) into milliseconds since the Unix epoch.
pub(super) fn parse_ms(text: &str, ctx: &TimeContext) -> Result<i64, InstantError> {
    let (wall, offset_seconds) = parse_parts(text, ctx.iso)?;
    match offset_seconds {
        Some(offset_seconds) => wall
            .and_utc()
            .timestamp_millis()
            .checked_sub(offset_seconds * 1_000)
            .ok_or(InstantError::OutOfRange),
        None => local::to_utc_ms(wall, ctx.zone).ok_or(InstantError::OutOfRange),
    }
}

/// The written date and time, and the offset in seconds east of UTC if one is written.
fn parse_parts(text: &str, iso: bool) -> Result<(NaiveDateTime, Option<i64>), InstantError> {
    let mut cursor = Cursor {
        bytes: text.as_bytes(),
        pos: 0,
    };
    let year = cursor.digits(4)?;
    cursor.expect(b'-')?;
    let month = cursor.digits(2)?;
    cursor.expect(b'-')?;
    let day = cursor.digits(2)?;
    match cursor.next() {
        Some(b'T') => {}
        Some(b' ') if !iso => {}
        Some(b' ') => return Err(InstantError::SpaceSeparator),
        _ => return Err(InstantError::Shape),
    }
    let hour = cursor.digits(2)?;
    cursor.expect(b':')?;
    let minute = cursor.digits(2)?;
    let (second, millis) = if cursor.eat(b':') {
        let second = cursor.digits(2)?;
        let millis = if cursor.eat(b'.') {
            cursor.fraction_ms()?
        } else {
            0
        };
        (second, millis)
    } else {
        (0, 0)
    };
    let offset_seconds = cursor.zone(iso)?;
    if cursor.peek().is_some() {
        return Err(InstantError::Shape);
    }

    let date = NaiveDate::from_ymd_opt(i32::from(year), u32::from(month), u32::from(day))
        .ok_or(InstantError::Date)?;
    // Refuses hour 24 and second 60; `millis` is below 1000, so no leap second.
    let time = NaiveTime::from_hms_milli_opt(
        u32::from(hour),
        u32::from(minute),
        u32::from(second),
        millis,
    )
    .ok_or(InstantError::TimeOfDay)?;
    Ok((NaiveDateTime::new(date, time), offset_seconds))
}

/// A position in the text; every read is bounds-checked.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.pos += 1;
        Some(byte)
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.pos += 1;
        }
        found
    }

    fn expect(&mut self, byte: u8) -> Result<(), InstantError> {
        if self.eat(byte) {
            Ok(())
        } else {
            Err(InstantError::Shape)
        }
    }

    /// Exactly `count` ASCII digits (at most 4) as a number.
    fn digits(&mut self, count: usize) -> Result<u16, InstantError> {
        let mut value = 0u16;
        for _ in 0..count {
            let digit = self
                .peek()
                .filter(u8::is_ascii_digit)
                .ok_or(InstantError::Shape)?;
            value = value * 10 + u16::from(digit - b'0');
            self.pos += 1;
        }
        Ok(value)
    }

    /// One or more fraction digits, as whole milliseconds (the rest truncated).
    fn fraction_ms(&mut self) -> Result<u32, InstantError> {
        let start = self.pos;
        let mut millis = 0;
        while let Some(digit) = self.peek().filter(u8::is_ascii_digit) {
            if self.pos - start < 3 {
                millis = millis * 10 + u32::from(digit - b'0');
            }
            self.pos += 1;
        }
        match self.pos - start {
            0 => Err(InstantError::Shape),
            1 => Ok(millis * 100),
            2 => Ok(millis * 10),
            _ => Ok(millis),
        }
    }

    /// The offset in seconds east of UTC, or `None` where a missing one is allowed.
    fn zone(&mut self, iso: bool) -> Result<Option<i64>, InstantError> {
        let sign = match self.peek() {
            None if iso => return Err(InstantError::NoZone),
            None => return Ok(None),
            Some(b'Z') => {
                self.pos += 1;
                return Ok(Some(0));
            }
            Some(b'+') => 1,
            Some(b'-') => -1,
            Some(b' ') if self.bytes.get(self.pos + 1).is_some_and(u8::is_ascii_digit) => {
                return Err(InstantError::PlusAsSpace);
            }
            Some(_) => return Err(InstantError::Shape),
        };
        self.pos += 1;
        let hours = self.digits(2).map_err(|_| InstantError::Offset)?;
        // `±HH:MM` and `±HHMM` carry minutes; `±HH` does not.
        let colon = self.eat(b':');
        let minutes = if colon || self.peek().is_some_and(|byte| byte.is_ascii_digit()) {
            self.digits(2).map_err(|_| InstantError::Offset)?
        } else {
            0
        };
        if hours > 23 || minutes > 59 {
            return Err(InstantError::Offset);
        }
        Ok(Some(
            sign * (i64::from(hours) * 3_600 + i64::from(minutes) * 60),
        ))
    }
}
