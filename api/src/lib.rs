//! The HTTP interfaces of Trackhouse on one listener: the main interface
//! `/v2` (account and dealer panel calls), and later `/dwh/v1` (raw data),
//! `/eco_fleet/v1` (fuel resampling) and `/ingest/v1` (device data intake),
//! plus `/healthz` and Prometheus `/metrics`.
//!
//! Entry points: [`AppState`] (the store, configuration, rate limiters and
//! metrics shared by all requests), [`app`] (the router) and [`Server`]
//! (bind, serve, shut down gracefully).
//!
//! Every call is declared the same way (see `route`): a path, the access it
//! needs (no credential, a user session, an API key or session with a sub-user
//! right and plan feature, a panel session with a permission), a parameter
//! type read leniently from JSON, form or query, and a handler. Every failure
//! becomes one [`ApiError`], the spec's error object.
//!
//! This crate owns no records (that is `platform`) and no telemetry storage.

mod answer;
mod error;
mod intake;
mod limits;
mod metrics;
mod openapi;
mod panel;
mod params;
mod raw_data;
mod resampling;
mod route;
mod server;
mod time;
mod v2;

pub use error::{ApiError, ApiResult, ParamIssue};
pub use limits::{Rate, RateLimitConfig};
pub use server::{ApiConfig, AppState, Server, app, openapi_document, openapi_text};
