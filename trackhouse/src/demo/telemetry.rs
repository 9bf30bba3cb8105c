//! Demo telemetry: days in the life of the demo's trucks around Almaty, sent
//! through the real intake with the demo's (backfill) ingest token.
//!
//! ```text
//! blocking thread: Fleet::generate → vehicle simulations → lines ─► Batcher ─channel─► import::Sender
//!                                          └─ last 24 h of the late vehicle ─► held back, sent last
//! ```
//!
//! The output is a function of the seed and the span only: a small splitmix64
//! generator drives every choice. Each truck keeps a daily schedule in its
//! owner's zone (see [`vehicle`]); its fuel is consumed while driving and
//! idling, refuelled once after the middle of the span and drained by ~40 L
//! on a later night. The blocked van sends one line, which the intake
//! refuses with code 208. One truck's last 24 hours are held back and sent at
//! the very end with `server_time` = now: a day buffered offline, arriving late.

mod live;
mod route;
mod vehicle;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use platform::Secret;
use tokio::sync::mpsc;

pub(crate) use self::live::keep_moving;
use self::route::Route;
use self::vehicle::{Simulation, VehicleSpec};
use super::{DemoAccounts, TRACKERS, TrackerSpec};
use crate::import::{
    Batch, BatchLimits, Batcher, Origin, Progress, Sender, SenderConfig, Totals, grouped,
};

/// Seed of the demo's generator.
pub(crate) const SEED: u64 = 0x7472_6163_6b68_6f75;

/// Routes and mobile operators of the moving vehicles, in the order of [`TRACKERS`].
const FLEET: [(Route, &str, i64); 2] = [
    (
        Route {
            lat0: 43.2380,
            lng0: 76.8890,
            north_m: 5_500.0,
            east_m: 7_500.0,
            wobble: [(0.12, 3.0, 0.4), (0.06, 7.0, 1.3)],
            home: 4.4,
        },
        "Kcell",
        40102,
    ),
    (
        Route {
            lat0: 43.2560,
            lng0: 76.9450,
            north_m: 4_500.0,
            east_m: 6_500.0,
            wobble: [(0.10, 4.0, 2.0), (0.05, 9.0, 0.2)],
            home: 1.2,
        },
        "Beeline KZ",
        40101,
    ),
];

/// The depots the moving vehicles start from: a name and where it is.
pub(crate) fn depots() -> Vec<(&'static str, f64, f64)> {
    FLEET
        .iter()
        .zip(["North depot", "East depot"])
        .map(|((route, _, _), name)| {
            let (lat, lng) = route.position(route.home);
            (name, lat, lng)
        })
        .collect()
}

/// The vehicle whose last 24 hours arrive late (index among the moving ones).
const LATE_VEHICLE: usize = 1;

/// What to generate: for whom, over which span, in which zone.
#[derive(Debug, Clone)]
pub(crate) struct Fleet {
    vehicles: Vec<VehicleSpec>,
    /// The blocked tracker: one line, refused with 208.
    blocked: Option<VehicleSpec>,
    /// Source names (tracker labels) that `VehicleSpec::source` indexes.
    names: Vec<String>,
    span: Span,
}

/// The generated span, in ms since the epoch, and the owner's zone.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    pub(crate) start_ms: i64,
    /// "Now": no message is later.
    pub(crate) end_ms: i64,
    pub(crate) zone: Tz,
    /// Messages of the late vehicle from here on are held back.
    pub(crate) late_from_ms: i64,
}

/// Where generated lines go.
pub(crate) trait LineSink {
    /// Takes one line; `false` asks the generator to stop.
    fn line(&mut self, origin: Origin, line: &[u8], late: bool) -> bool;
}

/// Messages generated per source.
pub(crate) type Counts = Vec<u64>;

impl Fleet {
    /// The demo's trackers, `days` of telemetry up to `end`, in `zone`.
    pub(crate) fn new(specs: &[&TrackerSpec], zone: Tz, days: u32, end: DateTime<Utc>) -> Self {
        let end_ms = end.timestamp() * 1000;
        let span = Span {
            start_ms: end_ms - i64::from(days) * 86_400_000,
            end_ms,
            zone,
            late_from_ms: end_ms - 86_400_000,
        };
        let mut vehicles = Vec::new();
        let mut blocked = None;
        let mut names = Vec::new();
        for (index, spec) in specs.iter().enumerate() {
            let source = u32::try_from(index).unwrap_or(u32::MAX);
            names.push(spec.label.to_owned());
            let (route, operator, code) = FLEET[vehicles.len().min(FLEET.len() - 1)];
            let vehicle = VehicleSpec::new(spec, source, route, operator, code);
            if spec.blocked {
                blocked.get_or_insert(vehicle);
            } else {
                vehicles.push(vehicle);
            }
        }
        Self {
            vehicles,
            blocked,
            names,
            span,
        }
    }

    /// The demo's trackers as recorded in `accounts`, in the first user's zone.
    fn of(accounts: &DemoAccounts, days: u32, end: DateTime<Utc>) -> Self {
        let specs: Vec<&TrackerSpec> = accounts
            .trackers
            .iter()
            .filter_map(|t| TRACKERS.iter().find(|s| s.device_id == t.device_id))
            .collect();
        let zone = accounts
            .users
            .first()
            .and_then(|u| u.time_zone.parse().ok())
            .unwrap_or(Tz::UTC);
        Self::new(&specs, zone, days, end)
    }

    /// Generates every line into `sink`; returns the messages per source.
    pub(crate) fn generate(&self, sink: &mut dyn LineSink) -> anyhow::Result<Counts> {
        let mut counts = vec![0; self.names.len()];
        for (index, spec) in self.vehicles.iter().enumerate() {
            let seed = SEED ^ u64::from(spec.source).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let late = (index == LATE_VEHICLE).then_some(self.span.late_from_ms);
            let mut simulation = Simulation::new(spec, self.span, seed, late);
            let (sent, go_on) = simulation.run(sink)?;
            if let Some(count) = counts.get_mut(spec.source as usize) {
                *count = sent;
            }
            if !go_on {
                return Ok(counts);
            }
        }
        if let Some(spec) = &self.blocked {
            let mut simulation = Simulation::new(spec, self.span, SEED, None);
            let line = simulation.parked_line(self.span.end_ms - 300_000)?;
            sink.line(
                Origin {
                    source: spec.source,
                    line: 1,
                },
                line.as_bytes(),
                false,
            );
            if let Some(count) = counts.get_mut(spec.source as usize) {
                *count = 1;
            }
        }
        Ok(counts)
    }
}

/// Lines cut into batches: the regular ones onto the sender's channel, the late ones held back.
struct Channelled {
    main: Batcher,
    late: Batcher,
    held: Vec<Batch>,
    tx: mpsc::Sender<Batch>,
}

impl LineSink for Channelled {
    fn line(&mut self, origin: Origin, line: &[u8], late: bool) -> bool {
        if late {
            self.held.extend(self.late.push(line, origin));
            return true;
        }
        match self.main.push(line, origin) {
            Some(batch) => self.tx.blocking_send(batch).is_ok(),
            None => true,
        }
    }
}

impl Channelled {
    /// Sends the last regular batch and closes the channel; returns the held-back batches.
    fn finish(self) -> Vec<Batch> {
        if let Some(batch) = self.main.finish() {
            let _ = self.tx.blocking_send(batch);
        }
        let mut held = self.held;
        held.extend(self.late.finish());
        held
    }
}

/// Generates `days` of telemetry up to `now` and sends it to the server at
/// `addr`; returns the one-line summary to print.
pub(crate) async fn send(
    accounts: &DemoAccounts,
    addr: SocketAddr,
    days: u32,
    now: DateTime<Utc>,
) -> anyhow::Result<String> {
    let started = Instant::now();
    let fleet = Fleet::of(accounts, days, now);
    let token = Secret::parse(&accounts.ingest_token).context("demo.json: bad `ingest_token`")?;
    let config = SenderConfig {
        url: format!("http://{addr}"),
        token,
        concurrency: 2,
        max_retries: 10,
        env_proxy: false,
    };
    let sender = Sender::try_new(config, fleet.names.clone(), Progress::off())?;
    let (tx, rx) = mpsc::channel(2);
    let generating = tokio::task::spawn_blocking(move || {
        let mut sink = Channelled {
            main: Batcher::new(BatchLimits::default()),
            late: Batcher::new(BatchLimits::default()),
            held: Vec::new(),
            tx,
        };
        let counts = fleet.generate(&mut sink);
        (fleet, counts, sink.finish())
    });
    let mut totals = sender.send_all(rx).await;
    let (fleet, counts, late) = generating.await.context("generating demo telemetry")?;
    let counts = counts?;
    let late_lines: u64 = late.iter().map(|b| b.lines).sum();
    totals.merge(sender.send_batches(late).await);
    Ok(summary(
        &fleet,
        days,
        &counts,
        late_lines,
        &totals,
        started.elapsed(),
    ))
}

/// `Demo telemetry, 7 days up to now: Truck 01 … 23,456 messages, …; accepted …, rejected 1 (…208…); …`.
fn summary(
    fleet: &Fleet,
    days: u32,
    counts: &Counts,
    late_lines: u64,
    totals: &Totals,
    took: Duration,
) -> String {
    let mut text = format!("Demo telemetry, {days} days up to now:");
    let late_source = fleet.vehicles.get(LATE_VEHICLE).map(|v| v.source);
    for (source, (name, count)) in fleet.names.iter().zip(counts).enumerate() {
        let separator = if source == 0 { " " } else { ", " };
        let plural = if *count == 1 { "" } else { "s" };
        let _ = write!(
            text,
            "{separator}{name} {} message{plural}",
            grouped(*count)
        );
        if late_source.is_some_and(|s| s as usize == source) && late_lines > 0 {
            let _ = write!(
                text,
                " ({} of its last 24 h sent late, server_time now)",
                grouped(late_lines)
            );
        }
    }
    let _ = write!(
        text,
        "; accepted {}, duplicates {}, rejected {}",
        grouped(totals.accepted),
        grouped(totals.duplicates),
        grouped(totals.rejected)
    );
    if let Some(first) = totals.rejections.first() {
        let _ = write!(text, " ({first})");
    }
    if totals.undelivered > 0 {
        let _ = write!(text, "; NOT delivered {}", grouped(totals.undelivered));
        if let Some(reason) = &totals.fatal {
            let _ = write!(text, " ({reason})");
        }
    }
    let _ = writeln!(
        text,
        "; {} requests in {:.1} s.",
        totals.requests,
        took.as_secs_f64()
    );
    text
}

#[cfg(test)]
mod tests;
