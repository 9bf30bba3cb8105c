//! Tests of time selection parsing, one file per part, with shared helpers here.

use chrono::DateTime;
use chrono_tz::Tz;

use super::TimeContext;

mod duration;
mod instant;
mod interval;
mod props;
mod selection;

/// 2024-06-01T00:00:00Z, the injected "now" of every test context.
const NOW_MS: i64 = 1_717_200_000_000;

/// A context with `iso_datetime=true`, no span limit, in `zone`.
fn iso_in(zone: &str) -> TimeContext {
    TimeContext {
        zone: tz(zone),
        now_ms: NOW_MS,
        iso: true,
        max_span_ms: None,
    }
}

/// A context with `iso_datetime=false` in `zone`: wall-clock times are read there.
fn wall_in(zone: &str) -> TimeContext {
    TimeContext {
        iso: false,
        ..iso_in(zone)
    }
}

fn tz(zone: &str) -> Tz {
    zone.parse().unwrap()
}

/// Milliseconds of an RFC 3339 text, read by chrono: the oracle of expected values.
fn ms(rfc3339: &str) -> i64 {
    DateTime::parse_from_rfc3339(rfc3339)
        .unwrap_or_else(|err| panic!("bad oracle {rfc3339}: {err}"))
        .timestamp_millis()
}

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;
