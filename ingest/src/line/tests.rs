//! Table-driven cases of valid and invalid lines; properties are in `props`.

use schemas::{ErrorCode, GpsFixType, Message, MnType, StateValue, TrackerId};

use super::read::Member;
use super::{
    LineError, LineRules, MAX_FUTURE_MS, ParsedLine, TrackerRef, is_blank, parse_line,
    parse_line_serde, plain_reads,
};

/// 2024-06-01T00:00:00Z.
const NOW_MS: i64 = 1_717_200_000_000;
/// When the test request arrived.
const RECEIPT_MS: i64 = NOW_MS + 7;
const HEAD: &str = r#""tracker_id":1,"msg_time":"2024-06-01T00:00Z""#;

/// The rules of these tests: times of any age (the age limit has its own test).
fn rules() -> LineRules {
    LineRules {
        server_time_ms: RECEIPT_MS,
        oldest_message_ms: i64::MIN,
        ..LineRules::at(NOW_MS)
    }
}

fn backfill() -> LineRules {
    LineRules {
        allow_server_time: true,
        ..rules()
    }
}

fn parse(line: &str) -> Result<ParsedLine, LineError> {
    parse_line(line.as_bytes(), &rules())
}

fn ok(line: &str) -> ParsedLine {
    parse(line).unwrap_or_else(|err| panic!("{line}\n{err:?}"))
}

fn refused(line: &str) -> LineError {
    match parse(line) {
        Ok(parsed) => panic!("{line}\nwas accepted: {parsed:?}"),
        Err(err) => err,
    }
}

/// A line with the usual tracker and time plus `members`.
fn with(members: &str) -> String {
    format!("{{{HEAD},{members}}}")
}

/// The message of [`HEAD`] with nothing else.
fn bare() -> Message {
    Message {
        message_time_ms: NOW_MS,
        server_time_ms: RECEIPT_MS,
        ..Message::default()
    }
}

#[test]
fn a_line_with_every_member_becomes_its_message() {
    let line = r#"{"tracker_id":7,"msg_time":"2024-05-31T23:00:00.250+02:00","gps_fix_type":"HAS_FIX",
        "lat":54.22809,"lng":-3.5,"speed":42.5,"alt":-12,"satellites":9,"heading":360,"precision":5,
        "hdop":0.9,"pdop":-1,"event_id":9000000000,"mn_name":"Vodafone","mn_roaming":-1,
        "mn_code":25001,"mn_csq":99,"mn_type":"LTE","flags":5,
        "discrete_inputs":{"2":true,"1":0},"discrete_outputs":{"3":1},
        "inputs":{"fuel":12.5,"can_rpm":1800},"states":{"mode":"eco","ign":true,"gear":3}}"#;
    let line = line.replace('\n', "");
    assert!(
        plain_reads(line.as_bytes(), &rules()),
        "the plain reader takes it"
    );
    let parsed = ok(&line);
    assert_eq!(parsed.tracker, TrackerRef::Id(7));
    assert_eq!(
        parsed.message,
        Message {
            tracker_id: TrackerId(0),
            message_time_ms: NOW_MS - 3 * 3_600_000 + 250,
            server_time_ms: RECEIPT_MS,
            gps_fix_type: Some(GpsFixType::HasFix),
            lat: Some(54.22809),
            lng: Some(-3.5),
            speed: Some(42.5),
            alt: Some(-12),
            satellites: Some(9),
            heading: Some(360),
            precision: Some(5),
            hdop: Some(0.9),
            pdop: Some(-1.0),
            event_id: Some(9_000_000_000),
            mn_name: Some("Vodafone".into()),
            mn_roaming: Some(-1),
            mn_code: Some(25001),
            mn_csq: Some(99),
            mn_type: Some(MnType::Lte),
            flags: Some(5),
            discrete_inputs: vec![(1, 0), (2, 1)],
            discrete_outputs: vec![(3, 1)],
            inputs: vec![("can_rpm".into(), 1800.0), ("fuel".into(), 12.5)],
            states: vec![
                ("gear".into(), StateValue::Number(3.0)),
                ("ign".into(), StateValue::Flag(true)),
                ("mode".into(), StateValue::Text("eco".into())),
            ],
        }
    );
}

#[test]
fn every_time_form_is_read() {
    let cases = [
        ("2024-06-01T00:00Z", NOW_MS),
        ("2024-06-01T00:00:00Z", NOW_MS),
        ("2024-06-01T00:00:00.5Z", NOW_MS + 500),
        ("2024-06-01T00:00:00.123456Z", NOW_MS + 123),
        ("2024-06-01T03:00+03:00", NOW_MS),
        ("2024-06-01T03:00+0300", NOW_MS),
        ("2024-06-01T03:00+03", NOW_MS),
        ("2024-05-31T19:30:00.25-04:30", NOW_MS + 250),
        ("1999-12-31T23:59:59Z", 946_684_799_000),
    ];
    for (time, expected) in cases {
        let line = format!(r#"{{"tracker_id":1,"msg_time":"{time}"}}"#);
        assert_eq!(ok(&line).message.message_time_ms, expected, "{time}");
    }
    // JSON escapes are text like any other.
    let escaped = ok(r#"{"tracker_id":1,"msg_time":"2024\u002d06-01T00:00Z"}"#);
    assert_eq!(escaped.message.message_time_ms, NOW_MS);
}

#[test]
fn a_tracker_is_named_by_id_or_by_device_id() {
    let by_id = ok(r#"{"tracker_id":9007199254740993,"msg_time":"2024-06-01T00:00Z"}"#);
    assert_eq!(by_id.tracker, TrackerRef::Id(9_007_199_254_740_993));
    let by_imei = ok(r#"{"device_id":" 356307042441013 ","msg_time":"2024-06-01T00:00Z"}"#);
    assert_eq!(
        by_imei.tracker,
        TrackerRef::DeviceId("356307042441013".into())
    );
    let null_id = ok(r#"{"tracker_id":null,"device_id":"A-1","msg_time":"2024-06-01T00:00Z"}"#);
    assert_eq!(null_id.tracker, TrackerRef::DeviceId("A-1".into()));
    let null_device = ok(r#"{"device_id":null,"tracker_id":3,"msg_time":"2024-06-01T00:00Z"}"#);
    assert_eq!(null_device.tracker, TrackerRef::Id(3));
    assert_eq!(
        by_id.message.tracker_id,
        TrackerId(0),
        "resolved by the caller"
    );
}

#[test]
fn null_means_absent() {
    let optional = Member::ALL
        .iter()
        .map(|member| member.name())
        .filter(|name| !["tracker_id", "device_id", "msg_time"].contains(name));
    let nulls: Vec<String> = optional.map(|name| format!(r#""{name}":null"#)).collect();
    assert_eq!(nulls.len(), 22);
    let parsed = parse_line(with(&nulls.join(",")).as_bytes(), &backfill()).unwrap();
    assert_eq!(parsed.message, bare());
    assert_eq!(ok(&format!("{{{HEAD}}}")).message, bare());
    // Inner nulls are absent values too.
    let inner = ok(&with(
        r#""inputs":{"a":null,"b":1},"states":{"s":null},"discrete_inputs":{"1":null}"#,
    ));
    assert_eq!(inner.message.inputs, vec![("b".into(), 1.0)]);
    assert!(inner.message.states.is_empty() && inner.message.discrete_inputs.is_empty());
}

#[test]
fn enums_are_read_by_name_or_number() {
    for (number, fix) in GpsFixType::ALL.iter().enumerate() {
        let by_name = ok(&with(&format!(r#""gps_fix_type":"{}""#, fix.as_str())));
        let by_number = ok(&with(&format!(r#""gps_fix_type":{number}"#)));
        assert_eq!(by_name.message.gps_fix_type, Some(*fix));
        assert_eq!(by_number.message.gps_fix_type, Some(*fix));
    }
    for (number, network) in MnType::ALL.iter().enumerate() {
        let by_name = ok(&with(&format!(r#""mn_type":"{}""#, network.as_str())));
        let by_number = ok(&with(&format!(r#""mn_type":{number}"#)));
        assert_eq!(by_name.message.mn_type, Some(*network));
        assert_eq!(by_number.message.mn_type, Some(*network));
    }
}

#[test]
fn range_edges_are_accepted() {
    let line = with(
        r#""lat":-90,"lng":180,"speed":0,"alt":-2147483648,"satellites":-1,"heading":0,
        "precision":2147483647,"hdop":0,"pdop":1e2,"event_id":-9223372036854775808,
        "mn_roaming":1,"mn_code":-1,"mn_csq":0,"flags":9223372036854775807,"mn_name":"a\"b\u00e9""#,
    );
    let message = ok(&line.replace('\n', "")).message;
    assert_eq!(
        (message.lat, message.lng, message.speed),
        (Some(-90.0), Some(180.0), Some(0.0))
    );
    assert_eq!(
        (message.alt, message.satellites),
        (Some(i32::MIN), Some(-1))
    );
    assert_eq!(
        (message.heading, message.precision),
        (Some(0), Some(i32::MAX))
    );
    assert_eq!((message.hdop, message.pdop), (Some(0.0), Some(100.0)));
    assert_eq!(
        (message.event_id, message.flags),
        (Some(i64::MIN), Some(i64::MAX))
    );
    assert_eq!(message.mn_name.as_deref(), Some("a\"bé"));
    let discrete = ok(&with(r#""discrete_outputs":{"65535":false,"1":1}"#));
    assert_eq!(discrete.message.discrete_outputs, vec![(1, 1), (65535, 0)]);
}

#[test]
fn complex_members_come_out_sorted() {
    let parsed = ok(&with(
        r#""discrete_inputs":{"10":1,"2":0,"1":true},"inputs":{"b":2,"a":1,"C":3,"_x":4},
        "states":{"z":"last","A1":false,"m":0.5}"#,
    )
    .replace('\n', ""));
    let message = parsed.message;
    assert_eq!(message.discrete_inputs, vec![(1, 1), (2, 0), (10, 1)]);
    let inputs: Vec<&str> = message
        .inputs
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(inputs, ["C", "_x", "a", "b"]);
    let states: Vec<&str> = message
        .states
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(states, ["A1", "m", "z"]);
}

/// Lines that are refused, with the field the error must name.
const INVALID: &[(&str, &str)] = &[
    (r#""lat":90.5"#, "lat"),
    (r#""lat":-91"#, "lat"),
    (r#""lat":"54.2""#, "lat"),
    (r#""lat":true"#, "lat"),
    (r#""lat":[1]"#, "lat"),
    (r#""lat":{"a":1}"#, "lat"),
    (r#""lng":180.0001"#, "lng"),
    (r#""speed":-0.1"#, "speed"),
    (r#""alt":1.5"#, "alt"),
    (r#""alt":1.0"#, "alt"),
    (r#""alt":1e3"#, "alt"),
    (r#""alt":2147483648"#, "alt"),
    (r#""alt":-2147483649"#, "alt"),
    (r#""satellites":-2"#, "satellites"),
    (r#""heading":361"#, "heading"),
    (r#""heading":-1"#, "heading"),
    (r#""precision":-1"#, "precision"),
    (r#""hdop":-0.5"#, "hdop"),
    (r#""hdop":-2"#, "hdop"),
    (r#""pdop":-1.5"#, "pdop"),
    (r#""event_id":9223372036854775808"#, "event_id"),
    (r#""event_id":1.5"#, "event_id"),
    (r#""mn_name":5"#, "mn_name"),
    (r#""mn_roaming":2"#, "mn_roaming"),
    (r#""mn_code":1.5"#, "mn_code"),
    (r#""mn_csq":32"#, "mn_csq"),
    (r#""mn_csq":98"#, "mn_csq"),
    (r#""mn_csq":-1"#, "mn_csq"),
    (r#""mn_type":"lte""#, "mn_type"),
    (r#""mn_type":6"#, "mn_type"),
    (r#""mn_type":1.0"#, "mn_type"),
    (r#""gps_fix_type":"FIX""#, "gps_fix_type"),
    (r#""gps_fix_type":4"#, "gps_fix_type"),
    (r#""gps_fix_type":-1"#, "gps_fix_type"),
    (r#""flags":-1"#, "flags"),
    (r#""flags":18446744073709551615"#, "flags"),
    (r#""discrete_inputs":{"x":1}"#, "discrete_inputs.x"),
    (r#""discrete_inputs":{"0":1}"#, "discrete_inputs.0"),
    (r#""discrete_inputs":{"01":1}"#, "discrete_inputs.01"),
    (r#""discrete_inputs":{"+1":1}"#, "discrete_inputs.+1"),
    (r#""discrete_inputs":{"65536":1}"#, "discrete_inputs.65536"),
    (r#""discrete_inputs":{"":1}"#, "discrete_inputs."),
    (r#""discrete_inputs":{"1":2}"#, "discrete_inputs.1"),
    (r#""discrete_inputs":{"1":"1"}"#, "discrete_inputs.1"),
    (r#""discrete_inputs":{"1":[1]}"#, "discrete_inputs.1"),
    (r#""discrete_inputs":[1]"#, "discrete_inputs"),
    (r#""discrete_inputs":5"#, "discrete_inputs"),
    (r#""discrete_outputs":{"1":0.5}"#, "discrete_outputs.1"),
    (r#""inputs":{"bad name":1}"#, "inputs.bad name"),
    (r#""inputs":{"":1}"#, "inputs."),
    (r#""inputs":{"é":1}"#, "inputs.é"),
    (r#""inputs":{"a-b":1}"#, "inputs.a-b"),
    (r#""inputs":{"fuel":"12"}"#, "inputs.fuel"),
    (r#""inputs":{"fuel":true}"#, "inputs.fuel"),
    (r#""inputs":{"fuel":{}}"#, "inputs.fuel"),
    (r#""inputs":"fuel""#, "inputs"),
    (r#""states":{"s":[1]}"#, "states.s"),
    (r#""states":{"s":{"x":1}}"#, "states.s"),
    (r#""states":{"bad.name":1}"#, "states.bad.name"),
    (r#""device_id":"356""#, "tracker_id"),
    (r#""latitude":1"#, "latitude"),
    (r#""Lat":1"#, "Lat"),
    (r#""lat":1,"lat":1"#, "lat"),
    (r#""lat":null,"lat":1"#, "lat"),
    (r#""msg_time":"2024-06-01T00:00Z""#, "msg_time"),
    (r#""inputs":{"a":1,"a":2}"#, "inputs.a"),
    (r#""inputs":{"a":null,"a":1}"#, "inputs.a"),
    (r#""inputs":{"a":null,"a":null}"#, "inputs.a"),
    (r#""states":{"s":"x","t":1,"s":true}"#, "states.s"),
    (r#""discrete_inputs":{"1":1,"1":0}"#, "discrete_inputs.1"),
    (r#""server_time":"2024-06-01T00:00Z""#, "server_time"),
];

/// Whole lines that are refused, with the field the error must name.
const INVALID_LINES: &[(&str, &str)] = &[
    (r#"{"msg_time":"2024-06-01T00:00Z"}"#, "tracker_id"),
    (r#"{"tracker_id":1}"#, "msg_time"),
    (r#"{"tracker_id":1,"msg_time":null}"#, "msg_time"),
    (
        r#"{"tracker_id":0,"msg_time":"2024-06-01T00:00Z"}"#,
        "tracker_id",
    ),
    (
        r#"{"tracker_id":-5,"msg_time":"2024-06-01T00:00Z"}"#,
        "tracker_id",
    ),
    (
        r#"{"tracker_id":"7","msg_time":"2024-06-01T00:00Z"}"#,
        "tracker_id",
    ),
    (
        r#"{"tracker_id":1.5,"msg_time":"2024-06-01T00:00Z"}"#,
        "tracker_id",
    ),
    (
        r#"{"device_id":"","msg_time":"2024-06-01T00:00Z"}"#,
        "device_id",
    ),
    (
        r#"{"device_id":"   ","msg_time":"2024-06-01T00:00Z"}"#,
        "device_id",
    ),
    (
        r#"{"device_id":356,"msg_time":"2024-06-01T00:00Z"}"#,
        "device_id",
    ),
    (
        r#"{"device_id":"a b","msg_time":"2024-06-01T00:00Z"}"#,
        "device_id",
    ),
    (
        r#"{"device_id":"ünï","msg_time":"2024-06-01T00:00Z"}"#,
        "device_id",
    ),
    (
        r#"{"tracker_id":1,"msg_time":"2024-06-01T00:00"}"#,
        "msg_time",
    ),
    (r#"{"tracker_id":1,"msg_time":"2024-06-01"}"#, "msg_time"),
    (r#"{"tracker_id":1,"msg_time":1717200000000}"#, "msg_time"),
    (r#"{"tracker_id":1,"msg_time":"garbage"}"#, "msg_time"),
    (
        r#"{"tracker_id":1,"msg_time":"2023-02-29T00:00Z"}"#,
        "msg_time",
    ),
];

#[test]
fn invalid_members_are_refused_naming_the_field() {
    let members = INVALID
        .iter()
        .map(|&(members, field)| (with(members), field));
    let lines = INVALID_LINES
        .iter()
        .map(|&(line, field)| (line.to_owned(), field));
    for (line, field) in members.chain(lines) {
        let err = refused(&line);
        assert_eq!(err.code, ErrorCode::InvalidParameters, "{line}");
        assert_eq!(err.field.as_deref(), Some(field), "{line}\n{err:?}");
        assert!(
            err.description.starts_with(&format!("{field}: ")),
            "{line}\n{}",
            err.description
        );
    }
}

#[test]
fn descriptions_say_what_is_wrong() {
    let cases = [
        (
            with(r#""lat":91"#),
            "lat: expected a number from -90 to 90, got 91",
        ),
        (
            with(r#""alt":1.5"#),
            "alt: expected an integer from -2147483648 to 2147483647 (metres), got 1.5",
        ),
        (
            with(r#""inputs":{"bad name":1}"#),
            "inputs.bad name: invalid key, expected a name of 1 to 64 letters, digits or underscores",
        ),
        (
            with(r#""inputs":{"fuel":"12"}"#),
            r#"inputs.fuel: expected a number, got "12""#,
        ),
        (
            with(r#""latitude":1"#),
            "latitude: unknown member (not a raw data column)",
        ),
        (with(r#""lat":1,"lat":2"#), "lat: duplicate member"),
        (with(r#""inputs":{"a":1,"a":2}"#), "inputs.a: duplicate key"),
        (
            r#"{"tracker_id":1,"msg_time":"2024-06-01T00:00"}"#.to_owned(),
            "msg_time: expected an ISO 8601 time with a zone (2020-12-31T23:59:59.5Z, 2020-12-31T00:00+03:00), got \"2024-06-01T00:00\": no zone (add Z or an offset such as +03:00)",
        ),
    ];
    for (line, description) in cases {
        assert_eq!(refused(&line).description, description, "{line}");
    }
    let from_serde = refused(&with(r#""lat":[1]"#)).description;
    assert!(
        from_serde.starts_with("lat: invalid type: sequence, expected a number from -90 to 90"),
        "{from_serde}"
    );
}

#[test]
fn a_line_that_is_not_a_json_object_names_no_field() {
    let lines: &[&[u8]] = &[
        b"",
        b"{",
        b"{\"lat\":}",
        b"{\"lat\":1,}",
        b"{'lat':1}",
        b"{\"tracker_id\":1,\"msg_time\":\"2024-06-01T00:00Z\"}{}",
        b"{\"tracker_id\":1,\"msg_time\":\"2024-06-01T00:00Z\"} x",
        b"{\"lat\":1e400}",
        b"{\"lat\":tru}",
        b"{\"mn_name\":\"\xff\"}",
        b"\xef\xbb\xbf{}",
        b"[1]",
        b"null",
        b"42",
        b"\"x\"",
    ];
    for line in lines {
        let err = parse_line(line, &rules()).unwrap_err();
        let shown = String::from_utf8_lossy(line);
        assert_eq!(err.code, ErrorCode::InvalidParameters, "{shown}");
        assert_eq!(err.field, None, "{shown}\n{err:?}");
        assert!(
            err.description.starts_with("malformed JSON: ")
                || err
                    .description
                    .starts_with("the line must be a JSON object: "),
            "{shown}\n{}",
            err.description
        );
    }
    let eof = parse_line(b"{\"lat\":1", &rules()).unwrap_err();
    assert!(eof.description.contains("EOF while parsing"), "{eof:?}");
}

#[test]
fn long_content_is_never_echoed_in_full() {
    let long = "x".repeat(10_000);
    let lines = [
        with(&format!(r#""{long}":1"#)),
        with(&format!(r#""mn_type":"{long}""#)),
        with(&format!(r#""inputs":"{long}""#)),
        with(&format!(r#""inputs":{{"{long}":1}}"#)),
        with(&format!(r#""inputs":{{"a":1,"a":"{long}"}}"#)),
        with(&format!(r#""states":{{"{long}":[1]}}"#)),
        format!(r#"{{"tracker_id":1,"msg_time":"{long}"}}"#),
        format!(r#""{long}""#),
    ];
    for line in lines {
        let err = refused(&line);
        assert!(err.description.len() < 400, "{}", err.description);
        assert!(
            err.field.as_ref().is_none_or(|field| field.len() < 100),
            "{err:?}"
        );
    }
}

#[test]
fn msg_time_may_be_at_most_24_hours_ahead() {
    let day_ahead = r#"{"tracker_id":1,"msg_time":"2024-06-02T00:00Z"}"#;
    assert_eq!(
        ok(day_ahead).message.message_time_ms,
        NOW_MS + MAX_FUTURE_MS
    );
    let same_instant = r#"{"tracker_id":1,"msg_time":"2024-06-02T03:00+03"}"#;
    assert_eq!(
        ok(same_instant).message.message_time_ms,
        NOW_MS + MAX_FUTURE_MS
    );
    let a_millisecond_more = refused(r#"{"tracker_id":1,"msg_time":"2024-06-02T00:00:00.001Z"}"#);
    assert_eq!(a_millisecond_more.field.as_deref(), Some("msg_time"));
    let err = refused(r#"{"tracker_id":1,"msg_time":"2024-06-02T00:00:01Z"}"#);
    assert_eq!(err.field.as_deref(), Some("msg_time"));
    assert!(
        err.description.contains("more than 24 hours ahead"),
        "{err:?}"
    );
    let past = ok(r#"{"tracker_id":1,"msg_time":"2001-01-01T00:00Z"}"#);
    assert_eq!(past.message.message_time_ms, 978_307_200_000);
}

#[test]
fn server_time_needs_backfill_permission() {
    let line = with(r#""server_time":"2024-05-01T12:00:00.5+02:00""#);
    let err = refused(&line);
    assert_eq!(err.field.as_deref(), Some("server_time"));
    let backfilled = parse_line(line.as_bytes(), &backfill()).unwrap();
    assert_eq!(backfilled.message.server_time_ms, 1_714_557_600_500);
    let without = parse_line(format!("{{{HEAD}}}").as_bytes(), &backfill()).unwrap();
    assert_eq!(without.message.server_time_ms, RECEIPT_MS);
    for bad in [
        r#""server_time":"2024-05-01""#,
        r#""server_time":5"#,
        r#""server_time":"2024-06-02T00:00:01Z""#,
    ] {
        let err = parse_line(with(bad).as_bytes(), &backfill()).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("server_time"), "{bad}");
    }
}

#[test]
fn whitespace_and_a_trailing_carriage_return_are_allowed() {
    let line = format!(" \t{{ {HEAD} , \"lat\" : 1 }}\r");
    assert_eq!(ok(&line).message.lat, Some(1.0));
}

#[test]
fn blank_lines_are_only_json_whitespace() {
    for blank in [&b""[..], b" ", b"\t\r\n  "] {
        assert!(is_blank(blank));
    }
    for not_blank in [&b"{}"[..], b" x", b"\x0c", b"\xc2\xa0"] {
        assert!(!is_blank(not_blank));
    }
}

#[test]
fn members_are_the_raw_data_columns() {
    let names: Vec<&str> = Member::ALL.iter().map(|member| member.name()).collect();
    assert_eq!(
        names,
        [
            "tracker_id",
            "device_id",
            "msg_time",
            "server_time",
            "gps_fix_type",
            "lat",
            "lng",
            "speed",
            "alt",
            "satellites",
            "heading",
            "precision",
            "hdop",
            "pdop",
            "event_id",
            "mn_name",
            "mn_roaming",
            "mn_code",
            "mn_csq",
            "mn_type",
            "flags",
            "discrete_inputs",
            "discrete_outputs",
            "inputs",
            "states",
        ]
    );
    assert!(Member::ALL.len() <= 32, "the set of members seen is a u32");
    for &member in Member::ALL {
        assert_eq!(Member::from_name(member.name()), Some(member));
    }
}

mod props;

#[test]
fn the_plain_reader_reads_what_serde_reads_and_leaves_it_the_rest() {
    // (line, whether the plain reader takes it): either way the answer is
    // serde's, valid or not.
    let cases = [
        (with(r#""mn_name":"Vodafone UK""#), true),
        (
            format!(" \t{{ {HEAD} , \"lat\" : 1.5e1 ,\"inputs\":{{ \"b\":2, \"a\":-0 }} }}\r"),
            true,
        ),
        (
            with(r#""discrete_inputs":null,"states":null,"lat":null"#),
            true,
        ),
        (with(r#""mn_name":"Voda\"fone""#), false),
        (with(r#""mn_name":"Voda\u0066one""#), false),
        (with(r#""inputs":{"fuel":null}"#), false),
        (with(r#""inputs":{"fuel":1,"fuel":2}"#), false),
        (with(r#""inputs":{"b":1,"a":2,"b":3}"#), false),
        (with(r#""states":{"s":1,"s":null}"#), false),
        (with(r#""event_id":12345678901234567890"#), false),
        (with(r#""lat":1e400"#), false),
        (with(r#""lat":01"#), false),
        (with(r#""lat":1.,"lng":2"#), false),
        (with(r#""lat":1,"lat":2"#), false),
        (with(r#""latitude":1"#), false),
        (with(r#""inputs":{"bad name":1}"#), false),
        (with(r#""discrete_inputs":{"01":1}"#), false),
        (with(r#""discrete_inputs":{"1":2}"#), false),
        (with(r#""inputs":[1]"#), false),
        (with(r#""lat":[1]"#), false),
        (format!("{{{HEAD},}}"), false),
        (format!("{{{HEAD}}} x"), false),
        (format!("{{{HEAD},\"lat\":1 2}}"), false),
        (format!("{{{HEAD}"), false),
    ];
    for (line, plain) in cases {
        assert_eq!(plain_reads(line.as_bytes(), &rules()), plain, "{line}");
        assert_eq!(
            format!("{:?}", parse(&line)),
            format!("{:?}", parse_line_serde(line.as_bytes(), &rules())),
            "{line}"
        );
    }
}

#[test]
fn a_complex_member_holds_at_most_the_limit_of_entries() {
    let rules = LineRules {
        max_inner_entries: 3,
        ..rules()
    };
    let line = |n: usize| {
        let inputs: Vec<String> = (0..n).map(|i| format!("\"a{i}\":{i}")).collect();
        format!("{{{HEAD},\"inputs\":{{{}}}}}", inputs.join(","))
    };
    let parsed = parse_line(line(3).as_bytes(), &rules).expect("three entries");
    assert_eq!(parsed.message.inputs.len(), 3);
    let refused = parse_line(line(4).as_bytes(), &rules).expect_err("four entries");
    assert_eq!(refused.field.as_deref(), Some("inputs"));
    assert_eq!(refused.limit, Some(super::Limit::InnerEntries));
    assert!(
        refused.description.contains("more than 3 entries"),
        "{refused:?}"
    );
    // Nulls count too (they are read), and every kind of member is held to it.
    let nulls = format!("{{{HEAD},\"states\":{{\"a\":1,\"b\":null,\"c\":null,\"d\":true}}}}");
    assert_eq!(
        parse_line(nulls.as_bytes(), &rules).map_err(|e| e.field),
        Err(Some("states".to_owned()))
    );
    let discrete =
        format!("{{{HEAD},\"discrete_outputs\":{{\"1\":1,\"2\":0,\"3\":1,\"65535\":1}}}}");
    assert_eq!(
        parse_line(discrete.as_bytes(), &rules).map_err(|e| e.field),
        Err(Some("discrete_outputs".to_owned()))
    );
}

#[test]
fn the_default_limit_holds_a_huge_member_to_256_entries() {
    let inputs: Vec<String> = (1..=65_535).map(|i| format!("\"a{i}\":1")).collect();
    let line = format!("{{{HEAD},\"inputs\":{{{}}}}}", inputs.join(","));
    let refused = parse_line(line.as_bytes(), &LineRules::at(NOW_MS)).expect_err("65,535 inputs");
    assert!(
        refused.description.contains("more than 256 entries"),
        "{refused:?}"
    );
}

#[test]
fn msg_time_older_than_the_oldest_taken_is_refused() {
    let rules = LineRules::at(NOW_MS);
    // Ten years (3,653 days) back from 2024-06-01 is 2014-06-01.
    let old = r#"{"tracker_id":1,"msg_time":"2014-05-31T23:59:59Z"}"#;
    let refused = parse_line(old.as_bytes(), &rules).expect_err("older than ten years");
    assert_eq!(refused.field.as_deref(), Some("msg_time"));
    assert_eq!(refused.limit, Some(super::Limit::MessageAge));
    assert!(
        refused.description.contains("2014-06-01T00:00:00Z"),
        "{refused:?}"
    );
    let oldest = r#"{"tracker_id":1,"msg_time":"2014-06-01T00:00:00Z"}"#;
    assert!(parse_line(oldest.as_bytes(), &rules).is_ok());
}
