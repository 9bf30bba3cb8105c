//! Properties against reference implementations: Rust's float `Display`,
//! chrono's date formatting, and serde_json for the JSON inside cells.

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, StringArray, TimestampMillisecondArray};
use arrow::record_batch::RecordBatch;
use chrono::{DateTime, Offset};
use chrono_tz::Tz;
use proptest::prelude::*;
use schemas::StateValue;

use super::number::{write_f32, write_f64, write_int};
use super::*;

/// Rust's `Display` (which prints integral floats without `.0` and never
/// uses an exponent), with the encoder's two decisions: `-0` is `0`, and
/// non-finite values are null.
fn reference_number(display: String, is_zero: bool, is_finite: bool) -> String {
    match (is_finite, is_zero) {
        (false, _) => "\\N".into(),
        (true, true) => "0".into(),
        (true, false) => display,
    }
}

fn f64_text(v: f64) -> String {
    let mut out = Vec::new();
    if !write_f64(v, &mut out) {
        out.extend_from_slice(b"\\N");
    }
    String::from_utf8(out).unwrap()
}

fn f32_text(v: f32) -> String {
    let mut out = Vec::new();
    if !write_f32(v, &mut out) {
        out.extend_from_slice(b"\\N");
    }
    String::from_utf8(out).unwrap()
}

/// Floats of every shape: any bit pattern, short decimals, integers, powers of ten.
fn floats() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<u64>().prop_map(f64::from_bits),
        (any::<i32>(), 0..12u32).prop_map(|(n, scale)| f64::from(n) / 10f64.powi(scale as i32)),
        any::<i64>().prop_map(|n| n as f64),
        (1..10u32, -330..310i32).prop_map(|(d, e)| format!("{d}e{e}").parse().unwrap()),
        (any::<u32>(), -30..30i32).prop_map(|(m, e)| format!("{m}e{e}").parse().unwrap()),
        // Few fractional bits: where two shortest forms can tie.
        (1u64..1 << 53, 1..12i32).prop_map(|(m, q)| m as f64 / 2f64.powi(q)),
    ]
}

fn floats32() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<u32>().prop_map(f32::from_bits),
        (1u32..1 << 24, 1..8i32).prop_map(|(m, q)| m as f32 / 2f32.powi(q)),
    ]
}

/// Zones with daylight saving, half- and quarter-hour offsets, local mean
/// time with seconds, zero offsets, and a skipped day (Apia, 2011).
const ZONES: &[Tz] = &[
    Tz::UTC,
    Tz::Europe__Berlin,
    Tz::Europe__London,
    Tz::America__New_York,
    Tz::America__St_Johns,
    Tz::America__Sao_Paulo,
    Tz::Australia__Lord_Howe,
    Tz::Asia__Kathmandu,
    Tz::Asia__Tehran,
    Tz::Asia__Omsk,
    Tz::Africa__Monrovia,
    Tz::Pacific__Chatham,
    Tz::Pacific__Apia,
    Tz::Antarctica__Troll,
];

/// chrono's formatting of a millisecond instant, as the export writes it.
fn reference_time(ms: i64, zone: Tz, iso: bool) -> String {
    let Some(utc) = DateTime::from_timestamp_millis(ms) else {
        return "\\N".into();
    };
    let local = utc.with_timezone(&zone);
    if !iso {
        return format!("\"{}\"", local.format("%Y-%m-%d %H:%M:%S"));
    }
    let offset = if local.offset().fix().local_minus_utc() == 0 {
        "Z".to_string()
    } else {
        local.format("%z").to_string()
    };
    format!("\"{}{offset}\"", local.format("%Y-%m-%dT%H:%M:%S"))
}

/// The encoder's cells for these instants, in one batch (so the offset cache
/// carries from row to row).
fn encoded_times(instants: &[i64], zone: Tz, iso: bool) -> Vec<String> {
    let array: ArrayRef =
        Arc::new(TimestampMillisecondArray::from(instants.to_vec()).with_timezone("UTC"));
    let batch = RecordBatch::try_from_iter([("t", array)]).unwrap();
    let mut out = Vec::new();
    CsvEncoder::new(vec![CsvColumn {
        header: "t".into(),
        column: 0,
        cell: Cell::Time { zone, iso },
    }])
    .write_batch(&batch, &mut out)
    .unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn assert_times_match_chrono(instants: &[i64], zone: Tz) {
    for iso in [true, false] {
        let expected: Vec<String> = instants
            .iter()
            .map(|&ms| reference_time(ms, zone, iso))
            .collect();
        assert_eq!(
            encoded_times(instants, zone, iso),
            expected,
            "{zone} iso={iso}"
        );
    }
}

/// Milliseconds from year -3000 to year 12000.
const EARLIEST_MS: i64 = -156_000_000_000_000;
const LATEST_MS: i64 = 316_000_000_000_000;

/// A JSON string for `text`, with each character escaped or not at random
/// (`choices` decides), including `\u` escapes and surrogate pairs.
fn json_with_random_escapes(text: &str, choices: &[u8]) -> String {
    let mut json = String::from("\"");
    for (i, c) in text.chars().enumerate() {
        let choice = choices.get(i % choices.len().max(1)).copied().unwrap_or(0);
        match c {
            '"' => json.push_str(if choice % 2 == 0 { "\\\"" } else { "\\u0022" }),
            '\\' => json.push_str("\\\\"),
            '/' if choice % 2 == 0 => json.push_str("\\/"),
            c if (c as u32) < 0x20 || choice % 3 == 0 => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    json.push_str(&format!("\\u{unit:04X}"));
                }
            }
            c => json.push(c),
        }
    }
    json.push('"');
    json
}

/// Undoes the CSV quoting of one cell.
fn unquote(cell: &str) -> String {
    cell.strip_prefix('"')
        .and_then(|c| c.strip_suffix('"'))
        .unwrap()
        .replace("\"\"", "\"")
}

fn one_cell(cell: Cell, array: ArrayRef) -> String {
    let batch = RecordBatch::try_from_iter([("c", array)]).unwrap();
    let mut out = Vec::new();
    CsvEncoder::new(vec![CsvColumn {
        header: "c".into(),
        column: 0,
        cell,
    }])
    .write_batch(&batch, &mut out)
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    text.strip_suffix('\n').unwrap().to_string()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn f64_prints_as_rust_display(v in floats()) {
        prop_assert_eq!(f64_text(v), reference_number(format!("{v}"), v == 0.0, v.is_finite()));
    }

    #[test]
    fn f32_prints_as_rust_display(v in floats32()) {
        prop_assert_eq!(f32_text(v), reference_number(format!("{v}"), v == 0.0, v.is_finite()));
    }

    #[test]
    fn integers_print_as_rust_display(v in any::<i64>(), u in any::<u64>()) {
        let mut out = Vec::new();
        write_int(v, &mut out);
        out.push(b' ');
        write_int(u, &mut out);
        prop_assert_eq!(String::from_utf8(out).unwrap(), format!("{v} {u}"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn times_match_chrono(
        zone in proptest::sample::select(ZONES),
        start in EARLIEST_MS..LATEST_MS,
        steps in proptest::collection::vec(0..7_200_000i64, 1..40),
    ) {
        // A run of close instants, as message times come, so that rows
        // share and cross cache buckets.
        let instants: Vec<i64> = steps
            .iter()
            .scan(start, |at, step| {
                *at += step;
                Some(*at)
            })
            .collect();
        assert_times_match_chrono(&instants, zone);
    }

    #[test]
    fn text_cells_double_quotes_only(text in any::<String>()) {
        let cell = one_cell(Cell::Text, Arc::new(StringArray::from(vec![text.as_str()])));
        prop_assert_eq!(&cell, &format!("\"{}\"", text.replace('"', "\"\"")));
        prop_assert_eq!(unquote(&cell), text);
    }

    #[test]
    fn state_strings_decode_to_their_text(text in any::<String>(), choices in any::<Vec<u8>>()) {
        let expected = format!("\"{}\"", text.replace('"', "\"\""));
        for json in [
            StateValue::Text(text.as_str().into()).to_json_text(),
            json_with_random_escapes(&text, &choices),
        ] {
            let cell = one_cell(Cell::StateValue, Arc::new(StringArray::from(vec![json.as_str()])));
            prop_assert_eq!(&cell, &expected, "from {}", json);
        }
    }

    #[test]
    fn state_numbers_are_written_as_stored(v in floats()) {
        prop_assume!(v.is_finite());
        let json = StateValue::Number(v).to_json_text();
        let cell = one_cell(Cell::StateValue, Arc::new(StringArray::from(vec![json.as_str()])));
        prop_assert_eq!(cell, json);
    }

    #[test]
    fn any_state_text_writes_without_panic(text in any::<String>()) {
        let array: ArrayRef = Arc::new(StringArray::from(vec![text.as_str()]));
        one_cell(Cell::StateValue, array.clone());
        let map = one_cell(
            Cell::JsonMap(vec![MapEntry { key: "k".into(), column: 0, value: MapValue::StateJson }]),
            array,
        );
        // Whatever the text, the map cell is a JSON object.
        let parsed: serde_json::Value = serde_json::from_str(&unquote(&map)).unwrap();
        prop_assert!(parsed.is_object());
    }

    #[test]
    fn json_maps_parse_back(
        key in any::<String>(),
        text in any::<String>(),
        choices in any::<Vec<u8>>(),
        number in floats(),
    ) {
        prop_assume!(number.is_finite());
        // A map's keys are distinct inner names; a key "n" would repeat the number's.
        prop_assume!(key != "n");
        let batch = RecordBatch::try_from_iter([
            ("n", Arc::new(Float64Array::from(vec![number])) as ArrayRef),
            (
                "s",
                Arc::new(StringArray::from(vec![json_with_random_escapes(&text, &choices)])) as ArrayRef,
            ),
        ])
        .unwrap();
        let mut out = Vec::new();
        CsvEncoder::new(vec![CsvColumn {
            header: "m".into(),
            column: 0,
            cell: Cell::JsonMap(vec![
                MapEntry { key: "n".into(), column: 0, value: MapValue::Number },
                MapEntry { key: key.clone(), column: 1, value: MapValue::StateJson },
            ]),
        }])
        .write_batch(&batch, &mut out)
        .unwrap();
        let cell = String::from_utf8(out).unwrap();
        let map: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&unquote(cell.strip_suffix('\n').unwrap())).unwrap();
        let expected_number = if number == 0.0 { 0.0 } else { number };
        prop_assert_eq!(map.get("n").and_then(serde_json::Value::as_f64), Some(expected_number));
        prop_assert_eq!(map.get(&key).and_then(serde_json::Value::as_str), Some(text.as_str()));
    }
}

/// The instants a zone changes its offset between 1890 and 2045 (from a
/// 6-hour scan, each narrowed to the second).
fn transitions(zone: Tz) -> Vec<i64> {
    let offset = |utc: i64| {
        DateTime::from_timestamp(utc, 0)
            .unwrap()
            .with_timezone(&zone)
            .offset()
            .fix()
            .local_minus_utc()
    };
    const STEP: i64 = 6 * 3600;
    let mut found = Vec::new();
    let mut at = -2_524_521_600; // 1890-01-01
    while at < 2_366_841_600 {
        // 2045-01-01
        if offset(at) != offset(at + STEP) {
            let (mut before, mut after) = (at, at + STEP);
            while after - before > 1 {
                let middle = before + (after - before) / 2;
                if offset(middle) == offset(before) {
                    before = middle;
                } else {
                    after = middle;
                }
            }
            found.push(after);
        }
        at += STEP;
    }
    found
}

#[test]
fn times_match_chrono_around_every_transition() {
    let mut odd_transitions = 0;
    for &zone in ZONES {
        let found = transitions(zone);
        assert!(zone == Tz::UTC || !found.is_empty(), "{zone}");
        odd_transitions += found.iter().filter(|t| *t % 900 != 0).count();
        let instants: Vec<i64> = found
            .iter()
            .flat_map(|&t| {
                [-901, -900, -899, -1, 0, 1, 899, 900].map(|delta| (t + delta) * 1000 + 999)
            })
            .collect();
        assert_times_match_chrono(&instants, zone);
    }
    // Transitions off the quarter hour exist, so the cache must not assume them away.
    assert!(odd_transitions > 0);
}
