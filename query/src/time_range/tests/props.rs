//! Properties: chrono's formatting parses back to the same instant, durations
//! read back their components, and no text makes a parser panic.

use chrono::{DateTime, Days, MappedLocalTime, Offset, SecondsFormat, TimeZone};
use chrono_tz::{TZ_VARIANTS, Tz};
use proptest::prelude::*;
use serde_json::Value;

use super::super::instant::parse_ms;
use super::super::{
    Duration, SelectionParams, TimeContext, local, parse_duration, parse_instant, parse_interval,
    parse_selection,
};
use super::{NOW_MS, iso_in, wall_in};

/// 0001-01-02T00:00:00Z and 9999-12-30T00:00:00Z: four-digit years in every zone.
const FIRST_MS: i64 = -62_135_510_400_000;
const LAST_MS: i64 = 253_402_128_000_000;

fn zone() -> impl Strategy<Value = Tz> {
    (0..TZ_VARIANTS.len()).prop_map(|index| TZ_VARIANTS[index])
}

fn instant_ms() -> impl Strategy<Value = i64> {
    FIRST_MS..LAST_MS
}

/// `±HH` for an offset in whole hours, else `None`.
fn hours_only(offset_seconds: i32) -> Option<String> {
    (offset_seconds % 3_600 == 0).then(|| {
        let sign = if offset_seconds < 0 { '-' } else { '+' };
        format!("{sign}{:02}", offset_seconds.abs() / 3_600)
    })
}

proptest! {
    #[test]
    fn chrono_formatted_instants_parse_to_the_same_ms(
        instant_ms in instant_ms(),
        zone in zone(),
        form in 0..5u8,
    ) {
        let instant = DateTime::from_timestamp_millis(instant_ms).unwrap();
        let local = instant.with_timezone(&zone);
        let offset_seconds = local.offset().fix().local_minus_utc();
        // Old mean-time offsets carry seconds, which no written offset can.
        prop_assume!(offset_seconds % 60 == 0);
        let text = match (form, hours_only(offset_seconds)) {
            (0, _) => local.format("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string(),
            (1, _) => local.format("%Y-%m-%dT%H:%M:%S%.3f%z").to_string(),
            (2, _) => local.format("%Y-%m-%dT%H:%M:%S%.f%:z").to_string(),
            (3, _) => instant.to_rfc3339_opts(SecondsFormat::Millis, true),
            (_, Some(hours)) => format!("{}{hours}", local.format("%Y-%m-%dT%H:%M:%S%.3f")),
            (_, None) => local.to_rfc3339_opts(SecondsFormat::AutoSi, false),
        };
        // The account's zone plays no part once an offset is written.
        prop_assert_eq!(parse_ms(&text, &iso_in("Asia/Almaty")), Ok(instant_ms), "{}", text);
        prop_assert_eq!(parse_ms(&text, &wall_in("America/New_York")), Ok(instant_ms), "{}", text);
    }

    #[test]
    fn wall_clock_times_parse_to_the_same_ms_or_the_earlier_of_two(
        instant_ms in instant_ms(),
        zone in zone(),
    ) {
        let local = DateTime::from_timestamp_millis(instant_ms).unwrap().with_timezone(&zone);
        let text = local.format("%Y-%m-%d %H:%M:%S%.3f").to_string();
        let expected = match zone.from_local_datetime(&local.naive_local()) {
            MappedLocalTime::Single(_) => instant_ms,
            MappedLocalTime::Ambiguous(earlier, _) => earlier.timestamp_millis(),
            MappedLocalTime::None => unreachable!("{text} was the wall time of an instant"),
        };
        let ctx = TimeContext { zone, ..wall_in("UTC") };
        prop_assert_eq!(parse_ms(&text, &ctx), Ok(expected), "{}", text);
    }

    #[test]
    fn a_wall_time_in_any_gap_is_the_instant_the_clocks_resume(
        zone in zone(),
        year in 1970..2038i32,
        share in 0.0..1.0f64,
    ) {
        let Some((change_ms, before_s, after_s)) = first_forward_change(zone, year) else {
            return Ok(());
        };
        // Wall times from `change + before` up to `change + after` are skipped.
        let gap_ms = i64::from(after_s - before_s) * 1_000;
        let into_gap_ms = (gap_ms as f64 * share) as i64;
        let wall_ms = change_ms + i64::from(before_s) * 1_000 + into_gap_ms;
        let wall = DateTime::from_timestamp_millis(wall_ms).unwrap().naive_utc();
        prop_assume!(matches!(zone.from_local_datetime(&wall), MappedLocalTime::None));
        let text = wall.format("%Y-%m-%d %H:%M:%S%.3f").to_string();
        let ctx = TimeContext { zone, ..wall_in("UTC") };
        prop_assert_eq!(parse_ms(&text, &ctx), Ok(change_ms), "{} in {}", text, zone);
    }

    #[test]
    fn calendar_days_keep_the_wall_clock_time(
        start_ms in 0..4_102_444_800_000_i64,
        zone in zone(),
        days in 1..800u32,
    ) {
        let ctx = TimeContext { zone, ..iso_in("UTC") };
        let start = DateTime::from_timestamp_millis(start_ms).unwrap().to_rfc3339();
        let range = parse_interval(&format!("{start}/P{days}D"), "interval", &ctx).unwrap();
        prop_assert_eq!(range.from_ms, start_ms);
        prop_assert!(range.to_ms > range.from_ms);
        let wall = local::wall_clock(start_ms, zone).unwrap() + Days::new(u64::from(days));
        if let MappedLocalTime::Single(end) = zone.from_local_datetime(&wall) {
            prop_assert_eq!(range.to_ms, end.timestamp_millis());
        }
        // Exact time is exact, whatever the zone.
        let exact = parse_interval(&format!("{start}/PT{days}H"), "interval", &ctx).unwrap();
        prop_assert_eq!(exact.span_ms(), i64::from(days) * 3_600_000);
        let exact = parse_interval(&format!("PT{days}.5S/{start}"), "interval", &ctx).unwrap();
        prop_assert_eq!(exact.span_ms(), i64::from(days) * 1_000 + 500);
    }

    #[test]
    fn written_durations_read_back_their_components(
        parts in proptest::collection::vec(proptest::option::of(0..10_000u32), 7),
        millis in 0..1_000u32,
    ) {
        const DESIGNATORS: [&str; 7] = ["Y", "M", "W", "D", "H", "M", "S"];
        let mut text = String::from("P");
        for (index, part) in parts.iter().enumerate() {
            if index == 4 && parts[4..].iter().any(Option::is_some) {
                text.push('T');
            }
            if let Some(count) = part {
                text.push_str(&format!("{count}{}", DESIGNATORS[index]));
            }
        }
        let count = |index: usize| u64::from(parts[index].unwrap_or(0));
        let mut expected = Duration {
            months: u32::try_from(count(0) * 12 + count(1)).unwrap(),
            days: u32::try_from(count(2) * 7 + count(3)).unwrap(),
            millis: count(4) * 3_600_000 + count(5) * 60_000 + count(6) * 1_000,
        };
        if parts[6].is_some() && millis > 0 {
            // A fraction on the seconds, the last component.
            text.insert_str(text.len() - 1, &format!(".{millis:03}"));
            expected.millis += u64::from(millis);
        }
        let parsed = parse_duration(&text, "interval");
        if expected.is_zero() {
            prop_assert!(parsed.is_err(), "{}", text);
        } else {
            prop_assert_eq!(parsed, Ok(expected), "{}", text);
        }
    }

    #[test]
    fn no_text_makes_a_parser_panic(text in any::<String>(), iso in any::<bool>()) {
        exercise(&text, iso);
    }

    #[test]
    fn no_near_miss_makes_a_parser_panic(
        text in "[0-9PTWYMDHSZ:+., /{}\"-]{0,48}",
        iso in any::<bool>(),
    ) {
        exercise(&text, iso);
    }

    #[test]
    fn no_mutation_of_a_valid_text_makes_a_parser_panic(
        base in 0..4usize,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), "[0-9PTZ:+. /-]"), 1..4),
        iso in any::<bool>(),
    ) {
        let mut text = [
            "2024-03-31T02:30:00.123+02:00/P1Y2M3W4DT5H6M7.5S",
            "P1M/2024-10-27 02:30:00",
            "2011-12-30 12:00/2011-12-31 12:00",
            r#"{"from":"2024-03-01T00:00Z","to":"2024-03-02T00:00Z"}"#,
        ][base]
            .to_owned();
        for (position, replacement) in edits {
            let at = position.index(text.len());
            if text.is_char_boundary(at) && text.is_char_boundary(at + 1) {
                text.replace_range(at..at + 1, &replacement);
            }
        }
        exercise(&text, iso);
    }
}

/// The offset of `zone` at `instant_ms`, in seconds east of UTC.
fn offset_s(zone: Tz, instant_ms: i64) -> i32 {
    let instant = DateTime::from_timestamp_millis(instant_ms).unwrap();
    zone.offset_from_utc_datetime(&instant.naive_utc())
        .fix()
        .local_minus_utc()
}

/// The first instant of `year` (UTC) where `zone`'s offset grows, with the offsets before and after.
fn first_forward_change(zone: Tz, year: i32) -> Option<(i64, i32, i32)> {
    const DAY_MS: i64 = 86_400_000;
    let start_ms = DateTime::parse_from_rfc3339(&format!("{year}-01-01T00:00:00Z"))
        .unwrap()
        .timestamp_millis();
    (0..366).find_map(|day| {
        let (mut below, mut above) = (start_ms + day * DAY_MS, start_ms + (day + 1) * DAY_MS);
        let (before_s, after_s) = (offset_s(zone, below), offset_s(zone, above));
        if after_s <= before_s {
            return None;
        }
        while above - below > 1 {
            let middle = below + (above - below) / 2;
            if offset_s(zone, middle) == before_s {
                below = middle;
            } else {
                above = middle;
            }
        }
        Some((above, before_s, offset_s(zone, above)))
    })
}

/// Runs every parser on `text` in zones with gaps and overlaps; only errors may come back.
fn exercise(text: &str, iso: bool) {
    for zone in ["UTC", "Europe/Berlin", "Pacific/Apia", "Asia/Kathmandu"] {
        let ctx = TimeContext {
            iso,
            max_span_ms: Some(31 * 86_400_000),
            now_ms: NOW_MS,
            zone: zone.parse().unwrap(),
        };
        let _ = parse_instant(text, "from", &ctx);
        let _ = parse_duration(text, "interval");
        let _ = parse_interval(text, "interval", &ctx);
        let halves = text.split_once('/').unwrap_or((text, text));
        let _ = parse_selection(
            &SelectionParams {
                from: Some(halves.0.to_owned()),
                to: Some(halves.1.to_owned()),
                interval: None,
                server_time_filter: None,
            },
            &ctx,
        );
        let _ = parse_selection(
            &SelectionParams {
                interval: Some(text.to_owned()),
                ..SelectionParams::default()
            },
            &ctx,
        );
        // With a valid message range, so that the filter is read too.
        let _ = parse_selection(
            &SelectionParams {
                interval: Some("2024-03-01T00:00Z/P1D".to_owned()),
                server_time_filter: Some(Value::String(text.to_owned())),
                ..SelectionParams::default()
            },
            &ctx,
        );
    }
}
