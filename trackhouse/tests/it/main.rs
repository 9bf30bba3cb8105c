//! Integration tests of the `trackhouse` binary, run as the real executable.
//!
//! - `layering`: the dependency edges between workspace members point down.
//! - `admin`: every operator command prints its documented JSON object, and
//!   bad input prints the platform's error object with the right code.
//! - `serve`: `admin` changes take effect at once on a running server, which
//!   stops cleanly on SIGTERM.
//! - `demo`: every command the demo prints works when pasted into a shell,
//!   and a second start reuses the accounts of the first.

// Test helpers outside `#[test]` functions may fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod admin;
mod demo;
mod layering;
mod serve;
mod support;
