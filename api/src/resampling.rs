//! `POST /eco_fleet/v1/trackers/{tracker_id}/resampling` (spec document 3,
//! clarifications 21-28): a tracker's fuel, speed, movement and position
//! series on a uniform minute grid, as CSV.
//!
//! The handler checks the request, reads the series the requested data types
//! need through [`query::series`] and hands them to the [`resample`] kernels
//! on a blocking thread:
//!
//! ```text
//! params ─► Plan (grid, rules, sensors) ─► read_series ─► calibrate / movement
//!        ─► resample per column ─► CSV
//! ```
//!
//! Decisions (docs/decisions.md): the grid is the multiples of `step_size`
//! minutes since the Unix epoch inside `[from, to)` of the interval; only
//! readings inside the interval are analysed; the grid is uniform in real
//! time, so `Time` skips the wall-clock hour a spring-forward removes and
//! shows the hour a fall-back repeats twice, each row a real instant.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow::array::{Array, BooleanArray, Float64Array, StringArray, StringViewArray, UInt8Array};
use arrow::buffer::BooleanBuffer;
use axum::http::header;
use chrono::TimeZone as _;
use platform::{FuelSensor, Tracker, UserAuth};
use query::series::{Readings, read_series};
use query::time_range::{
    SelectionParams, TimeContext, parse_duration, parse_selection, range_ending_now,
};
use resample::{DeltaMs, Grid, Method, Rule, Series};
use schemas::{ErrorCode, TelemetrySource, TrackerId};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::answer::{Media, MediaKind, json_schema};
use crate::route::{Params, Route, User};

mod gather;

use crate::{ApiError, ApiResult, AppState};
use gather::Scratch;
pub(crate) use gather::ScratchPool;

pub(crate) fn routes() -> Vec<Route> {
    vec![
        Route::new(
            "/eco_fleet/v1/trackers/{tracker_id}/resampling",
            User::any(),
            resampling,
        )
        .doc(
            "Resample fuel, speed, movement and position",
            "The tracker's fuel level (one column per calibrated fuel sensor, litres), speed \
             (km/h), movement (0 parking, 1 moving, 2 idle), longitude and latitude on a uniform \
             grid of `step_size` minutes over `interval` (the last week by default), each filled \
             by its `resampling_method` (spec document 3, clarifications 21-28). CSV; `Time` in \
             the tracker's zone.",
        )
        .errors(&[
            ErrorCode::EntityNotFound,
            ErrorCode::DeviceBlocked,
            ErrorCode::TimeSpanTooBig,
            ErrorCode::MissingCalibration,
            ErrorCode::QueueUnavailable,
        ]),
    ]
}

#[derive(Debug, Deserialize, ToSchema)]
struct ResamplingParams {
    /// The tracker.
    #[schema(example = 1)]
    tracker_id: i64,
    /// The analysed period, an ISO 8601 interval; the last week (`P7D`) ending now by default.
    #[schema(example = "2024-06-01T00:00:00Z/2024-06-08T00:00:00Z")]
    interval: Option<String>,
    /// The grid step, minutes.
    #[schema(required = true, schema_with = step_size_schema)]
    step_size: Option<Value>,
    /// One rule per data type.
    #[schema(required = true, schema_with = resampling_props_schema)]
    resampling_props: Option<Value>,
}

impl Params for ResamplingParams {}

fn step_size_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    json_schema(serde_json::json!({
        "type": "integer",
        "description": "The grid step, whole minutes.",
        "minimum": 1,
        "maximum": MAX_STEP_MINUTES,
        "examples": [15]
    }))
}

fn resampling_props_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    json_schema(serde_json::json!({
        "type": "array",
        "description": "One rule per data type; the CSV has the columns of the types given.",
        "minItems": 1,
        "maxItems": 5,
        "items": {
            "type": "object",
            "required": ["data_type", "resampling_method"],
            "properties": {
                "data_type": { "type": "string", "enum": ["FUEL", "SPEED", "MOVEMENT", "LNG", "LAT"] },
                "resampling_method": {
                    "type": "string",
                    "enum": ["FOLLOWING", "PREVIOUS", "MEDIAN_IN_WINDOW", "AVERAGE_IN_WINDOW", "AVERAGE"]
                },
                "delta": {
                    "type": ["integer", "null"], "minimum": 0, "maximum": MAX_DELTA_SECONDS,
                    "description": "Seconds; required by MEDIAN_IN_WINDOW and AVERAGE_IN_WINDOW."
                },
                "fixed_value": {
                    "type": ["number", "null"],
                    "description": "The value where the window holds no reading."
                }
            }
        }
    }))
}

/// The resampling's CSV.
#[derive(Debug)]
struct ResampledCsv;

impl MediaKind for ResampledCsv {
    const DESCRIPTION: &'static str = "CSV: `Time`, then a column per fuel sensor, `SPEED`, \
        `MOVEMENT`, `LNG`, `LAT`, as the rules ask; empty where no value.";
    fn content() -> Value {
        serde_json::json!({ "text/csv": { "schema": { "type": "string" } } })
    }
}

/// The data types of `resampling_props`, in the order of the CSV columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum DataType {
    Fuel,
    Speed,
    Movement,
    Lng,
    Lat,
}

impl DataType {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "FUEL" => Self::Fuel,
            "SPEED" => Self::Speed,
            "MOVEMENT" => Self::Movement,
            "LNG" => Self::Lng,
            "LAT" => Self::Lat,
            _ => return None,
        })
    }

    const fn column(self) -> &'static str {
        match self {
            Self::Fuel => "FUEL",
            Self::Speed => "SPEED",
            Self::Movement => "MOVEMENT",
            Self::Lng => "LNG",
            Self::Lat => "LAT",
        }
    }
}

/// Longest step: a year of minutes.
const MAX_STEP_MINUTES: i64 = 366 * 24 * 60;
/// Longest delta: a year of seconds.
const MAX_DELTA_SECONDS: i64 = 366 * 86_400;
/// One minute in ms.
const MINUTE_MS: i64 = 60_000;

fn parse_step(value: Option<&Value>) -> ApiResult<i64> {
    let value = value.ok_or_else(|| ApiError::invalid("step_size", "is required"))?;
    let step = match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    }
    .ok_or_else(|| {
        ApiError::invalid(
            "step_size",
            format!("must be a whole number of minutes, got {value}"),
        )
    })?;
    if !(1..=MAX_STEP_MINUTES).contains(&step) {
        return Err(ApiError::invalid(
            "step_size",
            format!("must be from 1 to {MAX_STEP_MINUTES} minutes, got {step}"),
        ));
    }
    Ok(step)
}

/// Parses `resampling_props`: one entry per data type, each rule checked.
fn parse_props(value: Option<&Value>) -> ApiResult<Vec<(DataType, Rule)>> {
    let entries = match value {
        Some(Value::Array(entries)) if !entries.is_empty() => entries,
        Some(Value::Array(_)) | None => {
            return Err(ApiError::invalid(
                "resampling_props",
                "is required and must hold at least one entry",
            ));
        }
        Some(other) => {
            return Err(ApiError::invalid(
                "resampling_props",
                format!("must be an array of objects, got {other}"),
            ));
        }
    };
    let mut props: Vec<(DataType, Rule)> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let field = |member: &str| format!("resampling_props[{i}].{member}");
        let Value::Object(entry) = entry else {
            return Err(ApiError::invalid(
                format!("resampling_props[{i}]"),
                "must be an object with data_type, resampling_method, delta and fixed_value",
            ));
        };
        if let Some(unknown) = entry.keys().find(|k| {
            !matches!(
                k.as_str(),
                "data_type" | "resampling_method" | "delta" | "fixed_value"
            )
        }) {
            return Err(ApiError::invalid(
                field(unknown),
                "is not a member of a resampling rule",
            ));
        }
        let text = |member: &str| -> ApiResult<&str> {
            match entry.get(member) {
                Some(Value::String(s)) => Ok(s.as_str()),
                None | Some(Value::Null) => Err(ApiError::invalid(field(member), "is required")),
                Some(other) => Err(ApiError::invalid(
                    field(member),
                    format!("must be a string, got {other}"),
                )),
            }
        };
        let type_name = text("data_type")?;
        let data_type = DataType::parse(type_name).ok_or_else(|| {
            ApiError::invalid(
                field("data_type"),
                format!("must be one of FUEL, SPEED, MOVEMENT, LNG, LAT, got {type_name:?}"),
            )
        })?;
        if props.iter().any(|(t, _)| *t == data_type) {
            return Err(ApiError::invalid(
                field("data_type"),
                format!("{type_name} is given twice; one entry per data type"),
            ));
        }
        let delta = match entry.get("delta") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => match n.as_i64() {
                Some(d) if (0..=MAX_DELTA_SECONDS).contains(&d) => Some(
                    DeltaMs::try_from_secs(d)
                        .map_err(|e| ApiError::invalid(field("delta"), e.to_string()))?,
                ),
                Some(d) if d < 0 => {
                    return Err(ApiError::invalid(
                        field("delta"),
                        format!("must not be negative, got {d}"),
                    ));
                }
                _ => {
                    return Err(ApiError::invalid(
                        field("delta"),
                        format!("must be whole seconds from 0 to {MAX_DELTA_SECONDS}, got {n}"),
                    ));
                }
            },
            Some(other) => {
                return Err(ApiError::invalid(
                    field("delta"),
                    format!("must be whole seconds or null, got {other}"),
                ));
            }
        };
        let fixed_value = match entry.get("fixed_value") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => n.as_f64().filter(|v| v.is_finite()),
            Some(other) => {
                return Err(ApiError::invalid(
                    field("fixed_value"),
                    format!("must be a number or null, got {other}"),
                ));
            }
        };
        let method_name = text("resampling_method")?;
        let window_delta = || {
            delta.ok_or_else(|| {
                ApiError::invalid(
                    field("delta"),
                    format!("is required by {method_name}: the window is [T-delta, T+delta]"),
                )
            })
        };
        let method = match method_name {
            "FOLLOWING" => Method::Following { delta },
            "PREVIOUS" => Method::Previous { delta },
            "AVERAGE" => Method::Average { delta },
            "MEDIAN_IN_WINDOW" => Method::MedianInWindow {
                delta: window_delta()?,
            },
            "AVERAGE_IN_WINDOW" => Method::AverageInWindow {
                delta: window_delta()?,
            },
            other => {
                return Err(ApiError::invalid(
                    field("resampling_method"),
                    format!(
                        "must be one of FOLLOWING, PREVIOUS, MEDIAN_IN_WINDOW, \
                         AVERAGE_IN_WINDOW, AVERAGE, got {other:?}"
                    ),
                ));
            }
        };
        props.push((
            data_type,
            Rule {
                method,
                fixed_value,
            },
        ));
    }
    props.sort_by_key(|(t, _)| *t);
    Ok(props)
}

async fn resampling(
    state: AppState,
    caller: UserAuth,
    p: ResamplingParams,
) -> ApiResult<Media<ResampledCsv>> {
    // Document 3 answers 204 for any tracker id that is not the caller's.
    let tracker = match state
        .store()
        .tracker_for(&caller, TrackerId(p.tracker_id))
        .await
    {
        Err(platform::Error::NotFound { .. }) => {
            return Err(ApiError::with_description(
                ErrorCode::EntityNotFound,
                format!(
                    "{}: tracker {} is not one of yours",
                    ErrorCode::EntityNotFound.meaning(),
                    p.tracker_id
                ),
            ));
        }
        other => other?,
    };
    let step_minutes = parse_step(p.step_size.as_ref())?;
    let props = parse_props(p.resampling_props.as_ref())?;
    let _slot = state.inner.reads.take(caller.user_id.0)?;

    let zone = platform::check_time_zone("time_zone", &tracker.time_zone).unwrap_or(chrono_tz::UTC);
    let now = state.store().clock().now();
    let ctx = TimeContext {
        zone,
        now_ms: now.timestamp_millis(),
        iso: true,
        max_span_ms: Some(i64::from(state.inner.config.resampling_max_span_days) * 86_400_000),
    };
    let range = match p.interval {
        Some(interval) => {
            let selection = parse_selection(
                &SelectionParams {
                    from: None,
                    to: None,
                    interval: Some(interval),
                    server_time_filter: None,
                },
                &ctx,
            )?;
            selection.message
        }
        // The last 7 days ending now (clarification 22).
        None => range_ending_now(&parse_duration("P7D", "interval")?, "interval", &ctx)?,
    };
    let grid = grid_of(range.from_ms, range.to_ms, step_minutes)?;

    let sensors = if props.iter().any(|(t, _)| *t == DataType::Fuel) {
        let sensors = state.store().fuel_sensors(tracker.id).await?;
        if let Some(sensor) = sensors.iter().find(|s| s.calibration.is_none()) {
            return Err(ApiError::with_description(
                ErrorCode::MissingCalibration,
                format!(
                    "{}: fuel sensor {:?} has no calibration table",
                    ErrorCode::MissingCalibration.meaning(),
                    sensor.name
                ),
            ));
        }
        sensors
    } else {
        Vec::new()
    };
    let columns = columns_needed(&props, &sensors, &tracker);
    // Readings older than the store period are not analysed (clarification 19).
    let cutoff = tracker.store_period.cutoff(now).timestamp_millis();
    let readings = read_series(
        state.inner.ingest.snapshot(),
        tracker.id.0,
        (range.from_ms.max(cutoff), range.to_ms),
        columns,
        state.inner.series_context.clone(),
    )
    .await?;
    let csv = tokio::task::spawn_blocking(move || {
        let pool = &state.inner.resampling_scratch;
        let mut scratch = pool.take();
        let plan = (props.as_slice(), sensors.as_slice());
        let csv = compute_csv(&readings, &grid, plan, &tracker, zone, &mut scratch);
        pool.give_back(scratch);
        csv
    })
    .await
    .map_err(|e| internal(format!("resampling task: {e}")))??;
    Ok(Media::new((
        [(header::CONTENT_TYPE, "text/csv; charset=utf-8")],
        csv,
    )))
}

/// A server fault: logged with its chain, answered as code 6.
fn internal(message: String) -> ApiError {
    ApiError::from_error(query::Error::Internal(message))
}

/// The grid: multiples of the step since the epoch inside `[from, to)`.
fn grid_of(from_ms: i64, to_ms: i64, step_minutes: i64) -> ApiResult<Grid> {
    let step_ms = step_minutes * MINUTE_MS;
    let first = from_ms.div_euclid(step_ms) * step_ms;
    let first = if first < from_ms {
        first + step_ms
    } else {
        first
    };
    let len = if first < to_ms {
        usize::try_from((to_ms - 1 - first) / step_ms + 1).unwrap_or(0)
    } else {
        0
    };
    Grid::try_new(first, step_ms, len).map_err(|e| ApiError::invalid("step_size", e.to_string()))
}

/// One output column to compute.
#[derive(Debug, Clone, Copy)]
enum Job<'a> {
    /// A fuel sensor: its input through its calibration table, in litres.
    Fuel(&'a FuelSensor, &'a [(f64, f64)]),
    /// MOVEMENT codes from speed and the ignition source.
    Movement,
    /// A stored column as it is (`speed`, `lng`, `lat`).
    Plain(&'static str),
}

impl Job<'_> {
    /// The storage columns the job reads.
    fn columns(&self, tracker: &Tracker) -> Vec<String> {
        match self {
            Self::Fuel(sensor, _) => vec![fuel_input(sensor)],
            Self::Movement => vec!["speed".into(), tracker.ignition_source.clone()],
            Self::Plain(column) => vec![(*column).to_owned()],
        }
    }
}

/// The storage column of a fuel sensor's raw input.
fn fuel_input(sensor: &FuelSensor) -> String {
    format!("inputs.{}", sensor.input_name)
}

/// The CSV header and, for each column after `Time`, the job computing it
/// and its rule (clarification 23's order: sensors, SPEED, MOVEMENT, LNG, LAT).
fn plan_jobs<'a>(
    props: &[(DataType, Rule)],
    sensors: &'a [FuelSensor],
) -> (Vec<String>, Vec<(Job<'a>, Rule)>) {
    let mut header: Vec<String> = vec!["Time".into()];
    let mut jobs = Vec::new();
    for (data_type, rule) in props {
        match data_type {
            DataType::Fuel => {
                for sensor in sensors {
                    if let Some(table) = &sensor.calibration {
                        jobs.push((Job::Fuel(sensor, &table.0), *rule));
                        header.push(sensor.name.clone());
                    }
                }
            }
            DataType::Movement => {
                jobs.push((Job::Movement, *rule));
                header.push(data_type.column().into());
            }
            DataType::Speed | DataType::Lng | DataType::Lat => {
                let column = match data_type {
                    DataType::Speed => "speed",
                    DataType::Lng => "lng",
                    _ => "lat",
                };
                jobs.push((Job::Plain(column), *rule));
                header.push(data_type.column().into());
            }
        }
    }
    (header, jobs)
}

/// Storage columns the requested data types read: those of their jobs, once each.
fn columns_needed(
    props: &[(DataType, Rule)],
    sensors: &[FuelSensor],
    tracker: &Tracker,
) -> Vec<String> {
    let mut columns: Vec<String> = Vec::new();
    for (job, _) in plan_jobs(props, sensors).1 {
        for column in job.columns(tracker) {
            if !columns.contains(&column) {
                columns.push(column);
            }
        }
    }
    columns
}

/// Resamples every requested column and writes the CSV (clarification 23).
///
/// Two threads share the work in three steps, each taking the next piece
/// still to do so neither waits on the other's costly one: the columns'
/// series are gathered (the times once, shared; each column into its own
/// [`gather::Lane`]); then the kernels run, each column whose rows do not depend on
/// one another split into two halves of the grid; then each thread writes
/// half the CSV rows.
fn compute_csv(
    readings: &Readings,
    grid: &Grid,
    (props, sensors): (&[(DataType, Rule)], &[FuelSensor]),
    tracker: &Tracker,
    zone: chrono_tz::Tz,
    scratch: &mut Scratch,
) -> ApiResult<Vec<u8>> {
    let (header, jobs) = plan_jobs(props, sensors);
    let (times, lanes) = scratch.gather_times(readings, jobs.len())?;

    let pending = Mutex::new(lanes.iter_mut().zip(&jobs).enumerate());
    let gather = || -> ApiResult<Vec<(usize, Series<'_>)>> {
        let mut done = Vec::new();
        loop {
            let next = pending.lock().ok().and_then(|mut pending| pending.next());
            let Some((index, (lane, (job, _)))) = next else {
                return Ok(done);
            };
            done.push((index, lane.gather(times, readings, *job, tracker)?));
        }
    };
    let mut series = on_two_threads(gather)?;
    series.sort_unstable_by_key(|(index, _)| *index);

    // A running window sum depends on where it started, so only methods
    // whose every row stands alone are split (the bytes never depend on it).
    let middle = grid.len() / 2;
    let pieces: Vec<(usize, std::ops::Range<usize>)> = (0..jobs.len())
        .flat_map(|index| {
            let split = !matches!(jobs[index].1.method, Method::AverageInWindow { .. });
            if split && middle > 0 {
                vec![(index, 0..middle), (index, middle..grid.len())]
            } else {
                vec![(index, 0..grid.len())]
            }
        })
        .collect();
    let next = AtomicUsize::new(0);
    let kernels = || -> ApiResult<Vec<(usize, Float64Array)>> {
        let mut done = Vec::new();
        loop {
            let piece = next.fetch_add(1, Ordering::Relaxed);
            let Some((index, rows)) = pieces.get(piece) else {
                return Ok(done);
            };
            let part = Grid::try_new(
                grid.start_ms() + rows.start as i64 * grid.step_ms(),
                grid.step_ms(),
                rows.len(),
            )
            .map_err(|e| internal(format!("part of the grid: {e}")))?;
            let (_, column) = &series[*index];
            done.push((piece, resample::resample(column, &part, &jobs[*index].1)));
        }
    };
    let mut parts = on_two_threads(kernels)?;
    parts.sort_unstable_by_key(|(piece, _)| *piece);
    let mut outputs: Vec<Float64Array> = Vec::with_capacity(jobs.len());
    for index in 0..jobs.len() {
        let column: Vec<&dyn Array> = parts
            .iter()
            .filter(|(piece, _)| pieces[*piece].0 == index)
            .map(|(_, part)| part as &dyn Array)
            .collect();
        let joined = match column.as_slice() {
            [one] => one.as_any().downcast_ref::<Float64Array>().cloned(),
            many => arrow::compute::concat(many)
                .ok()
                .and_then(|a| a.as_any().downcast_ref::<Float64Array>().cloned()),
        };
        outputs.push(joined.ok_or_else(|| internal("joining a column's halves".into()))?);
    }

    let mut out = header_line(&header);
    let rows = |range: std::ops::Range<usize>| {
        let mut part = Vec::with_capacity(range.len() * (17 + 10 * outputs.len()));
        write_rows(&mut part, &outputs, grid, range, zone);
        part
    };
    let (head, tail) = std::thread::scope(|scope| {
        let tail = scope.spawn(|| rows(middle..grid.len()));
        (rows(0..middle), tail.join())
    });
    out.reserve(head.len() + tail.as_ref().map_or(0, Vec::len));
    out.extend_from_slice(&head);
    out.extend_from_slice(&joined(tail.map(Ok))?);
    Ok(out)
}

/// Runs `work` on this thread and one more, and puts their results together.
fn on_two_threads<T: Send>(work: impl Fn() -> ApiResult<Vec<T>> + Sync) -> ApiResult<Vec<T>> {
    std::thread::scope(|scope| {
        let other = scope.spawn(&work);
        let mut done = work()?;
        done.extend(joined(other.join())?);
        Ok(done)
    })
}

/// A scoped thread's result; its panic as a server fault.
fn joined<T>(result: std::thread::Result<ApiResult<T>>) -> ApiResult<T> {
    result.map_err(|_| internal("a resampling thread panicked".into()))?
}

/// Ignition readings as booleans: discrete inputs and numbers non-zero,
/// states `true`/`false` or a number; anything else unknown (off).
fn ignition_of(column: &dyn Array) -> BooleanArray {
    // Unknown text counts as off, like a null.
    let state_on = |text: &str| match text.as_bytes() {
        b"true" => true,
        b"false" | b"0" => false,
        _ => text.trim().parse::<f64>().is_ok_and(|n| n != 0.0),
    };
    // The series read asks for text as views; other reads give `Utf8`.
    if let Some(states) = column.as_any().downcast_ref::<StringViewArray>() {
        // A string of up to 12 bytes is all in its 16-byte view (length,
        // then the bytes, zero-padded), so the usual states are told apart
        // by comparing views, without reading the string.
        let (on, off, zero) = (inline_view("true"), inline_view("false"), inline_view("0"));
        let views = states.views();
        // Each row's answer packed 64 to a word; the nulls are kept as they are.
        let values = BooleanBuffer::collect_bool(views.len(), |i| match views.get(i) {
            Some(&view) if view == on => true,
            Some(&view) if view == off || view == zero => false,
            _ => state_on(states.value(i)),
        });
        return BooleanArray::new(values, states.nulls().cloned());
    }
    if let Some(states) = column.as_any().downcast_ref::<StringArray>() {
        return BooleanArray::from_unary(states, state_on);
    }
    if let Some(discrete) = column.as_any().downcast_ref::<UInt8Array>() {
        return BooleanArray::from_unary(discrete, |n| n != 0);
    }
    if let Some(numbers) = column.as_any().downcast_ref::<Float64Array>() {
        return BooleanArray::from_unary(numbers, |n| n != 0.0);
    }
    BooleanArray::new_null(column.len())
}

/// The view of a string of at most 12 bytes: its length, then its bytes
/// zero-padded (the Arrow `Utf8View` layout).
fn inline_view(text: &str) -> u128 {
    let mut view = [0u8; 16];
    let bytes = text.as_bytes();
    view[..4].copy_from_slice(&(bytes.len() as u32).to_le_bytes());
    view[4..4 + bytes.len()].copy_from_slice(bytes);
    u128::from_le_bytes(view)
}

/// The CSV header: `Time` then the columns, a name quoted by CSV rules when it must be.
fn header_line(header: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, name) in header.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if name.contains([',', '"', '\n', '\r']) {
            out.push(b'"');
            out.extend_from_slice(name.replace('"', "\"\"").as_bytes());
            out.push(b'"');
        } else {
            out.extend_from_slice(name.as_bytes());
        }
    }
    out.push(b'\n');
    out
}

/// The grid rows `rows`: `Time` as `YYYY-MM-DDTHH:MM` in `zone`, then the
/// values, shortest numbers, `\N` for none.
fn write_rows(
    out: &mut Vec<u8>,
    outputs: &[Float64Array],
    grid: &Grid,
    rows: std::ops::Range<usize>,
    zone: chrono_tz::Tz,
) {
    let instants = grid
        .instants()
        .enumerate()
        .skip(rows.start)
        .take(rows.len());
    for (row, instant) in instants {
        match chrono::Utc.timestamp_millis_opt(instant).single() {
            Some(t) => write_minute(out, &t.with_timezone(&zone).naive_local()),
            None => out.extend_from_slice(b"\\N"),
        }
        for column in outputs {
            out.push(b',');
            if !(column.is_valid(row) && query::csv::write_f64(column.value(row), out)) {
                out.extend_from_slice(b"\\N");
            }
        }
        out.push(b'\n');
    }
}

/// `YYYY-MM-DDTHH:MM`, digits written directly (no format string per row).
fn write_minute(out: &mut Vec<u8>, t: &chrono::NaiveDateTime) {
    use chrono::{Datelike as _, Timelike as _};
    let two = |out: &mut Vec<u8>, n: u32| {
        out.push(b'0' + (n / 10 % 10) as u8);
        out.push(b'0' + (n % 10) as u8);
    };
    match u32::try_from(t.year()) {
        Ok(year) if year <= 9999 => {
            two(out, year / 100);
            two(out, year % 100);
        }
        _ => out.extend_from_slice(t.year().to_string().as_bytes()),
    }
    out.push(b'-');
    two(out, t.month());
    out.push(b'-');
    two(out, t.day());
    out.push(b'T');
    two(out, t.hour());
    out.push(b':');
    two(out, t.minute());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignition_reads_views_as_it_reads_strings() {
        let states = [
            Some("true"),
            Some("false"),
            Some("0"),
            Some("1"),
            Some(" 2.5 "),
            Some("0.0"),
            Some("on"),
            None,
            Some(""),
            // Longer than 12 bytes: not inline in its view.
            Some("1.000000000000000"),
            Some("0.000000000000000"),
            Some("true but longer than 12"),
        ];
        let strings = StringArray::from(states.to_vec());
        let views = StringViewArray::from(states.to_vec());
        let from_strings = ignition_of(&strings);
        assert_eq!(ignition_of(&views), from_strings);
        let on: Vec<Option<bool>> = from_strings.iter().collect();
        assert_eq!(
            on,
            [
                Some(true),
                Some(false),
                Some(false),
                Some(true),
                Some(true),
                Some(false),
                Some(false),
                None,
                Some(false),
                Some(true),
                Some(false),
                Some(false),
            ]
        );
    }
}
