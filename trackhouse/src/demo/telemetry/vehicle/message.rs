//! One message as an NDJSON line, written straight into a reused buffer.

use std::fmt::Write as _;

use chrono::DateTime;

use super::{Activity, Simulation};

impl Simulation<'_> {
    /// Writes the current message into `self.out`, stamped `server_ms`.
    pub(super) fn write_line(&mut self, server_ms: i64) -> std::fmt::Result {
        let rng = &mut self.rng;
        let spec = self.spec;
        let fix = self.no_fix_left == 0;
        if fix {
            self.fix = spec.route.position(self.theta);
        }
        let (lat, lng) = self.fix;
        let ignition = self.activity != Activity::Parked;
        let moving = self.activity == Activity::Driving;
        let door = !ignition && self.t_ms < self.door_until_ms;
        let satellites = if fix {
            self.satellites.round() as i64
        } else {
            (rng.next_u64() % 4) as i64
        };
        let hdop = if fix {
            0.4 + 9.0 / self.satellites + rng.normal().abs() * 0.05
        } else {
            9.9
        };
        let alt = (780.0 + (43.24 - lat) * 1800.0).clamp(700.0, 900.0) + rng.normal() * 2.0;
        let out = &mut self.out;
        out.clear();
        write!(
            out,
            r#"{{"device_id":"{}","msg_time":"{}","server_time":"{}","gps_fix_type":"{}","lat":{lat:.6},"lng":{lng:.6},"speed":{:.1},"alt":{:.0},"satellites":{satellites},"heading":{:.0},"precision":{:.0},"hdop":{hdop:.1},"pdop":{:.1},"event_id":{},"mn_name":"{}","mn_roaming":0,"mn_code":{},"mn_csq":{:.0},"mn_type":"LTE","flags":{},"#,
            spec.device_id,
            iso(self.t_ms),
            iso(server_ms),
            if fix { "HAS_FIX" } else { "NO_FIX" },
            if fix { self.speed } else { 0.0 },
            alt,
            self.heading.floor().clamp(0.0, 359.0),
            if fix { hdop * 4.5 } else { 50.0 },
            hdop * 1.6,
            self.event,
            spec.operator,
            spec.operator_code,
            self.csq,
            u8::from(fix),
        )?;
        write!(
            out,
            r#""discrete_inputs":{{"1":{},"2":{}}},"discrete_outputs":{{"1":0}},"inputs":{{"#,
            u8::from(ignition),
            u8::from(door)
        )?;
        for (tank, litres) in spec.tanks.iter().zip(&self.fuel) {
            let slosh = if moving { 0.008 } else { 0.001 } * tank.capacity * rng.normal();
            let raw = tank.raw(litres + slosh).round();
            write!(out, r#""{}":{raw:.0},"#, tank.input)?;
        }
        let rpm = match self.activity {
            Activity::Driving => 700.0 + self.speed * 14.0 + rng.normal() * 40.0,
            Activity::Idling => 650.0 + rng.normal() * 15.0,
            Activity::Parked => 0.0,
        };
        let jitter = if ignition { 15.0 } else { 3.0 };
        write!(
            out,
            r#""board_voltage":{:.2},"battery_voltage":{:.2},"can_rpm":{rpm:.0},"can_coolant_temp":{:.0},"can_odometer":{:.1},"can_engine_hours":{:.2},"can_fuel_used":{:.1},"can_speed":{:.0},"ext_temp":{:.1},"gsm_signal":{:.0},"axis_x":{},"axis_y":{},"axis_z":{}}},"states":{{"ignition":{ignition},"mode":"{}","door":{door}}}}}"#,
            self.board_v,
            4.15 + rng.normal() * 0.02,
            self.coolant,
            self.odometer_km,
            self.engine_hours,
            self.fuel_used,
            self.speed,
            self.ext_temp + rng.normal() * 0.3,
            self.csq,
            (self.accel * 102.0 + rng.normal() * jitter).round() as i64,
            (self.turn.to_radians() * self.speed / 3.6 * 102.0 + rng.normal() * jitter).round()
                as i64,
            (1000.0 + rng.normal() * jitter).round() as i64,
            if self.eco { "eco" } else { "normal" },
        )
    }
}

/// `2024-06-01T07:00:00Z`.
fn iso(t_ms: i64) -> String {
    DateTime::from_timestamp_millis(t_ms)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}
