//! The HTTP interfaces of Trackhouse on one listener: the main interface
//! `/v2` (account and dealer panel calls), `/dwh/v1` (raw data), `/eco_fleet/v1`
//! (fuel resampling) and `/ingest/v1` (device data intake), plus `/healthz`,
//! Prometheus `/metrics`, the OpenAPI document (`/openapi.json`, `/docs`)
//! and the public geo link pages (`/links/`, see `links_page`).
//!
//! Entry points: [`AppState`] (the store, configuration, rate limiters and
//! metrics shared by all requests), [`app`] (the router), [`Server`] (bind,
//! serve, shut down gracefully) and [`openapi_document`].
//!
//! Every call is declared the same way (see `route`): a path, the access it
//! needs (no credential, a user session, an API key or session with a sub-user
//! right and plan feature, a panel session with a permission), a parameter
//! type read leniently from JSON, form or query, an answer type, its own error
//! codes, and a handler. The router and the OpenAPI document are both made
//! from that one list. Every failure becomes one [`ApiError`], the spec's
//! error object.
//!
//! This crate owns no records (that is `platform`) and no telemetry storage.

mod answer;
mod error;
mod intake;
mod limits;
mod links_page;
mod metrics;
mod openapi;
mod panel;
mod params;
mod raw_data;
mod reads;
mod resampling;
mod route;
mod server;
mod time;
mod v2;

pub use error::{ApiError, ApiResult, ParamIssue};
pub use limits::{DEFAULT_LINK_RATE, Rate, RateLimitConfig};
pub use server::{
    ApiConfig, AppState, DEFAULT_MAP_TILES_URL, Server, app, openapi_document, openapi_text,
};
