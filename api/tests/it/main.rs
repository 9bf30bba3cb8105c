//! The `/v2` interface through a really started server: real axum, real
//! SQLite in a temporary directory, a fixed clock, real HTTP.

mod access;
mod api_keys;
mod conventions;
mod panel;
mod rate_limits;
mod server;
mod user_auth;

pub(crate) use server::{Answer, TestServer};
