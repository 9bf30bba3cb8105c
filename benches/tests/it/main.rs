//! Integration tests of the benches crate.

// Test helpers outside `#[test]` functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod layout;
