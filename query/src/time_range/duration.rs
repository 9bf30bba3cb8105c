//! ISO 8601 durations `PnYnMnWnDTnHnMnS`, and adding them to instants on a
//! zone's calendar.

use chrono::{DateTime, Days, Months};
use chrono_tz::Tz;

use super::{local, quoted};

/// An ISO 8601 duration, kept as a calendar part and an exact part.
///
/// Years and months become [`Self::months`], weeks and days [`Self::days`],
/// hours, minutes, seconds and any fraction [`Self::millis`]. Applying it
/// ([`Self::after`], [`Self::before`]) moves the calendar part on the zone's
/// calendar, keeping the wall-clock time, then the exact part as elapsed time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Duration {
    /// Calendar months (years × 12 + months); the day of the month is kept,
    /// clamped to the last day of a shorter month.
    pub months: u32,
    /// Calendar days (weeks × 7 + days); 23 or 25 hours across a DST change.
    pub days: u32,
    /// Exact elapsed milliseconds: hours, minutes, seconds and fractions.
    pub millis: u64,
}

impl Duration {
    /// Whether the duration is empty (a parsed duration never is).
    pub const fn is_zero(&self) -> bool {
        self.months == 0 && self.days == 0 && self.millis == 0
    }

    /// The instant this duration after `start_ms`, the calendar part on `zone`'s calendar.
    ///
    /// `None` when the result cannot be represented.
    pub fn after(&self, start_ms: i64, zone: Tz) -> Option<i64> {
        let moved_ms = if self.months == 0 && self.days == 0 {
            // No calendar step: do not round-trip through the wall clock, which
            // would move an instant in the second half of an overlap.
            start_ms
        } else {
            let wall = local::wall_clock(start_ms, zone)?
                .checked_add_months(Months::new(self.months))?
                .checked_add_days(Days::new(u64::from(self.days)))?;
            local::to_utc_ms(wall, zone)?
        };
        representable(moved_ms.checked_add(i64::try_from(self.millis).ok()?)?)
    }

    /// The instant this duration before `end_ms`, the calendar part on `zone`'s calendar.
    ///
    /// `None` when the result cannot be represented.
    pub fn before(&self, end_ms: i64, zone: Tz) -> Option<i64> {
        let moved_ms = if self.months == 0 && self.days == 0 {
            end_ms
        } else {
            let wall = local::wall_clock(end_ms, zone)?
                .checked_sub_months(Months::new(self.months))?
                .checked_sub_days(Days::new(u64::from(self.days)))?;
            local::to_utc_ms(wall, zone)?
        };
        representable(moved_ms.checked_sub(i64::try_from(self.millis).ok()?)?)
    }
}

/// `instant_ms` if it is a date and time chrono can represent (about ±262,000 years).
fn representable(instant_ms: i64) -> Option<i64> {
    DateTime::from_timestamp_millis(instant_ms).map(|_| instant_ms)
}

/// Why a text is not a duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DurationError {
    /// Not of the shape `PnYnMnWnDTnHnMnS`.
    Shape,
    /// A unit repeated or out of order.
    Order,
    /// Hours or seconds before the `T` (`P1H`).
    MissingT,
    /// A fraction on a component other than the last.
    FractionNotLast,
    /// A fraction of years or months, whose length varies.
    FractionOfMonths,
    /// All components are zero.
    Zero,
    /// Too large to represent.
    TooLarge,
}

impl DurationError {
    /// The error message for `text`, phrased to follow the parameter name.
    pub(super) fn describe(self, text: &str) -> String {
        let got = quoted(text);
        let what = match self {
            Self::Shape => {
                "must be an ISO 8601 duration PnYnMnWnDTnHnMnS, such as P7D, PT15M or P2DT3H45M10S"
            }
            Self::Order => {
                "must give each unit at most once, in the order Y, M, W, D, then T and H, M, S"
            }
            Self::MissingT => "must have a T before hours, minutes and seconds, as in PT1H",
            Self::FractionNotLast => "may have a fraction only on its last component",
            Self::FractionOfMonths => {
                "cannot have a fraction of years or months, whose length varies"
            }
            Self::Zero => "must not be a zero duration",
            Self::TooLarge => "is too large",
        };
        format!("{what}, got {got}")
    }
}

/// A unit of a duration, in the order they must be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Unit {
    Years,
    Months,
    Weeks,
    Days,
    Hours,
    Minutes,
    Seconds,
}

impl Unit {
    /// The unit a designator names before the `T` (`time == false`) or after it.
    fn from_designator(designator: u8, time: bool) -> Result<Unit, DurationError> {
        match (designator, time) {
            (b'Y', false) => Ok(Unit::Years),
            (b'M', false) => Ok(Unit::Months),
            (b'W', false) => Ok(Unit::Weeks),
            (b'D', false) => Ok(Unit::Days),
            (b'H' | b'S', false) => Err(DurationError::MissingT),
            (b'H', true) => Ok(Unit::Hours),
            (b'M', true) => Ok(Unit::Minutes),
            (b'S', true) => Ok(Unit::Seconds),
            (b'Y' | b'W' | b'D', true) => Err(DurationError::Order),
            _ => Err(DurationError::Shape),
        }
    }

    /// The exact length a fraction of this unit stands for; `None` for calendar months.
    const fn fraction_base_ms(self) -> Option<u64> {
        match self {
            Unit::Years | Unit::Months => None,
            Unit::Weeks => Some(7 * 86_400_000),
            Unit::Days => Some(86_400_000),
            Unit::Hours => Some(3_600_000),
            Unit::Minutes => Some(60_000),
            Unit::Seconds => Some(1_000),
        }
    }
}

/// Fraction digits read; later ones are below a microsecond of a week and are dropped.
const MAX_FRACTION_DIGITS: u32 = 12;

/// One written component: `<whole>[.<fraction>]<unit>`.
#[derive(Debug, Clone, Copy)]
struct Component {
    unit: Unit,
    whole: u64,
    /// The fraction digits as an integer, and how many digits were kept.
    fraction: Option<(u64, u32)>,
}

/// Parses a duration (already trimmed).
pub(super) fn parse(text: &str) -> Result<Duration, DurationError> {
    let body = text.strip_prefix('P').ok_or(DurationError::Shape)?;
    let (date_part, time_part) = match body.split_once('T') {
        Some((_, "")) => return Err(DurationError::Shape),
        Some((date, time)) => (date, time),
        None => (body, ""),
    };
    let mut components = Vec::new();
    read_components(date_part, false, &mut components)?;
    read_components(time_part, true, &mut components)?;
    if components.is_empty() {
        return Err(DurationError::Shape);
    }

    let last = components.len() - 1;
    let mut months: u64 = 0;
    let mut days: u64 = 0;
    let mut millis: u64 = 0;
    for (index, component) in components.iter().enumerate() {
        let whole = component.whole;
        match component.unit {
            Unit::Years => months = add(months, mul(whole, 12)?)?,
            Unit::Months => months = add(months, whole)?,
            Unit::Weeks => days = add(days, mul(whole, 7)?)?,
            Unit::Days => days = add(days, whole)?,
            Unit::Hours => millis = add(millis, mul(whole, 3_600_000)?)?,
            Unit::Minutes => millis = add(millis, mul(whole, 60_000)?)?,
            Unit::Seconds => millis = add(millis, mul(whole, 1_000)?)?,
        }
        if let Some((digits, count)) = component.fraction {
            if index != last {
                return Err(DurationError::FractionNotLast);
            }
            let base_ms = component
                .unit
                .fraction_base_ms()
                .ok_or(DurationError::FractionOfMonths)?;
            // Exact in u128: base_ms < 2^30 and digits < 10^12 < 2^40.
            let part = u128::from(base_ms) * u128::from(digits) / 10u128.pow(count);
            millis = add(
                millis,
                u64::try_from(part).map_err(|_| DurationError::TooLarge)?,
            )?;
        }
    }
    let duration = Duration {
        months: u32::try_from(months).map_err(|_| DurationError::TooLarge)?,
        days: u32::try_from(days).map_err(|_| DurationError::TooLarge)?,
        millis,
    };
    if duration.is_zero() {
        return Err(DurationError::Zero);
    }
    Ok(duration)
}

/// Reads the components of the part before the `T` (`time == false`) or after it.
fn read_components(
    part: &str,
    time: bool,
    components: &mut Vec<Component>,
) -> Result<(), DurationError> {
    let bytes = part.as_bytes();
    let mut pos = 0;
    while pos < bytes.len() {
        let (whole, after_whole) = read_digits(bytes, pos)?;
        pos = after_whole;
        let fraction = match bytes.get(pos) {
            Some(b'.' | b',') => {
                let (digits, count, after_fraction) = read_fraction(bytes, pos + 1)?;
                pos = after_fraction;
                Some((digits, count))
            }
            _ => None,
        };
        let designator = bytes.get(pos).copied().ok_or(DurationError::Shape)?;
        pos += 1;
        let unit = Unit::from_designator(designator, time)?;
        if components
            .last()
            .is_some_and(|previous| previous.unit >= unit)
        {
            return Err(DurationError::Order);
        }
        components.push(Component {
            unit,
            whole,
            fraction,
        });
    }
    Ok(())
}

/// One or more digits from `start`: their value and the position after them.
fn read_digits(bytes: &[u8], start: usize) -> Result<(u64, usize), DurationError> {
    let mut pos = start;
    let mut value: u64 = 0;
    while let Some(digit) = bytes.get(pos).filter(|byte| byte.is_ascii_digit()) {
        value = add(mul(value, 10)?, u64::from(digit - b'0'))?;
        pos += 1;
    }
    if pos == start {
        return Err(DurationError::Shape);
    }
    Ok((value, pos))
}

/// One or more fraction digits from `start`: the first [`MAX_FRACTION_DIGITS`]
/// as an integer, how many were kept, and the position after all of them.
fn read_fraction(bytes: &[u8], start: usize) -> Result<(u64, u32, usize), DurationError> {
    let mut pos = start;
    let mut digits: u64 = 0;
    let mut count: u32 = 0;
    while let Some(digit) = bytes.get(pos).filter(|byte| byte.is_ascii_digit()) {
        if count < MAX_FRACTION_DIGITS {
            digits = digits * 10 + u64::from(digit - b'0');
            count += 1;
        }
        pos += 1;
    }
    if pos == start {
        return Err(DurationError::Shape);
    }
    Ok((digits, count, pos))
}

fn add(left: u64, right: u64) -> Result<u64, DurationError> {
    left.checked_add(right).ok_or(DurationError::TooLarge)
}

fn mul(left: u64, right: u64) -> Result<u64, DurationError> {
    left.checked_mul(right).ok_or(DurationError::TooLarge)
}
