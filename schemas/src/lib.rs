//! Trackhouse's shared vocabulary, at the bottom of the dependency graph.
//!
//! - [`ErrorCode`]: the platform's one table of numeric error codes, their
//!   meanings and HTTP statuses (spec document 1), and [`HasCode`], which every
//!   crate's `Error` implements so that `api` can map any failure to it.
//! - Id newtypes ([`DealerId`], [`UserId`], [`TrackerId`], ...), so that a user
//!   id is never passed where a tracker id is expected.
//! - [`Clock`]: the injected source of "now", fixed in tests.
//!
//! Later this crate also owns the message model, the Arrow schemas of stored
//! telemetry, and the contract traits through which `query` reads what
//! `ingest` has not flushed yet (siblings never depend on each other).
//!
//! It does no I/O.

mod clock;
mod error_code;
mod ids;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error_code::{ErrorCode, HasCode};
pub use ids::{DealerId, IngestTokenId, PlanId, SecurityGroupId, SensorId, TrackerId, UserId};
