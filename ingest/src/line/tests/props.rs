//! Properties: no input makes the parser panic, and every message survives
//! being rendered as a line and parsed back.

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

use chrono::{DateTime, FixedOffset, SecondsFormat};
use proptest::prelude::*;
use schemas::{ErrorCode, GpsFixType, Message, MnType, StateValue, TrackerId};

use super::{NOW_MS, RECEIPT_MS, backfill};
use crate::line::{
    LineError, MAX_FUTURE_MS, TrackerRef, parse_line, parse_line_serde, plain_reads,
};

/// A valid full line, the seed of the mutation property.
const FULL_LINE: &str = r#"{"device_id":"356307042441013","msg_time":"2024-05-31T23:00:00.250+02:00","server_time":"2024-05-31T23:00Z","gps_fix_type":2,"lat":54.22809,"lng":-3.5,"speed":42.5,"alt":-12,"satellites":9,"heading":360,"precision":5,"hdop":0.9,"pdop":-1,"event_id":9000000000,"mn_name":"Vodafone","mn_roaming":-1,"mn_code":25001,"mn_csq":99,"mn_type":"LTE","flags":5,"discrete_inputs":{"2":true,"1":0},"discrete_outputs":{"3":1},"inputs":{"fuel":12.5,"can_rpm":1800},"states":{"mode":"eco","ign":true,"gear":3}}"#;

/// What every refusal must look like.
fn check_refusal(err: &LineError) -> Result<(), TestCaseError> {
    prop_assert_eq!(err.code, ErrorCode::InvalidParameters);
    prop_assert!(!err.description.is_empty());
    prop_assert!(err.description.len() < 600, "{}", err.description);
    if let Some(field) = &err.field {
        prop_assert!(
            err.description.starts_with(&format!("{field}: ")),
            "{:?}",
            err
        );
    }
    Ok(())
}

/// Checks what `bytes` parse into: a refusal looks as it must, and the
/// answer is the serde reader's alone, whether or not the plain reader
/// took the line (compared as debug text, which tells -0.0 from 0.0).
fn check_any(bytes: &[u8]) -> Result<(), TestCaseError> {
    let parsed = parse_line(bytes, &backfill());
    let by_serde = parse_line_serde(bytes, &backfill());
    prop_assert_eq!(
        format!("{parsed:?}"),
        format!("{by_serde:?}"),
        "{}",
        String::from_utf8_lossy(bytes)
    );
    match parsed {
        Ok(_) => Ok(()),
        Err(err) => check_refusal(&err),
    }
}

/// Checks that `lines`, read in a row as a body's lines are (sharing
/// the lists), are each read as serde reads it alone.
fn check_read_as_each_alone(lines: &[Vec<u8>]) -> Result<(), TestCaseError> {
    let read = crate::line::parse_lines(lines, &backfill());
    for (bytes, read) in lines.iter().zip(read) {
        let alone = parse_line_serde(bytes, &backfill());
        prop_assert_eq!(
            format!("{read:?}"),
            format!("{alone:?}"),
            "{}",
            String::from_utf8_lossy(bytes)
        );
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum Mutation {
    Replace(usize, u8),
    Insert(usize, u8),
    Delete(usize),
}

fn mutate(bytes: &mut Vec<u8>, mutation: &Mutation) {
    match *mutation {
        Mutation::Replace(at, b) => {
            let len = bytes.len().max(1);
            if let Some(slot) = bytes.get_mut(at % len) {
                *slot = b;
            }
        }
        Mutation::Insert(at, b) => bytes.insert(at % (bytes.len() + 1), b),
        Mutation::Delete(at) => {
            if !bytes.is_empty() {
                bytes.remove(at % bytes.len());
            }
        }
    }
}

fn arb_mutation() -> impl Strategy<Value = Mutation> {
    let byte = prop::sample::select(&b"{}[]\":,.-+0123456789eEtfnulZT _\\\xff\x00"[..]);
    prop_oneof![
        (any::<usize>(), byte.clone()).prop_map(|(at, b)| Mutation::Replace(at, b)),
        (any::<usize>(), byte).prop_map(|(at, b)| Mutation::Insert(at, b)),
        any::<usize>().prop_map(Mutation::Delete),
    ]
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        check_any(&bytes)?;
    }

    #[test]
    fn json_ish_text_never_panics(text in r#"\{("[a-z_0-9 ]{0,12}":([0-9.eE+\-]{1,8}|"[^"]{0,12}"|true|null|\{\}|\[\]|\{"[0-9a-z]{0,3}":[0-9a-z"]{0,4}\})[,}]?){0,6}"#) {
        check_any(text.as_bytes())?;
    }

    #[test]
    fn mutated_lines_never_panic(mutations in prop::collection::vec(arb_mutation(), 1..6)) {
        let mut bytes = FULL_LINE.as_bytes().to_vec();
        for mutation in &mutations {
            mutate(&mut bytes, mutation);
        }
        check_any(&bytes)?;
    }

    #[test]
    fn rendered_messages_parse_back_equal(
        (message, tracker, style) in (arb_message(), arb_tracker(), arb_style()),
    ) {
        let line = render(&message, &tracker, &style);
        let parsed = parse_line(line.as_bytes(), &backfill())
            .map_err(|err| TestCaseError::fail(format!("{line}\n{err:?}")))?;
        prop_assert_eq!(&parsed.tracker, &tracker, "{}", line);
        prop_assert_eq!(&parsed.message, &message, "{}", line);
        check_any(line.as_bytes())?;
        // Only an escape (a state's or device id's quote or backslash) makes
        // a rendered line unusual: every other one is read without serde.
        prop_assert_eq!(plain_reads(line.as_bytes(), &backfill()), !line.contains('\\'), "{}", line);
    }

    /// A body's lines share the plain reader's guess of their members'
    /// order: lines in one order, in others, and broken ones after them
    /// are each read as serde reads them alone.
    #[test]
    fn lines_of_a_body_read_as_each_alone(
        styles in prop::collection::vec(arb_style(), 1..3),
        lines in prop::collection::vec(
            (arb_message(), arb_tracker(), any::<usize>(), prop::option::weighted(0.3, arb_mutation())),
            1..8,
        ),
    ) {
        let lines: Vec<Vec<u8>> = lines
            .iter()
            .map(|(message, tracker, style, mutation)| {
                let mut bytes = render(message, tracker, &styles[style % styles.len()]).into_bytes();
                if let Some(mutation) = mutation {
                    mutate(&mut bytes, mutation);
                }
                bytes
            })
            .collect();
        check_read_as_each_alone(&lines)?;
    }

    /// Lines whose inputs and states come from a few names, in any
    /// order, repeated, null, absent or of the wrong type, read in a row
    /// sharing the lists (so each may find the last line's names there,
    /// or a prefix of them, or a list a refused line left), are each read
    /// as serde reads them alone.
    #[test]
    fn lines_naming_the_last_lines_inputs_read_as_each_alone(
        lines in prop::collection::vec(
            (
                prop::option::of(prop::collection::vec((0..4usize, 0..4usize), 0..5)),
                prop::option::of(prop::collection::vec((0..4usize, 0..4usize), 0..5)),
                any::<bool>(),
            ),
            1..10,
        ),
    ) {
        const NAMES: [&str; 4] = ["a", "b", "fuel_level_1", "can_engine_hours_total"];
        const VALUES: [&str; 4] = ["1", "2.5", "\"x\"", "null"];
        let object = |entries: &Option<Vec<(usize, usize)>>| match entries {
            None => "null".to_owned(),
            Some(entries) => {
                let entries: Vec<String> = entries
                    .iter()
                    .map(|&(name, value)| format!("\"{}\":{}", NAMES[name], VALUES[value]))
                    .collect();
                format!("{{{}}}", entries.join(","))
            }
        };
        let lines: Vec<Vec<u8>> = lines
            .iter()
            .map(|(inputs, states, states_first)| {
                let (inputs, states) = (object(inputs), object(states));
                let members = if *states_first {
                    format!(r#""states":{states},"inputs":{inputs}"#)
                } else {
                    format!(r#""inputs":{inputs}"#)
                };
                format!(r#"{{"tracker_id":7,"msg_time":"2024-05-31T23:00:00Z",{members}}}"#)
                    .into_bytes()
            })
            .collect();
        check_read_as_each_alone(&lines)?;
    }

    #[test]
    fn numbers_read_as_serde_reads_them(
        number in r#"-?(0|[1-9][0-9]{0,21})(\.[0-9]{1,24})?([eE][+-]?[0-9]{1,3})?"#,
        spaces in prop::sample::select(vec!["", " ", "\t", "\r\n "]),
    ) {
        // As an inner number, an integer column and a float column, so
        // both the reading and the members' checks are compared.
        for line in [
            format!(r#"{{"tracker_id":1,"msg_time":"2024-05-31T23:00Z","states":{{"n":{spaces}{number}{spaces}}}}}"#),
            format!(r#"{{"tracker_id":1,"msg_time":"2024-05-31T23:00Z","alt":{number},"speed":{spaces}{number}}}"#),
            format!(r#"{{"tracker_id":{number},"msg_time":"2024-05-31T23:00Z","lat":{number}}}"#),
        ] {
            check_any(line.as_bytes())?;
        }
    }
}

/// How a message is spelled: none of it may change what is read.
#[derive(Debug, Clone)]
struct Style {
    offset_minutes: i32,
    enums_as_numbers: bool,
    discrete_as_bools: bool,
    explicit_nulls: bool,
    order_seed: u64,
}

fn arb_style() -> impl Strategy<Value = Style> {
    (
        -1439_i32..=1439,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(
            |(offset_minutes, enums_as_numbers, discrete_as_bools, explicit_nulls, order_seed)| {
                Style {
                    offset_minutes,
                    enums_as_numbers,
                    discrete_as_bools,
                    explicit_nulls,
                    order_seed,
                }
            },
        )
}

fn arb_tracker() -> impl Strategy<Value = TrackerRef> {
    prop_oneof![
        (1_i64..=i64::MAX).prop_map(TrackerRef::Id),
        "[!-~]{1,64}".prop_map(|id: String| TrackerRef::DeviceId(id.into())),
    ]
}

/// A decimal with at most `scale` fraction digits: what devices send, and
/// what serde_json reads back exactly (see the report on `float_roundtrip`).
fn decimal(range: std::ops::RangeInclusive<i64>, scale: i32) -> impl Strategy<Value = f64> {
    range.prop_map(move |n| n as f64 / 10_f64.powi(scale))
}

fn arb_name() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_]{1,64}"
}

fn arb_state() -> impl Strategy<Value = StateValue> {
    prop_oneof![
        "\\PC{0,12}".prop_map(|text: String| StateValue::Text(text.into())),
        decimal(-1_000_000_000..=1_000_000_000, 3).prop_map(StateValue::Number),
        any::<bool>().prop_map(StateValue::Flag),
    ]
}

prop_compose! {
    fn arb_message()(
        (message_time_ms, server_time_ms) in (
            -2_208_988_800_000_i64..=NOW_MS + MAX_FUTURE_MS,
            prop_oneof![Just(RECEIPT_MS), 0_i64..=NOW_MS],
        ),
        (gps_fix_type, lat, lng, speed, alt, satellites) in (
            proptest::option::of(prop::sample::select(GpsFixType::ALL)),
            proptest::option::of(decimal(-90_000_000..=90_000_000, 6)),
            proptest::option::of(decimal(-180_000_000..=180_000_000, 6)),
            proptest::option::of(decimal(0..=400_000, 3)),
            proptest::option::of(any::<i32>()),
            proptest::option::of(-1_i32..=i32::MAX),
        ),
        (heading, precision, hdop, pdop, event_id, mn_name) in (
            proptest::option::of(0_i32..=360),
            proptest::option::of(0_i32..=i32::MAX),
            proptest::option::of(prop_oneof![Just(-1.0), decimal(0..=10_000, 2)]),
            proptest::option::of(prop_oneof![Just(-1.0), decimal(0..=10_000, 2)]),
            proptest::option::of(any::<i64>()),
            proptest::option::of("\\PC{0,16}"),
        ),
        (mn_roaming, mn_code, mn_csq, mn_type, flags) in (
            proptest::option::of(-1_i32..=1),
            proptest::option::of(any::<i64>()),
            proptest::option::of(prop_oneof![0_i32..=31, Just(99)]),
            proptest::option::of(prop::sample::select(MnType::ALL)),
            proptest::option::of(0_i64..=i64::MAX),
        ),
        (discrete_inputs, discrete_outputs, inputs, states) in (
            prop::collection::btree_map(1_u16..=u16::MAX, 0_u8..=1, 0..4),
            prop::collection::btree_map(1_u16..=u16::MAX, 0_u8..=1, 0..4),
            prop::collection::btree_map(arb_name(), decimal(-1_000_000_000..=1_000_000_000, 3), 0..5),
            prop::collection::btree_map(arb_name(), arb_state(), 0..5),
        ),
    ) -> Message {
        Message {
            tracker_id: TrackerId(0),
            message_time_ms, server_time_ms, gps_fix_type, lat, lng, speed, alt, satellites,
            heading, precision, hdop, pdop, event_id, mn_name, mn_roaming, mn_code, mn_csq,
            mn_type, flags,
            discrete_inputs: discrete_inputs.into_iter().collect(),
            discrete_outputs: discrete_outputs.into_iter().collect(),
            inputs: inputs.into_iter().map(|(n, v)| (n.into(), v)).collect(),
            states: states.into_iter().map(|(n, v)| (n.into(), v)).collect(),
        }
    }
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap()
}

fn time_text(ms: i64, offset_minutes: i32) -> String {
    let offset = FixedOffset::east_opt(offset_minutes * 60).unwrap();
    DateTime::from_timestamp_millis(ms)
        .unwrap()
        .with_timezone(&offset)
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `message` as an intake line, members in an order drawn from the style and
/// inner entries in reverse.
fn render(message: &Message, tracker: &TrackerRef, style: &Style) -> String {
    let mut members: Vec<(&str, Option<String>)> = vec![
        match tracker {
            TrackerRef::Id(id) => ("tracker_id", Some(json(id))),
            TrackerRef::DeviceId(device_id) => ("device_id", Some(json(device_id))),
        },
        (
            "msg_time",
            Some(json(&time_text(
                message.message_time_ms,
                style.offset_minutes,
            ))),
        ),
    ];
    let server_time = message.server_time_ms != RECEIPT_MS;
    members.push((
        "server_time",
        server_time.then(|| json(&time_text(message.server_time_ms, 0))),
    ));
    let spelled = |name: &'static str, number: u8| {
        if style.enums_as_numbers {
            json(&number)
        } else {
            json(&name)
        }
    };
    members.extend([
        (
            "gps_fix_type",
            message.gps_fix_type.map(|v| spelled(v.as_str(), v as u8)),
        ),
        ("lat", message.lat.map(|v| json(&v))),
        ("lng", message.lng.map(|v| json(&v))),
        ("speed", message.speed.map(|v| json(&v))),
        ("alt", message.alt.map(|v| json(&v))),
        ("satellites", message.satellites.map(|v| json(&v))),
        ("heading", message.heading.map(|v| json(&v))),
        ("precision", message.precision.map(|v| json(&v))),
        ("hdop", message.hdop.map(|v| json(&v))),
        ("pdop", message.pdop.map(|v| json(&v))),
        ("event_id", message.event_id.map(|v| json(&v))),
        ("mn_name", message.mn_name.as_ref().map(json)),
        ("mn_roaming", message.mn_roaming.map(|v| json(&v))),
        ("mn_code", message.mn_code.map(|v| json(&v))),
        ("mn_csq", message.mn_csq.map(|v| json(&v))),
        (
            "mn_type",
            message.mn_type.map(|v| spelled(v.as_str(), v as u8)),
        ),
        ("flags", message.flags.map(|v| json(&v))),
    ]);
    let discrete = |entries: &[(u16, u8)]| {
        let values = entries.iter().rev().map(|(number, value)| {
            let value = if style.discrete_as_bools {
                json(&(*value == 1))
            } else {
                json(value)
            };
            format!(r#""{number}":{value}"#)
        });
        (!entries.is_empty()).then(|| format!("{{{}}}", values.collect::<Vec<_>>().join(",")))
    };
    let inputs = message
        .inputs
        .iter()
        .rev()
        .map(|(name, value)| format!("{}:{}", json(name), json(value)));
    let states = message.states.iter().rev().map(|(name, value)| {
        let value = match value {
            StateValue::Text(text) => json(text),
            StateValue::Number(n) => json(n),
            StateValue::Flag(flag) => json(flag),
        };
        format!("{}:{value}", json(name))
    });
    let object =
        |entries: Vec<String>| (!entries.is_empty()).then(|| format!("{{{}}}", entries.join(",")));
    members.extend([
        ("discrete_inputs", discrete(&message.discrete_inputs)),
        ("discrete_outputs", discrete(&message.discrete_outputs)),
        ("inputs", object(inputs.collect())),
        ("states", object(states.collect())),
    ]);
    let order = BuildHasherDefault::<DefaultHasher>::default();
    members.sort_by_key(|(name, _)| order.hash_one((style.order_seed, name)));
    let rendered: Vec<String> = members
        .into_iter()
        .filter_map(|(name, value)| match value {
            Some(value) => Some(format!(r#""{name}":{value}"#)),
            None => style.explicit_nulls.then(|| format!(r#""{name}":null"#)),
        })
        .collect();
    format!("{{{}}}", rendered.join(","))
}
