//! Ingest and full export on both storage backends, side by side with
//! ClickHouse's own HTTP interface on the same rows.
//!
//! [`Workload::generate`] turns one simulated tracker of the [`Fleet`] into
//! request bodies twice over, batch for batch: NDJSON lines of the intake
//! (`/ingest/v1/messages`, sent with a backfill token so that the generated
//! server times are kept) and `JSONEachRow` lines of the table of
//! `deploy/clickhouse/schema.sql` (the `Nested` columns as
//! `inputs.name`/`inputs.value` arrays). [`send_all`] posts either with a
//! few concurrent clients. [`trackhouse`] runs the real server in process on
//! either storage and [`clickhouse`] talks to the ClickHouse server: the
//! reference table, its `CSVWithNames` export, and a throwaway local server
//! when none is given.

pub mod clickhouse;
pub mod trackhouse;

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use bytes::Bytes;
use schemas::{Message, StateValue, TrackerId};
use serde_json::{Map, Value, json};

use crate::export;
use crate::fleet::{Fleet, FleetConfig, MESSAGES_PER_DAY};

/// The same rows as request bodies for the intake and for ClickHouse.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The tracker every row belongs to.
    pub tracker: TrackerId,
    /// The message-time span of the rows, `[from, to)` in ms.
    pub span_ms: (i64, i64),
    /// Rows in all.
    pub rows: u64,
    /// Rows per body (the same for both formats).
    pub lines: Vec<usize>,
    /// NDJSON bodies of the intake.
    pub ndjson: Vec<Bytes>,
    /// `JSONEachRow` bodies of the reference table.
    pub json_each_row: Vec<Bytes>,
}

impl Workload {
    /// `days` of one tracker at 1 Hz from the fleet's default start, cut
    /// into bodies of `batch_lines` rows.
    pub fn generate(tracker: TrackerId, days: u32, batch_lines: usize) -> Self {
        let config = FleetConfig {
            first_tracker_id: tracker.0,
            ..FleetConfig::default()
        };
        let mut fleet = Fleet::new(&config);
        let total = u64::from(days) * MESSAGES_PER_DAY;
        let batch_lines = batch_lines.max(1);
        let (mut lines, mut ndjson, mut json_each_row) = (Vec::new(), Vec::new(), Vec::new());
        let mut done = 0u64;
        while done < total {
            let seconds = (batch_lines as u64).min(total - done);
            let messages = fleet.next_seconds(seconds as u32);
            let (mut intake, mut reference) = (Vec::new(), Vec::new());
            for message in messages.into_iter().map(intake_valid) {
                let line = intake_line(&message).to_string();
                let mut hasher = std::hash::DefaultHasher::new();
                line.hash(&mut hasher);
                intake.extend_from_slice(line.as_bytes());
                intake.push(b'\n');
                reference.extend_from_slice(clickhouse_row(&message, hasher.finish()).as_bytes());
                reference.push(b'\n');
            }
            lines.push(seconds as usize);
            ndjson.push(Bytes::from(intake));
            json_each_row.push(Bytes::from(reference));
            done += seconds;
        }
        Self {
            tracker,
            span_ms: (
                config.start_ms,
                config.start_ms + i64::from(days) * 86_400_000,
            ),
            rows: total,
            lines,
            ndjson,
            json_each_row,
        }
    }

    /// Bytes of all NDJSON bodies.
    pub fn ndjson_bytes(&self) -> u64 {
        self.ndjson.iter().map(|b| b.len() as u64).sum()
    }

    /// Bytes of all `JSONEachRow` bodies.
    pub fn json_each_row_bytes(&self) -> u64 {
        self.json_each_row.iter().map(|b| b.len() as u64).sum()
    }
}

/// The message as the intake accepts it: the simulator reports `precision`
/// -1 without a fix, which the intake refuses (it must be at least 0), so
/// that value is left out, here and in the reference rows alike.
fn intake_valid(mut message: Message) -> Message {
    message.precision = message.precision.filter(|p| *p >= 0);
    message
}

/// `ms` as `2024-06-01T00:00:00.123Z` (no fraction on a whole second).
fn iso_ms(ms: i64) -> String {
    let seconds = export::iso(ms);
    match ms.rem_euclid(1000) {
        0 => seconds,
        fraction => format!(
            "{}.{fraction:03}Z",
            seconds.trim_end_matches('Z').to_owned()
        ),
    }
}

/// One NDJSON line of the intake: the raw data columns by name, enums
/// spelled, inner values as objects.
pub fn intake_line(m: &Message) -> Value {
    let mut line = Map::new();
    line.insert("tracker_id".into(), json!(m.tracker_id.0));
    line.insert("msg_time".into(), json!(iso_ms(m.message_time_ms)));
    line.insert("server_time".into(), json!(iso_ms(m.server_time_ms)));
    let mut put = |name: &str, value: Value| {
        if !value.is_null() {
            line.insert(name.into(), value);
        }
    };
    put("gps_fix_type", json!(m.gps_fix_type.map(|t| t.as_str())));
    put("lat", json!(m.lat));
    put("lng", json!(m.lng));
    put("speed", json!(m.speed));
    put("alt", json!(m.alt));
    put("satellites", json!(m.satellites));
    put("heading", json!(m.heading));
    put("precision", json!(m.precision));
    put("hdop", json!(m.hdop));
    put("pdop", json!(m.pdop));
    put("event_id", json!(m.event_id));
    put("mn_name", json!(m.mn_name));
    put("mn_roaming", json!(m.mn_roaming));
    put("mn_code", json!(m.mn_code));
    put("mn_csq", json!(m.mn_csq));
    put("mn_type", json!(m.mn_type.map(|t| t.as_str())));
    put("flags", json!(m.flags));
    let discrete = |values: &[(u16, u8)]| -> Value {
        Value::Object(
            values
                .iter()
                .map(|(n, v)| (n.to_string(), json!(v)))
                .collect(),
        )
    };
    line.insert("discrete_inputs".into(), discrete(&m.discrete_inputs));
    line.insert("discrete_outputs".into(), discrete(&m.discrete_outputs));
    line.insert(
        "inputs".into(),
        Value::Object(
            m.inputs
                .iter()
                .map(|(n, v)| (n.to_string(), json!(v)))
                .collect(),
        ),
    );
    line.insert(
        "states".into(),
        Value::Object(
            m.states
                .iter()
                .map(|(n, v)| {
                    let value = match v {
                        StateValue::Text(text) => json!(text.as_str()),
                        StateValue::Number(n) => json!(n),
                        StateValue::Flag(b) => json!(b),
                    };
                    (n.to_string(), value)
                })
                .collect(),
        ),
    );
    Value::Object(line)
}

/// One `JSONEachRow` line of the table of `schema.sql`: times as epoch
/// milliseconds, enums as their numbers, each `Nested` column as its two
/// arrays, states as the JSON text Trackhouse stores. `content_hash` is
/// any 64-bit value derived from the row (ClickHouse computes none).
pub fn clickhouse_row(m: &Message, content_hash: u64) -> String {
    let names = |values: &[(u16, u8)]| -> Vec<String> {
        values.iter().map(|(n, _)| n.to_string()).collect()
    };
    let values = |values: &[(u16, u8)]| -> Vec<u8> { values.iter().map(|(_, v)| *v).collect() };
    json!({
        "tracker_id": m.tracker_id.0,
        "msg_time": m.message_time_ms,
        "server_time": m.server_time_ms,
        "content_hash": content_hash,
        "flags": m.flags,
        "gps_fix_type": m.gps_fix_type.map(|t| t as u8),
        "lat": m.lat,
        "lng": m.lng,
        "speed": m.speed,
        "alt": m.alt,
        "satellites": m.satellites,
        "heading": m.heading,
        "precision": m.precision,
        "hdop": m.hdop,
        "pdop": m.pdop,
        "event_id": m.event_id,
        "mn_name": m.mn_name,
        "mn_roaming": m.mn_roaming,
        "mn_code": m.mn_code,
        "mn_csq": m.mn_csq,
        "mn_type": m.mn_type.map(|t| t as u8),
        "discrete_inputs.name": names(&m.discrete_inputs),
        "discrete_inputs.value": values(&m.discrete_inputs),
        "discrete_outputs.name": names(&m.discrete_outputs),
        "discrete_outputs.value": values(&m.discrete_outputs),
        "inputs.name": m.inputs.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        "inputs.value": m.inputs.iter().map(|(_, v)| *v).collect::<Vec<_>>(),
        "states.name": m.states.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        "states.value": m.states.iter().map(|(_, v)| v.to_json_text()).collect::<Vec<_>>(),
    })
    .to_string()
}

/// Where [`send_all`] posts the bodies.
#[derive(Debug, Clone)]
pub enum Target {
    /// The intake, with an ingest token; every line must be accepted.
    Trackhouse {
        /// `http://host:port/ingest/v1/messages`.
        url: String,
        /// The ingest token.
        token: String,
    },
    /// ClickHouse's HTTP interface with an `INSERT … FORMAT JSONEachRow`.
    ClickHouse {
        /// `http://host:port/`.
        url: String,
        /// The statement.
        insert: String,
    },
}

/// What [`send_all`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sent {
    /// First request sent → last answer read.
    pub elapsed: Duration,
    /// Requests answered 503 or 429 and sent again.
    pub retries: u64,
}

/// Posts every body to `target` with `clients` concurrent clients, each
/// taking the next body when its previous one is answered; returns once
/// every body is acknowledged.
pub async fn send_all(
    client: &reqwest::Client,
    target: &Target,
    bodies: &[Bytes],
    lines: &[usize],
    clients: usize,
) -> anyhow::Result<Sent> {
    ensure!(bodies.len() == lines.len(), "a line count per body");
    let work: Arc<Vec<(Bytes, usize)>> =
        Arc::new(bodies.iter().cloned().zip(lines.iter().copied()).collect());
    let next = Arc::new(AtomicUsize::new(0));
    let retries = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let (client, target, work, next, retries) = (
            client.clone(),
            target.clone(),
            work.clone(),
            next.clone(),
            retries.clone(),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                let Some((body, lines)) = work.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    return anyhow::Ok(());
                };
                let tried = post(&client, &target, body.clone(), *lines).await?;
                retries.fetch_add(tried, Ordering::Relaxed);
            }
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(Sent {
        elapsed: started.elapsed(),
        retries: retries.load(Ordering::Relaxed),
    })
}

/// Posts one body until it is acknowledged; answers the retries.
async fn post(
    client: &reqwest::Client,
    target: &Target,
    body: Bytes,
    lines: usize,
) -> anyhow::Result<u64> {
    let mut retries = 0;
    loop {
        let request = match target {
            Target::Trackhouse { url, token } => client
                .post(url)
                .bearer_auth(token)
                .header(reqwest::header::CONTENT_TYPE, "application/x-ndjson"),
            Target::ClickHouse { url, insert } => client.post(url).query(&[("query", insert)]),
        };
        let response = request.body(body.clone()).send().await?;
        let status = response.status();
        if matches!(status.as_u16(), 429 | 503) && retries < 1000 {
            retries += 1;
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        let text = response.text().await.context("reading the answer")?;
        if !status.is_success() {
            bail!("{status}: {}", text.trim());
        }
        if let Target::Trackhouse { .. } = target {
            let answer: Value = serde_json::from_str(&text)?;
            let accepted = answer["accepted"].as_u64().unwrap_or(0);
            let rejected = answer["rejected"].as_array().map_or(0, Vec::len);
            ensure!(
                accepted as usize == lines && rejected == 0,
                "the intake accepted {accepted} of {lines} lines: {text:.600}"
            );
        }
        return Ok(retries);
    }
}

/// The median of `values` (the upper one of an even count); zero when empty.
pub fn median(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_encodings_carry_every_row_of_every_batch() {
        let workload = Workload::generate(TrackerId(1), 1, 30_000);
        assert_eq!(workload.rows, 86_400);
        assert_eq!(workload.lines, vec![30_000, 30_000, 26_400]);
        for (i, lines) in workload.lines.iter().enumerate() {
            let count = |b: &Bytes| b.iter().filter(|&&c| c == b'\n').count();
            assert_eq!(count(&workload.ndjson[i]), *lines);
            assert_eq!(count(&workload.json_each_row[i]), *lines);
        }
    }

    #[test]
    fn times_carry_milliseconds_only_when_there_are_some() {
        assert_eq!(iso_ms(1_717_200_000_000), "2024-06-01T00:00:00Z");
        assert_eq!(iso_ms(1_717_200_000_042), "2024-06-01T00:00:00.042Z");
    }
}
