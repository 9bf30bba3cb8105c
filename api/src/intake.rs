//! `POST /ingest/v1/messages`: device messages as NDJSON (plain, gzip or zstd).
//!
//! Answered only once every accepted line is durable and visible:
//! `{"success":true,"accepted":N,"duplicates":D,"rejected":[{"line","code","description"}]}`.
//! A bad line is rejected on its own; the rest is stored.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Read;
use std::sync::Arc;

use foldhash::quality::RandomState;
use futures::StreamExt;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::routing::post;
use http_body_util::{BodyExt, Limited};
use ingest::intake::{self, Limit, LineRules, ParsedBody, RejectedLine, TrackerRef};
use platform::{IntakeTracker, Secret, TrackerKeyRef};
use schemas::{ErrorCode, TrackerId};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::answer::{Answer, Schemas, Success};
use crate::metrics::{IntakeStage, LookupKind};
use crate::params;
use crate::route::{AccessDoc, CallDoc, Credential, RequestDoc, Route};
use crate::{ApiError, ApiResult, AppState};

mod gate;

pub(crate) use gate::ParseGate;

pub(crate) fn routes() -> Vec<Route> {
    vec![Route::custom(
        "/ingest/v1/messages",
        post(messages),
        CallDoc {
            summary: "Send device messages",
            description: "NDJSON, one message per line (`IntakeLine`), plain or with \
                `Content-Encoding: gzip` or `zstd`. Answered once every accepted line is durable \
                (WAL, fsync) and visible to reads. A bad line is rejected on its own, with its \
                line number and code (7 naming the field, 201 unknown tracker, 208 blocked); \
                the rest is stored. Sending a body again stores nothing and counts duplicates.",
            methods: &["post"],
            request: RequestDoc::Body {
                media_type: "application/x-ndjson",
                schema: body_schema,
                headers: || {
                    vec![json!({
                        "name": "Content-Encoding", "in": "header", "required": false,
                        "description": "`gzip` or `zstd` for a compressed body; none or `identity` for plain NDJSON.",
                        "schema": { "type": "string", "enum": ["identity", "gzip", "x-gzip", "zstd"] }
                    })]
                },
            },
            access: AccessDoc {
                credential: Credential::IngestToken,
                codes: vec![ErrorCode::ServiceAuth, ErrorCode::WrongHash],
            },
            errors: vec![
                ErrorCode::WrongRequestFormat,
                ErrorCode::QueueUnavailable,
                ErrorCode::TooLargeRequest,
                ErrorCode::Database,
                ErrorCode::DatabaseUnavailable,
                ErrorCode::CannotSaveFile,
            ],
            answer: Success::<Outcome>::describe,
            refusals: &[],
        },
    )]
}

/// What the intake did with a body.
#[derive(Debug, Serialize, ToSchema)]
struct Outcome {
    /// Messages stored.
    accepted: usize,
    /// Messages stored before (same tracker, message time and content), not stored again.
    duplicates: usize,
    /// Lines refused, by line number: the first `--max-listed-rejections` (1,000).
    rejected: Vec<Rejection>,
    /// Lines refused in all, listed or not.
    rejected_total: usize,
}

/// A line refused.
#[derive(Debug, Serialize, ToSchema)]
struct Rejection {
    /// Line number in the body, from 1.
    #[schema(minimum = 1)]
    line: usize,
    /// The platform error code: 7 invalid field, 201 unknown or deleted tracker, 208 blocked tracker.
    code: u16,
    /// What is wrong, naming the field.
    description: String,
}

impl From<RejectedLine> for Rejection {
    fn from(line: RejectedLine) -> Self {
        Self {
            line: line.line,
            code: line.code,
            description: line.description,
        }
    }
}

/// The NDJSON body, documented as the array of its lines (OpenAPI 3.1 has no
/// schema for a sequence of JSON texts); one line is an `IntakeLine`.
fn body_schema(schemas: &mut Schemas) -> Value {
    let number = json!({ "type": "number" });
    let int = json!({ "type": "integer" });
    let time = json!({ "type": "string", "description": "`YYYY-MM-DDTHH:MM[:SS[.fff]]` with `Z` or an offset `±HH:MM`, `±HHMM`, `±HH` (clarification 16).", "examples": ["2024-06-01T07:00:00Z"] });
    schemas.insert(
        "IntakeLine",
        json!({
            "type": "object",
            "description": "One device message: the raw data columns (spec document 3) and `tracker_id` or `device_id`.",
            "required": ["msg_time"],
            "properties": {
                "tracker_id": { "type": "integer", "minimum": 1, "description": "The tracker's id; or `device_id`." },
                "device_id": { "type": "string", "description": "The tracker's device id (IMEI); or `tracker_id`." },
                "msg_time": time,
                "server_time": { "type": "string", "description": "Only with a backfill ingest token: when the message first reached a server; as `msg_time`." },
                "gps_fix_type": { "enum": ["UNKNOWN", "NO_FIX", "HAS_FIX", "LAST_KNOWN_POSITION"] },
                "lat": { "type": "number", "minimum": -90, "maximum": 90 },
                "lng": { "type": "number", "minimum": -180, "maximum": 180 },
                "speed": number, "alt": int, "satellites": int, "heading": int, "precision": int,
                "hdop": number, "pdop": number, "event_id": int,
                "mn_name": { "type": "string" }, "mn_roaming": int, "mn_code": int, "mn_csq": int,
                "mn_type": { "enum": ["UNKNOWN", "GSM", "CDMA", "WCDMA", "LTE", "NR"] },
                "flags": int,
                "discrete_inputs": { "type": "object", "description": "Number (from 1) to 0 or 1.", "additionalProperties": { "enum": [0, 1] } },
                "discrete_outputs": { "type": "object", "description": "Number (from 1) to 0 or 1.", "additionalProperties": { "enum": [0, 1] } },
                "inputs": { "type": "object", "description": "Metering inputs by name.", "additionalProperties": { "type": "number" } },
                "states": { "type": "object", "description": "Device states by name.", "additionalProperties": { "type": ["boolean", "number", "string"] } }
            }
        }),
    );
    json!({
        "type": "array",
        "description": "NDJSON: each item is one line, a JSON object (an `IntakeLine`); lines are \
            separated by `\\n`. Bodies over the size limit are refused with code 9.",
        "items": { "$ref": "#/components/schemas/IntakeLine" },
        "examples": [[{
            "device_id": "356307042441013", "msg_time": "2024-06-01T07:00:00Z", "lat": 43.25,
            "lng": 76.95, "speed": 42.5, "inputs": { "lls_level_1": 1024 }, "states": { "ignition": true }
        }]]
    })
}

async fn messages(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Success<Outcome>> {
    let body_number = state.inner.intake_parse_slots.next_body();
    let secret = bearer(&headers)?;
    let lookup = &state.inner.intake_lookup;
    let (token, stats) = lookup.ingest_token(&state.inner.store, &secret).await?;
    state
        .inner
        .metrics
        .count_lookup(LookupKind::IngestToken, &stats, lookup.entries());
    let token = token.ok_or_else(|| {
        ApiError::with_description(
            ErrorCode::ServiceAuth,
            "Service Auth error: unknown or revoked ingest token",
        )
    })?;
    let _permit = intake_slot(&state).await?;
    let config = &state.inner.config;
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let now = state.inner.store.clock().now().timestamp_millis();
    let rules = LineRules {
        allow_server_time: token.backfill,
        max_inner_entries: config.max_inner_entries,
        oldest_message_ms: now
            .saturating_sub(i64::from(config.max_message_age_days).saturating_mul(86_400_000)),
        ..LineRules::at(now)
    };
    let request = Arc::new(Request {
        state: state.clone(),
        rules,
        owner: token.user,
        generation: stats.generation,
        max_listed: config.max_listed_rejections,
        body: body_number,
        preparer: state.ingest().preparer()?,
    });
    let Stored {
        accepted,
        duplicates,
        rejected,
    } = store_body(request, body, encoding).await?;
    let ingest = state.ingest();
    ingest.count_rejected(rejected.total());
    for limit in [Limit::InnerEntries, Limit::MessageAge] {
        ingest.count_limit(limit, rejected.by_limit(limit));
    }
    Ok(Success(Outcome {
        accepted,
        duplicates,
        rejected_total: rejected.total(),
        rejected: rejected
            .into_listed()
            .into_iter()
            .map(Rejection::from)
            .collect(),
    }))
}

/// Receives `body` (`Content-Encoding: encoding`) within
/// `--request-body-timeout-ms` and `--max-ingest-bytes`, and stores it.
///
/// A long body is cut into chunks of whole lines, each parsed and
/// prepared on its own task as soon as it has arrived (the body's parse
/// overlaps its arrival and uses every free core). Once the whole body has
/// arrived, its chunks go to the writer in the body's order as they are
/// prepared, those ready together as one group (`Ingest::hand`), so the
/// writer's work and the WAL's sync for the first chunks overlap the
/// parse of the last; the answer waits until every chunk is durable and
/// visible. A body refused as too large or too slow stores nothing (no
/// chunk is handed before its last byte), and so does one refused with
/// 503: the memtable's limits admit or refuse a body whole (`Preparer`),
/// and only its first group may find the writer's queue full (the others
/// wait for room). A later error (the writer stopping, a disk failing) may
/// leave some chunks stored: the retry stores the rest, each line once
/// (deduplication). Answers the body's counts and rejections.
async fn store_body(request: Arc<Request>, body: Body, encoding: String) -> ApiResult<Stored> {
    let state = &request.state;
    let ingest = state.ingest();
    let config = &state.inner.config;
    let limit = config.max_ingest_bytes;
    let timeout = config.request_body_timeout;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut chunks = futures::stream::FuturesUnordered::new();
    let mut dispatched = 0_usize;
    // Chunk `dispatched` of the body to a parse task.
    macro_rules! dispatch {
        ($lines:expr, $first_line:expr) => {{
            chunks.push(prepare_chunk(
                request.clone(),
                $lines,
                $first_line,
                dispatched,
            ));
            dispatched += 1;
        }};
    }
    let mut chunker = intake::Chunker::new(state.inner.intake_chunks.clone());
    let mut body = Limited::new(body, limit);
    let mut receiving = true;
    let metrics = &state.inner.metrics;
    let begun = std::time::Instant::now();
    let mut received = begun;
    if !matches!(encoding.as_str(), "" | "identity") {
        // A compressed body is read whole, then decoded on a parse task.
        let raw = tokio::time::timeout_at(deadline, (&mut body).collect())
            .await
            .map_err(|_| params::too_slow(timeout))?
            .map_err(|e| params::body_error(&e, limit))?
            .to_bytes();
        received = std::time::Instant::now();
        metrics.observe_intake_stage(IntakeStage::Receive, begun);
        let decoded = on_parse_task(state, request.body, move || {
            Ok(decode(&raw, &encoding, limit)?.into_owned())
        })
        .await?;
        let decoded = Bytes::from(decoded);
        for chunk in intake::chunks(&decoded, config.intake_chunk_bytes) {
            dispatch!(decoded.slice(chunk.range), chunk.first_line);
        }
        receiving = false;
    }
    // Prepared chunks not yet handed to the writer, by their place in the body.
    let mut ready = std::collections::BTreeMap::new();
    // The group being handed (one at a time: the writer takes them in the
    // body's order), and the groups handed, awaited in that order.
    let mut handing = futures::stream::FuturesUnordered::new();
    let mut handed = futures::stream::FuturesOrdered::new();
    // Each handed chunk's line numbers, in the body's order.
    let mut kept_lines = Vec::new();
    let mut stored = Stored {
        accepted: 0,
        duplicates: 0,
        rejected: intake::Rejections::new(request.max_listed),
    };
    let mut outcomes = Vec::new();
    let mut prepared_at = None;
    loop {
        if !receiving && handing.is_empty() {
            let mut writes = Vec::new();
            while let Some(chunk) = ready.remove(&kept_lines.len()) {
                let ReadyChunk {
                    lines,
                    write,
                    rejected,
                    index: _,
                } = chunk;
                writes.push(*write);
                kept_lines.push(lines);
                stored.rejected.absorb(rejected);
            }
            if !writes.is_empty() {
                let continues = kept_lines.len() > writes.len();
                handing.push(ingest.hand(writes, continues));
            }
        }
        if prepared_at.is_none() && !receiving && chunks.is_empty() {
            metrics.observe_intake_stage(IntakeStage::Parse, received);
            prepared_at = Some(std::time::Instant::now());
        }
        tokio::select! {
            frame = tokio::time::timeout_at(deadline, body.frame()), if receiving => {
                let frame = frame.map_err(|_| params::too_slow(timeout))?;
                if let Some(frame) = frame {
                    let frame = frame.map_err(|e| params::body_error(&e, limit))?;
                    if let Ok(data) = frame.into_data() {
                        chunker.push(&data, |lines, first_line| dispatch!(lines.into(), first_line));
                    }
                } else {
                    receiving = false;
                    received = std::time::Instant::now();
                    metrics.observe_intake_stage(IntakeStage::Receive, begun);
                    if let Some((lines, first_line)) = chunker.finish() {
                        dispatch!(lines.into(), first_line);
                    }
                }
            }
            Some(chunk) = chunks.next() => {
                let chunk = chunk?;
                ready.insert(chunk.index, chunk);
            }
            Some(group) = handing.next() => handed.push_back(group?.outcomes()),
            Some(group) = handed.next() => outcomes.extend(group?),
            else => break,
        }
    }
    if let Some(prepared_at) = prepared_at {
        metrics.observe_intake_stage(IntakeStage::Commit, prepared_at);
    }
    for (lines, outcome) in kept_lines.iter().zip(outcomes) {
        stored.accepted += outcome.accepted;
        stored.duplicates += outcome.duplicates;
        for (index, description) in outcome.rejected {
            let mut line = RejectedLine::new(
                lines.get(index).copied().unwrap_or_default(),
                ErrorCode::InvalidParameters,
                description,
            );
            line.limit = Some(Limit::InnerNamesPerDay);
            stored.rejected.push(line);
        }
    }
    Ok(stored)
}

/// What every chunk of one request shares.
struct Request {
    state: AppState,
    rules: LineRules,
    /// The only user whose trackers the token may send for, if one.
    owner: Option<schemas::UserId>,
    /// The look-up generation the token was read at.
    generation: Option<i64>,
    max_listed: usize,
    /// The body's number: its chunks take parse tasks before later bodies'.
    body: u64,
    /// Prepares the body's writes, admitting or refusing them together.
    preparer: ingest::Preparer,
}

/// What a body stored and refused.
struct Stored {
    accepted: usize,
    duplicates: usize,
    rejected: intake::Rejections,
}

/// One chunk of a body, prepared: its write and the lines it refused.
struct ReadyChunk {
    /// Its place in the body, from 0.
    index: usize,
    /// The body's line numbers of the write's messages, in order.
    lines: Vec<usize>,
    /// Boxed: a future of [`prepare_chunk`] is moved while it is polled.
    write: Box<ingest::PreparedWrite>,
    rejected: intake::Rejections,
}

/// Parses, resolves and prepares one chunk of a request's body (`lines`,
/// whose first line is line `first_line` of the body; chunk `index` of
/// it), for the body's commit.
async fn prepare_chunk(
    request: Arc<Request>,
    lines: Bytes,
    first_line: usize,
    index: usize,
) -> ApiResult<ReadyChunk> {
    let state = &request.state;
    let task = request.clone();
    // One blocking task parses the lines, and when memory holds every
    // tracker they name (at the generation the token's look-up read),
    // resolves and prepares them too: the rows are made and dropped by
    // one thread, with no statement and no hop in between.
    let parsed = on_parse_task(state, request.body, move || {
        let Request {
            state,
            rules,
            owner,
            generation,
            max_listed,
            body: _,
            preparer,
        } = &*task;
        let rows = preparer.empty_rows();
        let (parsed, mut rejected) =
            intake::parse_lines_into(&lines, first_line, rules, *max_listed, rows);
        state.inner.intake_chunks.give_bytes(lines);
        let held = state
            .inner
            .intake_lookup
            .held_trackers(*generation, parsed.trackers.iter().map(key_ref));
        let Some((found, stats)) = held else {
            return Ok(Parsed::Lines {
                parsed: Box::new(parsed),
                rejected,
            });
        };
        let mut found = found.into_iter();
        let (lines, rows) = assign(parsed, &mut rejected, |tracker| {
            verdict(key_ref(tracker), found.next().flatten(), *owner)
        });
        let write = Box::new(preparer.prepare(rows)?);
        Ok(Parsed::Ready {
            lines,
            write,
            rejected,
            stats,
        })
    })
    .await?;
    match parsed {
        Parsed::Ready {
            lines,
            write,
            rejected,
            stats,
        } => {
            let lookup = &state.inner.intake_lookup;
            state
                .inner
                .metrics
                .count_lookup(LookupKind::Trackers, &stats, lookup.entries());
            Ok(ReadyChunk {
                index,
                lines,
                write,
                rejected,
            })
        }
        Parsed::Lines {
            parsed,
            mut rejected,
        } => {
            let (lines, rows) = resolve(state, *parsed, request.owner, &mut rejected).await?;
            let preparer = request.preparer.clone();
            let write =
                on_parse_task(state, request.body, move || Ok(preparer.prepare(rows)?)).await?;
            Ok(ReadyChunk {
                index,
                lines,
                write: Box::new(write),
                rejected,
            })
        }
    }
}

fn bearer(headers: &HeaderMap) -> ApiResult<Secret> {
    let token = params::bearer_token(headers).ok_or_else(|| {
        ApiError::with_description(
            ErrorCode::WrongHash,
            "Wrong hash: send `Authorization: Bearer <ingest token>`",
        )
    })?;
    Secret::parse(token).ok_or_else(|| {
        ApiError::with_description(
            ErrorCode::WrongHash,
            "Wrong hash: an ingest token is 32 hexadecimal characters",
        )
    })
}

/// A slot of `--max-intake-requests`, waited for up to `--intake-queue-ms`
/// (the body is not read meanwhile, so a waiting request costs little).
async fn intake_slot(state: &AppState) -> ApiResult<IntakeSlot<'_>> {
    let inner = &state.inner;
    let permit = match inner.intake_slots.try_acquire() {
        Ok(permit) => permit,
        Err(_) => {
            let _waiting = Counted::new(&inner.metrics.intake_waiting);
            let wait = inner.config.intake_queue_wait;
            match tokio::time::timeout(wait, inner.intake_slots.acquire()).await {
                Ok(Ok(permit)) => permit,
                _ => return Err(busy("too many intake requests are in flight")),
            }
        }
    };
    Ok(IntakeSlot {
        _permit: permit,
        _in_flight: Counted::new(&inner.metrics.intake_in_flight),
    })
}

/// Runs `work` (parsing, preparing: the CPU-bound part of a request) on a
/// blocking thread as one of `--intake-parse-tasks`, taken before any
/// later body's (`body`, [`ParseGate::next_body`]).
async fn on_parse_task<T: Send + 'static>(
    state: &AppState,
    body: u64,
    work: impl FnOnce() -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    let _slot = parse_slot(state, body).await;
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        tracing::error!(error = %e, "an intake parse task panicked");
        ApiError::new(ErrorCode::Unexpected)
    })?
}

/// One of `--intake-parse-tasks`, waited for as long as it takes: the
/// request holds an intake slot already, so at most
/// `--max-intake-requests` bodies wait here.
async fn parse_slot(state: &AppState, body: u64) -> ParseSlot<'_> {
    let (slots, metrics) = (&state.inner.intake_parse_slots, &state.inner.metrics);
    let permit = match slots.try_take() {
        Some(permit) => permit,
        None => {
            let _waiting = Counted::new(&metrics.intake_parse_waiting);
            slots.take(body).await
        }
    };
    ParseSlot {
        _permit: permit,
        _parsing: Counted::new(&metrics.intake_parsing),
    }
}

/// A parse task held.
struct ParseSlot<'a> {
    _permit: gate::Held<'a>,
    _parsing: Counted<'a>,
}

/// An intake slot held.
struct IntakeSlot<'a> {
    _permit: tokio::sync::SemaphorePermit<'a>,
    _in_flight: Counted<'a>,
}

/// One more on a gauge while it lives (a request given up midway included).
struct Counted<'a>(&'a prometheus_client::metrics::gauge::Gauge);

impl<'a> Counted<'a> {
    fn new(gauge: &'a prometheus_client::metrics::gauge::Gauge) -> Self {
        gauge.inc();
        Self(gauge)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}

fn busy(reason: &str) -> ApiError {
    ApiError::with_description(
        ErrorCode::QueueUnavailable,
        format!("{}: {reason}", ErrorCode::QueueUnavailable.meaning()),
    )
    .retry_after(1)
}

/// Undoes `Content-Encoding`, refusing more than `limit` decoded bytes (an
/// identity body is read where it is).
fn decode<'r>(raw: &'r [u8], encoding: &str, limit: usize) -> ApiResult<Cow<'r, [u8]>> {
    let read_all = |mut reader: Box<dyn Read + '_>| -> ApiResult<Cow<'r, [u8]>> {
        let mut out = Vec::new();
        reader
            .by_ref()
            .take(limit as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| {
                ApiError::with_description(
                    ErrorCode::WrongRequestFormat,
                    format!("Wrong request format: cannot decode the body: {e}"),
                )
            })?;
        if out.len() > limit {
            return Err(params::too_large(limit));
        }
        Ok(Cow::Owned(out))
    };
    match encoding {
        "" | "identity" => Ok(Cow::Borrowed(raw)),
        "gzip" | "x-gzip" => read_all(Box::new(flate2::read::MultiGzDecoder::new(raw))),
        "zstd" => {
            let decoder = zstd::stream::read::Decoder::new(raw).map_err(|e| {
                ApiError::with_description(
                    ErrorCode::WrongRequestFormat,
                    format!("Wrong request format: zstd: {e}"),
                )
            })?;
            read_all(Box::new(decoder))
        }
        other => Err(ApiError::with_description(
            ErrorCode::WrongRequestFormat,
            format!(
                "Wrong request format: unsupported Content-Encoding {other:?}; use gzip or zstd"
            ),
        )),
    }
}

/// Resolves each distinct tracker once: unknown or deleted 201, another
/// user's than the token's 204, blocked 208, a clone 219 (its data is its
/// source's: a device's lines go to the source, by its id or device id).
/// The trackers come from the intake's look-up: memory, else one read of
/// the store for all of them. Answers the kept lines' numbers and rows.
async fn resolve(
    state: &AppState,
    parsed: ParsedBody,
    owner: Option<schemas::UserId>,
    rejected: &mut intake::Rejections,
) -> ApiResult<(Vec<usize>, ingest::Rows)> {
    let lookup = &state.inner.intake_lookup;
    let (found, stats) = lookup
        .trackers(
            &state.inner.store,
            parsed
                .trackers
                .iter()
                .map(|tracker| key_ref(tracker).to_key()),
        )
        .await?;
    state
        .inner
        .metrics
        .count_lookup(LookupKind::Trackers, &stats, lookup.entries());
    // Looked up by borrowed keys: no device id is copied per line.
    let known: HashMap<TrackerKeyRef<'_>, Result<TrackerId, (ErrorCode, String)>, RandomState> =
        found
            .iter()
            .map(|(key, tracker)| (key.into(), verdict(key.into(), *tracker, owner)))
            .collect();
    Ok(assign(parsed, rejected, |tracker| {
        known.get(&key_ref(tracker)).cloned().unwrap_or_else(|| {
            Err((
                ErrorCode::Unexpected,
                "the tracker was not looked up".to_owned(),
            ))
        })
    }))
}

/// A body parsed on its blocking task: resolved and prepared there, or
/// left for [`resolve`] when memory did not hold its trackers.
enum Parsed {
    Ready {
        lines: Vec<usize>,
        /// Boxed, as the other variant's body: each is large.
        write: Box<ingest::PreparedWrite>,
        rejected: intake::Rejections,
        stats: platform::LookupStats,
    },
    Lines {
        parsed: Box<ParsedBody>,
        rejected: intake::Rejections,
    },
}

/// The kept lines' numbers and rows, each line's tracker given by
/// `verdict` (asked once per line, in order); a refused line goes to
/// `rejected` with its verdict's code and description.
fn assign(
    parsed: ParsedBody,
    rejected: &mut intake::Rejections,
    mut verdict: impl FnMut(&TrackerRef) -> Result<TrackerId, (ErrorCode, String)>,
) -> (Vec<usize>, ingest::Rows) {
    let ParsedBody {
        lines,
        trackers,
        mut rows,
    } = parsed;
    let mut kept = Vec::with_capacity(lines.len());
    for (row, (line, tracker)) in lines.iter().zip(&trackers).enumerate() {
        match verdict(tracker) {
            Ok(id) => {
                rows.set_tracker(row, id);
                kept.push(row);
            }
            Err((code, description)) => {
                rejected.push(RejectedLine::new(*line, code, description));
            }
        }
    }
    rows.retain(&kept);
    let lines = kept.iter().map(|&row| lines[row]).collect();
    (lines, rows)
}

/// The key a line names its tracker by, borrowed from the line.
fn key_ref(tracker: &TrackerRef) -> TrackerKeyRef<'_> {
    match tracker {
        TrackerRef::Id(id) => TrackerKeyRef::Id(TrackerId(*id)),
        TrackerRef::DeviceId(device) => TrackerKeyRef::DeviceId(device),
    }
}

/// What intake answers for the lines naming `key`: its tracker's id, or
/// the code and description every such line is refused with.
fn verdict(
    key: TrackerKeyRef<'_>,
    found: Option<IntakeTracker>,
    owner: Option<schemas::UserId>,
) -> Result<TrackerId, (ErrorCode, String)> {
    match found {
        None => Err((
            ErrorCode::NotFoundInDatabase,
            format!("Not found in database: no tracker {}", describe(key)),
        )),
        Some(t) if t.deleted => Err((
            ErrorCode::NotFoundInDatabase,
            format!("Not found in database: tracker {} is deleted", t.id),
        )),
        Some(t) if owner.is_some_and(|owner| owner != t.user_id) => Err((
            ErrorCode::EntityNotFound,
            format!(
                "Entity not found: tracker {} is not one of the trackers this ingest token may send for",
                t.id
            ),
        )),
        Some(t) if t.blocked => Err((
            ErrorCode::DeviceBlocked,
            format!("Device blocked: tracker {} is blocked", t.id),
        )),
        Some(IntakeTracker {
            id,
            clone_of: Some(source),
            ..
        }) => Err((
            ErrorCode::NotAllowedForClones,
            format!(
                "{}: tracker {id} is a clone of tracker {source}; send for the source",
                ErrorCode::NotAllowedForClones.meaning()
            ),
        )),
        Some(t) => Ok(t.id),
    }
}

fn describe(key: TrackerKeyRef<'_>) -> String {
    match key {
        TrackerKeyRef::Id(id) => format!("with tracker_id {}", id.0),
        TrackerKeyRef::DeviceId(device) => format!("with device_id {device:?}"),
    }
}
