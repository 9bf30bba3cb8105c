use std::fmt::Debug;
use std::sync::Mutex;

use chrono::{DateTime, TimeDelta, Utc};

/// A source of the current time, injected so tests can fix and advance it.
pub trait Clock: Send + Sync + Debug {
    /// The current instant.
    fn now(&self) -> DateTime<Utc>;
}

/// The operating system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that stands still until told to move; for tests.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
}

impl ManualClock {
    /// A clock reading `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        Self {
            now: Mutex::new(start),
        }
    }

    /// Moves the clock forward (or back, with a negative delta).
    pub fn advance(&self, by: TimeDelta) {
        let mut now = self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *now += by;
    }

    /// Sets the clock to `to`.
    pub fn set(&self, to: DateTime<Utc>) {
        *self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
