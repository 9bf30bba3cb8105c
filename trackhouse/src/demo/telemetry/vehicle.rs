//! One vehicle's simulated days: schedule, motion on a loop route, engine, fuel, radio.
//!
//! Days follow the owner's zone: parked until 07:00-08:00, a warm-up, legs
//! of driving separated by delivery stops (engine off, door open) or idling,
//! a lunch stop from 12:15-13:00, more legs until 17:15-18:00, the drive back
//! to the depot, parked overnight; Sundays parked. A message every 10 s
//! while driving, 30 s idling, 60 s parked, and one at every change.

mod message;

use std::f64::consts::TAU;

use chrono::{DateTime, Datelike, NaiveDate, NaiveTime, TimeZone, Timelike, Weekday};
use chrono_tz::Tz;
use platform::Calibration;

use super::route::{Rng, Route};
use super::{LineSink, Span};
use crate::demo::TrackerSpec;
use crate::import::Origin;

const DRIVING_S: i64 = 10;
const IDLING_S: i64 = 30;
const PARKED_S: i64 = 60;

/// A fuel tank read by a level sensor through its calibration table.
#[derive(Debug, Clone)]
struct Tank {
    input: String,
    /// `(raw, litres)`, raw increasing.
    calibration: Vec<(f64, f64)>,
    capacity: f64,
}

impl Tank {
    /// The raw reading for `litres`, by the calibration table read backwards.
    fn raw(&self, litres: f64) -> f64 {
        let mut pairs = self.calibration.windows(2);
        let pair = pairs
            .clone()
            .find(|pair| matches!(pair, [_, (_, l1)] if litres <= *l1))
            .or_else(|| pairs.next_back());
        match pair {
            Some(&[(r0, l0), (r1, l1)]) => {
                let fraction = if l1 > l0 {
                    (litres - l0) / (l1 - l0)
                } else {
                    0.0
                };
                (r0 + fraction * (r1 - r0)).clamp(0.0, 4095.0)
            }
            _ => 0.0,
        }
    }
}

/// A vehicle to simulate.
#[derive(Debug, Clone)]
pub(crate) struct VehicleSpec {
    pub(crate) source: u32,
    device_id: String,
    tanks: Vec<Tank>,
    route: Route,
    operator: &'static str,
    operator_code: i64,
}

impl VehicleSpec {
    pub(crate) fn new(
        spec: &TrackerSpec,
        source: u32,
        route: Route,
        operator: &'static str,
        operator_code: i64,
    ) -> Self {
        let tanks = spec
            .sensors
            .iter()
            .filter_map(|(_, input, table)| {
                let calibration = Calibration::parse("calibration", table).ok()?.0;
                let capacity = calibration.iter().map(|(_, l)| *l).fold(0.0, f64::max);
                Some(Tank {
                    input: (*input).to_owned(),
                    calibration,
                    capacity,
                })
            })
            .collect();
        Self {
            source,
            device_id: spec.device_id.to_owned(),
            tanks,
            route,
            operator,
            operator_code,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Activity {
    Parked,
    Idling,
    Driving,
}

/// The state of one simulated vehicle, stepped message by message.
#[derive(Debug)]
pub(crate) struct Simulation<'a> {
    spec: &'a VehicleSpec,
    span: Span,
    rng: Rng,
    /// Messages of this vehicle from here on are held back (sent late).
    late_from_ms: Option<i64>,
    t_ms: i64,
    last_ms: i64,
    activity: Activity,
    theta: f64,
    dir: f64,
    speed: f64,
    target: f64,
    light_s: f64,
    heading: f64,
    turn: f64,
    accel: f64,
    eco: bool,
    odometer_km: f64,
    engine_hours: f64,
    fuel_used: f64,
    coolant: f64,
    board_v: f64,
    mean_temp: f64,
    ext_temp: f64,
    fuel: Vec<f64>,
    refuel_at_ms: i64,
    drain_after_ms: i64,
    refuelled: bool,
    drained: bool,
    door_until_ms: i64,
    satellites: f64,
    csq: f64,
    no_fix_left: u32,
    fix: (f64, f64),
    event: i64,
    sent: u64,
    out: String,
}

impl<'a> Simulation<'a> {
    pub(crate) fn new(spec: &'a VehicleSpec, span: Span, seed: u64, late: Option<i64>) -> Self {
        let mut rng = Rng::new(seed);
        let days = (span.end_ms - span.start_ms) as f64 / 86_400_000.0;
        let capacity: f64 = spec.tanks.iter().map(|t| t.capacity).sum();
        // Enough for half the span at ~95 L a day, so the mid-span refuel comes in time.
        let level = (0.25 + 95.0 * days / 2.0 / capacity.max(1.0)).clamp(0.3, 0.85);
        let fuel = spec.tanks.iter().map(|t| t.capacity * level).collect();
        let span_ms = span.end_ms - span.start_ms;
        Self {
            spec,
            span,
            late_from_ms: late,
            t_ms: span.start_ms,
            last_ms: span.start_ms,
            activity: Activity::Parked,
            theta: spec.route.home,
            dir: 1.0,
            speed: 0.0,
            target: 50.0,
            light_s: 0.0,
            heading: rng.range(0.0, 360.0),
            turn: 0.0,
            accel: 0.0,
            eco: true,
            odometer_km: rng.range(150_000.0, 250_000.0).round(),
            engine_hours: rng.range(5_000.0, 8_000.0).round(),
            fuel_used: rng.range(40_000.0, 70_000.0).round(),
            coolant: 15.0,
            board_v: 25.0,
            mean_temp: 10.0,
            ext_temp: 10.0,
            fuel,
            refuel_at_ms: span.start_ms + span_ms / 2,
            drain_after_ms: span.start_ms + span_ms * 7 / 10,
            refuelled: false,
            drained: false,
            door_until_ms: 0,
            satellites: rng.range(8.0, 12.0),
            csq: rng.range(14.0, 26.0),
            no_fix_left: 0,
            fix: spec.route.position(spec.route.home),
            event: 0,
            sent: 0,
            out: String::with_capacity(1024),
            rng,
        }
    }

    /// Simulates from the local midnight before the span to its end; returns
    /// the lines emitted and whether the sink wants more.
    pub(crate) fn run(&mut self, sink: &mut dyn LineSink) -> anyhow::Result<(u64, bool)> {
        let zone = self.span.zone;
        let first = local(zone, self.span.start_ms).date_naive();
        let last = local(zone, self.span.end_ms).date_naive();
        self.t_ms = local_ms(zone, first, 0.0);
        self.last_ms = self.t_ms;
        for date in first.iter_days().take_while(|d| *d <= last) {
            if !self.day(date, sink)? {
                return Ok((self.sent, false));
            }
        }
        Ok((self.sent, true))
    }

    fn day(&mut self, date: NaiveDate, sink: &mut dyn LineSink) -> anyhow::Result<bool> {
        let zone = self.span.zone;
        let at = |minutes: f64| local_ms(zone, date, minutes);
        let day_of_year = f64::from(date.ordinal());
        self.mean_temp = 10.0 - 15.0 * (TAU * (day_of_year - 15.0) / 365.25).cos();
        let midnight = at(24.0 * 60.0);
        if date.weekday() == Weekday::Sun {
            return self.until(Activity::Parked, midnight, sink);
        }
        let depart = at(self.rng.range(420.0, 480.0));
        let lunch = at(self.rng.range(735.0, 780.0));
        let home = at(self.rng.range(1035.0, 1080.0));
        let warm_up = self.minutes(3.0, 8.0);
        let lunch_ms = self.minutes(40.0, 60.0);
        let ok = self.until(Activity::Parked, depart, sink)?
            && self.until(Activity::Idling, depart + warm_up, sink)?
            && self.work_until(lunch, sink)?
            && self.until(Activity::Parked, self.t_ms + lunch_ms, sink)?
            && self.until(Activity::Idling, self.t_ms + warm_up / 2, sink)?
            && self.work_until(home, sink)?
            && self.drive_home(sink)?
            && self.until(Activity::Idling, self.t_ms + 90_000, sink)?
            && self.until(Activity::Parked, midnight, sink)?;
        Ok(ok)
    }

    fn minutes(&mut self, low: f64, high: f64) -> i64 {
        (self.rng.range(low, high) * 60.0).round() as i64 * 1000
    }

    /// Legs of driving, each followed by a delivery stop or some idling.
    fn work_until(&mut self, deadline: i64, sink: &mut dyn LineSink) -> anyhow::Result<bool> {
        while self.t_ms < deadline {
            self.eco = self.rng.chance(0.6);
            let leg = self.t_ms + self.minutes(20.0, 55.0);
            if !self.until(Activity::Driving, leg.min(deadline), sink)? {
                return Ok(false);
            }
            let ok = if self.t_ms >= deadline {
                true
            } else if self.rng.chance(0.6) {
                self.door_until_ms = self.t_ms + self.minutes(1.0, 4.0);
                let stop = self.t_ms + self.minutes(10.0, 30.0);
                let restart = stop + self.minutes(1.0, 3.0);
                self.until(Activity::Parked, stop, sink)?
                    && (stop >= deadline || self.until(Activity::Idling, restart, sink)?)
            } else {
                let idle = self.minutes(2.0, 10.0);
                self.until(Activity::Idling, self.t_ms + idle, sink)?
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Drives back to the depot the shorter way round (at most two hours).
    fn drive_home(&mut self, sink: &mut dyn LineSink) -> anyhow::Result<bool> {
        let behind = (self.theta - self.spec.route.home).rem_euclid(TAU);
        self.dir = if behind < TAU / 2.0 { -1.0 } else { 1.0 };
        let mut left = behind.min(TAU - behind);
        let give_up = self.t_ms + 7_200_000;
        self.switch(Activity::Driving);
        while left > 0.0 && self.t_ms < give_up {
            let before = self.theta;
            let (metres_per_radian, _) = self.spec.route.tangent(self.theta, self.dir);
            // Slow down for the last 400 m, but never stop short of the gate.
            let cap = if left * metres_per_radian < 400.0 {
                20.0
            } else {
                90.0
            };
            self.step(cap);
            left -= (self.theta - before).abs();
            if left <= 0.0 {
                self.theta = self.spec.route.home;
                self.speed = 0.0;
            }
            if !self.emit(sink)? {
                return Ok(false);
            }
            self.t_ms += DRIVING_S * 1000;
        }
        self.dir = 1.0;
        Ok(true)
    }

    /// Carries on with `activity`, a message per interval, until `end_ms`.
    fn until(
        &mut self,
        activity: Activity,
        end_ms: i64,
        sink: &mut dyn LineSink,
    ) -> anyhow::Result<bool> {
        self.switch(activity);
        let interval = match activity {
            Activity::Driving => DRIVING_S,
            Activity::Idling => IDLING_S,
            Activity::Parked => PARKED_S,
        } * 1000;
        while self.t_ms < end_ms {
            if self.t_ms > self.span.end_ms {
                self.t_ms = end_ms;
                break;
            }
            // Brake to a halt over the last 50 s of a leg.
            let cap = if end_ms - self.t_ms <= 50_000 {
                0.0
            } else {
                90.0
            };
            self.step(cap);
            if !self.emit(sink)? {
                return Ok(false);
            }
            self.t_ms += interval;
        }
        Ok(true)
    }

    fn switch(&mut self, activity: Activity) {
        let ignition = |a: Activity| a != Activity::Parked;
        if ignition(activity) != ignition(self.activity) {
            self.event = 239;
            if !ignition(activity) {
                self.board_v = 25.4;
            }
        }
        self.activity = activity;
    }

    /// Advances the physics to `t_ms`; driving targets at most `cap` km/h (0: brake to a halt).
    fn step(&mut self, cap: f64) {
        let dt = ((self.t_ms - self.last_ms) as f64 / 1000.0).clamp(1.0, 3600.0);
        self.last_ms = self.t_ms;
        let stopping = cap <= 0.0;
        let hour = local_hour(self.span.zone, self.t_ms);
        self.ext_temp = self.mean_temp + 6.0 * (TAU * (hour - 9.0) / 24.0).sin();
        let previous = self.speed;
        let mut burn = 0.0;
        match self.activity {
            Activity::Driving => {
                if self.light_s > 0.0 || stopping {
                    self.light_s -= dt;
                    self.target = 0.0;
                } else {
                    if self.target < 1.0 || self.rng.chance(dt / 150.0) {
                        let top = if self.eco { 70.0 } else { 90.0 };
                        self.target = self.rng.range(25.0, top);
                    }
                    if self.rng.chance(dt / 400.0) {
                        self.light_s = self.rng.range(20.0, 90.0);
                    }
                }
                let target = self.target.min(cap);
                let change = (target - self.speed).clamp(-22.0, 12.0) + self.rng.normal() * 1.5;
                self.speed =
                    (self.speed + change * dt.min(DRIVING_S as f64) / 10.0).clamp(0.0, 90.0);
                if stopping && self.speed < 5.0 {
                    self.speed = 0.0;
                }
                // The first message of a leg may follow a longer parked interval.
                let metres = (previous + self.speed) / 2.0 / 3.6 * dt.min(DRIVING_S as f64);
                self.theta = self.spec.route.advance(self.theta, metres, self.dir);
                self.odometer_km += metres / 1000.0;
                burn = metres / 1000.0 * (0.30 + 0.004 * (self.speed - 60.0).max(0.0))
                    + dt / 3600.0 * 1.2;
            }
            Activity::Idling => {
                self.speed = 0.0;
                burn = dt / 3600.0 * 2.2;
            }
            Activity::Parked => self.speed = 0.0,
        }
        let (_, bearing) = self.spec.route.tangent(self.theta, self.dir);
        if self.speed > 0.0 {
            self.turn = ((bearing - self.heading + 540.0).rem_euclid(360.0) - 180.0) / dt;
            self.heading = bearing;
        } else {
            self.turn = 0.0;
        }
        self.accel = (self.speed - previous) / 3.6 / dt;
        if self.activity == Activity::Parked {
            self.coolant += (self.ext_temp - self.coolant) * (1.0 - (-dt / 3000.0).exp());
            self.board_v += (24.4 - self.board_v) * (1.0 - (-dt / 40_000.0).exp());
        } else {
            self.engine_hours += dt / 3600.0;
            self.coolant += (88.0 - self.coolant) * (1.0 - (-dt / 500.0).exp());
            self.board_v = 28.1 + self.rng.normal() * 0.08;
        }
        self.fuel_used += burn;
        let tanks = self.fuel.len().max(1) as f64;
        for litres in &mut self.fuel {
            *litres = (*litres - burn / tanks).max(0.0);
        }
        self.fuel_events(hour);
        self.satellites = (self.satellites + self.rng.normal() * 0.4).clamp(6.0, 14.0);
        self.csq = (self.csq + self.rng.normal() * 0.8).clamp(10.0, 28.0);
        if self.no_fix_left > 0 {
            self.no_fix_left -= 1;
        } else if self.rng.chance(0.002) {
            self.no_fix_left = 2 + (self.rng.next_u64() % 5) as u32;
        }
    }

    /// The one refuel in the daytime after mid-span (and another if a tank
    /// runs low on a long span), and the one ~40 L drain on a later night, both parked.
    fn fuel_events(&mut self, hour: f64) {
        if self.activity != Activity::Parked {
            return;
        }
        let low = self
            .fuel
            .iter()
            .zip(&self.spec.tanks)
            .any(|(litres, tank)| *litres < tank.capacity * 0.1);
        let due = !self.refuelled && self.t_ms >= self.refuel_at_ms;
        if (due || low) && (7.0..20.0).contains(&hour) {
            for (litres, tank) in self.fuel.iter_mut().zip(&self.spec.tanks) {
                *litres = tank.capacity * self.rng.range(0.9, 0.95);
            }
            self.refuelled = true;
            self.door_until_ms = self.t_ms + 300_000;
        } else if self.refuelled
            && !self.drained
            && self.t_ms >= self.drain_after_ms
            && (1.0..4.0).contains(&hour)
        {
            if let Some(litres) = self.fuel.first_mut() {
                *litres = (*litres - self.rng.range(38.0, 42.0)).max(0.0);
            }
            self.drained = true;
        }
    }

    /// Writes the current message and hands it to `sink` if it falls in the span.
    fn emit(&mut self, sink: &mut dyn LineSink) -> anyhow::Result<bool> {
        if self.t_ms < self.span.start_ms || self.t_ms > self.span.end_ms {
            self.event = 0;
            return Ok(true);
        }
        let late = self.late_from_ms.is_some_and(|from| self.t_ms >= from);
        let server_ms = if late {
            self.span.end_ms
        } else {
            self.t_ms + 1000 * (1 + (self.rng.next_u64() % 3) as i64)
        };
        self.write_line(server_ms)?;
        self.event = 0;
        self.sent += 1;
        let origin = Origin {
            source: self.spec.source,
            line: self.sent,
        };
        Ok(sink.line(origin, self.out.as_bytes(), late))
    }

    /// One parked message at `t_ms` (the blocked van's only line).
    pub(crate) fn parked_line(&mut self, t_ms: i64) -> anyhow::Result<String> {
        self.t_ms = t_ms;
        self.last_ms = t_ms - PARKED_S * 1000;
        self.step(0.0);
        self.write_line(t_ms + 2000)?;
        Ok(self.out.clone())
    }
}

/// `minutes` after local midnight of `date` in `zone`, in ms since the epoch (whole seconds).
fn local_ms(zone: Tz, date: NaiveDate, minutes: f64) -> i64 {
    let midnight = date.and_time(NaiveTime::MIN);
    let start = zone
        .from_local_datetime(&midnight)
        .earliest()
        .map_or_else(|| midnight.and_utc().timestamp(), |t| t.timestamp());
    (start + (minutes * 60.0).round() as i64) * 1000
}

/// The local hour of the day, with its fraction.
fn local_hour(zone: Tz, t_ms: i64) -> f64 {
    let time = local(zone, t_ms).time();
    f64::from(time.hour()) + f64::from(time.minute()) / 60.0
}

fn local(zone: Tz, t_ms: i64) -> DateTime<Tz> {
    DateTime::from_timestamp_millis(t_ms)
        .unwrap_or_default()
        .with_timezone(&zone)
}
