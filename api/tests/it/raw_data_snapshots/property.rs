//! Property: the CSV export of random messages over a random range and random
//! columns equals a naive reference built from the input messages, whether the
//! rows come from the memtable, from Parquet or from both.

use chrono::{DateTime, FixedOffset, Utc};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Map, Value, json};

use super::support::{ingest, read};
use crate::TestServer;

/// 2024-05-29T12:00:00Z: messages lie within 3.5 days of it (the test clock is June 1, 08:00Z).
const BASE_MS: i64 = 1_716_984_000_000;
const SPREAD_MS: i64 = 302_400_000;
const COLUMNS: [&str; 7] = [
    "lat", "speed", "mn_name", "flags", "inputs.a", "inputs.b", "states.s",
];

#[derive(Debug, Clone)]
enum State {
    Text(String),
    Number(f64),
    Flag(bool),
}

#[derive(Debug, Clone)]
struct Msg {
    offset_ms: i64,
    lat: Option<f64>,
    speed: Option<f64>,
    mn_name: Option<String>,
    flags: Option<i64>,
    a: Option<f64>,
    b: Option<f64>,
    s: Option<State>,
}

#[derive(Debug, Clone)]
struct Case {
    messages: Vec<Msg>,
    /// Messages sent again, unchanged: duplicates that must appear once.
    resent: Vec<Index>,
    /// How many messages go in before the flush.
    split: Index,
    range_ms: (i64, i64),
    columns: Vec<&'static str>,
}

fn number(low: f64, high: f64) -> impl Strategy<Value = f64> {
    prop_oneof![
        (low as i32..=high as i32).prop_map(f64::from),
        low..high,
        (1u32..10_000).prop_map(|n| f64::from(n) * 1e-7),
    ]
}

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 ,;'\"\n\\\\é日]{0,10}"
}

fn message(offset_ms: i64) -> impl Strategy<Value = Msg> {
    let state = prop_oneof![
        text().prop_map(State::Text),
        number(-1e6, 1e6).prop_map(State::Number),
        any::<bool>().prop_map(State::Flag),
    ];
    (
        proptest::option::of(number(-90.0, 90.0)),
        proptest::option::of(number(0.0, 400.0)),
        proptest::option::of(text()),
        proptest::option::of(0i64..8),
        proptest::option::of(number(-1e6, 1e6)),
        proptest::option::of(number(-1e6, 1e6)),
        proptest::option::of(state),
    )
        .prop_map(move |(lat, speed, mn_name, flags, a, b, s)| Msg {
            offset_ms,
            lat,
            speed,
            mn_name,
            flags,
            a,
            b,
            s,
        })
}

fn case() -> impl Strategy<Value = Case> {
    let messages = proptest::collection::btree_set(0..SPREAD_MS, 1..16)
        .prop_flat_map(|offsets| offsets.into_iter().map(message).collect::<Vec<_>>())
        .prop_shuffle();
    let bound = -3_600_000..SPREAD_MS + 3_600_000;
    let range = (bound.clone(), bound).prop_map(|(x, y)| {
        let (from, to) = (x.min(y), x.max(y));
        (from, if to == from { to + 1 } else { to })
    });
    let columns = proptest::sample::subsequence(COLUMNS.to_vec(), 1..=COLUMNS.len()).prop_shuffle();
    (
        messages,
        proptest::collection::vec(any::<Index>(), 0..3),
        any::<Index>(),
        range,
        columns,
    )
        .prop_map(|(messages, resent, split, range_ms, columns)| Case {
            messages,
            resent,
            split,
            range_ms,
            columns,
        })
}

fn instant(offset_ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(BASE_MS + offset_ms).unwrap()
}

fn wire_time(offset_ms: i64) -> String {
    instant(offset_ms)
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

fn to_json(tracker: i64, m: &Msg) -> Value {
    let mut line = Map::new();
    line.insert("tracker_id".into(), json!(tracker));
    line.insert("msg_time".into(), json!(wire_time(m.offset_ms)));
    let mut put = |name: &str, value: Option<Value>| {
        if let Some(value) = value {
            line.insert(name.into(), value);
        }
    };
    put("lat", m.lat.map(|v| json!(v)));
    put("speed", m.speed.map(|v| json!(v)));
    put("mn_name", m.mn_name.clone().map(Value::String));
    put("flags", m.flags.map(|v| json!(v)));
    let mut inputs = Map::new();
    for (name, value) in [("a", m.a), ("b", m.b)] {
        if let Some(value) = value {
            inputs.insert(name.into(), json!(value));
        }
    }
    put(
        "inputs",
        (!inputs.is_empty()).then_some(Value::Object(inputs)),
    );
    put(
        "states",
        m.s.as_ref().map(|s| match s {
            State::Text(t) => json!({"s": t}),
            State::Number(n) => json!({"s": n}),
            State::Flag(b) => json!({"s": b}),
        }),
    );
    Value::Object(line)
}

/// Spec formatting: shortest number (no `.0`, `0` for `-0`), quoted text with doubled quotes, `\N`.
fn num(value: Option<f64>) -> String {
    match value {
        Some(0.0) => "0".into(),
        Some(v) => format!("{v}"),
        None => "\\N".into(),
    }
}

fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

fn reference(case: &Case) -> String {
    let tokyo = FixedOffset::east_opt(9 * 3600).unwrap();
    let mut rows: Vec<&Msg> = case
        .messages
        .iter()
        .filter(|m| case.range_ms.0 <= m.offset_ms && m.offset_ms < case.range_ms.1)
        .collect();
    rows.sort_by_key(|m| m.offset_ms);
    let mut out: Vec<String> = vec![quoted("msg_time")];
    out.extend(case.columns.iter().map(|c| quoted(c)));
    let mut csv = out.join(",") + "\n";
    for m in rows {
        let time = instant(m.offset_ms).with_timezone(&tokyo);
        let mut cells = vec![quoted(&time.format("%Y-%m-%dT%H:%M:%S+0900").to_string())];
        for column in &case.columns {
            cells.push(match *column {
                "lat" => num(m.lat),
                "speed" => num(m.speed),
                "mn_name" => m.mn_name.as_deref().map_or("\\N".into(), quoted),
                "flags" => m.flags.map_or("\\N".into(), |f| f.to_string()),
                "inputs.a" => num(m.a),
                "inputs.b" => num(m.b),
                _ => match &m.s {
                    Some(State::Text(t)) => quoted(t),
                    Some(State::Number(n)) => num(Some(*n)),
                    Some(State::Flag(b)) => b.to_string(),
                    None => "\\N".into(),
                },
            });
        }
        csv += &(cells.join(",") + "\n");
    }
    csv
}

async fn check(srv: &TestServer, n: u32, case: &Case) -> Result<(), TestCaseError> {
    let acc = srv.account(&format!("prop-{n}@example.com")).await;
    let t = acc.trackers[0].0;
    let mut lines: Vec<Value> = case.messages.iter().map(|m| to_json(t, m)).collect();
    for index in &case.resent {
        lines.push(lines[index.index(case.messages.len())].clone());
    }
    let split = case.split.index(lines.len() + 1);
    if split > 0 {
        ingest(srv, false, &lines[..split]).await;
    }
    srv.ingest.flush().unwrap();
    if split < lines.len() {
        ingest(srv, false, &lines[split..]).await;
    }
    let params = json!({"hash": acc.key, "tracker_id": t, "from": wire_time(case.range_ms.0),
                        "to": wire_time(case.range_ms.1), "columns": case.columns});
    let expected = reference(case);
    let (status, mixed) = read(srv, &params).await;
    prop_assert_eq!(status, 200, "{}", mixed);
    prop_assert_eq!(&mixed, &expected, "memtable and Parquet");
    srv.ingest.flush().unwrap();
    let (_, parquet) = read(srv, &params).await;
    prop_assert_eq!(&parquet, &expected, "Parquet only");
    Ok(())
}

#[test]
fn export_equals_a_naive_reference() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let srv = runtime.block_on(TestServer::start());
    let mut runner = TestRunner::new(Config {
        cases: 32,
        failure_persistence: None,
        ..Config::default()
    });
    let cases = std::sync::atomic::AtomicU32::new(0);
    let result = runner.run(&case(), |case| {
        let n = cases.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        runtime.block_on(check(&srv, n, &case))
    });
    if let Err(err) = result {
        panic!("{err}");
    }
}
