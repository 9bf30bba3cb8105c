//! A request's whole time selection: the message-time range from `from`/`to`
//! or `interval`, and the optional `server_time_filter`.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{Range, TimeContext, TimeError, parse_instant, parse_interval};

/// The time parameters of a raw data read (and of resampling, with `interval` only).
///
/// Deserializes from the request's parameters; other parameters are ignored.
/// An empty or blank string counts as absent, as form clients send `to=`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SelectionParams {
    /// Start of message time, inclusive; requires `to`.
    pub from: Option<String>,
    /// End of message time, exclusive; must be after `from`.
    pub to: Option<String>,
    /// An ISO 8601 interval replacing `from` and `to`.
    pub interval: Option<String>,
    /// An optional filter on server time: a string `<from>/<to>` (any interval
    /// form), an object `{from, to}` or `{interval}`, or either object as JSON
    /// text (form and GET callers).
    pub server_time_filter: Option<Value>,
}

/// The ranges a read selects: messages must match both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selection {
    /// The message-time range (when the tracker registered the message).
    pub message: Range,
    /// The server-time range (when the message reached the server), if filtered.
    pub server: Option<Range>,
}

/// The parameter names of one range, as the caller writes them.
struct Names {
    from: &'static str,
    to: &'static str,
    interval: &'static str,
}

const MESSAGE: Names = Names {
    from: "from",
    to: "to",
    interval: "interval",
};

const SERVER: Names = Names {
    from: "server_time_filter.from",
    to: "server_time_filter.to",
    interval: "server_time_filter.interval",
};

const SERVER_FILTER: &str = "server_time_filter";

/// Parses and checks a request's time selection.
///
/// Exactly one of `interval` or the pair `from`/`to` is required (for
/// resampling the caller fills in its default `interval` first). The
/// message range must not span more than [`TimeContext::max_span_ms`]
/// (code 211 naming `interval` or `to`); the server range is not limited.
/// All other errors are code 7 naming the parameter.
pub fn parse_selection(
    params: &SelectionParams,
    ctx: &TimeContext,
) -> Result<Selection, TimeError> {
    let message = resolve(
        given(params.from.as_deref()),
        given(params.to.as_deref()),
        given(params.interval.as_deref()),
        &MESSAGE,
        ctx,
    )?;
    if let Some(max_ms) = ctx.max_span_ms {
        let span_ms = message.range.span_ms();
        if span_ms > max_ms {
            return Err(TimeError::span_too_big(message.named_by, span_ms, max_ms));
        }
    }
    let server = server_filter(params.server_time_filter.as_ref(), ctx)?;
    Ok(Selection {
        message: message.range,
        server,
    })
}

/// A range, and the parameter that names it as a whole (`interval` or `to`).
struct Resolved {
    range: Range,
    named_by: &'static str,
}

/// A parameter's text, or `None` if it is absent, empty or blank.
fn given(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|text| !text.is_empty())
}

/// One range from either an interval or a from/to pair.
fn resolve(
    from: Option<&str>,
    to: Option<&str>,
    interval: Option<&str>,
    names: &Names,
    ctx: &TimeContext,
) -> Result<Resolved, TimeError> {
    match (from, to, interval) {
        (None, None, Some(interval)) => Ok(Resolved {
            range: parse_interval(interval, names.interval, ctx)?,
            named_by: names.interval,
        }),
        (Some(_), _, Some(_)) | (_, Some(_), Some(_)) => Err(TimeError::invalid(
            names.interval,
            format!(
                "cannot be combined with `{}`/`{}`: give either `{}` or `{}` and `{}`",
                names.from, names.to, names.interval, names.from, names.to
            ),
        )),
        (Some(from), Some(to), None) => {
            let from_ms = parse_instant(from, names.from, ctx)?;
            let to_ms = parse_instant(to, names.to, ctx)?;
            if to_ms <= from_ms {
                return Err(TimeError::invalid(
                    names.to,
                    format!(
                        "must be after `{}` (the range includes `{}` and excludes `{}`)",
                        names.from, names.from, names.to
                    ),
                ));
            }
            Ok(Resolved {
                range: Range { from_ms, to_ms },
                named_by: names.to,
            })
        }
        (Some(_), None, None) => Err(TimeError::invalid(
            names.to,
            format!("is required with `{}`", names.from),
        )),
        (None, Some(_), None) => Err(TimeError::invalid(
            names.from,
            format!("is required with `{}`", names.to),
        )),
        (None, None, None) => Err(TimeError::invalid(
            names.from,
            format!(
                "is required: give `{}` and `{}`, or `{}`",
                names.from, names.to, names.interval
            ),
        )),
    }
}

/// The server-time range of `server_time_filter`, if one is given.
fn server_filter(value: Option<&Value>, ctx: &TimeContext) -> Result<Option<Range>, TimeError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => server_filter_text(text, ctx),
        Some(Value::Object(members)) => server_filter_object(members, ctx).map(Some),
        Some(_) => Err(filter_shape()),
    }
}

/// A string filter: an interval, or JSON text of an object (or of a string).
fn server_filter_text(text: &str, ctx: &TimeContext) -> Result<Option<Range>, TimeError> {
    let Some(text) = given(Some(text)) else {
        return Ok(None);
    };
    if !text.starts_with(['{', '"']) {
        return parse_interval(text, SERVER_FILTER, ctx).map(Some);
    }
    let value: Value = serde_json::from_str(text).map_err(|err| {
        TimeError::invalid(
            SERVER_FILTER,
            format!("must be an interval or JSON text of an object, but is not valid JSON: {err}"),
        )
    })?;
    match value {
        Value::Object(members) => server_filter_object(&members, ctx).map(Some),
        // One level only: JSON text of JSON text is not unwrapped again.
        Value::String(inner) => match given(Some(&inner)) {
            None => Ok(None),
            Some(inner) => parse_interval(inner, SERVER_FILTER, ctx).map(Some),
        },
        _ => Err(filter_shape()),
    }
}

/// An object filter: `{from, to}` or `{interval}`.
fn server_filter_object(
    members: &Map<String, Value>,
    ctx: &TimeContext,
) -> Result<Range, TimeError> {
    if let Some(unknown) = members
        .keys()
        .find(|key| !matches!(key.as_str(), "from" | "to" | "interval"))
    {
        return Err(TimeError::invalid(
            format!("{SERVER_FILTER}.{unknown}"),
            "is not a member of `server_time_filter`: give `from` and `to`, or `interval`",
        ));
    }
    let member = |name: &str, parameter: &'static str| match members.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(given(Some(text))),
        Some(other) => Err(TimeError::invalid(
            parameter,
            format!("must be a string, got {}", json_kind(other)),
        )),
    };
    let from = member("from", SERVER.from)?;
    let to = member("to", SERVER.to)?;
    let interval = member("interval", SERVER.interval)?;
    resolve(from, to, interval, &SERVER, ctx).map(|resolved| resolved.range)
}

fn filter_shape() -> TimeError {
    TimeError::invalid(
        SERVER_FILTER,
        "must be a string <from>/<to>, or an object with `from` and `to` or with `interval`",
    )
}

/// What kind of JSON value a caller sent, for error messages.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
