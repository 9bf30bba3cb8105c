//! Wall-clock times in a zone: reading them as instants (with the gap and
//! overlap rules of the module docs) and the wall time of an instant.

use chrono::{DateTime, MappedLocalTime, NaiveDateTime, Offset, TimeZone};
use chrono_tz::Tz;

/// Far enough on either side of a wall time to bracket every instant it could
/// name: zone offsets stay within ±16 h (historic mean-time offsets included).
const SEARCH_WINDOW_MS: i64 = 18 * 3_600_000;

/// The instant a wall-clock time names in `zone`: the only one, the earlier
/// one in an overlap, or the end of the gap it falls in.
///
/// `None` only beyond the range of representable dates.
pub(super) fn to_utc_ms(wall: NaiveDateTime, zone: Tz) -> Option<i64> {
    match zone.from_local_datetime(&wall) {
        MappedLocalTime::Single(instant) => Some(instant.timestamp_millis()),
        MappedLocalTime::Ambiguous(earlier, _later) => Some(earlier.timestamp_millis()),
        MappedLocalTime::None => gap_end_ms(wall, zone),
    }
}

/// The wall-clock time of `instant_ms` in `zone`.
pub(super) fn wall_clock(instant_ms: i64, zone: Tz) -> Option<NaiveDateTime> {
    let instant = DateTime::from_timestamp_millis(instant_ms)?;
    Some(instant.with_timezone(&zone).naive_local())
}

/// The first instant whose wall time is at or after `wall`, for a `wall` that
/// `zone` skips: where the clocks resume after the gap.
///
/// Bisects over instants: the wall time is below `wall` at the low end of the
/// window and above it at the high end, and rises with the instant (the gap
/// is a forward jump; the window is too short to also hold a backward one).
fn gap_end_ms(wall: NaiveDateTime, zone: Tz) -> Option<i64> {
    let target_ms = wall.and_utc().timestamp_millis();
    let mut below = target_ms.checked_sub(SEARCH_WINDOW_MS)?;
    let mut at_or_above = target_ms.checked_add(SEARCH_WINDOW_MS)?;
    while at_or_above - below > 1 {
        let middle = below + (at_or_above - below) / 2;
        if wall_ms(middle, zone)? >= target_ms {
            at_or_above = middle;
        } else {
            below = middle;
        }
    }
    Some(at_or_above)
}

/// The wall time of `instant_ms` in `zone`, as milliseconds of a UTC-less clock.
fn wall_ms(instant_ms: i64, zone: Tz) -> Option<i64> {
    let instant = DateTime::from_timestamp_millis(instant_ms)?;
    let offset_seconds = zone
        .offset_from_utc_datetime(&instant.naive_utc())
        .fix()
        .local_minus_utc();
    instant_ms.checked_add(i64::from(offset_seconds) * 1_000)
}
