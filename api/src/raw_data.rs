//! `/dwh/v1/tracker/raw_data/read` and `get_inputs` (spec document 3,
//! clarifications 13-20): an API key or user session; sub-users within their scope.

use std::collections::{BTreeMap, BTreeSet};

use axum::body::Body;
use axum::http::{HeaderMap, header};
use futures::StreamExt;
use platform::UserAuth;
use query::columns::{inner_candidates, plan_columns, present_inner_columns};
use query::export::{Format, TimeFormat, export_stream};
use query::scan::{ScanRequest, scan};
use query::time_range::{SelectionParams, TimeContext, TimeError, parse_selection};
use schemas::columns::InnerKind;
use schemas::{ErrorCode, TelemetrySource, TrackerId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::{Media, MediaKind, Success, json_schema};
use crate::route::{Params, Route, User};
use crate::{ApiError, ApiResult, AppState};

/// Errors of both calls beyond the access's (spec document 3).
const TRACKER_ERRORS: [ErrorCode; 3] = [
    ErrorCode::NotFoundInDatabase,
    ErrorCode::EntityNotFound,
    ErrorCode::DeviceBlocked,
];

pub(crate) fn routes() -> Vec<Route> {
    vec![
        Route::with_headers("/dwh/v1/tracker/raw_data/read", User::any(), read)
            .doc(
                "Export a tracker's raw data",
                "The tracker's messages in a message-time range (and optionally a server-time \
                 range), as CSV (spec document 3, clarifications 13-16), Parquet \
                 (`format: parquet`, clarification 17) or NDJSON (`format: ndjson` or \
                 `Accept: application/x-ndjson`), streamed as read. `msg_time` comes first, then \
                 the columns in the order asked; `inputs.*`, `states.*`, `discrete_inputs.*` and \
                 `discrete_outputs.*` expand to the inner columns present in the range. Data older \
                 than the plan's store period is not returned.",
            )
            .errors(&TRACKER_ERRORS)
            .errors(&[ErrorCode::TimeSpanTooBig, ErrorCode::QueueUnavailable]),
        Route::new(
            "/dwh/v1/tracker/raw_data/get_inputs",
            User::any(),
            get_inputs,
        )
        .doc(
            "The inputs and states a tracker reports",
            "Names of the metering inputs and states the tracker has reported within its store \
             period, and the counts of discrete inputs and outputs; of inputs of one type only the \
             highest index is listed (`lls_level_4` implies 1 to 3). No device data.",
        )
        .errors(&TRACKER_ERRORS),
    ]
}

#[derive(Debug, Deserialize, ToSchema)]
struct ReadParams {
    /// The tracker.
    #[schema(example = 1)]
    tracker_id: i64,
    /// Start of message time (inclusive), ISO 8601 with an offset; with `iso_datetime: false`,
    /// `YYYY-MM-DD HH:MM:SS` in the account's zone. Excludes `interval`.
    #[schema(format = DateTime, example = "2024-06-01T00:00:00Z")]
    from: Option<String>,
    /// End of message time (exclusive), after `from`.
    #[schema(format = DateTime, example = "2024-06-02T00:00:00Z")]
    to: Option<String>,
    /// Instead of `from` and `to`: an ISO 8601 interval (`<start>/<end>`, `<start>/<duration>`,
    /// `<duration>/<end>`, or a duration ending now).
    #[schema(example = "2024-06-01T00:00:00Z/P1D")]
    interval: Option<String>,
    /// The columns after `msg_time`: simple columns (`lat`, `speed`, `server_time`…), inner
    /// values (`inputs.<name>`, `states.<name>`, `discrete_inputs.<n>`, `flags.location_valid`),
    /// whole complex columns as JSON (`inputs`), and expansions (`inputs.*`).
    #[serde(default)]
    #[schema(required = true, min_items = 1, example = json!(["lat", "lng", "speed", "inputs.*"]))]
    columns: Vec<String>,
    /// Also filter by server time: `<from>/<to>`, `{"from","to"}` or `{"interval"}`.
    #[schema(schema_with = server_time_filter_schema)]
    server_time_filter: Option<serde_json::Value>,
    /// `false`: times written `YYYY-MM-DD HH:MM:SS` and read that way in the account's zone.
    #[schema(default = true)]
    iso_datetime: Option<bool>,
    /// An IANA zone for the output times (the account's zone by default).
    #[schema(example = "Asia/Almaty")]
    time_zone: Option<String>,
    /// `csv` (default), `parquet` or `ndjson`.
    #[schema(schema_with = format_schema)]
    format: Option<String>,
}

impl Params for ReadParams {}

fn format_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    json_schema(serde_json::json!({
        "description": "`csv` (the default), `parquet` or `ndjson`.",
        "type": ["string", "null"],
        "enum": ["csv", "parquet", "ndjson", null]
    }))
}

fn server_time_filter_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    json_schema(serde_json::json!({
        "description": "A server-time range: `<from>/<to>` (either an ISO 8601 interval), \
            `{\"from\": …, \"to\": …}`, or `{\"interval\": …}`.",
        "oneOf": [
            { "type": "string", "examples": ["2024-06-01T00:00:00Z/2024-06-02T00:00:00Z"] },
            { "type": "object", "required": ["from", "to"],
              "properties": { "from": { "type": "string" }, "to": { "type": "string" } } },
            { "type": "object", "required": ["interval"],
              "properties": { "interval": { "type": "string" } } },
            { "type": "null" }
        ]
    }))
}

/// The raw data export's body: CSV, Parquet or NDJSON.
#[derive(Debug)]
struct Export;

impl MediaKind for Export {
    const DESCRIPTION: &'static str = "The rows, streamed: CSV (a header row of quoted column \
        names; text and times quoted, null `\\N`), a Parquet file, or NDJSON (one object per row).";
    fn content() -> serde_json::Value {
        serde_json::json!({
            "text/csv": { "schema": { "type": "string" } },
            "application/vnd.apache.parquet": { "schema": { "type": "string", "contentEncoding": "binary" } },
            "application/x-ndjson": { "schema": { "type": "string" } }
        })
    }
}

impl From<TimeError> for ApiError {
    fn from(err: TimeError) -> Self {
        if err.code == ErrorCode::InvalidParameters {
            ApiError::invalid(err.parameter, err.message)
        } else {
            ApiError::with_description(
                err.code,
                format!(
                    "{}: `{}` {}",
                    err.code.meaning(),
                    err.parameter,
                    err.message
                ),
            )
        }
    }
}

impl From<query::Error> for ApiError {
    fn from(err: query::Error) -> Self {
        match err {
            query::Error::UnknownColumn { column } => {
                ApiError::invalid("columns", format!("has an unknown column `{column}`"))
            }
            err @ query::Error::TooManyColumns { .. } => {
                ApiError::invalid("columns", format!("{err} (--raw-data-max-columns)"))
            }
            other => ApiError::from_error(other),
        }
    }
}

/// Cells (rows × scanned columns) of one batch of a read: a wide read gets
/// shorter batches, so a batch and its encoding stay within a few MiB.
const BATCH_CELLS: usize = 256 * 1024;

/// `format: "parquet"` (clarification 17) or `"ndjson"`; otherwise `Accept:
/// application/x-ndjson` asks for NDJSON; CSV is the default.
fn output_format(format: Option<&str>, headers: &HeaderMap) -> ApiResult<Format> {
    match format.map(str::trim) {
        Some("parquet") => Ok(Format::Parquet),
        Some("ndjson") => Ok(Format::NdJson),
        Some("csv") => Ok(Format::Csv),
        Some(other) => Err(ApiError::invalid(
            "format",
            format!("{other:?} is not one of csv, parquet, ndjson"),
        )),
        None => {
            let accept = headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            Ok(if accept.contains("application/x-ndjson") {
                Format::NdJson
            } else {
                Format::Csv
            })
        }
    }
}

async fn read(
    state: AppState,
    caller: UserAuth,
    p: ReadParams,
    headers: HeaderMap,
) -> ApiResult<Media<Export>> {
    let tracker = state
        .store()
        .tracker_for(&caller, TrackerId(p.tracker_id))
        .await?;
    if p.columns.is_empty() {
        return Err(ApiError::invalid(
            "columns",
            "is required and must name at least one column",
        ));
    }
    let output = output_format(p.format.as_deref(), &headers)?;
    let account_zone =
        platform::check_time_zone("time_zone", &caller.time_zone).unwrap_or(chrono_tz::UTC);
    let output_zone = match &p.time_zone {
        Some(zone) => platform::check_time_zone("time_zone", zone)?,
        None => account_zone,
    };
    let iso = p.iso_datetime.unwrap_or(true);
    let now = state.store().clock().now();
    let ctx = TimeContext {
        zone: account_zone,
        now_ms: now.timestamp_millis(),
        iso,
        max_span_ms: Some(i64::from(state.inner.config.raw_data_max_span_days) * 86_400_000),
    };
    let selection = parse_selection(
        &SelectionParams {
            from: p.from,
            to: p.to,
            interval: p.interval,
            server_time_filter: p.server_time_filter,
        },
        &ctx,
    )?;
    // Data older than the plan's store period is not returned (clarification 19).
    let cutoff = tracker.store_period.cutoff(now).timestamp_millis();
    let message = (
        selection.message.from_ms.max(cutoff),
        selection.message.to_ms,
    );
    let server = selection.server.map(|r| (r.from_ms, r.to_ms));
    let snapshot = state.inner.ingest.snapshot();
    let present = present_inner_columns(
        &snapshot,
        tracker.id.0,
        message,
        server,
        state.inner.query_context.clone(),
    )
    .await?;
    let plan = plan_columns(
        &p.columns,
        &present,
        state.inner.config.raw_data_max_columns,
    )?;
    let slot = state.inner.reads.take(caller.user_id.0)?;
    let width = plan.scan_columns.len() + 3;
    let request = ScanRequest {
        tracker: tracker.id.0,
        message: (message.0, message.1.max(message.0)),
        server,
        columns: plan.scan_columns.clone(),
        batch_size: (BATCH_CELLS / width).clamp(64, 8192),
        with_server_time: true,
        string_views: false,
    };
    let batches = scan(snapshot, request, state.inner.query_context.clone())?;
    let chunks = export_stream(
        plan,
        TimeFormat {
            zone: output_zone,
            iso,
        },
        output,
        batches,
    )?;
    // The slot is held until the last chunk is sent (or the client goes away).
    let chunks = chunks.map(move |chunk| {
        let _held = &slot;
        chunk
    });
    Ok(Media::new((
        [(header::CONTENT_TYPE, output.content_type())],
        Body::from_stream(chunks),
    )))
}

#[derive(Debug, Deserialize, ToSchema)]
struct InputsParams {
    /// The tracker.
    #[schema(example = 1)]
    tracker_id: i64,
}

/// What a tracker reports.
#[derive(Debug, Serialize, ToSchema)]
struct Inputs {
    /// How many discrete inputs (the highest number seen).
    discrete_inputs: u32,
    /// How many discrete outputs (the highest number seen).
    discrete_outputs: u32,
    /// Metering inputs, the highest index of each type, sorted.
    inputs: Vec<String>,
    /// State names, sorted.
    states: Vec<String>,
}

impl Params for InputsParams {}

/// Inputs and states the tracker has reported within its store period, from
/// the catalog and the memtable (no data scan); indexed inputs collapsed to
/// their highest index (clarification 18).
async fn get_inputs(
    state: AppState,
    caller: UserAuth,
    p: InputsParams,
) -> ApiResult<Success<Inputs>> {
    let tracker = state
        .store()
        .tracker_for(&caller, TrackerId(p.tracker_id))
        .await?;
    let cutoff = tracker
        .store_period
        .cutoff(state.store().clock().now())
        .timestamp_millis();
    let snapshot = state.inner.ingest.snapshot();
    let present = inner_candidates(&snapshot, tracker.id.0, (cutoff, i64::MAX), None)
        .await?
        .0;
    let mut discrete = BTreeMap::from([
        (InnerKind::DiscreteInputs, 0u32),
        (InnerKind::DiscreteOutputs, 0u32),
    ]);
    let mut inputs: BTreeMap<String, (u64, String)> = BTreeMap::new();
    let mut states = BTreeSet::new();
    for column in &present {
        let Some((kind, name)) = InnerKind::split(column) else {
            continue;
        };
        match kind {
            InnerKind::DiscreteInputs | InnerKind::DiscreteOutputs => {
                if let (Ok(n), Some(count)) = (name.parse::<u32>(), discrete.get_mut(&kind)) {
                    *count = (*count).max(n);
                }
            }
            InnerKind::Inputs => {
                let (stem, index) = indexed(name);
                let entry = inputs
                    .entry(stem.to_owned())
                    .or_insert((index, name.to_owned()));
                if index > entry.0 {
                    *entry = (index, name.to_owned());
                }
            }
            InnerKind::States => {
                states.insert(name.to_owned());
            }
        }
    }
    let mut inputs: Vec<String> = inputs.into_values().map(|(_, name)| name).collect();
    inputs.sort();
    Ok(Success(Inputs {
        discrete_inputs: discrete
            .get(&InnerKind::DiscreteInputs)
            .copied()
            .unwrap_or(0),
        discrete_outputs: discrete
            .get(&InnerKind::DiscreteOutputs)
            .copied()
            .unwrap_or(0),
        inputs,
        states: states.into_iter().collect(),
    }))
}

/// `lls_level_4` → (`lls_level`, 4); a name without a numeric suffix is its own stem.
fn indexed(name: &str) -> (&str, u64) {
    match name.rsplit_once('_') {
        Some((stem, digits))
            if !stem.is_empty()
                && !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit()) =>
        {
            (stem, digits.parse().unwrap_or(0))
        }
        _ => (name, 0),
    }
}
