//! One line of an NDJSON intake body, parsed and validated into a row of a
//! write's [`Rows`].
//!
//! A line is one JSON object whose members are the raw data columns (spec
//! document 3) plus `tracker_id` or `device_id`. It is read in one pass
//! without an intermediate `serde_json::Value`: scalar members are captured
//! as [`RawScalar`]s, borrowing strings from the line where JSON allows, and
//! checked afterwards by [`build`]; the complex members are checked entry by
//! entry as they are read. Two readers do that: `plain`, a tokenizer for
//! the usual line that gives up at anything unusual, and `read`, one serde
//! pass that reads every line and raises every error. [`Ctx`] remembers
//! which member (and inner key) the serde reader is at, so every
//! [`LineError`] names its field, even one raised inside serde.
//!
//! Every refusal is code 7 (invalid parameters). The line's content is never
//! echoed in full: quoted values and names are clipped.

mod plain;
mod read;
mod time;

use std::borrow::Cow;
use std::fmt;

use schemas::{ErrorCode, GpsFixType, HasCode, MnType};
use serde::de::DeserializeSeed;

pub(crate) use self::read::Lists;
use self::read::{Ctx, LineSeed, Member, RawLine, RawScalar};
use self::time::parse_time_ms;
use crate::rows::{InnerLists, Rows, Scalars};

/// How a line names its tracker; the caller resolves it to a tracker id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TrackerRef {
    /// `tracker_id`: the platform's tracker id.
    Id(i64),
    /// `device_id`: the tracker's IMEI (or other device id), trimmed.
    DeviceId(schemas::Name),
}

/// A valid line: the tracker it names and its message (tests).
#[cfg(test)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ParsedLine {
    /// The tracker, still to be resolved.
    pub(crate) tracker: TrackerRef,
    /// The message; its `tracker_id` is left 0 for the caller to set.
    pub(crate) message: schemas::Message,
}

/// Why a line was refused: always code 7, naming the member where possible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineError {
    /// Always [`ErrorCode::InvalidParameters`].
    pub(crate) code: ErrorCode,
    /// The member (`lat`, `inputs.fuel`); `None` when the line is not JSON or not an object.
    pub(crate) field: Option<String>,
    /// What is wrong, starting with the member's name.
    pub(crate) description: String,
    /// The configured limit the line went beyond, if that is why (counted on `/metrics`).
    pub(crate) limit: Option<Limit>,
}

/// A configurable limit on a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    /// Entries of one complex member (`inputs`, `states`, `discrete_inputs`, `discrete_outputs`).
    InnerEntries,
    /// Distinct inner columns of one tracker on one UTC day.
    InnerNamesPerDay,
    /// How old a `msg_time` may be.
    MessageAge,
}

impl Limit {
    /// Its label on `/metrics` (`trackhouse_limit_refusals_total{limit}`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::InnerEntries => "inner_entries",
            Self::InnerNamesPerDay => "inner_names_per_day",
            Self::MessageAge => "message_age",
        }
    }
}

/// What the intake allows for the lines of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRules {
    /// The server's current time, ms since the epoch: a `msg_time` more than
    /// 24 hours later is refused.
    pub now_ms: i64,
    /// The time of receipt, ms since the epoch: the server time of every line
    /// that has no `server_time`.
    pub server_time_ms: i64,
    /// Whether lines may carry their own `server_time` (backfill).
    pub allow_server_time: bool,
    /// Most entries of one complex member of a line; more: code 7.
    pub max_inner_entries: usize,
    /// The earliest `msg_time` taken, ms since the epoch; earlier: code 7.
    pub oldest_message_ms: i64,
}

/// Entries one complex member of a line may have, by default.
pub const DEFAULT_MAX_INNER_ENTRIES: usize = 256;
/// How far back a `msg_time` may be, by default: ten years.
pub const DEFAULT_MAX_MESSAGE_AGE_DAYS: u32 = 3_653;

impl LineRules {
    /// The default rules at `now_ms`: received now, no `server_time` of the
    /// line's own, the default limits.
    pub const fn at(now_ms: i64) -> Self {
        Self {
            now_ms,
            server_time_ms: now_ms,
            allow_server_time: false,
            max_inner_entries: DEFAULT_MAX_INNER_ENTRIES,
            oldest_message_ms: now_ms - DEFAULT_MAX_MESSAGE_AGE_DAYS as i64 * 86_400_000,
        }
    }
}

/// How far ahead of the server clock a message or server time may be.
const MAX_FUTURE_MS: i64 = 24 * 3_600 * 1_000;

/// The longest name or value quoted in an error.
const CLIP_CHARS: usize = 80;
/// The longest serde message passed on in an error.
const CLIP_SERDE_CHARS: usize = 240;

/// Whether a line holds only JSON whitespace, and so is no line at all.
pub(crate) fn is_blank(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .all(|byte| matches!(byte, b' ' | b'\t' | b'\n' | b'\r'))
}

/// Parses and validates one line on its own (tests; a body's lines go
/// through [`parse_line_into`]).
#[cfg(test)]
pub(crate) fn parse_line(bytes: &[u8], rules: &LineRules) -> Result<ParsedLine, LineError> {
    let mut rows = Rows::default();
    let tracker = parse_line_into(bytes, rules, &mut Lists::default(), &mut rows)?;
    Ok(ParsedLine {
        tracker,
        message: rows.message(0),
    })
}

/// [`parse_line`] by the serde reader alone (tests: the plain reader must
/// answer the same).
#[cfg(test)]
pub(crate) fn parse_line_serde(bytes: &[u8], rules: &LineRules) -> Result<ParsedLine, LineError> {
    let mut rows = Rows::default();
    let text = std::str::from_utf8(bytes).ok();
    let tracker = parse_serde_into(bytes, text, rules, &mut Lists::default(), &mut rows)?;
    Ok(ParsedLine {
        tracker,
        message: rows.message(0),
    })
}

/// [`parse_line`] of each of `lines` in turn, sharing what a body's lines
/// share (the lists, and the plain reader's member order with them) (tests).
#[cfg(test)]
pub(crate) fn parse_lines(
    lines: &[Vec<u8>],
    rules: &LineRules,
) -> Vec<Result<ParsedLine, LineError>> {
    let (mut lists, mut rows, mut kept) = (Lists::default(), Rows::default(), 0);
    lines
        .iter()
        .map(|bytes| {
            let tracker = parse_line_into(bytes, rules, &mut lists, &mut rows)?;
            kept += 1;
            Ok(ParsedLine {
                tracker,
                message: rows.message(kept - 1),
            })
        })
        .collect()
}

/// Whether the plain reader takes `bytes` (tests).
#[cfg(test)]
pub(crate) fn plain_reads(bytes: &[u8], rules: &LineRules) -> bool {
    std::str::from_utf8(bytes).is_ok_and(|text| {
        let mut line = RawLine::default();
        plain::read(
            text,
            rules.max_inner_entries,
            &mut Lists::default(),
            &mut line,
        )
        .is_some()
    })
}

/// Parses and validates one line of a body (without its line feed; a
/// trailing `\r` is allowed) and appends it to `rows` (its tracker left 0
/// for the caller to resolve); answers the tracker it names. A refused
/// line appends nothing. `lists` holds the line's complex members while
/// it is read; a body's lines share it.
///
/// A line that is UTF-8 (checked at once, quickly) is read as a `str`,
/// first by the plain reader (`plain`), which takes the usual line in a
/// fraction of serde's time, then, if that gave up, by serde_json, which
/// checks no string of it again. Any other line is read by serde_json as
/// bytes, so its error names the first bad byte.
pub(crate) fn parse_line_into(
    bytes: &[u8],
    rules: &LineRules,
    lists: &mut Lists,
    rows: &mut Rows,
) -> Result<TrackerRef, LineError> {
    let text = std::str::from_utf8(bytes).ok();
    if let Some(text) = text {
        let mut line = RawLine::default();
        if plain::read(text, rules.max_inner_entries, lists, &mut line).is_some() {
            return build(&line, lists, rules, rows);
        }
    }
    parse_serde_into(bytes, text, rules, lists, rows)
}

/// [`parse_line_into`] by serde alone: for a line the plain reader gave
/// up on (`text` is the line if it is UTF-8).
fn parse_serde_into(
    bytes: &[u8],
    text: Option<&str>,
    rules: &LineRules,
    lists: &mut Lists,
    rows: &mut Rows,
) -> Result<TrackerRef, LineError> {
    lists.clear();
    let mut ctx = Ctx::new(rules.max_inner_entries, std::mem::take(lists));
    let read = match text {
        Some(text) => read_line(serde_json::Deserializer::from_str(text), &mut ctx),
        None => read_line(serde_json::Deserializer::from_slice(bytes), &mut ctx),
    };
    *lists = std::mem::take(&mut ctx.lists);
    match read {
        Ok(line) => build(&line, lists, rules, rows),
        Err(err) => Err(ctx.into_error(&err)),
    }
}

/// Reads a line's members with `de`, which must then be at the line's end.
fn read_line<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
    ctx: &mut Ctx,
) -> Result<RawLine<'de>, serde_json::Error> {
    let line = LineSeed { ctx }.deserialize(&mut de)?;
    de.end()?;
    Ok(line)
}

impl LineError {
    fn new(field: impl Into<String>, description: String) -> Self {
        Self {
            code: ErrorCode::InvalidParameters,
            field: Some(field.into()),
            description,
            limit: None,
        }
    }

    /// A member beyond a configured limit.
    fn beyond(limit: Limit, field: impl Into<String>, description: String) -> Self {
        Self {
            limit: Some(limit),
            ..Self::new(field, description)
        }
    }

    fn whole_line(description: String) -> Self {
        Self {
            code: ErrorCode::InvalidParameters,
            field: None,
            description,
            limit: None,
        }
    }

    /// A member present with a value of the wrong type or range.
    fn mismatch(member: Member, got: &RawScalar<'_>) -> Self {
        let name = member.name();
        Self::new(
            name,
            format!(
                "{name}: expected {}, got {}",
                member.expected(),
                got.describe()
            ),
        )
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.description)
    }
}

impl std::error::Error for LineError {}

impl HasCode for LineError {
    fn code(&self) -> ErrorCode {
        self.code
    }
}

/// Applies the members' rules to a line as read, and appends it to `rows`.
fn build(
    line: &RawLine<'_>,
    lists: &Lists,
    rules: &LineRules,
    rows: &mut Rows,
) -> Result<TrackerRef, LineError> {
    let tracker = tracker(&line.tracker_id, &line.device_id)?;
    let message_time_ms = match &line.msg_time {
        RawScalar::Null => {
            return Err(LineError::new(
                "msg_time",
                "msg_time: is required".to_owned(),
            ));
        }
        raw => time(Member::MsgTime, raw, rules.now_ms)?,
    };
    if message_time_ms < rules.oldest_message_ms {
        return Err(LineError::beyond(
            Limit::MessageAge,
            "msg_time",
            format!(
                "msg_time: {} is older than the oldest time taken, {} (--max-message-age-days)",
                quote_time(message_time_ms),
                quote_time(rules.oldest_message_ms)
            ),
        ));
    }
    let server_time_ms = match &line.server_time {
        RawScalar::Null => rules.server_time_ms,
        _ if !rules.allow_server_time => {
            return Err(LineError::new(
                "server_time",
                "server_time: not allowed here; it is set to the time of receipt \
                 (only a backfill token may send it)"
                    .to_owned(),
            ));
        }
        raw => time(Member::ServerTime, raw, rules.now_ms)?,
    };
    let scalars = Scalars {
        message_time_ms,
        server_time_ms,
        gps_fix_type: spelled(
            Member::GpsFixType,
            &line.gps_fix_type,
            GpsFixType::parse,
            GpsFixType::from_number,
        )?,
        lat: number(Member::Lat, &line.lat, |n| (-90.0..=90.0).contains(&n))?,
        lng: number(Member::Lng, &line.lng, |n| (-180.0..=180.0).contains(&n))?,
        speed: number(Member::Speed, &line.speed, |n| n >= 0.0)?,
        alt: int32(Member::Alt, &line.alt, |_| true)?,
        satellites: int32(Member::Satellites, &line.satellites, |n| n >= -1)?,
        heading: int32(Member::Heading, &line.heading, |n| (0..=360).contains(&n))?,
        precision: int32(Member::Precision, &line.precision, |n| n >= 0)?,
        hdop: number(Member::Hdop, &line.hdop, dilution)?,
        pdop: number(Member::Pdop, &line.pdop, dilution)?,
        event_id: int64(Member::EventId, &line.event_id, |_| true)?,
        mn_name: text(Member::MnName, &line.mn_name)?,
        mn_roaming: int32(Member::MnRoaming, &line.mn_roaming, |n| {
            (-1..=1).contains(&n)
        })?,
        mn_code: int64(Member::MnCode, &line.mn_code, |_| true)?,
        mn_csq: int32(Member::MnCsq, &line.mn_csq, |n| matches!(n, 0..=31 | 99))?,
        mn_type: spelled(
            Member::MnType,
            &line.mn_type,
            MnType::parse,
            MnType::from_number,
        )?,
        flags: int64(Member::Flags, &line.flags, |n| n >= 0)?,
    };
    let inner = InnerLists {
        discrete_inputs: &lists.discrete_inputs,
        discrete_outputs: &lists.discrete_outputs,
        inputs: &lists.inputs,
        states: &lists.states,
    };
    rows.push(0, &scalars, inner);
    Ok(tracker)
}

fn tracker(id: &RawScalar<'_>, device_id: &RawScalar<'_>) -> Result<TrackerRef, LineError> {
    match (id, device_id) {
        (RawScalar::Null, RawScalar::Null) => Err(LineError::new(
            "tracker_id",
            "tracker_id: one of tracker_id and device_id is required".to_owned(),
        )),
        (id, RawScalar::Null) => match id {
            RawScalar::Int(n) if *n >= 1 => Ok(TrackerRef::Id(*n)),
            other => Err(LineError::mismatch(Member::TrackerId, other)),
        },
        (RawScalar::Null, device_id) => match device_id {
            RawScalar::Str(text) => {
                let trimmed = text.trim();
                if (1..=64).contains(&trimmed.len())
                    && trimmed.bytes().all(|byte| byte.is_ascii_graphic())
                {
                    Ok(TrackerRef::DeviceId(trimmed.into()))
                } else {
                    Err(LineError::mismatch(Member::DeviceId, device_id))
                }
            }
            _ => Err(LineError::mismatch(Member::DeviceId, device_id)),
        },
        (_, _) => Err(LineError::new(
            "tracker_id",
            "tracker_id: tracker_id and device_id exclude each other; send one".to_owned(),
        )),
    }
}

/// A present time member; `raw` is not null.
fn time(member: Member, raw: &RawScalar<'_>, now_ms: i64) -> Result<i64, LineError> {
    let RawScalar::Str(text) = raw else {
        return Err(LineError::mismatch(member, raw));
    };
    let name = member.name();
    let time_ms = parse_time_ms(text).map_err(|err| {
        LineError::new(
            name,
            format!(
                "{name}: expected {}, got {}: {}",
                member.expected(),
                quote(text),
                err.reason()
            ),
        )
    })?;
    if time_ms.saturating_sub(now_ms) > MAX_FUTURE_MS {
        return Err(LineError::new(
            name,
            format!(
                "{name}: {} is more than 24 hours ahead of the server's clock",
                quote(text)
            ),
        ));
    }
    Ok(time_ms)
}

/// An instant as `"2014-06-01T00:00:00Z"`.
fn quote_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || ms.to_string(),
        |t| format!("\"{}\"", t.format("%Y-%m-%dT%H:%M:%SZ")),
    )
}

fn dilution(n: f64) -> bool {
    n >= 0.0 || n == -1.0
}

fn number(
    member: Member,
    raw: &RawScalar<'_>,
    valid: impl Fn(f64) -> bool,
) -> Result<Option<f64>, LineError> {
    if *raw == RawScalar::Null {
        return Ok(None);
    }
    match raw.as_f64() {
        Some(n) if n.is_finite() && valid(n) => Ok(Some(n)),
        _ => Err(LineError::mismatch(member, raw)),
    }
}

fn int64(
    member: Member,
    raw: &RawScalar<'_>,
    valid: impl Fn(i64) -> bool,
) -> Result<Option<i64>, LineError> {
    match raw {
        RawScalar::Null => Ok(None),
        RawScalar::Int(n) if valid(*n) => Ok(Some(*n)),
        _ => Err(LineError::mismatch(member, raw)),
    }
}

fn int32(
    member: Member,
    raw: &RawScalar<'_>,
    valid: impl Fn(i32) -> bool,
) -> Result<Option<i32>, LineError> {
    match raw {
        RawScalar::Null => Ok(None),
        RawScalar::Int(n) => match i32::try_from(*n) {
            Ok(n) if valid(n) => Ok(Some(n)),
            _ => Err(LineError::mismatch(member, raw)),
        },
        _ => Err(LineError::mismatch(member, raw)),
    }
}

fn text<'a>(member: Member, raw: &'a RawScalar<'_>) -> Result<Option<&'a str>, LineError> {
    match raw {
        RawScalar::Null => Ok(None),
        RawScalar::Str(text) => Ok(Some(text)),
        other => Err(LineError::mismatch(member, other)),
    }
}

/// An enum given by its spelling or its number.
fn spelled<T>(
    member: Member,
    raw: &RawScalar<'_>,
    parse: fn(&str) -> Option<T>,
    from_number: fn(u8) -> Option<T>,
) -> Result<Option<T>, LineError> {
    let value = match raw {
        RawScalar::Null => return Ok(None),
        RawScalar::Str(text) => parse(text),
        RawScalar::Int(n) => u8::try_from(*n).ok().and_then(from_number),
        _ => None,
    };
    value
        .map(Some)
        .ok_or_else(|| LineError::mismatch(member, raw))
}

/// `text` quoted and escaped as Rust debug text, clipped to [`CLIP_CHARS`].
fn quote(text: &str) -> String {
    format!("{:?}", clip(text, CLIP_CHARS))
}

/// At most `max_chars` characters of `text`, with `…` when cut.
fn clip(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((end, _)) => Cow::Owned(format!("{}…", text.get(..end).unwrap_or_default())),
    }
}

#[cfg(test)]
mod tests;
