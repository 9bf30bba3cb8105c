//! The one error of time selection parsing.

use schemas::{ErrorCode, HasCode};

/// Why a time selection was refused: its code, the parameter, and what is wrong.
///
/// Displays as ``` `<parameter>` <message> ```, the shape of the platform's
/// code 7 descriptions (``Invalid parameters: `to` must be after `from` ``).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{parameter}` {message}")]
pub struct TimeError {
    /// [`ErrorCode::InvalidParameters`] (7) for a malformed or inconsistent
    /// selection, [`ErrorCode::TimeSpanTooBig`] (211) for a range over the limit.
    pub code: ErrorCode,
    /// The failing parameter as the caller wrote it: `from`, `to`,
    /// `interval`, `server_time_filter` or `server_time_filter.<member>`.
    pub parameter: String,
    /// What is wrong, in plain words, phrased to follow the parameter name.
    pub message: String,
}

impl TimeError {
    /// Code 7 naming `parameter`.
    pub(crate) fn invalid(parameter: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: ErrorCode::InvalidParameters,
            parameter: parameter.into(),
            message: message.into(),
        }
    }

    /// Code 211: the range named by `parameter` spans more than `max_ms`.
    pub(crate) fn span_too_big(parameter: &str, span_ms: i64, max_ms: i64) -> Self {
        Self {
            code: ErrorCode::TimeSpanTooBig,
            parameter: parameter.to_owned(),
            message: format!(
                "gives a time span of {}, more than the allowed {}",
                describe_ms(span_ms),
                describe_ms(max_ms)
            ),
        }
    }
}

impl HasCode for TimeError {
    fn code(&self) -> ErrorCode {
        self.code
    }
}

/// A length of time in words: `30 d`, `30 d 0 h 0 min 0.001 s`, `15 min`.
fn describe_ms(ms: i64) -> String {
    const UNITS: [(i64, &str); 3] = [(86_400_000, "d"), (3_600_000, "h"), (60_000, "min")];
    let mut rest = ms.max(0);
    let mut parts = Vec::new();
    for (unit_ms, name) in UNITS {
        let count = rest / unit_ms;
        rest %= unit_ms;
        if count > 0 || !parts.is_empty() {
            parts.push(format!("{count} {name}"));
        }
    }
    if rest > 0 || parts.is_empty() {
        let seconds = rest / 1_000;
        match rest % 1_000 {
            0 => parts.push(format!("{seconds} s")),
            millis => parts.push(format!("{seconds}.{millis:03} s")),
        }
    }
    // Trailing zero parts say nothing: "30 d 0 h 0 min" reads as "30 d".
    while parts.len() > 1 && parts.last().is_some_and(|part| part.starts_with("0 ")) {
        parts.pop();
    }
    parts.join(" ")
}
