//! The `/v2` interface through a really started server: real axum, real
//! SQLite in a temporary directory, a fixed clock, real HTTP.

// Test helpers outside `#[test]` functions may fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod access;
mod api_keys;
mod bills;
mod clickhouse_current;
mod clickhouse_outage;
mod clickhouse_refusals;
mod clones;
mod conventions;
mod departments;
mod disk_full;
mod garages;
mod geocoder;
mod intake;
mod intake_cache;
mod intake_limits;
mod link_page;
mod links;
mod openapi;
mod panel;
mod panel_activation_codes;
mod panel_gateways;
mod panel_orders;
mod panel_subpaas;
mod panel_tariffs;
mod panel_user_upload;
mod panel_users;
mod plugins;
mod rate_limits;
mod raw_data;
mod raw_data_snapshots;
mod read_limits;
mod resampling;
mod retranslators;
mod security_groups;
mod server;
mod slow_clients;
mod subusers;
mod user_auth;
mod vehicle_batch;
mod vehicles;

pub(crate) use server::{Account, Answer, TestServer};
