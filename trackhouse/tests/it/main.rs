//! Integration tests of the `trackhouse` binary, run as the real executable.
//!
//! - `layering`: the dependency edges between workspace members point down.
//! - `admin`: every operator command prints its documented JSON object, and
//!   bad input prints the platform's error object with the right code.
//! - `serve`: `admin` changes take effect at once on a running server, which
//!   stops cleanly on SIGTERM.
//! - `demo`: every command the demo prints works when pasted into a shell,
//!   its telemetry reaches the data directory, and a second start reuses the
//!   accounts of the first.
//! - `credentials`: ingest tokens listed, revoked and held to one user's
//!   trackers; a new password ends sessions; deactivation refuses a user and
//!   the sub-users of a master.
//! - `data_dirs`: any data directory (relative, absolute, `..`, spaces,
//!   non-ASCII, a symlink) serves reads after a flush and a compaction.
//! - `memory`: a message at the limit of inner columns among 200,000 keeps
//!   the server's peak memory bounded at intake and on replay.
//! - `import`: NDJSON files reach a running server; rejected lines are named
//!   by `file:line` and the exit status says whether everything was stored.

// Test helpers outside `#[test]` functions may fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod admin;
mod credentials;
mod data_dirs;
mod demo;
mod durability;
mod import;
mod layering;
mod memory;
mod serve;
mod support;
