//! Trackhouse's shared vocabulary, at the bottom of the dependency graph.
//!
//! - [`ErrorCode`]: the platform's one table of numeric error codes, their
//!   meanings and HTTP statuses (spec document 1), and [`HasCode`], which every
//!   crate's `Error` implements so that `api` can map any failure to it.
//! - Id newtypes ([`DealerId`], [`UserId`], [`TrackerId`], ...), so that a user
//!   id is never passed where a tracker id is expected.
//! - [`Clock`]: the injected source of "now", fixed in tests.
//!
//! - [`Message`]: one telemetry message, and [`columns`]: how messages are laid
//!   out as Arrow columns (every inner value of a complex column is a column
//!   of its own).
//! - [`TelemetrySource`]: the contract through which `query` reads the files
//!   and not-yet-flushed batches that `ingest` writes (siblings never depend
//!   on each other; `api` wires them).
//!
//! It does no I/O.

mod clock;
pub mod columns;
mod error_code;
mod ids;
mod message;
mod telemetry;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error_code::{ErrorCode, HasCode};
pub use ids::{
    DealerId, IngestTokenId, PlaceId, PlanId, SecurityGroupId, SensorId, TrackerId, UserId, ZoneId,
};
pub use message::{FLAG_BITS, GpsFixType, Message, MnType, Name, StateValue, format_number};
pub use telemetry::{
    ClickHouseTable, FileEntry, InnerLists, TelemetrySnapshot, TelemetrySource, TrackerSpan,
};
