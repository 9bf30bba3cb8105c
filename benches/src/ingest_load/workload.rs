//! The line stream, rendered before anything is timed: every tracker of the
//! account reporting once a second (the [`fleet`](crate::fleet) simulator:
//! vehicles around Almaty that park, idle and drive), interleaved second by
//! second as a gateway forwards them, with late lines (a tracker's message
//! minutes to hours behind its newest, as after a day buffered offline) and
//! retransmitted duplicates (byte-for-byte copies of lines a little earlier
//! in the stream), across a UTC midnight: each tracker's clock starts at its
//! own time before it, so trackers cross it one after the other from the
//! first lines on, whatever part of the stream a point gets through.
//!
//! The same seed gives the same messages in either [`Format`], so the
//! intake and ClickHouse receive the same rows. Every line records which
//! distinct message it carries ([`Pool::ids`]) and each distinct message
//! its key, (tracker id, message time): what the run is checked against.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::io::Write;

use bytes::Bytes;
use schemas::{Message, TrackerId};
use serde_json::{Map, Value};

use crate::backends::{clickhouse_row, intake_line};
use crate::fleet::{SplitMix64, Vehicle};

/// A tracker of the account: its id in the platform store and its device id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// The tracker's id.
    pub tracker: TrackerId,
    /// Its device id (IMEI), as the lines name it.
    pub device_id: String,
}

/// How lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// NDJSON of the intake, naming the tracker by `device_id`, without
    /// `server_time` (a gateway's token: the server stamps its receipt).
    Intake,
    /// `JSONEachRow` of `deploy/clickhouse/schema.sql`'s `telemetry` (by
    /// `tracker_id`, with `server_time` set to this time, and a
    /// `content_hash` of the intake line: copies have the same).
    ClickHouse {
        /// The rows' `server_time`.
        server_time_ms: i64,
    },
}

/// What the stream holds.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamConfig {
    /// Lines to render at least (whole seconds of the fleet are rendered).
    pub min_lines: usize,
    /// Share of all lines that are copies of earlier lines (0.015).
    pub duplicate_share: f64,
    /// Share of fresh lines followed by a late line of the same tracker.
    pub late_share: f64,
    /// A UTC midnight the message times cross.
    pub midnight_ms: i64,
    /// Trackers cross the midnight one after the other over this share of
    /// the stream (0.1: each tracker's first message is up to a tenth of
    /// the stream's time before it), so even a short run sees both days
    /// and a longer one sees every tracker cross.
    pub midnight_at: f64,
    /// Each vehicle is simulated for a random time up to this before the
    /// stream starts, so that trips, idling and parking are mixed from the
    /// first line (every vehicle of the simulator starts parked).
    pub warmup_s: u32,
    /// Seed of the fleet and of every choice.
    pub seed: u64,
    /// Threads that simulate and render.
    pub threads: usize,
}

/// What a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// A tracker's next message.
    Fresh,
    /// A message of a tracker minutes to hours older than its newest.
    Late,
    /// A byte-for-byte copy of an earlier line.
    Duplicate,
}

/// The rendered stream.
#[derive(Debug, Clone)]
pub struct Pool {
    /// Every line, each ending with `\n`.
    pub text: Bytes,
    ends: Vec<usize>,
    /// Per line: the distinct message it carries (a copy has its original's).
    pub ids: Vec<u32>,
    /// Per line: what it is.
    pub kinds: Vec<LineKind>,
    /// Per distinct message: (tracker id, message time in ms).
    pub keys: Vec<(i64, i64)>,
    /// The earliest first message time of a tracker.
    pub start_ms: i64,
    /// The midnight the stream crosses.
    pub midnight_ms: i64,
}

/// How bodies are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Plain.
    None,
    /// zstd at this level (`Content-Encoding: zstd`).
    Zstd(i32),
    /// gzip at the default level (`Content-Encoding: gzip`).
    Gzip,
}

/// One request body: consecutive lines of the pool.
#[derive(Debug, Clone)]
pub struct Body {
    /// What is sent.
    pub bytes: Bytes,
    /// Its first line in the pool.
    pub first_line: usize,
    /// Its lines.
    pub lines: usize,
    /// Bytes before compression.
    pub raw_bytes: usize,
}

/// One vehicle's rendered second: its fresh line and maybe a late one.
struct Rendered {
    fresh: (String, i64),
    late: Option<(String, i64)>,
}

/// One vehicle as the stream simulates it.
struct Simulated {
    vehicle: Vehicle,
    device: Device,
    /// Its late lines' choices.
    rng: SplitMix64,
    /// Its late lines' message times, to keep them unique.
    late_times: HashSet<i64>,
    /// Simulated seconds before its first line.
    warmup_s: u32,
}

/// The vehicles one thread simulates.
struct Group {
    vehicles: Vec<Simulated>,
}

/// Lines a duplicate may reach back.
const DUPLICATE_WINDOW: u32 = 50_000;
/// Seconds of the fleet simulated per round of the threads.
const ROUND_SECONDS: usize = 8;

impl Pool {
    /// Simulates `devices`, each from its own start up to `midnight_at` of
    /// the stream's time before `config.midnight_ms`, and renders at least
    /// `config.min_lines` lines in `format`.
    pub fn generate(
        devices: &[Device],
        format: Format,
        config: &StreamConfig,
    ) -> anyhow::Result<Self> {
        let per_second = devices.len().max(1) as f64 * (1.0 + config.late_share)
            / (1.0 - config.duplicate_share).max(0.01);
        let seconds = (config.min_lines as f64 / per_second).ceil().max(1.0);
        let spread_s = (seconds * config.midnight_at.clamp(0.0, 1.0)).round() as u32;
        let start_ms = config.midnight_ms - i64::from(spread_s) * 1000;
        let threads = config.threads.clamp(1, devices.len().max(1));
        let chunk = devices.len().div_ceil(threads).max(1);
        let mut groups: Vec<Group> = devices
            .chunks(chunk)
            .map(|devices| Group {
                vehicles: devices
                    .iter()
                    .map(|d| {
                        let mut rng = SplitMix64::new(
                            config.seed ^ (d.tracker.0 as u64).wrapping_mul(0x9FB2_1C65_1E98_DF25),
                        );
                        let before_midnight_s = rng.between(0, spread_s + 1);
                        let warmup_s = rng.between(0, config.warmup_s.max(1));
                        let first_ms = config.midnight_ms
                            - i64::from(before_midnight_s) * 1000
                            - i64::from(warmup_s) * 1000;
                        Simulated {
                            vehicle: Vehicle::new(d.tracker, first_ms, config.seed),
                            device: d.clone(),
                            rng,
                            late_times: HashSet::new(),
                            warmup_s,
                        }
                    })
                    .collect(),
            })
            .collect();
        std::thread::scope(|scope| {
            for group in &mut groups {
                scope.spawn(move || {
                    for simulated in &mut group.vehicles {
                        for _ in 0..simulated.warmup_s {
                            simulated.vehicle.next_message();
                        }
                    }
                });
            }
        });

        let mut text = Vec::with_capacity(config.min_lines.saturating_mul(720));
        let mut pool = Self {
            text: Bytes::new(),
            ends: Vec::with_capacity(config.min_lines + devices.len()),
            ids: Vec::with_capacity(config.min_lines + devices.len()),
            kinds: Vec::with_capacity(config.min_lines + devices.len()),
            keys: Vec::with_capacity(config.min_lines + devices.len()),
            start_ms,
            midnight_ms: config.midnight_ms,
        };
        let duplicate_p = config.duplicate_share / (1.0 - config.duplicate_share).max(0.01);
        let mut choices = SplitMix64::new(config.seed ^ 0x6475_706c_6963_6174); // "duplicat"
        while pool.ids.len() < config.min_lines {
            let rounds = std::thread::scope(|scope| {
                let handles: Vec<_> = groups
                    .iter_mut()
                    .map(|group| scope.spawn(move || group.render(ROUND_SECONDS, format, config)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .map_err(|_| anyhow::anyhow!("a rendering thread panicked"))
                    })
                    .collect::<anyhow::Result<Vec<Vec<Vec<Rendered>>>>>()
            })?;
            for second in 0..ROUND_SECONDS {
                for (group, rendered) in groups.iter().zip(&rounds) {
                    let Some(lines) = rendered.get(second) else {
                        continue;
                    };
                    for (simulated, line) in group.vehicles.iter().zip(lines) {
                        let tracker = simulated.device.tracker.0;
                        pool.push_distinct(&mut text, &line.fresh, tracker, LineKind::Fresh);
                        pool.maybe_duplicate(&mut text, &mut choices, duplicate_p);
                        if let Some(late) = &line.late {
                            pool.push_distinct(&mut text, late, tracker, LineKind::Late);
                            pool.maybe_duplicate(&mut text, &mut choices, duplicate_p);
                        }
                    }
                }
            }
        }
        pool.text = Bytes::from(text);
        Ok(pool)
    }

    fn push_distinct(
        &mut self,
        text: &mut Vec<u8>,
        (line, time_ms): &(String, i64),
        tracker: i64,
        kind: LineKind,
    ) {
        text.extend_from_slice(line.as_bytes());
        text.push(b'\n');
        self.ends.push(text.len());
        self.ids.push(self.keys.len() as u32);
        self.kinds.push(kind);
        self.keys.push((tracker, *time_ms));
    }

    fn maybe_duplicate(&mut self, text: &mut Vec<u8>, choices: &mut SplitMix64, p: f64) {
        if !choices.chance(p) {
            return;
        }
        let back = choices.between(0, DUPLICATE_WINDOW) as usize;
        let line = self.ends.len().saturating_sub(1 + back);
        let (from, to) = self.span(line);
        text.extend_from_within(from..to);
        self.ends.push(text.len());
        self.ids
            .push(self.ids.get(line).copied().unwrap_or_default());
        self.kinds.push(LineKind::Duplicate);
    }

    /// Byte range of line `i` (with its `\n`).
    fn span(&self, i: usize) -> (usize, usize) {
        let from = match i {
            0 => 0,
            _ => self.ends.get(i - 1).copied().unwrap_or_default(),
        };
        (from, self.ends.get(i).copied().unwrap_or(from))
    }

    /// Lines in the pool.
    pub fn lines(&self) -> usize {
        self.ends.len()
    }

    /// Distinct messages in the pool.
    pub fn distinct(&self) -> usize {
        self.keys.len()
    }

    /// Lines of each kind: fresh, late, duplicate.
    pub fn kind_counts(&self, lines: std::ops::Range<usize>) -> (usize, usize, usize) {
        let kinds = self.kinds.get(lines).unwrap_or_default();
        let count = |k: LineKind| kinds.iter().filter(|&&x| x == k).count();
        (
            count(LineKind::Fresh),
            count(LineKind::Late),
            count(LineKind::Duplicate),
        )
    }

    /// The message time of line `i`.
    pub fn time_ms(&self, i: usize) -> i64 {
        self.ids
            .get(i)
            .and_then(|&id| self.keys.get(id as usize))
            .map_or(0, |k| k.1)
    }

    /// The pool cut into bodies of `lines_per_body` lines (the last ones
    /// shorter), compressed on `threads` threads.
    pub fn bodies(
        &self,
        lines_per_body: usize,
        compression: Compression,
        threads: usize,
    ) -> anyhow::Result<Vec<Body>> {
        let lines_per_body = lines_per_body.max(1);
        let plain: Vec<Body> = (0..self.lines())
            .step_by(lines_per_body)
            .map(|first| {
                let last = (first + lines_per_body).min(self.lines());
                let (from, _) = self.span(first);
                let (_, to) = self.span(last - 1);
                Body {
                    bytes: self.text.slice(from..to),
                    first_line: first,
                    lines: last - first,
                    raw_bytes: to - from,
                }
            })
            .collect();
        if compression == Compression::None {
            return Ok(plain);
        }
        let chunk = plain.len().div_ceil(threads.max(1)).max(1);
        std::thread::scope(|scope| {
            let handles: Vec<_> = plain
                .chunks(chunk)
                .map(|bodies| {
                    scope.spawn(move || -> anyhow::Result<Vec<Body>> {
                        bodies
                            .iter()
                            .map(|body| {
                                Ok(Body {
                                    bytes: Bytes::from(compress(&body.bytes, compression)?),
                                    ..body.clone()
                                })
                            })
                            .collect()
                    })
                })
                .collect();
            let mut all = Vec::with_capacity(plain.len());
            for handle in handles {
                let done = handle
                    .join()
                    .map_err(|_| anyhow::anyhow!("a compression thread panicked"))??;
                all.extend(done);
            }
            Ok(all)
        })
    }
}

fn compress(bytes: &[u8], compression: Compression) -> anyhow::Result<Vec<u8>> {
    Ok(match compression {
        Compression::None => bytes.to_vec(),
        Compression::Zstd(level) => zstd::bulk::compress(bytes, level)?,
        Compression::Gzip => {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(bytes)?;
            encoder.finish()?
        }
    })
}

impl Group {
    /// The next `seconds` of each vehicle, rendered.
    fn render(
        &mut self,
        seconds: usize,
        format: Format,
        config: &StreamConfig,
    ) -> Vec<Vec<Rendered>> {
        (0..seconds)
            .map(|_| {
                self.vehicles
                    .iter_mut()
                    .map(|simulated| {
                        let Simulated {
                            vehicle,
                            device,
                            rng,
                            late_times,
                            ..
                        } = simulated;
                        let mut message = vehicle.next_message();
                        message.precision = message.precision.filter(|p| *p >= 0);
                        let fresh = (render(&message, device, format), message.message_time_ms);
                        // Minutes to hours behind, off the whole seconds of
                        // the fresh lines and unique per tracker, so a late
                        // message is never a duplicate by accident.
                        let newest = message.message_time_ms;
                        let late_time = rng.chance(config.late_share).then(|| {
                            (0..16).find_map(|_| {
                                let time = newest
                                    - i64::from(rng.between(120, 3 * 3600)) * 1000
                                    - i64::from(rng.between(1, 1000));
                                late_times.insert(time).then_some(time)
                            })
                        });
                        let late = late_time.flatten().map(|time| {
                            message.message_time_ms = time;
                            (render(&message, device, format), time)
                        });
                        Rendered { fresh, late }
                    })
                    .collect()
            })
            .collect()
    }
}

/// One line of `message` in `format`.
fn render(message: &Message, device: &Device, format: Format) -> String {
    let intake = intake_text(message, device);
    match format {
        Format::Intake => intake,
        Format::ClickHouse { server_time_ms } => {
            let mut hasher = std::hash::DefaultHasher::new();
            intake.hash(&mut hasher);
            let row = Message {
                tracker_id: device.tracker,
                server_time_ms,
                ..message.clone()
            };
            clickhouse_row(&row, hasher.finish())
        }
    }
}

/// The intake line of `benches::backends` by `device_id`, without
/// `tracker_id` and `server_time`.
fn intake_text(message: &Message, device: &Device) -> String {
    let mut line = match intake_line(message) {
        Value::Object(fields) => fields,
        _ => Map::new(),
    };
    line.shift_remove("tracker_id");
    line.shift_remove("server_time");
    line.shift_insert(0, "device_id".into(), Value::from(device.device_id.clone()));
    Value::Object(line).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn devices(n: i64) -> Vec<Device> {
        (1..=n)
            .map(|i| Device {
                tracker: TrackerId(i),
                device_id: format!("35630704250{i:04}"),
            })
            .collect()
    }

    fn config(min_lines: usize) -> StreamConfig {
        StreamConfig {
            min_lines,
            duplicate_share: 0.015,
            late_share: 0.01,
            midnight_ms: 1_717_200_000_000,
            midnight_at: 0.1,
            warmup_s: 600,
            seed: 17,
            threads: 2,
        }
    }

    #[test]
    fn the_stream_has_duplicates_late_lines_and_a_midnight() {
        let pool = Pool::generate(&devices(200), Format::Intake, &config(40_000)).unwrap();
        assert!(pool.lines() >= 40_000);
        let (fresh, late, duplicates) = pool.kind_counts(0..pool.lines());
        assert_eq!(fresh + late + duplicates, pool.lines());
        assert_eq!(fresh + late, pool.distinct());
        let share = duplicates as f64 / pool.lines() as f64;
        assert!((0.01..0.02).contains(&share), "{share}");
        assert!(late > 0);
        assert!(pool.keys.iter().any(|k| k.1 < pool.midnight_ms));
        assert!(pool.keys.iter().any(|k| k.1 >= pool.midnight_ms));
        // Distinct messages have distinct keys: a duplicate is only ever a copy.
        let keys: HashSet<_> = pool.keys.iter().collect();
        assert_eq!(keys.len(), pool.distinct());
        // A copy is byte for byte its original.
        let text = |i: usize| {
            let (a, b) = pool.span(i);
            &pool.text[a..b]
        };
        let first_copy = pool
            .kinds
            .iter()
            .position(|k| *k == LineKind::Duplicate)
            .unwrap();
        let original = pool.ids.iter().position(|&id| id == pool.ids[first_copy]);
        assert_eq!(text(first_copy), text(original.unwrap()));
        let line: Value = serde_json::from_slice(text(0)).unwrap();
        assert!(line.get("device_id").is_some());
        assert!(line.get("tracker_id").is_none() && line.get("server_time").is_none());
    }

    #[test]
    fn both_formats_carry_the_same_rows_and_bodies_cover_the_pool() {
        let intake = Pool::generate(&devices(50), Format::Intake, &config(5_000)).unwrap();
        let rows = Pool::generate(
            &devices(50),
            Format::ClickHouse { server_time_ms: 1 },
            &config(5_000),
        )
        .unwrap();
        assert_eq!(intake.ids, rows.ids);
        assert_eq!(intake.keys, rows.keys);
        let bodies = intake.bodies(1000, Compression::Zstd(3), 2).unwrap();
        assert_eq!(
            bodies.iter().map(|b| b.lines).sum::<usize>(),
            intake.lines()
        );
        let first = zstd::decode_all(&bodies[0].bytes[..]).unwrap();
        assert_eq!(first.len(), bodies[0].raw_bytes);
        assert_eq!(first.iter().filter(|&&c| c == b'\n').count(), 1000);
        let row: Value = serde_json::from_slice(&rows.text[..rows.span(0).1]).unwrap();
        assert_eq!(row["tracker_id"], rows.keys[0].0);
        assert_eq!(row["msg_time"], rows.keys[0].1);
    }
}
