use schemas::{ErrorCode, HasCode};
use serde_json::{Value, json};

use super::super::{Range, Selection, SelectionParams, TimeContext, TimeError, parse_selection};
use super::{DAY_MS, iso_in, ms, wall_in};

const DAY_1: &str = "2024-03-01T00:00:00Z";
const DAY_2: &str = "2024-03-02T00:00:00Z";

fn from_to(from: &str, to: &str) -> SelectionParams {
    SelectionParams {
        from: Some(from.to_owned()),
        to: Some(to.to_owned()),
        ..SelectionParams::default()
    }
}

fn interval(text: &str) -> SelectionParams {
    SelectionParams {
        interval: Some(text.to_owned()),
        ..SelectionParams::default()
    }
}

fn with_filter(filter: Value) -> SelectionParams {
    SelectionParams {
        server_time_filter: Some(filter),
        ..from_to(DAY_1, DAY_2)
    }
}

fn day() -> Range {
    Range {
        from_ms: ms(DAY_1),
        to_ms: ms(DAY_2),
    }
}

/// The failing parameter and code of a selection that must fail.
fn failure(params: &SelectionParams, ctx: &TimeContext) -> (String, ErrorCode) {
    let err: TimeError = parse_selection(params, ctx).unwrap_err();
    (err.parameter.clone(), err.code())
}

fn invalid(parameter: &str) -> (String, ErrorCode) {
    (parameter.to_owned(), ErrorCode::InvalidParameters)
}

#[test]
fn from_to_or_interval_select_message_time() {
    let utc = iso_in("UTC");
    let expected = Selection {
        message: day(),
        server: None,
    };
    assert_eq!(parse_selection(&from_to(DAY_1, DAY_2), &utc), Ok(expected));
    assert_eq!(
        parse_selection(&interval("2024-03-01T00:00Z/P1D"), &utc),
        Ok(expected)
    );
    assert_eq!(
        parse_selection(&interval("P1D/2024-03-02T00:00Z"), &utc),
        Ok(expected)
    );
    // Blank values count as absent, as form clients send `to=`.
    let blank_pair = SelectionParams {
        from: Some(String::new()),
        to: Some("  ".to_owned()),
        ..interval("2024-03-01T00:00Z/P1D")
    };
    assert_eq!(parse_selection(&blank_pair, &utc), Ok(expected));
    // iso_datetime=false reads both ends in the account's zone.
    let almaty = wall_in("Asia/Almaty");
    assert_eq!(
        parse_selection(&from_to("2024-10-10 00:00:00", "2024-10-10 12:00"), &almaty),
        Ok(Selection {
            message: Range {
                from_ms: ms("2024-10-10T00:00:00+05:00"),
                to_ms: ms("2024-10-10T12:00:00+05:00"),
            },
            server: None,
        })
    );
}

#[test]
fn missing_conflicting_or_inverted_ends_are_code_7_naming_the_parameter() {
    let utc = iso_in("UTC");
    let only = |from: Option<&str>, to: Option<&str>, interval: Option<&str>| SelectionParams {
        from: from.map(str::to_owned),
        to: to.map(str::to_owned),
        interval: interval.map(str::to_owned),
        server_time_filter: None,
    };
    let interval_text = Some("2024-03-01T00:00Z/P1D");
    let cases: &[(SelectionParams, &str)] = &[
        (SelectionParams::default(), "from"),
        (only(Some(DAY_1), None, None), "to"),
        (only(None, Some(DAY_2), None), "from"),
        (only(Some(DAY_1), Some(DAY_2), interval_text), "interval"),
        (only(Some(DAY_1), None, interval_text), "interval"),
        (only(None, Some(DAY_2), interval_text), "interval"),
        (from_to(DAY_2, DAY_1), "to"),
        (from_to(DAY_1, DAY_1), "to"),
        (from_to("2024-03-01T06:00+06:00", DAY_1), "to"),
        (from_to("garbage", DAY_2), "from"),
        (from_to(DAY_1, "2024-03-02T00:00"), "to"),
        (interval("2024-03-02T00:00Z/2024-03-01T00:00Z"), "interval"),
        (interval("P1D"), "interval"),
    ];
    for (params, parameter) in cases {
        assert_eq!(failure(params, &utc), invalid(parameter), "{params:?}");
    }

    let err = parse_selection(&from_to(DAY_1, DAY_1), &utc).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`to` must be after `from` (the range includes `from` and excludes `to`)"
    );
    let err = parse_selection(&SelectionParams::default(), &utc).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`from` is required: give `from` and `to`, or `interval`"
    );
    let both = SelectionParams {
        interval: Some("P1D/2024-03-02T00:00Z".to_owned()),
        ..from_to(DAY_1, DAY_2)
    };
    let err = parse_selection(&both, &utc).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`interval` cannot be combined with `from`/`to`: give either `interval` or `from` and `to`"
    );
}

#[test]
fn the_span_limit_allows_exactly_the_maximum() {
    let limited = TimeContext {
        max_span_ms: Some(30 * DAY_MS),
        ..iso_in("UTC")
    };
    let thirty_days = from_to("2024-03-01T00:00:00Z", "2024-03-31T00:00:00Z");
    assert!(parse_selection(&thirty_days, &limited).is_ok());
    assert!(parse_selection(&interval("2024-03-01T00:00Z/P30D"), &limited).is_ok());
    assert!(parse_selection(&interval("P30D/2024-03-31T00:00Z"), &limited).is_ok());

    let one_ms_more = from_to("2024-03-01T00:00:00Z", "2024-03-31T00:00:00.001Z");
    assert_eq!(
        failure(&one_ms_more, &limited),
        ("to".to_owned(), ErrorCode::TimeSpanTooBig)
    );
    let err = parse_selection(&one_ms_more, &limited).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`to` gives a time span of 30 d 0 h 0 min 0.001 s, more than the allowed 30 d"
    );
    let one_ms_more = interval("2024-03-01T00:00Z/P30DT0.001S");
    assert_eq!(
        failure(&one_ms_more, &limited),
        ("interval".to_owned(), ErrorCode::TimeSpanTooBig)
    );
    // A month is calendar arithmetic: March has 31 days.
    assert_eq!(
        failure(&interval("2024-03-01T00:00Z/P1M"), &limited),
        ("interval".to_owned(), ErrorCode::TimeSpanTooBig)
    );
    assert!(parse_selection(&interval("2024-02-01T00:00Z/P1M"), &limited).is_ok());

    // The server-time filter is not limited.
    let wide_filter = with_filter(json!("2020-01-01T00:00Z/2024-03-02T00:00Z"));
    assert!(parse_selection(&wide_filter, &limited).is_ok());
}

#[test]
fn every_server_time_filter_form_is_read() {
    let utc = iso_in("UTC");
    let late = Range {
        from_ms: ms("2024-03-05T00:00:00Z"),
        to_ms: ms("2024-03-06T00:00:00Z"),
    };
    let forms: &[Value] = &[
        json!("2024-03-05T00:00:00Z/2024-03-06T00:00:00Z"),
        json!("2024-03-05T00:00:00Z/P1D"),
        json!("P1D/2024-03-06T00:00:00Z"),
        json!({"from": "2024-03-05T00:00:00Z", "to": "2024-03-06T00:00:00Z"}),
        json!({"interval": "2024-03-05T00:00:00Z/P1D"}),
        json!({"interval": "2024-03-05T00:00:00Z/P1D", "from": null, "to": ""}),
        // JSON text, as form and GET callers send objects.
        json!(r#"{"from":"2024-03-05T00:00:00Z","to":"2024-03-06T00:00:00Z"}"#),
        json!(r#" { "interval" : "P1D/2024-03-06T00:00:00Z" } "#),
        json!(r#""2024-03-05T00:00:00Z/P1D""#),
    ];
    for form in forms {
        assert_eq!(
            parse_selection(&with_filter(form.clone()), &utc),
            Ok(Selection {
                message: day(),
                server: Some(late),
            }),
            "{form}"
        );
    }
    for absent in [Value::Null, json!(""), json!("  "), json!(r#""""#)] {
        let selection = parse_selection(&with_filter(absent.clone()), &utc).unwrap();
        assert_eq!(selection.server, None, "{absent}");
    }
    // iso_datetime=false applies to the filter too.
    let almaty = wall_in("Asia/Almaty");
    let selection = parse_selection(
        &with_filter(json!({"from": "2024-03-05 00:00", "to": "2024-03-06 00:00"})),
        &almaty,
    )
    .unwrap();
    assert_eq!(
        selection.server,
        Some(Range {
            from_ms: ms("2024-03-05T00:00:00+05:00"),
            to_ms: ms("2024-03-06T00:00:00+05:00"),
        })
    );
}

#[test]
fn server_time_filter_errors_name_the_member() {
    let utc = iso_in("UTC");
    let cases: &[(Value, &str)] = &[
        (json!("garbage"), "server_time_filter"),
        (
            json!("2024-03-06T00:00Z/2024-03-05T00:00Z"),
            "server_time_filter",
        ),
        (json!("{not json"), "server_time_filter"),
        (json!("[1, 2]"), "server_time_filter"),
        (json!(r#""garbage""#), "server_time_filter"),
        (json!(42), "server_time_filter"),
        (json!(true), "server_time_filter"),
        (
            json!(["2024-03-05T00:00Z", "2024-03-06T00:00Z"]),
            "server_time_filter",
        ),
        (json!({}), "server_time_filter.from"),
        (
            json!({"to": "2024-03-06T00:00Z"}),
            "server_time_filter.from",
        ),
        (
            json!({"from": "2024-03-05T00:00Z"}),
            "server_time_filter.to",
        ),
        (
            json!({"from": "bad", "to": "2024-03-06T00:00Z"}),
            "server_time_filter.from",
        ),
        (
            json!({"from": "2024-03-05T00:00Z", "to": "bad"}),
            "server_time_filter.to",
        ),
        (
            json!({"from": "2024-03-06T00:00Z", "to": "2024-03-05T00:00Z"}),
            "server_time_filter.to",
        ),
        (
            json!({"from": 1_709_596_800_000_i64, "to": "2024-03-06T00:00Z"}),
            "server_time_filter.from",
        ),
        (json!({"interval": "P1D"}), "server_time_filter.interval"),
        (json!({"interval": ["P1D"]}), "server_time_filter.interval"),
        (
            json!({"interval": "2024-03-05T00:00Z/P1D", "from": "2024-03-05T00:00Z"}),
            "server_time_filter.interval",
        ),
        (
            json!({"from": "2024-03-05T00:00Z", "to": "2024-03-06T00:00Z", "tz": "UTC"}),
            "server_time_filter.tz",
        ),
        (
            json!(r#"{"start": "2024-03-05T00:00Z"}"#),
            "server_time_filter.start",
        ),
        (
            json!(r#"{"interval": "P0D/2024-03-05T00:00Z"}"#),
            "server_time_filter.interval",
        ),
    ];
    for (filter, parameter) in cases {
        assert_eq!(
            failure(&with_filter(filter.clone()), &utc),
            invalid(parameter),
            "{filter}"
        );
    }

    let err = parse_selection(&with_filter(json!({"begin": DAY_1})), &utc).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`server_time_filter.begin` is not a member of `server_time_filter`: give `from` and `to`, or `interval`"
    );
    let err = parse_selection(&with_filter(json!({"from": 5, "to": DAY_2})), &utc).unwrap_err();
    assert_eq!(err.message, "must be a string, got a number");
    let err = parse_selection(&with_filter(json!({"from": DAY_1})), &utc).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`server_time_filter.to` is required with `server_time_filter.from`"
    );
    // Message-time errors come first.
    let both_bad = SelectionParams {
        server_time_filter: Some(json!("garbage")),
        ..from_to(DAY_2, DAY_1)
    };
    assert_eq!(failure(&both_bad, &utc), invalid("to"));
}

#[test]
fn params_deserialize_from_a_request_body() {
    let params: SelectionParams = serde_json::from_value(json!({
        "tracker_id": 1,
        "interval": "2024-03-01T00:00Z/P1D",
        "server_time_filter": {"from": "2024-03-05T00:00Z", "to": "2024-03-06T00:00Z"},
    }))
    .unwrap();
    assert_eq!(params.interval.as_deref(), Some("2024-03-01T00:00Z/P1D"));
    assert_eq!(params.from, None);
    assert!(
        params
            .server_time_filter
            .is_some_and(|filter| filter.is_object())
    );
    let empty: SelectionParams = serde_json::from_value(json!({})).unwrap();
    assert_eq!(empty, SelectionParams::default());
}
