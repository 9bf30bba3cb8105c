//! State cells (JSON scalars) and JSON map cells.

use std::sync::Arc;

use arrow::array::{Float64Array, Int64Array, StringArray, UInt8Array};

use super::{batch, cells, column, entry, rows};
use crate::csv::{Cell, MapValue};

fn states(values: Vec<Option<&str>>) -> Vec<String> {
    cells(Cell::StateValue, Arc::new(StringArray::from(values)))
}

#[test]
fn states_of_every_json_type() {
    assert_eq!(
        states(vec![
            Some("\"eco\""),
            Some("12.5"),
            Some("-3"),
            Some("1.5e-7"),
            Some("true"),
            Some("false"),
            Some("null"),
            None,
            Some("\"\""),
        ]),
        [
            "\"eco\"", "12.5", "-3", "1.5e-7", "true", "false", "\\N", "\\N", "\"\""
        ]
    );
}

#[test]
fn state_strings_decode_json_escapes() {
    assert_eq!(
        states(vec![
            Some(r#""say \"hi\"\n""#),
            Some(r#""tab\there \\ \/ \u00e9 \ud83d\ude00 \b\f\r""#),
            Some("\"a,b\""),
        ]),
        [
            "\"say \"\"hi\"\"\n\"",
            "\"tab\there \\ / \u{e9} \u{1f600} \u{8}\u{c}\r\"",
            "\"a,b\"",
        ]
    );
}

#[test]
fn states_that_are_not_json_are_kept_as_text() {
    assert_eq!(
        states(vec![
            Some("eco"),
            Some("\"unterminated"),
            Some(r#""bad \x escape""#),
            Some(r#""lone \ud83d surrogate""#),
            Some("\"two\" \"strings\""),
            Some("01"),
            Some("1."),
            Some(""),
        ]),
        [
            "\"eco\"",
            "\"\"\"unterminated\"",
            "\"\"\"bad \\x escape\"\"\"",
            "\"\"\"lone \\ud83d surrogate\"\"\"",
            "\"\"\"two\"\" \"\"strings\"\"\"",
            "\"01\"",
            "\"1.\"",
            "\"\"",
        ]
    );
}

#[test]
fn json_maps_keep_the_given_key_order_and_skip_nulls() {
    let batch = batch(vec![
        Arc::new(Float64Array::from(vec![Some(512.0), None, Some(f64::NAN)])),
        Arc::new(Float64Array::from(vec![Some(3.5), None, Some(-0.25)])),
        Arc::new(StringArray::from(vec![Some("\"eco\""), None, Some("null")])),
        Arc::new(StringArray::from(vec![
            Some(r#""say \"hi\"\n""#),
            None,
            Some("true"),
        ])),
        Arc::new(UInt8Array::from(vec![Some(1), None, Some(0)])),
    ]);
    let map = Cell::JsonMap(vec![
        entry("lls_level_1", 0, MapValue::Number),
        entry("fuel", 1, MapValue::Number),
        entry("mode", 2, MapValue::StateJson),
        entry("a\"b", 3, MapValue::StateJson),
        entry("1", 4, MapValue::Number),
    ]);
    assert_eq!(
        rows(vec![column("inputs", 99, map)], &batch),
        concat!(
            r#""{""lls_level_1"":512,""fuel"":3.5,""mode"":""eco"",""a\""b"":""say \""hi\""\n"",""1"":1}""#,
            "\n",
            "\"{}\"\n",
            r#""{""fuel"":-0.25,""a\""b"":true,""1"":0}""#,
            "\n",
        )
    );
}

#[test]
fn json_maps_without_entries_are_empty_objects() {
    let batch = batch(vec![Arc::new(Int64Array::from(vec![1, 2]))]);
    assert_eq!(
        rows(vec![column("states", 0, Cell::JsonMap(Vec::new()))], &batch),
        "\"{}\"\n\"{}\"\n"
    );
}

#[test]
fn json_map_states_that_are_not_json_become_strings() {
    let batch = batch(vec![Arc::new(StringArray::from(vec![
        "eco \"x\"\t",
        "\"bad \\q\"",
        "\"\\u00E9\\/\"",
    ]))]);
    let map = Cell::JsonMap(vec![entry("s", 0, MapValue::StateJson)]);
    assert_eq!(
        rows(vec![column("states", 0, map)], &batch),
        concat!(
            r#""{""s"":""eco \""x\""\t""}""#,
            "\n",
            r#""{""s"":""\""bad \\q\""""}""#,
            "\n",
            "\"{\"\"s\"\":\"\"\u{e9}/\"\"}\"\n",
        )
    );
}
