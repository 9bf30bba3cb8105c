//! The line stream: every tracker of the account reporting once a second
//! (the [`fleet`](crate::fleet) simulator: vehicles around Almaty that
//! park, idle and drive), interleaved second by second as a gateway
//! forwards them, with late lines (a tracker's message minutes to hours
//! behind its newest, as after a day buffered offline) and retransmitted
//! duplicates (byte-for-byte copies of lines a little earlier in the
//! stream), across a UTC midnight: each tracker's clock starts at its own
//! time before it, so trackers cross it one after the other from the first
//! lines on, whatever part of the stream a point gets through.
//!
//! **A pool repeated in epochs.** Only a pool of `S` seconds of every
//! tracker is simulated and rendered, once, before anything is timed
//! (`--pool-lines`, about 330,000 lines, 160 MB, in a few seconds). The
//! stream is that pool again and again: epoch `e` is the pool with every
//! message time `e × S` seconds later, so each tracker's fresh messages go
//! on second after second across epochs, and its late lines (off the whole
//! seconds, unique per tracker modulo `S` seconds) never meet another
//! message. Every line's message time sits at a known place in its line,
//! at a fixed width (`2024-06-01T00:00:00Z`, or with `.mmm` for a late
//! line; ClickHouse's 13 digits of ms), so a later epoch's body is the
//! pool's bytes with the times written over in place: a copy and a few
//! ns a line, done on generator threads ahead of the connections
//! ([`driver::Feeder`](super::driver::Feeder)), where zstd bodies are also
//! compressed. A duplicate copies a line of its own epoch, so it is a
//! byte-for-byte copy in every epoch. The stream is endless: line `n` is
//! line `n mod P` of the pool in epoch `n / P`.
//!
//! The same seed gives the same messages in either [`Format`], so the
//! intake and ClickHouse receive the same rows. Every line carries one
//! distinct message of the stream, numbered `e × D + d` (`d`: its number
//! in the pool of `D`), a copy its original's ([`Pool::message`]); each
//! has its key, (tracker id, message time) ([`Pool::key`]), and each key
//! of the stream maps back to its message ([`Pool::message_of`]): what the
//! run is checked against.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::io::Write;
use std::ops::Range;

use anyhow::{bail, ensure};
use bytes::Bytes;
use schemas::{Message, StateValue, TrackerId};
use serde_json::Value;

use crate::backends::clickhouse_row;
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
    /// `content_hash` of the intake line of the pool: copies have the
    /// same; a later epoch's row keeps its pool row's).
    ClickHouse {
        /// The rows' `server_time`.
        server_time_ms: i64,
    },
}

/// What the stream holds.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamConfig {
    /// Lines of the pool, about (whole seconds of every tracker are
    /// rendered, in rounds of 8): the stream repeats it, shifted in time.
    pub pool_lines: usize,
    /// Lines a run is expected to send (not a limit: the stream is
    /// endless); trackers cross the midnight over `midnight_at` of their time.
    pub expected_lines: u64,
    /// Share of all lines that are copies of earlier lines (0.015).
    pub duplicate_share: f64,
    /// Share of fresh lines followed by a late line of the same tracker.
    pub late_share: f64,
    /// A UTC midnight the message times cross.
    pub midnight_ms: i64,
    /// Trackers cross the midnight one after the other over this share of
    /// the expected stream (0.1: each tracker's first message is up to a
    /// tenth of the stream's time before it), so even a short run sees
    /// both days and a longer one sees every tracker cross.
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

/// A fast hasher for the key index (FxHash's multiply-rotate).
#[derive(Debug, Default, Clone, Copy)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }
}

type KeyIndex = HashMap<(i64, i64), u32, BuildHasherDefault<FxHasher>>;

/// The rendered pool, and the endless stream it makes.
#[derive(Debug, Clone)]
pub struct Pool {
    /// Every line of the pool (epoch 0), each ending with `\n`.
    text: Bytes,
    ends: Vec<usize>,
    /// Per line: the distinct message of the pool it carries (a copy has
    /// its original's).
    ids: Vec<u32>,
    /// Per line: what it is.
    kinds: Vec<LineKind>,
    /// Per line: where its message time's value starts in it.
    time_at: Vec<u32>,
    /// Per distinct message of the pool: (tracker id, message time in ms).
    keys: Vec<(i64, i64)>,
    /// (tracker id, message time modulo `epoch_ms`) → distinct message of the pool.
    index: KeyIndex,
    format: Format,
    /// The earliest first message time of a tracker.
    pub start_ms: i64,
    /// The midnight the stream crosses.
    pub midnight_ms: i64,
    /// How much later each epoch's message times are than the previous
    /// one's: the pool's seconds.
    pub epoch_ms: i64,
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

/// One request body: consecutive lines of the stream.
#[derive(Debug, Clone)]
pub struct Body {
    /// Its number: body `i` of `L` lines holds lines `i × L ..`.
    pub index: usize,
    /// What is sent.
    pub bytes: Bytes,
    /// Its first line in the stream.
    pub first_line: u64,
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
    /// Its late lines' message times modulo the epoch, to keep them
    /// unique across epochs.
    late_residues: HashSet<i64>,
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

/// Lines a second of the fleet makes: every tracker's fresh line, the
/// late ones, the copies.
fn lines_per_second(trackers: usize, config: &StreamConfig) -> f64 {
    trackers.max(1) as f64 * (1.0 + config.late_share) / (1.0 - config.duplicate_share).max(0.01)
}

impl Pool {
    /// Simulates `devices`, each from its own start up to `midnight_at` of
    /// the expected stream's time before `config.midnight_ms`, and renders
    /// about `config.pool_lines` lines in `format`.
    pub fn generate(
        devices: &[Device],
        format: Format,
        config: &StreamConfig,
    ) -> anyhow::Result<Self> {
        let per_second = lines_per_second(devices.len(), config);
        let rounds = (config.pool_lines as f64 / per_second / ROUND_SECONDS as f64)
            .round()
            .max(1.0) as usize;
        let seconds = rounds * ROUND_SECONDS;
        let epoch_ms = seconds as i64 * 1000;
        let stream_s = (config.expected_lines as f64 / per_second).ceil().max(1.0);
        let spread_s = (stream_s * config.midnight_at.clamp(0.0, 1.0)).round() as u32;
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
                            late_residues: HashSet::new(),
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

        let expected = (per_second * seconds as f64) as usize + devices.len();
        let mut text = Vec::with_capacity(expected.saturating_mul(560));
        let mut pool = Self {
            text: Bytes::new(),
            ends: Vec::with_capacity(expected),
            ids: Vec::with_capacity(expected),
            kinds: Vec::with_capacity(expected),
            time_at: Vec::with_capacity(expected),
            keys: Vec::with_capacity(expected),
            index: KeyIndex::default(),
            format,
            start_ms,
            midnight_ms: config.midnight_ms,
            epoch_ms,
        };
        let duplicate_p = config.duplicate_share / (1.0 - config.duplicate_share).max(0.01);
        let mut choices = SplitMix64::new(config.seed ^ 0x6475_706c_6963_6174); // "duplicat"
        for _ in 0..rounds {
            let rendered = std::thread::scope(|scope| {
                let handles: Vec<_> = groups
                    .iter_mut()
                    .map(|group| {
                        scope.spawn(move || group.render(ROUND_SECONDS, format, config, epoch_ms))
                    })
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
                for (group, rendered) in groups.iter().zip(&rendered) {
                    let Some(lines) = rendered.get(second) else {
                        continue;
                    };
                    for (simulated, line) in group.vehicles.iter().zip(lines) {
                        let tracker = simulated.device.tracker.0;
                        pool.push_distinct(&mut text, &line.fresh, tracker, LineKind::Fresh)?;
                        pool.maybe_duplicate(&mut text, &mut choices, duplicate_p);
                        if let Some(late) = &line.late {
                            pool.push_distinct(&mut text, late, tracker, LineKind::Late)?;
                            pool.maybe_duplicate(&mut text, &mut choices, duplicate_p);
                        }
                    }
                }
            }
        }
        text.shrink_to_fit();
        pool.text = Bytes::from(text);
        pool.index.reserve(pool.keys.len());
        for (d, &(tracker, time)) in pool.keys.iter().enumerate() {
            let residue = time.rem_euclid(epoch_ms);
            if pool.index.insert((tracker, residue), d as u32).is_some() {
                bail!(
                    "two messages of tracker {tracker} are a multiple of {epoch_ms} ms apart: \
                     epochs would repeat a key"
                );
            }
        }
        Ok(pool)
    }

    fn push_distinct(
        &mut self,
        text: &mut Vec<u8>,
        (line, time_ms): &(String, i64),
        tracker: i64,
        kind: LineKind,
    ) -> anyhow::Result<()> {
        let at = time_offset(line, self.format)?;
        let mut written = [0u8; TIME_WIDTH_MAX];
        let width = write_time(&mut written, *time_ms, self.format);
        ensure!(
            line.as_bytes().get(at..at + width) == written.get(..width),
            "line {} does not carry its message time {time_ms} where expected: {line}",
            self.ends.len()
        );
        text.extend_from_slice(line.as_bytes());
        text.push(b'\n');
        self.ends.push(text.len());
        self.ids.push(self.keys.len() as u32);
        self.kinds.push(kind);
        self.time_at.push(at as u32);
        self.keys.push((tracker, *time_ms));
        Ok(())
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
        self.time_at
            .push(self.time_at.get(line).copied().unwrap_or_default());
    }

    /// Byte range of pool line `i` (with its `\n`).
    fn span(&self, i: usize) -> (usize, usize) {
        let from = match i {
            0 => 0,
            _ => self.ends.get(i - 1).copied().unwrap_or_default(),
        };
        (from, self.ends.get(i).copied().unwrap_or(from))
    }

    /// Lines in the pool (an epoch of the stream).
    pub fn pool_lines(&self) -> usize {
        self.ends.len()
    }

    /// Distinct messages in the pool (an epoch of the stream).
    pub fn pool_distinct(&self) -> usize {
        self.keys.len()
    }

    /// Bytes of the pool's text.
    pub fn pool_bytes(&self) -> usize {
        self.text.len()
    }

    /// Bytes held in all: the text, the per-line and per-message indexes.
    pub fn memory_bytes(&self) -> usize {
        self.text.len()
            + self.ends.capacity() * 8
            + self.ids.capacity() * 4
            + self.kinds.capacity()
            + self.time_at.capacity() * 4
            + self.keys.capacity() * 16
            + self.index.capacity() * 24
    }

    /// Stream line `n` as (epoch, pool line).
    fn split(&self, n: u64) -> (u64, usize) {
        let lines = self.pool_lines().max(1) as u64;
        (n / lines, (n % lines) as usize)
    }

    /// What stream line `n` is.
    pub fn kind(&self, n: u64) -> LineKind {
        let (_, i) = self.split(n);
        self.kinds.get(i).copied().unwrap_or(LineKind::Fresh)
    }

    /// The distinct message stream line `n` carries (a copy: its original's).
    pub fn message(&self, n: u64) -> u64 {
        let (epoch, i) = self.split(n);
        epoch * self.pool_distinct() as u64 + u64::from(self.ids.get(i).copied().unwrap_or(0))
    }

    /// The key (tracker id, message time) of distinct message `m`.
    pub fn key(&self, m: u64) -> (i64, i64) {
        let distinct = self.pool_distinct().max(1) as u64;
        let (epoch, d) = (m / distinct, (m % distinct) as usize);
        let (tracker, time) = self.keys.get(d).copied().unwrap_or_default();
        (tracker, time + epoch as i64 * self.epoch_ms)
    }

    /// The distinct message of the stream with this key, if any.
    pub fn message_of(&self, (tracker, time): (i64, i64)) -> Option<u64> {
        let d = *self.index.get(&(tracker, time.rem_euclid(self.epoch_ms)))?;
        let shift = time - self.keys.get(d as usize)?.1;
        if shift < 0 || shift % self.epoch_ms != 0 {
            return None;
        }
        Some((shift / self.epoch_ms) as u64 * self.pool_distinct() as u64 + u64::from(d))
    }

    /// The message time of stream line `n`.
    pub fn time_ms(&self, n: u64) -> i64 {
        self.key(self.message(n)).1
    }

    /// Lines of each kind among stream lines `lines`: fresh, late, duplicate.
    pub fn kind_counts(&self, lines: Range<u64>) -> (usize, usize, usize) {
        let mut counts = [0usize; 3];
        let mut n = lines.start;
        while n < lines.end {
            let (_, i) = self.split(n);
            let stop = (i as u64 + (lines.end - n)).min(self.pool_lines() as u64) as usize;
            for kind in self.kinds.get(i..stop).unwrap_or_default() {
                counts[*kind as usize] += 1;
            }
            n += (stop - i).max(1) as u64;
        }
        (counts[0], counts[1], counts[2])
    }

    /// Appends stream lines `lines` to `out`: the pool's bytes, with the
    /// message times of a later epoch written over in place.
    pub fn render(&self, lines: Range<u64>, out: &mut Vec<u8>) {
        let mut n = lines.start;
        while n < lines.end {
            let (epoch, i) = self.split(n);
            let stop = (i as u64 + (lines.end - n)).min(self.pool_lines() as u64) as usize;
            if stop <= i {
                return;
            }
            let (from, _) = self.span(i);
            let (_, to) = self.span(stop - 1);
            let base = out.len();
            out.extend_from_slice(self.text.get(from..to).unwrap_or_default());
            if epoch > 0 {
                let shift = epoch as i64 * self.epoch_ms;
                for j in i..stop {
                    let (start, _) = self.span(j);
                    let at = base + start - from + self.time_at[j] as usize;
                    let time = self.keys[self.ids[j] as usize].1 + shift;
                    if let Some(slot) = out.get_mut(at..) {
                        write_time(slot, time, self.format);
                    }
                }
            }
            n += (stop - i) as u64;
        }
    }

    /// Body `index` of the stream cut into bodies of `lines_per_body`
    /// lines, compressed. An epoch-0 plain body is a slice of the pool.
    pub fn body(
        &self,
        index: usize,
        lines_per_body: usize,
        compression: Compression,
    ) -> anyhow::Result<Body> {
        let lines_per_body = lines_per_body.max(1);
        let first = index as u64 * lines_per_body as u64;
        let last = first + lines_per_body as u64;
        let (epoch, i) = self.split(first);
        let plain = if epoch == 0 && last <= self.pool_lines() as u64 {
            let (from, _) = self.span(i);
            let (_, to) = self.span(i + lines_per_body - 1);
            self.text.slice(from..to)
        } else {
            let mut out = Vec::with_capacity(self.average_line_bytes() * lines_per_body + 1024);
            self.render(first..last, &mut out);
            Bytes::from(out)
        };
        let raw_bytes = plain.len();
        let bytes = match compression {
            Compression::None => plain,
            _ => Bytes::from(compress(&plain, compression)?),
        };
        Ok(Body {
            index,
            bytes,
            first_line: first,
            lines: lines_per_body,
            raw_bytes,
        })
    }

    fn average_line_bytes(&self) -> usize {
        self.text.len().div_ceil(self.pool_lines().max(1))
    }
}

/// Where the value of `msg_time` starts in a rendered line.
fn time_offset(line: &str, format: Format) -> anyhow::Result<usize> {
    let marker = match format {
        Format::Intake => "\"msg_time\":\"",
        Format::ClickHouse { .. } => "\"msg_time\":",
    };
    match line.find(marker) {
        Some(at) => Ok(at + marker.len()),
        None => bail!("a rendered line has no msg_time: {line}"),
    }
}

/// The widest message time written: `2024-06-01T00:00:00.123Z`.
const TIME_WIDTH_MAX: usize = 24;

/// Writes `ms` as `format` writes a message time at the start of `out`
/// (`2024-06-01T00:00:00Z`, `2024-06-01T00:00:00.123Z` when not on a whole
/// second, as `backends::intake_line`; ClickHouse: the ms as 13 digits);
/// returns its width. A time shifted by whole seconds keeps its width.
fn write_time(out: &mut [u8], ms: i64, format: Format) -> usize {
    let mut buffer = [0u8; TIME_WIDTH_MAX];
    let width = match format {
        Format::Intake => {
            let days = ms.div_euclid(86_400_000);
            let ms_of_day = ms.rem_euclid(86_400_000);
            let (y, m, d) = crate::export::civil_from_days(days);
            let s = ms_of_day / 1000;
            digits(&mut buffer[0..4], y);
            buffer[4] = b'-';
            digits(&mut buffer[5..7], m);
            buffer[7] = b'-';
            digits(&mut buffer[8..10], d);
            buffer[10] = b'T';
            digits(&mut buffer[11..13], s / 3600);
            buffer[13] = b':';
            digits(&mut buffer[14..16], s / 60 % 60);
            buffer[16] = b':';
            digits(&mut buffer[17..19], s % 60);
            match ms_of_day % 1000 {
                0 => {
                    buffer[19] = b'Z';
                    20
                }
                fraction => {
                    buffer[19] = b'.';
                    digits(&mut buffer[20..23], fraction);
                    buffer[23] = b'Z';
                    24
                }
            }
        }
        Format::ClickHouse { .. } => {
            digits(&mut buffer[0..13], ms);
            13
        }
    };
    let width = width.min(out.len());
    out[..width].copy_from_slice(&buffer[..width]);
    width
}

/// `value` in decimal, zero-padded to fill `out` (its lowest digits).
fn digits(out: &mut [u8], mut value: i64) {
    for slot in out.iter_mut().rev() {
        *slot = b'0' + value.rem_euclid(10) as u8;
        value = value.div_euclid(10);
    }
}

/// `bytes` compressed as `compression` says.
pub fn compress(bytes: &[u8], compression: Compression) -> anyhow::Result<Vec<u8>> {
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
        epoch_ms: i64,
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
                            late_residues,
                            ..
                        } = simulated;
                        let mut message = vehicle.next_message();
                        message.precision = message.precision.filter(|p| *p >= 0);
                        let fresh = (render(&message, device, format), message.message_time_ms);
                        // Minutes to hours behind, off the whole seconds of
                        // the fresh lines and unique per tracker modulo the
                        // epoch, so a late message is never a duplicate by
                        // accident, in any epoch.
                        let newest = message.message_time_ms;
                        let late_time = rng.chance(config.late_share).then(|| {
                            (0..16).find_map(|_| {
                                let time = newest
                                    - i64::from(rng.between(120, 3 * 3600)) * 1000
                                    - i64::from(rng.between(1, 1000));
                                late_residues
                                    .insert(time.rem_euclid(epoch_ms))
                                    .then_some(time)
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
/// `tracker_id` and `server_time`: `backends::intake_line`'s members in its
/// order, written straight into the text (building its `Value` costs 5
/// times as much); the tests hold the two to the same bytes.
fn intake_text(m: &Message, device: &Device) -> String {
    let mut out = Vec::with_capacity(720);
    out.extend_from_slice(b"{\"device_id\":");
    scalar(&mut out, &device.device_id);
    out.extend_from_slice(b",\"msg_time\":\"");
    let mut time = [0u8; TIME_WIDTH_MAX];
    let width = write_time(&mut time, m.message_time_ms, Format::Intake);
    out.extend_from_slice(&time[..width]);
    out.push(b'"');
    member(
        &mut out,
        "gps_fix_type",
        &m.gps_fix_type.map(|t| t.as_str()),
    );
    member(&mut out, "lat", &m.lat);
    member(&mut out, "lng", &m.lng);
    member(&mut out, "speed", &m.speed);
    member(&mut out, "alt", &m.alt);
    member(&mut out, "satellites", &m.satellites);
    member(&mut out, "heading", &m.heading);
    member(&mut out, "precision", &m.precision);
    member(&mut out, "hdop", &m.hdop);
    member(&mut out, "pdop", &m.pdop);
    member(&mut out, "event_id", &m.event_id);
    member(&mut out, "mn_name", &m.mn_name);
    member(&mut out, "mn_roaming", &m.mn_roaming);
    member(&mut out, "mn_code", &m.mn_code);
    member(&mut out, "mn_csq", &m.mn_csq);
    member(&mut out, "mn_type", &m.mn_type.map(|t| t.as_str()));
    member(&mut out, "flags", &m.flags);
    let discrete = |out: &mut Vec<u8>, name: &str, values: &[(u16, u8)]| {
        object(
            out,
            name,
            values.iter().map(|(n, v)| (n.to_string(), Value::from(*v))),
        );
    };
    discrete(&mut out, "discrete_inputs", &m.discrete_inputs);
    discrete(&mut out, "discrete_outputs", &m.discrete_outputs);
    object(
        &mut out,
        "inputs",
        m.inputs
            .iter()
            .map(|(n, v)| (n.to_string(), Value::from(*v))),
    );
    object(
        &mut out,
        "states",
        m.states.iter().map(|(n, v)| {
            let value = match v {
                StateValue::Text(text) => Value::from(text.as_str()),
                StateValue::Number(n) => Value::from(*n),
                StateValue::Flag(b) => Value::from(*b),
            };
            (n.to_string(), value)
        }),
    );
    out.push(b'}');
    String::from_utf8(out).unwrap_or_default()
}

/// `value` as JSON.
fn scalar<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.extend_from_slice(b"null");
    }
}

/// `,"name":value`, left out when the value is null (`None`, or a number
/// that is not finite), as `intake_line` leaves such members out.
fn member<T: serde::Serialize>(out: &mut Vec<u8>, name: &str, value: &T) {
    let mark = out.len();
    out.push(b',');
    scalar(out, name);
    out.push(b':');
    let start = out.len();
    scalar(out, value);
    if out.get(start..).is_some_and(|v| v == b"null") {
        out.truncate(mark);
    }
}

/// `,"name":{…}`, its entries in order (the simulator's are sorted and
/// unique, as `intake_line`'s map keeps them).
fn object(out: &mut Vec<u8>, name: &str, entries: impl Iterator<Item = (String, Value)>) {
    out.push(b',');
    scalar(out, name);
    out.extend_from_slice(b":{");
    for (i, (key, value)) in entries.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        scalar(out, &key);
        out.push(b':');
        scalar(out, &value);
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests;
