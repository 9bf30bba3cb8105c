//! The strict ISO 8601 parser for intake times (clarification 16).
//!
//! Accepted: `YYYY-MM-DDTHH:MM[:SS[.f...]]` followed by `Z` or an offset
//! `±HH:MM`, `±HHMM` or `±HH`. A fraction needs seconds; any number of
//! fraction digits is read and everything below the millisecond is
//! truncated. A time without a zone is refused: its instant is unknown.
//! Deliberately refused as well: lower-case `t`/`z`, a space instead of `T`,
//! the basic format without separators, `24:00`, and leap second `:60`.

/// Why a text is not an intake time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TimeError {
    /// The text does not have the shape of a date and time with a zone.
    Shape,
    /// Date and time are well formed but no zone follows.
    NoZone,
    /// No such day (month 13, 31 April, 29 February of a common year).
    Date,
    /// No such time of day (hour 24, minute or second 60).
    TimeOfDay,
    /// The zone offset is malformed or beyond ±23:59.
    Offset,
}

impl TimeError {
    /// What is wrong, in a few words.
    pub(super) const fn reason(self) -> &'static str {
        match self {
            Self::Shape => "not of the form YYYY-MM-DDTHH:MM[:SS[.fff]] with a zone",
            Self::NoZone => "no zone (add Z or an offset such as +03:00)",
            Self::Date => "no such date",
            Self::TimeOfDay => "no such time of day",
            Self::Offset => "invalid zone offset (Z, ±HH:MM, ±HHMM or ±HH, at most 23:59)",
        }
    }
}

const MS_PER_SECOND: i64 = 1_000;
const SECONDS_PER_DAY: i64 = 86_400;

/// Parses an intake time into milliseconds since the Unix epoch, UTC.
pub(super) fn parse_time_ms(text: &str) -> Result<i64, TimeError> {
    let mut cursor = Cursor {
        bytes: text.as_bytes(),
        pos: 0,
    };
    let year = cursor.digits(4).ok_or(TimeError::Shape)?;
    cursor.expect(b'-')?;
    let month = cursor.digits(2).ok_or(TimeError::Shape)?;
    cursor.expect(b'-')?;
    let day = cursor.digits(2).ok_or(TimeError::Shape)?;
    cursor.expect(b'T')?;
    let hour = cursor.digits(2).ok_or(TimeError::Shape)?;
    cursor.expect(b':')?;
    let minute = cursor.digits(2).ok_or(TimeError::Shape)?;
    let (second, millis) = if cursor.eat(b':') {
        let second = cursor.digits(2).ok_or(TimeError::Shape)?;
        let millis = if cursor.eat(b'.') {
            cursor.fraction_ms()?
        } else {
            0
        };
        (second, millis)
    } else {
        (0, 0)
    };
    let offset_seconds = cursor.zone()?;
    if cursor.peek().is_some() {
        return Err(TimeError::Shape);
    }

    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return Err(TimeError::Date);
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err(TimeError::TimeOfDay);
    }
    let days = days_from_civil(i64::from(year), i64::from(month), i64::from(day));
    let seconds = days * SECONDS_PER_DAY
        + i64::from(hour) * 3_600
        + i64::from(minute) * 60
        + i64::from(second)
        - offset_seconds;
    Ok(seconds * MS_PER_SECOND + i64::from(millis))
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

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.pos += 1;
        }
        found
    }

    fn expect(&mut self, byte: u8) -> Result<(), TimeError> {
        if self.eat(byte) {
            Ok(())
        } else {
            Err(TimeError::Shape)
        }
    }

    /// Exactly `count` ASCII digits as a number (`count` is at most 4 here).
    fn digits(&mut self, count: usize) -> Option<u32> {
        let mut value = 0;
        for _ in 0..count {
            let digit = self.peek().filter(u8::is_ascii_digit)?;
            value = value * 10 + u32::from(digit - b'0');
            self.pos += 1;
        }
        Some(value)
    }

    /// One or more fraction digits, as whole milliseconds (truncated).
    fn fraction_ms(&mut self) -> Result<u32, TimeError> {
        let start = self.pos;
        let mut millis = 0;
        while let Some(digit) = self.peek().filter(u8::is_ascii_digit) {
            if self.pos - start < 3 {
                millis = millis * 10 + u32::from(digit - b'0');
            }
            self.pos += 1;
        }
        match self.pos - start {
            0 => Err(TimeError::Shape),
            1 => Ok(millis * 100),
            2 => Ok(millis * 10),
            _ => Ok(millis),
        }
    }

    /// The zone, as seconds east of UTC.
    fn zone(&mut self) -> Result<i64, TimeError> {
        let sign = match self.peek() {
            None => return Err(TimeError::NoZone),
            Some(b'Z') => {
                self.pos += 1;
                return Ok(0);
            }
            Some(b'+') => 1,
            Some(b'-') => -1,
            Some(_) => return Err(TimeError::Shape),
        };
        self.pos += 1;
        let hours = self.digits(2).ok_or(TimeError::Offset)?;
        // `+HH:MM` and `+HHMM` carry minutes; `+HH` does not.
        let colon = self.eat(b':');
        let minutes = if colon || self.peek().is_some_and(|byte| byte.is_ascii_digit()) {
            self.digits(2).ok_or(TimeError::Offset)?
        } else {
            0
        };
        if hours > 23 || minutes > 59 {
            return Err(TimeError::Offset);
        }
        Ok(sign * (i64::from(hours) * 3_600 + i64::from(minutes) * 60))
    }
}

fn is_leap_year(year: u32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if is_leap_year(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`); exact for every year this parser reads.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests;
