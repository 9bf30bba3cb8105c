//! Input data for the criterion benchmarks of the compute kernels.
//!
//! The benchmarks live in `benches/` (`cargo bench -p bench-kernels`); this
//! library only generates what they run on: [`Week`], one vehicle reporting
//! at 1 Hz for seven days, deterministic and shaped like real telemetry.

use arrow_array::{BooleanArray, Float64Array};

/// Readings in a week at 1 Hz: 7 × 86,400.
pub const WEEK_READINGS: usize = 604_800;

/// 2024-06-03T00:00:00Z, a Monday, in epoch milliseconds.
pub const WEEK_START_MS: i64 = 1_717_372_800_000;

/// One vehicle's week of telemetry, one reading per second.
///
/// The vehicle parks overnight (ignition off), and by day alternates trips
/// (speed 0-120 km/h with bounded acceleration and stops at lights), idling
/// with the ignition on, and stops. Fuel falls with distance and idling and
/// is refilled when low; the sensor reports it as a raw 12-bit code with
/// slosh noise while driving. Position follows a path with wandering heading.
#[derive(Debug, Clone)]
pub struct Week {
    /// `message_time`, epoch milliseconds, 1 s apart.
    pub times: Vec<i64>,
    /// Fuel level in litres, with sensor noise.
    pub fuel_litres: Vec<f64>,
    /// The fuel sensor's raw code (0-4095) before calibration.
    pub fuel_raw: Float64Array,
    /// Speed, km/h, to 0.1.
    pub speed_kmh: Float64Array,
    /// Ignition state.
    pub ignition: BooleanArray,
    /// Latitude, degrees to 1e-6.
    pub lat: Vec<f64>,
    /// Longitude, degrees to 1e-6.
    pub lng: Vec<f64>,
}

/// The tank: 400 litres over raw codes 0-4095.
const TANK_LITRES: f64 = 400.0;

/// A 10-point calibration table of the week's fuel sensor, `(raw, litres)`.
///
/// Slightly non-linear (a tank is not a box), strictly increasing in raw.
pub fn fuel_table() -> [(f64, f64); 10] {
    let mut table = [(0.0, 0.0); 10];
    for (i, point) in table.iter_mut().enumerate() {
        let fraction = i as f64 / 9.0;
        let litres = TANK_LITRES * (0.85 * fraction + 0.15 * fraction * fraction);
        *point = (4095.0 * fraction, litres);
    }
    table
}

impl Week {
    /// Generates the week; the same every run (fixed seed).
    pub fn generate() -> Self {
        let mut rng = SplitMix64(0x5eed_2024_0603);
        let n = WEEK_READINGS;
        let mut times = Vec::with_capacity(n);
        let mut fuel_litres = Vec::with_capacity(n);
        let mut fuel_raw = Vec::with_capacity(n);
        let mut speed_kmh = Vec::with_capacity(n);
        let mut ignition = Vec::with_capacity(n);
        let mut lat = Vec::with_capacity(n);
        let mut lng = Vec::with_capacity(n);

        let mut state = Vehicle {
            fuel: 310.0,
            speed: 0.0,
            target: 0.0,
            heading: 0.7,
            lat: 55.751_244,
            lng: 37.618_423,
            phase: Phase::Parked,
            phase_left_s: 0,
        };
        for second in 0..n {
            let second_of_day = second % 86_400;
            state.step(second_of_day, &mut rng);
            times.push(WEEK_START_MS + second as i64 * 1000);
            let slosh = if state.speed > 0.0 { 2.5 } else { 0.2 };
            let noisy = state.fuel + slosh * rng.symmetric();
            fuel_litres.push((noisy * 10.0).round() / 10.0);
            fuel_raw.push((noisy / TANK_LITRES * 4095.0).round().clamp(0.0, 4095.0));
            speed_kmh.push((state.speed * 10.0).round() / 10.0);
            ignition.push(state.phase != Phase::Parked);
            lat.push((state.lat * 1e6).round() / 1e6);
            lng.push((state.lng * 1e6).round() / 1e6);
        }
        Self {
            times,
            fuel_litres,
            fuel_raw: Float64Array::from(fuel_raw),
            speed_kmh: Float64Array::from(speed_kmh),
            ignition: BooleanArray::from(ignition),
            lat,
            lng,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Parked,
    Idling,
    Driving,
    Stopped,
}

#[derive(Debug)]
struct Vehicle {
    fuel: f64,
    speed: f64,
    target: f64,
    heading: f64,
    lat: f64,
    lng: f64,
    phase: Phase,
    phase_left_s: u32,
}

impl Vehicle {
    fn step(&mut self, second_of_day: usize, rng: &mut SplitMix64) {
        let night = !(6 * 3600..20 * 3600).contains(&second_of_day);
        if self.phase_left_s == 0 {
            self.next_phase(night, rng);
        }
        self.phase_left_s = self.phase_left_s.saturating_sub(1);
        match self.phase {
            Phase::Driving => {
                if rng.unit() < 0.01 {
                    self.target = 20.0 + 100.0 * rng.unit();
                }
                if rng.unit() < 0.002 {
                    self.target = 0.0; // a red light
                } else if self.target == 0.0 && self.speed == 0.0 && rng.unit() < 0.03 {
                    self.target = 30.0 + 40.0 * rng.unit();
                }
            }
            Phase::Parked | Phase::Idling | Phase::Stopped => self.target = 0.0,
        }
        let accel = (self.target - self.speed).clamp(-8.0, 4.0);
        self.speed = (self.speed + accel).clamp(0.0, 120.0);
        if self.speed < 0.5 && self.target == 0.0 {
            self.speed = 0.0;
        }
        let km = self.speed / 3600.0;
        self.heading += 0.02 * rng.symmetric();
        self.lat += km / 111.0 * self.heading.cos();
        self.lng += km / 63.0 * self.heading.sin();
        self.fuel -= km * 0.3;
        if self.phase != Phase::Parked {
            self.fuel -= 1.0 / 3600.0; // about 1 l/h idling
        }
        if self.fuel < 60.0 && self.phase == Phase::Stopped {
            self.fuel = TANK_LITRES - 5.0;
        }
    }

    fn next_phase(&mut self, night: bool, rng: &mut SplitMix64) {
        let (phase, minutes) = if night {
            (Phase::Parked, 30.0 + 60.0 * rng.unit())
        } else {
            match self.phase {
                Phase::Driving => (Phase::Stopped, 15.0 + 165.0 * rng.unit()),
                Phase::Stopped | Phase::Parked => (Phase::Idling, 1.0 + 9.0 * rng.unit()),
                Phase::Idling => (Phase::Driving, 10.0 + 100.0 * rng.unit()),
            }
        };
        self.phase = phase;
        self.phase_left_s = (minutes * 60.0) as u32;
    }
}

/// SplitMix64: tiny, deterministic, good enough for test data.
#[derive(Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [-1, 1).
    fn symmetric(&mut self) -> f64 {
        2.0 * self.unit() - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn week_is_a_realistic_week() {
        let week = Week::generate();
        assert_eq!(week.times.len(), WEEK_READINGS);
        assert!(week.times.windows(2).all(|w| w[1] - w[0] == 1000));
        for column in [&week.fuel_litres, &week.lat, &week.lng] {
            assert_eq!(column.len(), WEEK_READINGS);
        }
        assert_eq!(week.speed_kmh.len(), WEEK_READINGS);
        let speeds = week.speed_kmh.values();
        let stopped = speeds.iter().filter(|&&s| s == 0.0).count();
        let fast = speeds.iter().filter(|&&s| s > 80.0).count();
        assert!(
            stopped > WEEK_READINGS / 3 && stopped < WEEK_READINGS * 9 / 10,
            "{stopped}"
        );
        assert!(fast > 1000, "{fast}");
        assert!(speeds.iter().all(|&s| (0.0..=120.0).contains(&s)));
        assert!(
            week.fuel_litres
                .iter()
                .all(|&f| (0.0..=TANK_LITRES + 5.0).contains(&f))
        );
        assert!(
            week.fuel_raw
                .values()
                .iter()
                .all(|&r| (0.0..=4095.0).contains(&r))
        );
        assert!(week.ignition.true_count() > 0 && week.ignition.false_count() > 0);
    }

    #[test]
    fn fuel_table_is_strictly_increasing() {
        let table = fuel_table();
        assert!(table.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert_eq!(table[9], (4095.0, TANK_LITRES));
    }

    #[test]
    fn generation_is_deterministic() {
        let (a, b) = (Week::generate(), Week::generate());
        assert_eq!(a.fuel_litres, b.fuel_litres);
        assert_eq!(a.lat, b.lat);
    }
}
