//! The time selection of `/dwh/v1/tracker/raw_data/read` (`from`, `to`,
//! `interval`, `server_time_filter`) and of the fuel resampling `interval`,
//! parsed into half-open millisecond ranges `[from_ms, to_ms)`.
//!
//! Entry points: [`parse_selection`] for a whole request, and the pieces it is
//! built from: [`parse_interval`], [`parse_instant`], [`parse_duration`].
//! Every failure is a [`TimeError`] naming the parameter as the caller wrote
//! it; all are code 7 except a message range over
//! [`TimeContext::max_span_ms`], which is code 211.
//!
//! # Instants (clarification 16)
//!
//! `YYYY-MM-DDTHH:MM[:SS[.f…]]` followed by `Z`, `±HH:MM`, `±HHMM` or `±HH`
//! (at most 23:59). Seconds are optional; a fraction needs seconds, may have
//! any number of digits and is truncated to the millisecond. Refused: `24:00`,
//! second `60`, lower-case `t`/`z`, the basic format without separators.
//!
//! With `iso_datetime=false` ([`TimeContext::iso`] `== false`, clarification
//! 14) the separator may also be a space, and the offset may be left out: the
//! wall-clock time is then read in [`TimeContext::zone`], the account's zone.
//! With `iso_datetime=true` an instant without offset is refused.
//!
//! # Wall-clock times that do not name exactly one instant
//!
//! * **In a DST gap** (Europe/Berlin `2024-03-31 02:30`, which clocks skip):
//!   the first instant after the gap, where the clocks resume (`03:00+02:00`).
//!   Every wall time in the gap names that same instant, so reading is
//!   monotonic: a later wall time never gives an earlier instant, and a
//!   `from`/`to` pair in order stays in order (or becomes empty, code 7).
//! * **In a DST overlap** (Europe/Berlin `2024-10-27 02:30`, which occurs
//!   twice): the earlier of the two instants (`02:30+02:00`). A caller who
//!   means the later one writes the offset.
//!
//! # Durations
//!
//! `PnYnMnWnDTnHnMnS`: each unit at most once and in this order, at least one
//! component, a `T` before the time units, not zero, not negative. The last
//! component may carry a fraction (`.` or `,`), except years and months,
//! whose length varies. See [`Duration`] for how it is applied:
//!
//! * **Years and months** are calendar arithmetic in the account's zone: the
//!   same day of the month, clamped to the month's last day (`Jan 31 + P1M`
//!   is the last day of February; `Mar 31 - P1M` likewise).
//! * **Weeks and days** are calendar days in the account's zone: the
//!   wall-clock time of day is kept, so a day across a DST change lasts 23 or
//!   25 hours (Berlin `2024-03-30T12:00+01:00` + `P1D` is
//!   `2024-03-31T12:00+02:00`, 23 h later). A fraction of a day or week is
//!   exact time (`P1.5D` = one calendar day, then 12 h).
//! * **Hours, minutes and seconds** are exact elapsed time.
//!
//! The calendar part is applied first, then the exact part, in both
//! directions (`<start>/<duration>` and `<duration>/<end>`). A wall time that
//! the calendar step lands on is resolved by the gap and overlap rules above.
//! The calendar is the account's zone even when the anchor was written with
//! another offset.
//!
//! # What is not checked here
//!
//! Ranges reaching into the future, or back beyond the plan's store period,
//! are valid: future data does not exist yet, and data older than the store
//! period is simply not returned (clarification 19). The caller clips a range
//! to its retention with [`Range::intersect`].

mod duration;
mod error;
mod instant;
mod interval;
mod local;
mod selection;

pub use duration::Duration;
pub use error::TimeError;
pub use interval::{parse_interval, range_ending_now};
pub use selection::{Selection, SelectionParams, parse_selection};

/// Where times without an offset are read (`iso_datetime=false`), what "now" is, and the span limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeContext {
    /// The account's zone: wall-clock times without an offset are read in it,
    /// and calendar durations (years, months, weeks, days) follow its calendar.
    pub zone: chrono_tz::Tz,
    /// The current time in milliseconds since the Unix epoch (an injected
    /// clock); used by [`range_ending_now`] for defaults such as `P7D/<now>`.
    pub now_ms: i64,
    /// The request's `iso_datetime`: `true` requires an offset on every
    /// instant; `false` also accepts `YYYY-MM-DD HH:MM[:SS]` read in [`Self::zone`].
    pub iso: bool,
    /// The longest message-time range allowed, in milliseconds; `None` for no
    /// limit. A longer range is code 211. The server-time filter is not limited.
    pub max_span_ms: Option<i64>,
}

/// A half-open range of instants `[from_ms, to_ms)`, in milliseconds since the Unix epoch.
///
/// Ranges produced by this module are never empty: `from_ms < to_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Range {
    /// The first instant in the range (inclusive).
    pub from_ms: i64,
    /// The first instant after the range (exclusive).
    pub to_ms: i64,
}

impl Range {
    /// The length of the range in milliseconds (0 for an empty or inverted range).
    pub const fn span_ms(&self) -> i64 {
        let span = self.to_ms.saturating_sub(self.from_ms);
        if span < 0 { 0 } else { span }
    }

    /// Whether `ms` lies in `[from_ms, to_ms)`.
    pub const fn contains(&self, ms: i64) -> bool {
        self.from_ms <= ms && ms < self.to_ms
    }

    /// The instants in both ranges, or `None` if they share none (e.g. to clip to a store period).
    pub fn intersect(&self, other: &Range) -> Option<Range> {
        let from_ms = self.from_ms.max(other.from_ms);
        let to_ms = self.to_ms.min(other.to_ms);
        (from_ms < to_ms).then_some(Range { from_ms, to_ms })
    }
}

/// Parses one instant (see the module docs for the accepted forms) into milliseconds since the Unix epoch.
///
/// Leading and trailing whitespace is ignored. Errors are code 7 naming `field`.
pub fn parse_instant(text: &str, field: &'static str, ctx: &TimeContext) -> Result<i64, TimeError> {
    instant::parse_ms(text.trim(), ctx)
        .map_err(|err| TimeError::invalid(field, err.describe(text.trim(), ctx.iso)))
}

/// Parses an ISO 8601 duration `PnYnMnWnDTnHnMnS` (see the module docs).
///
/// Leading and trailing whitespace is ignored. Errors are code 7 naming `field`.
pub fn parse_duration(text: &str, field: &'static str) -> Result<Duration, TimeError> {
    duration::parse(text.trim()).map_err(|err| TimeError::invalid(field, err.describe(text.trim())))
}

/// Quotes a caller's value for an error message, cut to a readable length.
fn quoted(text: &str) -> String {
    const MAX_CHARS: usize = 60;
    if text.chars().count() <= MAX_CHARS {
        format!("{text:?}")
    } else {
        let head: String = text.chars().take(MAX_CHARS).collect();
        format!("{head:?}…")
    }
}

#[cfg(test)]
mod tests;
