//! An intake body: NDJSON lines, each parsed and validated on its own, so a
//! bad line never sinks the batch.

use schemas::ErrorCode;

use crate::line;
use crate::rows::Rows;

pub use crate::line::{
    DEFAULT_MAX_INNER_ENTRIES, DEFAULT_MAX_MESSAGE_AGE_DAYS, Limit, LineRules, TrackerRef,
};

/// The lines of a body that parsed, as the rows of a write: row `i` is
/// line `lines[i]`, naming `trackers[i]`.
#[derive(Debug, Default)]
pub struct ParsedBody {
    /// Each row's line number in the body, from 1.
    pub lines: Vec<usize>,
    /// The tracker each row names, still to be resolved.
    pub trackers: Vec<TrackerRef>,
    /// The rows, their trackers 0 until resolved ([`Rows::set_tracker`]).
    pub rows: Rows,
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

/// The lines of a body refused so far: the first `cap` by line number listed,
/// all of them counted (a body of 22 million bad lines must not answer with
/// 22 million descriptions).
#[derive(Debug, Clone)]
pub struct Rejections {
    /// The `cap` lowest line numbers so far, the highest on top.
    listed: std::collections::BinaryHeap<ByLine>,
    total: usize,
    by_limit: std::collections::HashMap<Limit, usize>,
    cap: usize,
}

impl Rejections {
    /// Lists at most `cap` rejections.
    pub fn new(cap: usize) -> Self {
        Self {
            listed: std::collections::BinaryHeap::new(),
            total: 0,
            by_limit: std::collections::HashMap::new(),
            cap,
        }
    }

    /// Counts a rejection, and lists it if its line is among the first `cap`
    /// pushed so far (whatever order the passes push them in).
    pub fn push(&mut self, rejection: RejectedLine) {
        self.total += 1;
        if let Some(limit) = rejection.limit {
            *self.by_limit.entry(limit).or_default() += 1;
        }
        if self.listed.len() < self.cap {
            self.listed.push(ByLine(rejection));
        } else if self
            .listed
            .peek()
            .is_some_and(|last| rejection.line < last.0.line)
        {
            self.listed.pop();
            self.listed.push(ByLine(rejection));
        }
    }

    /// Every rejection counted, listed or not.
    pub fn total(&self) -> usize {
        self.total
    }

    /// The rejections refused by `limit`.
    pub fn by_limit(&self, limit: Limit) -> usize {
        self.by_limit.get(&limit).copied().unwrap_or(0)
    }

    /// The first `cap` rejections by line number.
    pub fn into_listed(self) -> Vec<RejectedLine> {
        self.listed
            .into_sorted_vec()
            .into_iter()
            .map(|by_line| by_line.0)
            .collect()
    }
}

/// A rejection ordered by its line number alone.
#[derive(Debug, Clone)]
struct ByLine(RejectedLine);

impl PartialEq for ByLine {
    fn eq(&self, other: &Self) -> bool {
        self.0.line == other.0.line
    }
}

impl Eq for ByLine {}

impl PartialOrd for ByLine {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByLine {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.line.cmp(&other.0.line)
    }
}

/// About the bytes of the shortest valid line (`{"tracker_id":1,"msg_time":"2024-06-01T00:00Z"}`):
/// only a bound on what is reserved, not a rule.
const SHORTEST_LINE: usize = 48;
/// Most lines a body's parse reserves room for before reading them.
const PRESIZED_LINES: usize = 65_536;

/// Parses every line of an NDJSON body; blank lines are skipped but counted.
pub fn parse_body(body: &[u8], rules: &LineRules) -> (ParsedBody, Vec<RejectedLine>) {
    let (parsed, rejected) = parse_body_capped(body, rules, usize::MAX);
    (parsed, rejected.into_listed())
}

/// [`parse_body`], listing at most `max_listed` rejections (all are counted).
pub fn parse_body_capped(
    body: &[u8],
    rules: &LineRules,
    max_listed: usize,
) -> (ParsedBody, Rejections) {
    // Sized once for the usual body: grown by doubling, its columns were
    // copied about twice over into fresh memory. Not more than a valid line
    // could fill (a body of line feeds reserves nothing), nor past
    // `PRESIZED_LINES` (beyond, it grows as it fills).
    let lines = memchr::memchr_iter(b'\n', body).count() + 1;
    let presized = lines.min(body.len() / SHORTEST_LINE).min(PRESIZED_LINES);
    let mut parsed = ParsedBody {
        lines: Vec::with_capacity(presized),
        trackers: Vec::with_capacity(presized),
        rows: Rows::with_capacity(presized),
    };
    let mut rejected = Rejections::new(max_listed);
    // Line feeds found by memchr's SIMD search: `split` on a byte closure
    // walked the body a byte at a time, a sixth of the parse.
    let ends = memchr::memchr_iter(b'\n', body).chain(std::iter::once(body.len()));
    let mut start = 0;
    let mut lists = line::Lists::default();
    for (index, end) in ends.enumerate() {
        let raw = &body[start..end];
        start = end + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line::is_blank(raw) {
            continue;
        }
        match line::parse_line_into(raw, rules, &mut lists, &mut parsed.rows) {
            Ok(tracker) => {
                parsed.lines.push(index + 1);
                parsed.trackers.push(tracker);
            }
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
        assert_eq!(parsed.lines, [1]);
        assert_eq!(parsed.rows.len(), 1);
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

    /// A body's lines share the lists their complex members are read
    /// into (`line::Lists`): whatever the line before held (more entries,
    /// fewer, none, or a refusal midway), each line parses exactly as it
    /// does alone, and the limit on entries holds where a long line came
    /// first.
    #[test]
    fn each_line_of_a_body_parses_as_it_would_alone_whatever_came_before() {
        let head = r#""tracker_id":1,"msg_time":"2024-06-01T00:00:00Z""#;
        let inputs = |n: usize| {
            let entries: Vec<String> = (0..n).map(|i| format!("\"in{i}\":{i}.5")).collect();
            format!(
                "{{{head},\"inputs\":{{{}}},\"states\":{{\"s\":\"x\"}}}}",
                entries.join(",")
            )
        };
        let lines = [
            inputs(8),
            inputs(3),
            format!("{{{head}}}"),
            inputs(20),
            format!("{{{head},\"inputs\":{{\"a\":1,\"a\":2}}}}"),
            inputs(1),
            format!(
                "{{{head},\"discrete_inputs\":{{\"1\":1,\"2\":0}},\"states\":{{\"a\":true,\"b\":1,\"c\":\"t\"}}}}"
            ),
            inputs(5),
            inputs(6),
        ];
        let body = lines.join("\n");
        let rules = LineRules {
            max_inner_entries: 5,
            ..LineRules::at(1_717_200_000_000)
        };
        let (parsed, rejected) = parse_body(body.as_bytes(), &rules);
        // Both kinds of line are here: the long ones beyond the limit.
        assert_eq!((parsed.rows.len(), rejected.len()), (5, 4), "{rejected:?}");
        let mut parsed = (0..parsed.rows.len()).map(|row| {
            (
                parsed.lines[row],
                parsed.trackers[row].clone(),
                parsed.rows.message(row),
            )
        });
        let mut rejected = rejected.into_iter();
        for (index, text) in lines.iter().enumerate() {
            match line::parse_line(text.as_bytes(), &rules) {
                Ok(alone) => {
                    let (line, tracker, message) = parsed.next().expect("a parsed line");
                    assert_eq!((line, &tracker), (index + 1, &alone.tracker));
                    assert_eq!(message, alone.message, "line {}", index + 1);
                }
                Err(alone) => {
                    let got = rejected.next().expect("a rejected line");
                    assert_eq!(got.line, index + 1);
                    assert_eq!(
                        (got.description, got.limit),
                        (alone.description, alone.limit)
                    );
                }
            }
        }
        assert!(parsed.next().is_none() && rejected.next().is_none());
    }
}
