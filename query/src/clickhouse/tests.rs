use std::sync::Arc;

use datafusion::arrow::array::{
    Array, AsArray, Float64Array, Int32Array, Int64Array, StringArray, StringViewArray,
    TimestampMillisecondArray, UInt8Array, UInt64Array,
};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::{
    DataType, Field, Schema, TimeUnit, TimestampMillisecondType, UInt64Type,
};

use super::*;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(columns::TRACKER_ID, DataType::Int64, false),
        Field::new(
            columns::MESSAGE_TIME,
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            false,
        ),
        Field::new(columns::FLAGS, DataType::Int64, true),
        Field::new("gps_fix_type", DataType::UInt8, true),
        Field::new("alt", DataType::Int32, true),
        Field::new("speed", DataType::Float64, true),
        Field::new("mn_name", DataType::Utf8, true),
        Field::new("states.mode", DataType::Utf8View, true),
        Field::new(columns::CONTENT_HASH, DataType::UInt64, false),
    ]))
}

/// One row as ClickHouse writes it in RowBinary (Nullable: a 0/1 byte first).
struct Row {
    time: i64,
    flags: Option<i64>,
    fix: Option<u8>,
    alt: Option<i32>,
    speed: Option<f64>,
    name: Option<String>,
    mode: Option<String>,
    hash: u64,
}

fn encode(rows: &[Row]) -> Vec<u8> {
    fn nullable(out: &mut Vec<u8>, value: Option<Vec<u8>>) {
        match value {
            None => out.push(1),
            Some(bytes) => {
                out.push(0);
                out.extend(bytes);
            }
        }
    }
    fn text(value: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let mut len = value.len() as u64;
        loop {
            let byte = (len & 0x7f) as u8;
            len >>= 7;
            if len == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
        out.extend(value.as_bytes());
        out
    }
    let mut out = Vec::new();
    for row in rows {
        out.extend(9_i64.to_le_bytes());
        out.extend(row.time.to_le_bytes());
        nullable(&mut out, row.flags.map(|v| v.to_le_bytes().to_vec()));
        nullable(&mut out, row.fix.map(|v| vec![v]));
        nullable(&mut out, row.alt.map(|v| v.to_le_bytes().to_vec()));
        nullable(&mut out, row.speed.map(|v| v.to_le_bytes().to_vec()));
        nullable(&mut out, row.name.as_deref().map(text));
        nullable(&mut out, row.mode.as_deref().map(text));
        out.extend(row.hash.to_le_bytes());
    }
    out
}

fn rows() -> Vec<Row> {
    vec![
        Row {
            time: 1_717_200_000_000,
            flags: Some(5),
            fix: Some(2),
            alt: Some(-12),
            speed: Some(42.5),
            name: Some("Kcell \"LTE\" ✓".into()),
            mode: Some("\"eco\"".into()),
            hash: u64::MAX,
        },
        Row {
            time: 1_717_200_001_000,
            flags: None,
            fix: None,
            alt: None,
            speed: None,
            name: None,
            mode: None,
            hash: 1,
        },
        Row {
            time: 1_717_200_002_000,
            flags: Some(i64::MIN),
            fix: Some(0),
            alt: Some(i32::MAX),
            speed: Some(-0.0),
            // Longer than 127 bytes: a two-byte length.
            name: Some("x".repeat(300)),
            mode: Some(String::new()),
            hash: 0,
        },
    ]
}

/// Decodes `bytes` fed in chunks of `chunk` bytes, `batch` rows per batch.
fn decode(bytes: &[u8], chunk: usize, batch: usize) -> Result<Vec<RecordBatch>> {
    let mut decoder = Decoder::new(schema(), batch)?;
    let mut out = Vec::new();
    for piece in bytes.chunks(chunk) {
        decoder.push(Bytes::copy_from_slice(piece));
        while let Some(batch) = decoder.ready(false) {
            out.push(batch?);
        }
    }
    while let Some(batch) = decoder.ready(true) {
        out.push(batch?);
    }
    Ok(out)
}

#[test]
fn rowbinary_decodes_to_the_schema_whatever_the_chunks() {
    let bytes = encode(&rows());
    for chunk in 1..=bytes.len() {
        for batch in [1, 2, 8192] {
            let batches = decode(&bytes, chunk, batch).unwrap();
            assert!(batches.iter().all(|b| b.num_rows() <= batch));
            let all = concat_batches(&schema(), &batches).unwrap();
            assert_eq!(all.num_rows(), 3, "chunk {chunk}, batch {batch}");
            assert_eq!(
                all.column(0)
                    .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
                    .values(),
                &[9, 9, 9]
            );
            assert_eq!(
                all.column(1).as_primitive::<TimestampMillisecondType>(),
                &TimestampMillisecondArray::from(vec![
                    1_717_200_000_000,
                    1_717_200_001_000,
                    1_717_200_002_000
                ])
                .with_timezone("UTC")
            );
            assert_eq!(
                all.column(2).as_any().downcast_ref::<Int64Array>().unwrap(),
                &Int64Array::from(vec![Some(5), None, Some(i64::MIN)])
            );
            assert_eq!(
                all.column(3).as_any().downcast_ref::<UInt8Array>().unwrap(),
                &UInt8Array::from(vec![Some(2), None, Some(0)])
            );
            assert_eq!(
                all.column(4).as_any().downcast_ref::<Int32Array>().unwrap(),
                &Int32Array::from(vec![Some(-12), None, Some(i32::MAX)])
            );
            let speed = all
                .column(5)
                .as_any()
                .downcast_ref::<Float64Array>()
                .unwrap();
            assert_eq!(speed.value(0), 42.5);
            assert!(speed.is_null(1));
            assert!(speed.value(2) == 0.0 && speed.value(2).is_sign_negative());
            assert_eq!(
                all.column(6)
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .unwrap(),
                &StringArray::from(vec![
                    Some("Kcell \"LTE\" ✓".to_owned()),
                    None,
                    Some("x".repeat(300))
                ])
            );
            assert_eq!(
                all.column(7)
                    .as_any()
                    .downcast_ref::<StringViewArray>()
                    .unwrap(),
                &StringViewArray::from(vec![Some("\"eco\""), None, Some("")])
            );
            assert_eq!(
                all.column(8).as_primitive::<UInt64Type>(),
                &UInt64Array::from(vec![u64::MAX, 1, 0])
            );
        }
    }
}

#[test]
fn an_answer_cut_inside_a_row_is_an_error_not_fewer_rows() {
    let bytes = encode(&rows());
    for cut in 1..bytes.len() {
        let decoded = decode(&bytes[..cut], 7, 8192);
        let complete = [0, 1, 2, 3]
            .into_iter()
            .any(|n| encode(&rows()[..n]).len() == cut);
        assert_eq!(decoded.is_ok(), complete, "cut at {cut}");
    }
    assert!(
        decode(&[], 3, 8192).unwrap().is_empty(),
        "no rows, no batch"
    );
}

#[test]
fn scans_push_tracker_times_and_columns_down_and_the_end_of_server_time() {
    let table = ClickHouseTable {
        url: "http://127.0.0.1:8123".into(),
        database: "fleet".into(),
        user: None,
        password: None,
        cluster: None,
    };
    let request = ScanRequest {
        tracker: 9,
        message: (1, 2),
        server: None,
        columns: vec!["speed".into(), "inputs.lls_level_1".into()],
        batch_size: 8192,
        with_server_time: true,
        string_views: false,
    };
    let keyed = Arc::new(Schema::new(vec![
        Field::new(columns::TRACKER_ID, DataType::Int64, false),
        Field::new("speed", DataType::Float64, true),
        Field::new("inputs.lls_level_1", DataType::Float64, true),
        Field::new(columns::CONTENT_HASH, DataType::UInt64, false),
    ]));
    let (sql, binds) = scan_sql(&table, &keyed, &request).unwrap();
    assert_eq!(
        sql,
        "SELECT tracker_id AS c0, speed AS c1, \
         if(has(inputs.name, ?), inputs.value[indexOf(inputs.name, ?)], NULL) AS c2, \
         content_hash AS c3 FROM `fleet`.`telemetry` \
         WHERE tracker_id = ? AND msg_time >= ? AND msg_time < ?"
    );
    assert_eq!(binds.len(), 5);
    // Whatever an inner column's name, it reaches ClickHouse only as a bound value.
    let odd = Arc::new(Schema::new(vec![Field::new(
        "inputs.a`) OR 1=1 --",
        DataType::Float64,
        true,
    )]));
    let (odd_sql, odd_binds) = scan_sql(&table, &odd, &request).unwrap();
    assert!(!odd_sql.contains("OR 1=1"), "{odd_sql}");
    assert_eq!(odd_binds.len(), 5);
    let (filtered, binds) = scan_sql(
        &table,
        &keyed,
        &ScanRequest {
            server: Some((3, 4)),
            ..request
        },
    )
    .unwrap();
    assert_eq!(filtered, format!("{sql} AND server_time < ?"));
    assert!(matches!(binds.last(), Some(Bind::Int(4))));
}

/// A day as ClickHouse may answer it: unordered, a message twice.
fn unordered_day() -> (SchemaRef, RecordBatch) {
    let schema = Arc::new(Schema::new(vec![
        Field::new(columns::TRACKER_ID, DataType::Int64, false),
        Field::new(columns::MESSAGE_TIME, columns::time_type(), false),
        Field::new(columns::SERVER_TIME, columns::time_type(), false),
        Field::new("speed", DataType::Int64, true),
        Field::new(columns::CONTENT_HASH, DataType::UInt64, false),
    ]));
    // (message time, server time, speed, hash): message (20, hash 5)
    // arrived at 100 and again at 300; (20, hash 6) is another message.
    let rows = [
        (30, 50, 3, 1),
        (20, 300, 2, 5),
        (10, 60, 1, 9),
        (20, 100, 2, 5),
        (20, 90, 4, 6),
    ];
    let time = |f: fn(&(i64, i64, i64, u64)) -> i64| {
        Arc::new(
            TimestampMillisecondArray::from_iter_values(rows.iter().map(f)).with_timezone("UTC"),
        )
    };
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(vec![1; rows.len()])),
            time(|r| r.0),
            time(|r| r.1),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2))),
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.3))),
        ],
    )
    .unwrap();
    (schema, batch)
}

fn times_and_arrivals(batches: &[RecordBatch]) -> Vec<(i64, i64)> {
    batches
        .iter()
        .flat_map(|b| {
            let m = b
                .column(1)
                .as_primitive::<TimestampMillisecondType>()
                .clone();
            let s = b
                .column(2)
                .as_primitive::<TimestampMillisecondType>()
                .clone();
            (0..b.num_rows()).map(move |i| (m.value(i), s.value(i)))
        })
        .collect()
}

#[test]
fn a_day_is_ordered_each_message_once_at_its_first_arrival_then_filtered() {
    let (schema, day) = unordered_day();
    let sorted = sort_day(&schema, &[day.slice(0, 2), day.slice(2, 3)], None, 2).unwrap();
    assert!(sorted.iter().all(|b| b.num_rows() <= 2));
    assert_eq!(
        times_and_arrivals(&sorted),
        vec![(10, 60), (20, 100), (20, 90), (30, 50)],
        "by message time then hash; the copy that arrived at 300 dropped"
    );
    // Arrived in [95, 400): the message first seen at 100 is in, not its copy's
    // arrival at 300 standing in for anything; [200, 400) finds nothing of it.
    let filtered = sort_day(&schema, std::slice::from_ref(&day), Some((95, 400)), 8).unwrap();
    assert_eq!(times_and_arrivals(&filtered), vec![(20, 100)]);
    let late = sort_day(&schema, &[day], Some((200, 400)), 8).unwrap();
    assert_eq!(times_and_arrivals(&late), vec![]);
    assert!(sort_day(&schema, &[], None, 8).unwrap().is_empty());
}

#[test]
fn scans_ask_an_hour_first_then_doubling_up_to_a_day() {
    const HOUR: i64 = 3_600_000;
    assert_eq!(pieces((5, 5)), vec![]);
    assert_eq!(pieces((5, 10)), vec![(5, 10)]);
    let week = pieces((-7, 7 * 24 * HOUR - 7));
    assert_eq!(
        week.iter().map(|(a, b)| (b - a) / HOUR).collect::<Vec<_>>(),
        // 168 hours: 1 + 2 + 4 + 8 + 16 = 31, then five days, then 17.
        vec![1, 2, 4, 8, 16, 24, 24, 24, 24, 24, 17]
    );
    assert_eq!(week.first().map(|p| p.0), Some(-7));
    assert_eq!(week.last().map(|p| p.1), Some(7 * 24 * HOUR - 7));
    assert!(
        week.windows(2).all(|w| w[0].1 == w[1].0),
        "no gap, no overlap"
    );
}
