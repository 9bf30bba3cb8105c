//! Each kind of cell, nulls, quoting, and the errors of a mismatched batch.
//!
//! Date/times are in `tests/time.rs`, states and JSON maps in `tests/json.rs`.

mod json;
mod time;

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Float32Array, Float64Array, Int8Array, Int64Array, LargeStringArray, StringArray,
    StringViewArray, UInt8Array, UInt64Array,
};
use arrow::record_batch::RecordBatch;
use chrono_tz::Tz;
use schemas::{ErrorCode, GpsFixType, HasCode, MnType};

use super::*;

fn column(header: &str, column: usize, cell: Cell) -> CsvColumn {
    CsvColumn {
        header: header.into(),
        column,
        cell,
    }
}

fn batch(arrays: Vec<ArrayRef>) -> RecordBatch {
    RecordBatch::try_from_iter(
        arrays
            .into_iter()
            .enumerate()
            .map(|(i, array)| (format!("c{i}"), array)),
    )
    .unwrap()
}

/// The rows only (no header).
fn rows(columns: Vec<CsvColumn>, batch: &RecordBatch) -> String {
    let mut out = Vec::new();
    CsvEncoder::new(columns)
        .write_batch(batch, &mut out)
        .unwrap();
    String::from_utf8(out).unwrap()
}

/// The cells of a one-column encoding, one per row.
fn cells(cell: Cell, array: ArrayRef) -> Vec<String> {
    let text = rows(vec![column("x", 0, cell)], &batch(vec![array]));
    let mut lines: Vec<String> = Vec::new();
    // Cells may hold newlines inside quotes: split on LF outside quotes only.
    let mut quoted = false;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            '\n' if !quoted => lines.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    assert!(current.is_empty(), "the last row ends with LF");
    lines
}

fn entry(key: &str, column: usize, value: MapValue) -> MapEntry {
    MapEntry {
        key: key.into(),
        column,
        value,
    }
}

fn iso(zone: Tz) -> Cell {
    Cell::Time { zone, iso: true }
}

#[test]
fn header_quotes_every_name() {
    let encoder = CsvEncoder::new(vec![
        column("msg_time", 0, Cell::Null),
        column("inputs.a\"b", 0, Cell::Null),
        column("discrete_inputs.1", 0, Cell::Null),
    ]);
    let mut out = Vec::new();
    encoder.write_header(&mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "\"msg_time\",\"inputs.a\"\"b\",\"discrete_inputs.1\"\n"
    );
}

#[test]
fn rows_are_comma_separated_and_end_with_lf() {
    let batch = batch(vec![
        Arc::new(Int64Array::from(vec![Some(1), None])),
        Arc::new(StringArray::from(vec![Some("a"), Some("b")])),
    ]);
    let columns = vec![
        column("n", 0, Cell::Number),
        column("t", 1, Cell::Text),
        column("u", 7, Cell::Null),
    ];
    assert_eq!(rows(columns, &batch), "1,\"a\",\\N\n\\N,\"b\",\\N\n");
}

fn numbers(values: Vec<Option<f64>>) -> Vec<String> {
    cells(Cell::Number, Arc::new(Float64Array::from(values)))
}

#[test]
fn floats_are_shortest_without_exponent() {
    assert_eq!(
        numbers(vec![
            Some(54.22809),
            Some(0.0),
            Some(24296.444),
            Some(-1.0),
            Some(3.5),
            Some(1e21),
            Some(5e-7),
            Some(-1.5e-7),
            Some(1.2345678901234568e20),
            Some(0.1 + 0.2),
            None,
        ]),
        [
            "54.22809",
            "0",
            "24296.444",
            "-1",
            "3.5",
            "1000000000000000000000",
            "0.0000005",
            "-0.00000015",
            "123456789012345680000",
            "0.30000000000000004",
            "\\N",
        ]
    );
}

#[test]
fn ties_between_shortest_forms_round_away_from_zero_as_rust_does() {
    // ryu alone would write ...624.2 and 1612360.2 (round half to even).
    let two_to_50 = 2f64.powi(50); // 1125899906842624, where the step is 0.25
    assert_eq!(
        numbers(vec![
            Some(two_to_50 + 0.25),
            Some(two_to_50 + 0.75),
            Some(-(two_to_50 + 1.25)),
        ]),
        [
            "1125899906842624.3",
            "1125899906842624.8",
            "-1125899906842625.3"
        ]
    );
    assert_eq!(
        cells(
            Cell::Number,
            // Steps of 0.125 from 2^20 on.
            Arc::new(Float32Array::from(vec![
                1_612_360.0 + 0.25,
                -(1_612_361.0 + 0.25),
                0.125
            ]))
        ),
        ["1612360.3", "-1612361.3", "0.125"]
    );
}

#[test]
fn extreme_floats_are_written_in_full() {
    let out = numbers(vec![Some(f64::MAX), Some(5e-324), Some(f64::MIN_POSITIVE)]);
    assert_eq!(out[0], format!("{}", f64::MAX));
    assert_eq!(out[0].len(), 309);
    assert_eq!(out[1], format!("0.{}5", "0".repeat(323)));
    assert_eq!(out[2], format!("{}", f64::MIN_POSITIVE));
}

#[test]
fn negative_zero_is_zero_and_non_finite_is_null() {
    assert_eq!(
        numbers(vec![
            Some(-0.0),
            Some(f64::NAN),
            Some(f64::INFINITY),
            Some(f64::NEG_INFINITY)
        ]),
        ["0", "\\N", "\\N", "\\N"]
    );
}

#[test]
fn integers_and_f32_are_numbers() {
    assert_eq!(
        cells(
            Cell::Number,
            Arc::new(Int64Array::from(vec![Some(i64::MIN), Some(i64::MAX), None]))
        ),
        ["-9223372036854775808", "9223372036854775807", "\\N"]
    );
    assert_eq!(
        cells(Cell::Number, Arc::new(UInt64Array::from(vec![u64::MAX]))),
        ["18446744073709551615"]
    );
    assert_eq!(
        cells(Cell::Number, Arc::new(Int8Array::from(vec![-128, 0]))),
        ["-128", "0"]
    );
    assert_eq!(
        cells(Cell::Number, Arc::new(UInt8Array::from(vec![255, 1]))),
        ["255", "1"]
    );
    // The shortest f32, not its f64 widening 0.10000000149011612.
    assert_eq!(
        cells(
            Cell::Number,
            Arc::new(Float32Array::from(vec![0.1, -0.0, 16_777_216.0, f32::NAN]))
        ),
        ["0.1", "0", "16777216", "\\N"]
    );
}

#[test]
fn text_is_quoted_with_inner_quotes_doubled() {
    let values = vec![
        Some("a\"b"),
        Some("x,y"),
        Some("line 1\nline 2\r\n"),
        Some(""),
        Some("back\\slash, \\N"),
        Some("\"\""),
        None,
    ];
    let expected = [
        "\"a\"\"b\"",
        "\"x,y\"",
        "\"line 1\nline 2\r\n\"",
        "\"\"",
        "\"back\\slash, \\N\"",
        "\"\"\"\"\"\"",
        "\\N",
    ];
    assert_eq!(
        cells(Cell::Text, Arc::new(StringArray::from(values.clone()))),
        expected
    );
    assert_eq!(
        cells(Cell::Text, Arc::new(LargeStringArray::from(values.clone()))),
        expected
    );
    assert_eq!(
        cells(Cell::Text, Arc::new(StringViewArray::from(values))),
        expected
    );
}

#[test]
fn enums_are_spelled_and_unknown_numbers_are_null() {
    assert_eq!(
        cells(
            Cell::Enum(GPS_FIX_TYPE_NAMES),
            Arc::new(UInt8Array::from(vec![
                Some(0),
                Some(2),
                Some(3),
                Some(4),
                None
            ]))
        ),
        [
            "\"UNKNOWN\"",
            "\"HAS_FIX\"",
            "\"LAST_KNOWN_POSITION\"",
            "\\N",
            "\\N"
        ]
    );
    assert_eq!(
        cells(
            Cell::Enum(MN_TYPE_NAMES),
            Arc::new(UInt8Array::from(vec![5, 6, 255]))
        ),
        ["\"NR\"", "\\N", "\\N"]
    );
}

#[test]
fn enum_tables_match_the_schemas_spellings() {
    assert_eq!(GPS_FIX_TYPE_NAMES.len(), GpsFixType::ALL.len());
    for (number, name) in (0u8..).zip(GPS_FIX_TYPE_NAMES) {
        assert_eq!(GpsFixType::from_number(number).unwrap().as_str(), *name);
    }
    assert_eq!(MN_TYPE_NAMES.len(), MnType::ALL.len());
    for (number, name) in (0u8..).zip(MN_TYPE_NAMES) {
        assert_eq!(MnType::from_number(number).unwrap().as_str(), *name);
    }
}

#[test]
fn flag_bits_are_zero_or_one() {
    let flags: ArrayRef = Arc::new(Int64Array::from(vec![Some(0b101), Some(0), None, Some(-1)]));
    let batch = batch(vec![flags]);
    let columns = (0..3)
        .map(|bit| column("flag", 0, Cell::FlagBit(bit)))
        .chain([
            column("high", 0, Cell::FlagBit(63)),
            column("none", 0, Cell::FlagBit(64)),
            column("flags", 0, Cell::Number),
        ])
        .collect();
    assert_eq!(
        rows(columns, &batch),
        "1,0,1,0,0,5\n0,0,0,0,0,0\n\\N,\\N,\\N,\\N,\\N,\\N\n1,1,1,1,0,-1\n"
    );
}

#[test]
fn null_cells_are_always_null() {
    let batch = batch(vec![Arc::new(Int64Array::from(vec![1]))]);
    assert_eq!(
        rows(vec![column("inputs.unknown", 42, Cell::Null)], &batch),
        "\\N\n"
    );
}

#[test]
fn batches_append_to_the_output() {
    let encoder = CsvEncoder::new(vec![column("n", 0, Cell::Number)]);
    let mut out = b"kept\n".to_vec();
    for values in [vec![1, 2], vec![], vec![3]] {
        let batch = batch(vec![Arc::new(Int64Array::from(values))]);
        encoder.write_batch(&batch, &mut out).unwrap();
    }
    assert_eq!(out, b"kept\n1\n2\n3\n");
}

#[test]
fn mismatched_columns_are_errors_and_write_nothing() {
    let batch = batch(vec![
        Arc::new(StringArray::from(vec!["x"])),
        Arc::new(Int64Array::from(vec![1])),
    ]);
    let cases = [
        (column("t", 0, iso(Tz::UTC)), "time"),
        (column("n", 0, Cell::Number), "number"),
        (column("s", 1, Cell::Text), "text"),
        (column("e", 1, Cell::Enum(MN_TYPE_NAMES)), "enum (UInt8)"),
        (column("v", 1, Cell::StateValue), "state (JSON text)"),
        (column("f", 0, Cell::FlagBit(0)), "flag bit (Int64)"),
        (
            column(
                "m",
                0,
                Cell::JsonMap(vec![
                    entry("a", 1, MapValue::Number),
                    entry("b", 1, MapValue::StateJson),
                ]),
            ),
            "state (JSON text)",
        ),
    ];
    for (csv_column, expected_cell) in cases {
        let mut out = b"before".to_vec();
        let error = CsvEncoder::new(vec![column("ok", 1, Cell::Number), csv_column])
            .write_batch(&batch, &mut out)
            .unwrap_err();
        assert_eq!(error.code(), ErrorCode::Unexpected);
        assert!(
            matches!(&error, CsvError::UnexpectedType { cell, .. } if *cell == expected_cell),
            "{error}"
        );
        assert_eq!(out, b"before");
    }

    let error = CsvEncoder::new(vec![column("inputs.x", 2, Cell::Number)])
        .write_batch(&batch, &mut Vec::new())
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "CSV column `inputs.x` reads batch column 2, but the batch has 2"
    );
    assert_eq!(error.code(), ErrorCode::Unexpected);
}
