//! One simulated vehicle: its state machine (parked, idling, driving) and
//! the messages its tracker sends.

use schemas::{GpsFixType, Message, MnType, Name, StateValue, TrackerId};

use super::SplitMix64;

/// What a vehicle is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Ignition off.
    Parked,
    /// Ignition on, standing (before or after a trip).
    Idling,
    /// On the road (including stops at lights).
    Driving,
}

impl Phase {
    const fn mode(self) -> &'static str {
        match self {
            Self::Parked => "parked",
            Self::Idling => "idling",
            Self::Driving => "driving",
        }
    }
}

/// Raw code of a full tank (the sensor's range is 0..=4095).
const FUEL_FULL_RAW: f64 = 3_950.0;
/// Raw codes per litre: a 300 l tank.
const FUEL_RAW_PER_LITRE: f64 = FUEL_FULL_RAW / 300.0;
/// Metres per degree of latitude.
const METRES_PER_DEGREE: f64 = 111_320.0;
/// Local time of the fleet: UTC+6 (Almaty).
const UTC_OFFSET_HOURS: i64 = 6;

/// One simulated vehicle with its tracker; an endless iterator of its
/// messages, one per second from its start time.
#[derive(Debug, Clone)]
pub struct Vehicle {
    tracker: TrackerId,
    rng: SplitMix64,
    time_ms: i64,
    operator: (&'static str, i64),
    phase: Phase,
    phase_left_s: u32,
    trip_done: bool,
    home: (f64, f64),
    lat: f64,
    lng: f64,
    /// The last position reported with a fix.
    fixed: (f64, f64),
    drift_m: (f64, f64),
    heading: f64,
    turn_rate: f64,
    turn_left_s: u32,
    speed: f64,
    acceleration: f64,
    target_speed: f64,
    target_left_s: u32,
    odometer_m: f64,
    engine_s: f64,
    fuel_raw: f64,
    slosh: f64,
    refuel_in_s: Option<u32>,
    coolant: f64,
    board_v: f64,
    battery_v: f64,
    ambient_offset: f64,
    satellites: i32,
    satellites_hold_s: u32,
    alt_error: f64,
    outage_left_s: u32,
    underground: bool,
    csq: i32,
    csq_hold_s: u32,
    door_open_in_s: Option<u32>,
    door_open_left_s: u32,
    axis_base: (f64, f64, f64),
    event: Option<i64>,
}

/// Events devices attach to a message (`event_id`); periodic messages have none.
mod event {
    pub(super) const IGNITION_ON: i64 = 1;
    pub(super) const IGNITION_OFF: i64 = 2;
    pub(super) const DOOR_OPEN: i64 = 3;
    pub(super) const TURN: i64 = 4;
}

const OPERATORS: [(&str, i64); 3] = [("Beeline KZ", 40101), ("Kcell", 40102), ("Tele2 KZ", 40177)];

impl Vehicle {
    /// A vehicle of `tracker`, parked near Almaty at `start_ms`, its
    /// behaviour drawn from `seed` (same seed and tracker, same messages).
    pub fn new(tracker: TrackerId, start_ms: i64, seed: u64) -> Self {
        let mut rng =
            SplitMix64::new(seed ^ (tracker.0 as u64).wrapping_mul(0xA076_1D64_78BD_642F));
        let home = (43.2389 + rng.noise(0.08), 76.8897 + rng.noise(0.12));
        let operator = OPERATORS[rng.between(0, OPERATORS.len() as u32) as usize];
        Self {
            tracker,
            time_ms: start_ms,
            operator,
            phase: Phase::Parked,
            phase_left_s: rng.between(600, 6 * 3600),
            trip_done: false,
            home,
            lat: home.0,
            lng: home.1,
            fixed: (round_to(home.0, 6), round_to(home.1, 6)),
            drift_m: (0.0, 0.0),
            heading: rng.range(0.0, 360.0),
            turn_rate: 0.0,
            turn_left_s: 0,
            speed: 0.0,
            acceleration: 0.0,
            target_speed: 0.0,
            target_left_s: 0,
            odometer_m: rng.range(20_000_000.0, 300_000_000.0),
            engine_s: rng.range(2_000.0, 9_000.0) * 3600.0,
            fuel_raw: rng.range(1_800.0, FUEL_FULL_RAW),
            slosh: 0.0,
            refuel_in_s: None,
            coolant: 20.0,
            board_v: 12.6,
            battery_v: 4.1,
            ambient_offset: rng.noise(3.0),
            satellites: 11,
            satellites_hold_s: 0,
            alt_error: 0.0,
            outage_left_s: 0,
            underground: false,
            csq: 20,
            csq_hold_s: 0,
            door_open_in_s: None,
            door_open_left_s: 0,
            axis_base: (rng.noise(40.0), rng.noise(40.0), 990.0 + rng.noise(8.0)),
            event: None,
            rng,
        }
    }

    /// The tracker the vehicle reports as.
    pub fn tracker(&self) -> TrackerId {
        self.tracker
    }

    /// The message time of the next message.
    pub fn next_time_ms(&self) -> i64 {
        self.time_ms
    }

    /// The next message (one second after the previous one).
    pub fn next_message(&mut self) -> Message {
        self.step();
        let message = self.message();
        self.time_ms += 1000;
        message
    }

    fn local_hour(&self) -> f64 {
        let ms_of_day = (self.time_ms + UTC_OFFSET_HOURS * 3_600_000).rem_euclid(86_400_000);
        ms_of_day as f64 / 3_600_000.0
    }

    fn ignition(&self) -> bool {
        self.phase != Phase::Parked
    }

    fn step(&mut self) {
        self.event = None;
        self.advance_phase();
        self.advance_motion();
        self.advance_radio();
        self.advance_vehicle();
    }

    fn advance_phase(&mut self) {
        if self.local_hour() < 1.0 / 3600.0 {
            self.ambient_offset =
                (self.ambient_offset * 0.7 + self.rng.noise(2.5)).clamp(-5.0, 5.0);
        }
        if self.phase_left_s > 0 {
            self.phase_left_s -= 1;
            return;
        }
        match self.phase {
            Phase::Parked => {
                self.phase = Phase::Idling;
                self.phase_left_s = self.rng.between(45, 300);
                self.trip_done = false;
                self.event = Some(event::IGNITION_ON);
            }
            Phase::Idling if !self.trip_done => {
                self.phase = Phase::Driving;
                self.phase_left_s = self.rng.between(10 * 60, 110 * 60);
                self.target_left_s = 0;
            }
            Phase::Driving => {
                self.phase = Phase::Idling;
                self.phase_left_s = self.rng.between(30, 180);
                self.trip_done = true;
            }
            Phase::Idling => {
                let hour = self.local_hour();
                let night = !(6.0..21.0).contains(&hour);
                self.phase = Phase::Parked;
                self.phase_left_s = if night {
                    self.rng.between(6 * 3600, 10 * 3600)
                } else {
                    self.rng.between(15 * 60, 3 * 3600)
                };
                self.event = Some(event::IGNITION_OFF);
                self.door_open_in_s = Some(self.rng.between(3, 30));
                self.underground = self.rng.chance(0.15);
                if self.fuel_raw < 1_300.0 || (self.fuel_raw < 2_500.0 && self.rng.chance(0.1)) {
                    self.refuel_in_s = Some(self.rng.between(60, 300));
                }
            }
        }
    }

    fn advance_motion(&mut self) {
        let before = self.speed;
        if self.phase == Phase::Driving {
            if self.target_left_s == 0 {
                if self.rng.chance(0.2) {
                    self.target_speed = 0.0;
                    self.target_left_s = self.rng.between(15, 75);
                } else {
                    self.target_speed = self.rng.range(25.0, 92.0);
                    self.target_left_s = self.rng.between(30, 300);
                }
            }
            self.target_left_s -= 1;
            let delta = (self.target_speed - self.speed).clamp(-3.0, 1.6) + self.rng.noise(0.4);
            self.speed = (self.speed + delta).max(0.0);
            if self.target_speed == 0.0 && self.speed < 1.5 {
                self.speed = 0.0;
            }
            if self.speed > 2.0 {
                if self.turn_left_s > 0 {
                    self.turn_left_s -= 1;
                } else if self.rng.chance(1.0 / 150.0) {
                    self.turn_rate =
                        self.rng.range(6.0, 10.0) * if self.rng.chance(0.5) { 1.0 } else { -1.0 };
                    self.turn_left_s = self.rng.between(8, 14);
                    self.event = Some(event::TURN);
                } else {
                    self.turn_rate = self.turn_rate * 0.8 + self.rng.noise(0.6);
                }
                self.heading = (self.heading + self.turn_rate + self.homing()).rem_euclid(360.0);
            }
        } else {
            self.speed = 0.0;
            self.turn_rate = 0.0;
        }
        self.acceleration = self.speed - before;
        let metres = self.speed / 3.6;
        let heading = self.heading.to_radians();
        self.lat += metres * heading.cos() / METRES_PER_DEGREE;
        self.lng += metres * heading.sin() / (METRES_PER_DEGREE * self.lat.to_radians().cos());
        self.odometer_m += metres;
        // Receiver drift: a slow random walk of a few metres around the true position.
        self.drift_m.0 = self.drift_m.0 * 0.98 + self.rng.noise(0.35);
        self.drift_m.1 = self.drift_m.1 * 0.98 + self.rng.noise(0.35);
        self.alt_error = self.alt_error * 0.97 + self.rng.noise(0.6);
    }

    /// Degrees per second that steer a vehicle over 30 km from home back towards it.
    fn homing(&self) -> f64 {
        let north = (self.home.0 - self.lat) * METRES_PER_DEGREE;
        let east = (self.home.1 - self.lng) * METRES_PER_DEGREE * self.lat.to_radians().cos();
        if north.hypot(east) < 30_000.0 {
            return 0.0;
        }
        let bearing = east.atan2(north).to_degrees();
        let off = (bearing - self.heading + 540.0).rem_euclid(360.0) - 180.0;
        (off * 0.05).clamp(-2.0, 2.0)
    }

    fn advance_radio(&mut self) {
        if self.outage_left_s > 0 {
            self.outage_left_s -= 1;
        } else if self.phase == Phase::Driving && self.rng.chance(1.0 / 40_000.0) {
            // A tunnel or an underpass.
            self.outage_left_s = self.rng.between(10, 120);
        }
        if self.satellites_hold_s == 0 {
            self.satellites = (self.satellites + self.rng.between(0, 3) as i32 - 1).clamp(7, 16);
            self.satellites_hold_s = self.rng.between(15, 90);
        } else {
            self.satellites_hold_s -= 1;
        }
        if self.csq_hold_s == 0 {
            self.csq = (self.csq + self.rng.between(0, 5) as i32 - 2).clamp(8, 30);
            self.csq_hold_s = self.rng.between(5, 40);
        } else {
            self.csq_hold_s -= 1;
        }
    }

    fn advance_vehicle(&mut self) {
        let running = self.ignition();
        if running {
            self.engine_s += 1.0;
        }
        let litres = match self.phase {
            Phase::Parked => 0.0,
            Phase::Idling => 2.5 / 3600.0,
            Phase::Driving => 2.5 / 3600.0 + 0.30 * self.speed / 3600.0,
        };
        self.fuel_raw -= litres * FUEL_RAW_PER_LITRE;
        if let Some(wait) = self.refuel_in_s {
            if wait > 0 {
                self.refuel_in_s = Some(wait - 1);
            } else if self.fuel_raw < FUEL_FULL_RAW - 20.0 && self.phase == Phase::Parked {
                // A pump of about 45 l/min.
                self.fuel_raw += 0.75 * FUEL_RAW_PER_LITRE;
                self.slosh += self.rng.noise(4.0);
            } else {
                self.refuel_in_s = None;
            }
        }
        // Fuel sloshes with speed and acceleration and settles when standing.
        let agitation = if self.phase == Phase::Driving {
            1.0 + self.speed / 15.0 + self.acceleration.abs() * 2.0
        } else {
            0.6
        };
        self.slosh = self.slosh * 0.85 + self.rng.noise(agitation);

        let (coolant_target, coolant_tau) = if running {
            (88.0, 400.0)
        } else {
            (self.ambient(), 2_400.0)
        };
        self.coolant += (coolant_target - self.coolant) / coolant_tau;
        let (board_target, board_tau) = if running {
            (14.1, 20.0)
        } else {
            (12.55, 900.0)
        };
        self.board_v += (board_target - self.board_v) / board_tau;
        let battery_target = if running { 4.18 } else { 4.02 };
        self.battery_v += (battery_target - self.battery_v) / 7_200.0;

        if let Some(wait) = self.door_open_in_s {
            if wait == 0 {
                self.door_open_in_s = None;
                self.door_open_left_s = self.rng.between(5, 40);
                self.event = Some(event::DOOR_OPEN);
            } else {
                self.door_open_in_s = Some(wait - 1);
            }
        } else {
            self.door_open_left_s = self.door_open_left_s.saturating_sub(1);
        }
    }

    fn ambient(&self) -> f64 {
        let diurnal = ((self.local_hour() - 9.0) / 24.0 * std::f64::consts::TAU).sin();
        18.0 + 9.0 * diurnal + self.ambient_offset
    }

    fn has_fix(&self) -> bool {
        self.outage_left_s == 0 && !(self.underground && self.phase == Phase::Parked)
    }

    fn message(&mut self) -> Message {
        let fix = self.has_fix();
        let latency_ms = 150 + i64::from(self.rng.between(0, 1_850));
        let (satellites, hdop, pdop) = if fix {
            let hdop = round_to(
                (0.45 + 6.0 / f64::from(self.satellites) + self.rng.noise(0.06)).clamp(0.5, 5.0),
                1,
            );
            (
                self.satellites,
                hdop,
                round_to(hdop * 1.5 + self.rng.noise(0.08), 1),
            )
        } else {
            (self.rng.between(0, 4) as i32, -1.0, -1.0)
        };
        if fix {
            // Reports keep the last fixed position through an outage.
            self.fixed = (
                round_to(self.lat + self.drift_m.0 / METRES_PER_DEGREE, 6),
                round_to(
                    self.lng + self.drift_m.1 / (METRES_PER_DEGREE * self.lat.to_radians().cos()),
                    6,
                ),
            );
        }
        let (lat, lng) = self.fixed;
        let terrain = 760.0 + 140.0 * (lat * 310.0).sin() * (lng * 260.0).cos();
        let csq = if self.underground && self.phase == Phase::Parked {
            (self.csq / 3).max(3)
        } else {
            self.csq
        };
        let ignition = self.ignition();
        let door = self.door_open_left_s > 0;
        let speed = round_to(self.speed, 1);

        let mut inputs: Vec<(Name, f64)> = Vec::with_capacity(12);
        let mut input = |name: &str, value: f64| inputs.push((name.into(), value));
        let shake = match self.phase {
            Phase::Parked => 2.0,
            Phase::Idling => 6.0,
            Phase::Driving => 8.0 + self.speed / 4.0,
        };
        let lateral_mg = self.speed / 3.6 * self.turn_rate.to_radians() / 9.81 * 1000.0;
        let (bx, by, bz) = self.axis_base;
        input(
            "axis_x",
            (bx + self.acceleration * 28.0 + self.rng.noise(shake)).round(),
        );
        input("axis_y", (by + lateral_mg + self.rng.noise(shake)).round());
        input("axis_z", (bz + self.rng.noise(shake * 1.5)).round());
        input(
            "battery_voltage",
            round_to(self.battery_v + self.rng.noise(0.004), 3),
        );
        input(
            "board_voltage",
            round_to(self.board_v + self.rng.noise(0.02), 3),
        );
        if ignition {
            input("can_coolant_temp", self.coolant.round());
            input(
                "can_engine_hours",
                (self.engine_s / 180.0).floor() * 5.0 / 100.0,
            );
            input(
                "can_odometer",
                (self.odometer_m / 5.0).floor() * 5.0 / 1000.0,
            );
            let rpm = if self.speed > 0.0 {
                780.0 + self.speed * 19.0 + self.rng.noise(40.0)
            } else {
                700.0 + self.rng.noise(15.0)
            };
            input("can_rpm", rpm.round());
        }
        input(
            "ext_temp",
            round_to(self.ambient() + self.rng.noise(0.1), 1),
        );
        input("gsm_signal", f64::from(csq * 5 / 31));
        input(
            "lls_level_1",
            (self.fuel_raw + self.slosh).round().clamp(0.0, 4095.0),
        );

        let flags = if fix { 1 } else { 2 };
        Message {
            tracker_id: self.tracker,
            message_time_ms: self.time_ms,
            server_time_ms: self.time_ms + latency_ms,
            gps_fix_type: Some(if fix {
                GpsFixType::HasFix
            } else {
                GpsFixType::LastKnownPosition
            }),
            lat: Some(lat),
            lng: Some(lng),
            speed: Some(if fix { speed } else { 0.0 }),
            alt: Some((terrain + self.alt_error).round() as i32),
            satellites: Some(satellites),
            heading: Some(self.heading.round() as i32 % 360),
            // Without a fix a tracker reports no precision (the intake takes 0 or more).
            precision: fix.then(|| (hdop * 2.5).round() as i32),
            hdop: Some(hdop),
            pdop: Some(pdop),
            event_id: self.event,
            mn_name: Some(self.operator.0.to_owned()),
            mn_roaming: Some(0),
            mn_code: Some(self.operator.1),
            mn_csq: Some(csq),
            mn_type: Some(if csq >= 10 {
                MnType::Lte
            } else {
                MnType::Wcdma
            }),
            flags: Some(flags),
            discrete_inputs: vec![(1, u8::from(ignition)), (2, u8::from(door)), (3, 0), (4, 0)],
            discrete_outputs: vec![(1, 0), (2, u8::from(self.speed > 85.0))],
            inputs,
            states: vec![
                ("door".into(), StateValue::Flag(door)),
                ("ignition".into(), StateValue::Flag(ignition)),
                ("mode".into(), StateValue::Text(self.phase.mode().into())),
            ],
        }
    }
}

impl Iterator for Vehicle {
    type Item = Message;

    fn next(&mut self) -> Option<Message> {
        Some(self.next_message())
    }
}

fn round_to(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}
