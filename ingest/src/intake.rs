//! An intake body: NDJSON lines, each parsed and validated on its own, so a
//! bad line never sinks the batch.

use schemas::{ErrorCode, Message};

use crate::line;

pub use crate::line::{
    DEFAULT_MAX_INNER_ENTRIES, DEFAULT_MAX_MESSAGE_AGE_DAYS, Limit, LineRules, TrackerRef,
};

/// A line that parsed, with its 1-based line number.
#[derive(Debug, Clone)]
pub struct ParsedLine {
    /// Line number in the body, from 1.
    pub line: usize,
    /// The tracker it names, still to be resolved.
    pub tracker: TrackerRef,
    /// The message (its `tracker_id` is set once resolved).
    pub message: Message,
}

/// A line refused, with its 1-based line number, code and reason.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RejectedLine {
    /// Line number in the body, from 1.
    pub line: usize,
    /// The platform error code (7 invalid field, 201 unknown tracker, 208 blocked).
    pub code: u16,
    /// What is wrong, naming the field.
    pub description: String,
    /// The configured limit the line went beyond, if that is why.
    #[serde(skip)]
    pub limit: Option<Limit>,
}

impl RejectedLine {
    /// A rejection with a code and description.
    pub fn new(line: usize, code: ErrorCode, description: impl Into<String>) -> Self {
        Self {
            line,
            code: code.number(),
            description: description.into(),
            limit: None,
        }
    }
}

/// Parses every line of an NDJSON body; blank lines are skipped but counted.
pub fn parse_body(body: &[u8], rules: &LineRules) -> (Vec<ParsedLine>, Vec<RejectedLine>) {
    let mut parsed = Vec::new();
    let mut rejected = Vec::new();
    for (index, raw) in body.split(|b| *b == b'\n').enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line::is_blank(raw) {
            continue;
        }
        match line::parse_line(raw, rules) {
            Ok(ok) => parsed.push(ParsedLine {
                line: index + 1,
                tracker: ok.tracker,
                message: ok.message,
            }),
            Err(e) => rejected.push(RejectedLine {
                line: index + 1,
                code: e.code.number(),
                description: e.description,
                limit: e.limit,
            }),
        }
    }
    (parsed, rejected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_numbered_from_one_counting_blank_ones() {
        let body = b"{\"tracker_id\":1,\"msg_time\":\"2024-06-01T00:00:00Z\"}\n\n{\"bogus\":1}\r\n{\"device_id\":\"356\",\"msg_time\":\"2024-06-01T00:00:01Z\",\"lat\":91}\n";
        let rules = LineRules::at(1_717_200_000_000);
        let (parsed, rejected) = parse_body(body, &rules);
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].line, 1);
        assert_eq!(
            rejected
                .iter()
                .map(|r| (r.line, r.code))
                .collect::<Vec<_>>(),
            [(3, 7), (4, 7)]
        );
        assert!(rejected[0].description.contains("bogus"), "{rejected:?}");
        assert!(rejected[1].description.contains("lat"), "{rejected:?}");
    }
}
