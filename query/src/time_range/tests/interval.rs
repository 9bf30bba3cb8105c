use schemas::{ErrorCode, HasCode};

use super::super::{Range, parse_duration, parse_interval, range_ending_now};
use super::{DAY_MS, HOUR_MS, NOW_MS, iso_in, ms, wall_in};

fn range(from: &str, to: &str) -> Range {
    Range {
        from_ms: ms(from),
        to_ms: ms(to),
    }
}

#[test]
fn every_interval_form_is_read() {
    let utc = iso_in("UTC");
    let cases: &[(&str, Range)] = &[
        (
            "2024-03-01T00:00:00Z/2024-03-02T00:00:00Z",
            range("2024-03-01T00:00:00Z", "2024-03-02T00:00:00Z"),
        ),
        (
            "2024-03-01T06:00+06:00/2024-03-01T12:00:00.5+0600",
            range("2024-03-01T00:00:00Z", "2024-03-01T06:00:00.500Z"),
        ),
        (
            "2024-03-01T00:00:00Z/P1D",
            range("2024-03-01T00:00:00Z", "2024-03-02T00:00:00Z"),
        ),
        (
            "2024-03-01T00:00:00Z/P2DT3H45M10S",
            range("2024-03-01T00:00:00Z", "2024-03-03T03:45:10Z"),
        ),
        (
            "P2DT3H45M10S/2024-03-03T03:45:10Z",
            range("2024-03-01T00:00:00Z", "2024-03-03T03:45:10Z"),
        ),
        (
            "PT15M/2024-03-01T00:00Z",
            range("2024-02-29T23:45:00Z", "2024-03-01T00:00:00Z"),
        ),
        (
            "2024-01-31T00:00Z/P1M",
            range("2024-01-31T00:00:00Z", "2024-02-29T00:00:00Z"),
        ),
        (
            "P1M/2024-03-31T00:00Z",
            range("2024-02-29T00:00:00Z", "2024-03-31T00:00:00Z"),
        ),
        (
            "P7D/2024-06-01T00:00Z",
            range("2024-05-25T00:00:00Z", "2024-06-01T00:00:00Z"),
        ),
        (
            " 2024-03-01T00:00Z / PT1S ",
            range("2024-03-01T00:00:00Z", "2024-03-01T00:00:01Z"),
        ),
    ];
    for &(text, expected) in cases {
        assert_eq!(
            parse_interval(text, "interval", &utc),
            Ok(expected),
            "{text}"
        );
    }
}

#[test]
fn durations_in_intervals_follow_the_accounts_calendar() {
    let berlin = iso_in("Europe/Berlin");
    let spring = parse_interval("2024-03-30T12:00:00+01:00/P1D", "interval", &berlin).unwrap();
    assert_eq!(spring.span_ms(), 23 * HOUR_MS);
    let spring = parse_interval("P1D/2024-03-31T12:00:00+02:00", "interval", &berlin).unwrap();
    assert_eq!(spring.span_ms(), 23 * HOUR_MS);
    let autumn = parse_interval("2024-10-26T12:00:00+02:00/P1D", "interval", &berlin).unwrap();
    assert_eq!(autumn.span_ms(), 25 * HOUR_MS);
    let exact = parse_interval("2024-10-26T12:00:00+02:00/PT24H", "interval", &berlin).unwrap();
    assert_eq!(exact.span_ms(), DAY_MS);
    // Across the spring change, a week of calendar days is 167 h.
    let week = parse_interval("2024-03-25T00:00:00+01:00/P1W", "interval", &berlin).unwrap();
    assert_eq!(week.span_ms(), 7 * DAY_MS - HOUR_MS);
}

#[test]
fn without_iso_interval_ends_are_read_in_the_accounts_zone() {
    let almaty = wall_in("Asia/Almaty");
    assert_eq!(
        parse_interval(
            "2024-10-10 00:00:00/2024-10-11 00:00:00",
            "interval",
            &almaty
        ),
        Ok(range(
            "2024-10-10T00:00:00+05:00",
            "2024-10-11T00:00:00+05:00"
        ))
    );
    assert_eq!(
        parse_interval("2024-10-10 00:00/P1D", "interval", &almaty),
        Ok(range(
            "2024-10-10T00:00:00+05:00",
            "2024-10-11T00:00:00+05:00"
        ))
    );
    assert_eq!(
        parse_interval("PT6H/2024-10-10T06:00", "interval", &almaty),
        Ok(range(
            "2024-10-10T00:00:00+05:00",
            "2024-10-10T06:00:00+05:00"
        ))
    );
    // The Berlin gap: 02:30 on 2024-03-31 is where the clocks resume.
    assert_eq!(
        parse_interval(
            "2024-03-31 00:00/2024-03-31 02:30",
            "interval",
            &wall_in("Europe/Berlin")
        ),
        Ok(range(
            "2024-03-31T00:00:00+01:00",
            "2024-03-31T03:00:00+02:00"
        ))
    );
    // With iso_datetime=true the same text lacks a zone.
    let err = parse_interval(
        "2024-10-10 00:00:00/P1D",
        "interval",
        &iso_in("Asia/Almaty"),
    )
    .unwrap_err();
    assert!(
        err.message.starts_with("start must have a T"),
        "{}",
        err.message
    );
    let err = parse_interval(
        "2024-10-10T00:00:00/P1D",
        "interval",
        &iso_in("Asia/Almaty"),
    )
    .unwrap_err();
    assert!(
        err.message.starts_with("start has no time zone"),
        "{}",
        err.message
    );
}

#[test]
fn malformed_intervals_are_code_7_naming_the_field() {
    let utc = iso_in("UTC");
    let cases: &[(&str, &str)] = &[
        ("", "must be an ISO 8601 interval"),
        ("2024-03-01T00:00Z", "must be an ISO 8601 interval"),
        ("P1D", "must be an ISO 8601 interval"),
        ("2024-03-01T00:00Z/P1D/P1D", "must be an ISO 8601 interval"),
        (
            "2024-03-01T00:00Z--2024-03-02T00:00Z",
            "must be an ISO 8601 interval",
        ),
        ("P1D/P1D", "must have a date and time on at least one side"),
        ("/2024-03-01T00:00Z", "start must be a date and time"),
        ("2024-03-01T00:00Z/", "end must be a date and time"),
        ("2024-03-01T00:00/P1D", "start has no time zone"),
        (
            "2024-02-30T00:00Z/P1D",
            "start names a day that does not exist",
        ),
        (
            "P1D/2024-13-01T00:00Z",
            "end names a day that does not exist",
        ),
        (
            "2024-03-01T24:00Z/P1D",
            "start names a time of day that does not exist",
        ),
        (
            "2024-03-01T00:00Z/P0D",
            "duration must not be a zero duration",
        ),
        (
            "2024-03-01T00:00Z/PT0S",
            "duration must not be a zero duration",
        ),
        (
            "2024-03-01T00:00Z/P1H",
            "duration must have a T before hours",
        ),
        (
            "2024-03-01T00:00Z/Pgarbage",
            "duration must be an ISO 8601 duration",
        ),
        (
            "2024-03-02T00:00Z/2024-03-01T00:00Z",
            "must end after it starts",
        ),
        (
            "2024-03-01T00:00Z/2024-03-01T00:00Z",
            "must end after it starts",
        ),
        (
            "2024-03-01T06:00+06:00/2024-03-01T00:00Z",
            "must end after it starts",
        ),
        (
            "2024-03-01T00:00Z/P99999999Y",
            "reaches beyond the supported range",
        ),
        (
            "P99999999Y/2024-03-01T00:00Z",
            "reaches beyond the supported range",
        ),
    ];
    for &(text, start_of_message) in cases {
        let err = parse_interval(text, "server_time_filter.interval", &utc).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidParameters, "{text}");
        assert_eq!(err.parameter, "server_time_filter.interval", "{text}");
        assert!(
            err.message.starts_with(start_of_message),
            "{text}: {}",
            err.message
        );
    }
}

#[test]
fn range_ending_now_is_the_duration_before_the_injected_clock() {
    let berlin = iso_in("Europe/Berlin");
    let seven_days = parse_duration("P7D", "interval").unwrap();
    assert_eq!(
        range_ending_now(&seven_days, "interval", &berlin),
        Ok(Range {
            from_ms: NOW_MS - 7 * DAY_MS,
            to_ms: NOW_MS
        })
    );
    // The same as writing the interval with now as its end.
    assert_eq!(
        range_ending_now(&seven_days, "interval", &berlin),
        parse_interval("P7D/2024-06-01T00:00:00Z", "interval", &berlin)
    );
    let err = range_ending_now(&Default::default(), "interval", &berlin).unwrap_err();
    assert_eq!(
        (err.code(), err.parameter.as_str()),
        (ErrorCode::InvalidParameters, "interval")
    );
}

#[test]
fn ranges_are_half_open() {
    let day = range("2024-03-01T00:00:00Z", "2024-03-02T00:00:00Z");
    assert!(day.contains(day.from_ms));
    assert!(day.contains(day.to_ms - 1));
    assert!(!day.contains(day.to_ms));
    assert!(!day.contains(day.from_ms - 1));
    assert_eq!(day.span_ms(), DAY_MS);

    let retention = Range {
        from_ms: ms("2024-03-01T12:00:00Z"),
        to_ms: i64::MAX,
    };
    assert_eq!(
        day.intersect(&retention),
        Some(range("2024-03-01T12:00:00Z", "2024-03-02T00:00:00Z"))
    );
    let later = range("2024-03-02T00:00:00Z", "2024-03-03T00:00:00Z");
    assert_eq!(
        day.intersect(&later),
        None,
        "touching ranges share no instant"
    );
    let inverted = Range {
        from_ms: 10,
        to_ms: 0,
    };
    assert_eq!(inverted.span_ms(), 0);
}
