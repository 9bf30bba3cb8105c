//! A simulated fleet: deterministic, realistic 1 Hz telemetry of vehicles
//! that park, idle and drive, for measurements and load generators.
//!
//! Every value derives from a seed through [`SplitMix64`], so a run is
//! reproducible bit for bit. Values are what devices report, not noise:
//! smooth paths and physical quantities at the resolution trackers send
//! (coordinates to 1e-6°, voltages in mV, the fuel sensor as a raw 12-bit
//! code, CAN odometer in 5 m steps), with sensor jitter where real sensors
//! jitter (fuel sloshing while driving, accelerometer, ADC noise), and CAN
//! values absent while the ignition is off (the bus sleeps).
//!
//! One [`Vehicle`] yields its messages one second apart; a [`Fleet`] steps
//! many vehicles together, as a gateway would forward them.

mod rng;
mod vehicle;

use schemas::{Message, TrackerId};

pub use rng::SplitMix64;
pub use vehicle::Vehicle;

/// 2024-06-01T00:00:00Z in ms: where simulations start unless told otherwise.
pub const DEFAULT_START_MS: i64 = 1_717_200_000_000;

/// Messages per vehicle per day at 1 Hz.
pub const MESSAGES_PER_DAY: u64 = 86_400;

/// Settings of a simulated fleet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetConfig {
    /// Vehicles, with consecutive tracker ids.
    pub trackers: usize,
    /// The first tracker id.
    pub first_tracker_id: i64,
    /// The message time of every vehicle's first message.
    pub start_ms: i64,
    /// Seed of every random choice.
    pub seed: u64,
}

impl Default for FleetConfig {
    fn default() -> Self {
        Self {
            trackers: 1,
            first_tracker_id: 1,
            start_ms: DEFAULT_START_MS,
            seed: 0x7472_6163_6b68_6f75, // "trackhou"
        }
    }
}

/// Vehicles stepped together, one message per vehicle per second.
#[derive(Debug, Clone)]
pub struct Fleet {
    vehicles: Vec<Vehicle>,
}

impl Fleet {
    /// The fleet of `config`.
    pub fn new(config: &FleetConfig) -> Self {
        let vehicles = (0..config.trackers as i64)
            .map(|i| {
                Vehicle::new(
                    TrackerId(config.first_tracker_id + i),
                    config.start_ms,
                    config.seed,
                )
            })
            .collect();
        Self { vehicles }
    }

    /// The vehicles' trackers, in order.
    pub fn trackers(&self) -> impl Iterator<Item = TrackerId> + '_ {
        self.vehicles.iter().map(Vehicle::tracker)
    }

    /// The next `seconds` seconds of every vehicle, by message time then tracker.
    pub fn next_seconds(&mut self, seconds: u32) -> Vec<Message> {
        let mut messages = Vec::with_capacity(seconds as usize * self.vehicles.len());
        for _ in 0..seconds {
            messages.extend(self.vehicles.iter_mut().map(Vehicle::next_message));
        }
        messages
    }
}

#[cfg(test)]
mod tests;
