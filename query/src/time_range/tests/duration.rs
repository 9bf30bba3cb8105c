use schemas::{ErrorCode, HasCode};

use super::super::duration::{DurationError, parse};
use super::super::{Duration, parse_duration};
use super::{DAY_MS, HOUR_MS, ms, tz};

fn exact(millis: u64) -> Duration {
    Duration {
        millis,
        ..Duration::default()
    }
}

fn calendar(months: u32, days: u32, millis: u64) -> Duration {
    Duration {
        months,
        days,
        millis,
    }
}

#[test]
fn every_unit_and_combination_is_read() {
    let cases: &[(&str, Duration)] = &[
        (
            "P2DT3H45M10S",
            calendar(0, 2, (3 * 3_600 + 45 * 60 + 10) * 1_000),
        ),
        ("PT15M", exact(15 * 60_000)),
        ("P7D", calendar(0, 7, 0)),
        ("P1M", calendar(1, 0, 0)),
        ("P1Y", calendar(12, 0, 0)),
        (
            "P1Y2M3DT4H5M6S",
            calendar(14, 3, 4 * 3_600_000 + 5 * 60_000 + 6_000),
        ),
        ("P2W", calendar(0, 14, 0)),
        ("P1W2D", calendar(0, 9, 0)),
        ("P1Y1W", calendar(12, 7, 0)),
        ("PT1H", exact(3_600_000)),
        ("PT36H", exact(36 * 3_600_000)),
        ("PT90M", exact(90 * 60_000)),
        ("PT86400S", exact(86_400_000)),
        ("PT1H0M0S", exact(3_600_000)),
        ("P0DT1S", exact(1_000)),
        ("P0010D", calendar(0, 10, 0)),
        // A fraction on the last component, with a point or a comma.
        ("PT0.5S", exact(500)),
        ("PT0.001S", exact(1)),
        ("PT1.9999S", exact(1_999)),
        ("PT1.5H", exact(5_400_000)),
        ("PT1,5H", exact(5_400_000)),
        ("PT0.25M", exact(15_000)),
        ("P1DT0.5H", calendar(0, 1, 1_800_000)),
        ("P1.5D", calendar(0, 1, 12 * 3_600_000)),
        ("P0.5W", exact(302_400_000)),
        ("P1.5W", calendar(0, 7, 302_400_000)),
        ("PT0.123456789012345S", exact(123)),
        ("P4294967295D", calendar(0, u32::MAX, 0)),
    ];
    for &(text, expected) in cases {
        assert_eq!(parse(text), Ok(expected), "{text}");
    }
}

#[test]
fn malformed_durations_are_refused_with_their_reason() {
    use DurationError::{
        FractionNotLast, FractionOfMonths, MissingT, Order, Shape, TooLarge, Zero,
    };
    let cases: &[(&str, DurationError)] = &[
        ("", Shape),
        ("P", Shape),
        ("PT", Shape),
        ("P1DT", Shape),
        ("1D", Shape),
        ("p1d", Shape),
        ("P1d", Shape),
        ("-P1D", Shape),
        ("P-1D", Shape),
        ("P+1D", Shape),
        ("P1", Shape),
        ("PD", Shape),
        ("P1.D", Shape),
        ("P.5D", Shape),
        ("P1 D", Shape),
        ("P1DT1HT1S", Shape),
        ("P1X", Shape),
        ("PT1X", Shape),
        ("P1D ", Shape),
        ("P0D", Zero),
        ("PT0S", Zero),
        ("P0Y0M0W0DT0H0M0S", Zero),
        ("PT0.0001S", Zero),
        ("P1H", MissingT),
        ("P1S", MissingT),
        ("PT1D", Order),
        ("PT1Y", Order),
        ("P1D1Y", Order),
        ("P1D1D", Order),
        ("P1M1Y", Order),
        ("P1D1W", Order),
        ("PT1S1M", Order),
        ("PT1M1H", Order),
        ("P1.5Y", FractionOfMonths),
        ("P1.5M", FractionOfMonths),
        ("PT1.5H30M", FractionNotLast),
        ("P1.5DT1H", FractionNotLast),
        ("P1.5Y2M", FractionNotLast),
        ("P99999999999999999999D", TooLarge),
        ("P4294967296D", TooLarge),
        ("P613566757W", TooLarge),
        ("P357913942Y", TooLarge),
        ("PT18446744073709551615S", TooLarge),
    ];
    for &(text, expected) in cases {
        assert_eq!(parse(text), Err(expected), "{text}");
    }
}

#[test]
fn errors_are_code_7_naming_the_field() {
    let err = parse_duration("P0D", "interval").unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidParameters);
    assert_eq!(err.parameter, "interval");
    assert_eq!(err.message, "must not be a zero duration, got \"P0D\"");
    assert_eq!(
        parse_duration(" P1D ", "interval"),
        Ok(calendar(0, 1, 0)),
        "surrounding whitespace is ignored"
    );
}

#[test]
fn months_keep_the_day_of_month_clamped_to_the_months_end() {
    let utc = tz("UTC");
    let after = |start: &str, text: &str| parse(text).unwrap().after(ms(start), utc);
    let before = |end: &str, text: &str| parse(text).unwrap().before(ms(end), utc);
    assert_eq!(
        after("2024-01-31T10:00:00Z", "P1M"),
        Some(ms("2024-02-29T10:00:00Z"))
    );
    assert_eq!(
        after("2023-01-31T10:00:00Z", "P1M"),
        Some(ms("2023-02-28T10:00:00Z"))
    );
    assert_eq!(
        after("2024-01-31T10:00:00Z", "P2M"),
        Some(ms("2024-03-31T10:00:00Z"))
    );
    assert_eq!(
        after("2024-01-15T10:00:00Z", "P1M"),
        Some(ms("2024-02-15T10:00:00Z"))
    );
    assert_eq!(
        after("2024-02-29T00:00:00Z", "P1Y"),
        Some(ms("2025-02-28T00:00:00Z"))
    );
    assert_eq!(
        after("2024-12-31T00:00:00Z", "P1Y2M"),
        Some(ms("2026-02-28T00:00:00Z"))
    );
    // Months first (clamped once), then days.
    assert_eq!(
        after("2024-01-31T00:00:00Z", "P1M1D"),
        Some(ms("2024-03-01T00:00:00Z"))
    );
    assert_eq!(
        before("2024-03-31T00:00:00Z", "P1M"),
        Some(ms("2024-02-29T00:00:00Z"))
    );
    assert_eq!(
        before("2025-03-31T00:00:00Z", "P1M"),
        Some(ms("2025-02-28T00:00:00Z"))
    );
    assert_eq!(
        before("2025-02-28T00:00:00Z", "P1Y"),
        Some(ms("2024-02-28T00:00:00Z"))
    );
}

#[test]
fn days_keep_the_wall_clock_time_across_dst_and_hours_are_exact() {
    let berlin = tz("Europe/Berlin");
    let after = |start: &str, text: &str| parse(text).unwrap().after(ms(start), berlin);
    let before = |end: &str, text: &str| parse(text).unwrap().before(ms(end), berlin);

    // Spring forward: the calendar day is 23 h long; 24 h is an hour later by the clock.
    let spring = ms("2024-03-30T12:00:00+01:00");
    assert_eq!(
        after("2024-03-30T12:00:00+01:00", "P1D"),
        Some(spring + 23 * HOUR_MS)
    );
    assert_eq!(
        after("2024-03-30T12:00:00+01:00", "P1D"),
        Some(ms("2024-03-31T12:00:00+02:00"))
    );
    assert_eq!(
        after("2024-03-30T12:00:00+01:00", "PT24H"),
        Some(ms("2024-03-31T13:00:00+02:00"))
    );
    assert_eq!(
        after("2024-03-25T12:00:00+01:00", "P1W"),
        Some(ms("2024-04-01T12:00:00+02:00"))
    );
    assert_eq!(before("2024-03-31T12:00:00+02:00", "P1D"), Some(spring));
    // Fall back: the calendar day is 25 h long.
    let autumn = ms("2024-10-26T12:00:00+02:00");
    assert_eq!(
        after("2024-10-26T12:00:00+02:00", "P1D"),
        Some(autumn + 25 * HOUR_MS)
    );
    assert_eq!(before("2024-10-27T12:00:00+01:00", "P1D"), Some(autumn));
    assert_eq!(
        before("2024-10-27T12:00:00+01:00", "PT24H"),
        Some(autumn + HOUR_MS)
    );
    // Calendar part first, then the exact part.
    assert_eq!(
        after("2024-03-30T12:00:00+01:00", "P1DT1H"),
        Some(ms("2024-03-31T13:00:00+02:00"))
    );
    // A fraction of a day is exact time.
    assert_eq!(
        after("2024-03-30T12:00:00+01:00", "P0.5D"),
        Some(spring + 12 * HOUR_MS)
    );
}

#[test]
fn a_calendar_step_landing_in_a_gap_or_overlap_follows_the_instant_rules() {
    let berlin = tz("Europe/Berlin");
    let after = |start: &str, text: &str| parse(text).unwrap().after(ms(start), berlin);
    // 2024-03-31 02:30 does not exist in Berlin: the clocks resume at 03:00+02:00.
    assert_eq!(
        after("2024-03-30T02:30:00+01:00", "P1D"),
        Some(ms("2024-03-31T03:00:00+02:00"))
    );
    // 2024-10-27 02:30 occurs twice: the earlier one.
    assert_eq!(
        after("2024-10-26T02:30:00+02:00", "P1D"),
        Some(ms("2024-10-27T02:30:00+02:00"))
    );
    // An exact duration from the later 02:30 is not moved back to the earlier one.
    assert_eq!(
        after("2024-10-27T02:30:00+01:00", "PT1H"),
        Some(ms("2024-10-27T03:30:00+01:00"))
    );
}

#[test]
fn the_calendar_is_the_accounts_zone_not_the_written_offset() {
    // 2024-01-31T23:00-01:00 is 2024-02-01 00:00 in UTC, so one month later is 1 March.
    let start = ms("2024-01-31T23:00:00-01:00");
    assert_eq!(
        calendar(1, 0, 0).after(start, tz("UTC")),
        Some(ms("2024-03-01T00:00:00Z"))
    );
    // In a zone at -01:00 it is still 31 January: the end of February.
    assert_eq!(
        calendar(1, 0, 0).after(start, tz("Atlantic/Azores")),
        Some(ms("2024-02-29T23:00:00-01:00"))
    );
}

#[test]
fn applying_beyond_the_representable_dates_is_none() {
    let utc = tz("UTC");
    let start = ms("2024-01-01T00:00:00Z");
    assert_eq!(calendar(u32::MAX, 0, 0).after(start, utc), None);
    assert_eq!(calendar(u32::MAX, 0, 0).before(start, utc), None);
    assert_eq!(exact(u64::MAX).after(start, utc), None);
    assert_eq!(exact(u64::MAX / 2).after(start, utc), None);
    assert_eq!(exact(u64::MAX / 2).before(start, utc), None);
    assert_eq!(exact(DAY_MS as u64).after(i64::MAX, utc), None);
}
