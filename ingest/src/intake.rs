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
        self.list(rejection);
    }

    /// Adds the rejections of another part of the same body (another
    /// [`Chunk`]: its lines numbered as the body's), keeping the first
    /// `cap` of both by line number.
    pub fn absorb(&mut self, other: Self) {
        self.total += other.total;
        for (limit, count) in other.by_limit {
            *self.by_limit.entry(limit).or_default() += count;
        }
        for ByLine(rejection) in other.listed {
            self.list(rejection);
        }
    }

    /// Lists `rejection` if its line is among the first `cap` listed so
    /// far (it is counted already).
    fn list(&mut self, rejection: RejectedLine) {
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

/// A part of a body, cut at line feeds: the body's bytes `range`, whose
/// first line is line `first_line` of the body (from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The chunk's bytes in the body: whole lines, the last one's line
    /// feed included (but at the body's end).
    pub range: std::ops::Range<usize>,
    /// The body's line number of the chunk's first line.
    pub first_line: usize,
}

/// Cuts `body` into chunks of whole lines, each `chunk_bytes` long or a
/// line more (up to its next line feed); a body of `chunk_bytes` or fewer
/// (an empty one included) is one chunk. Parsed one by one
/// ([`parse_lines_capped`]), the chunks give the rows and rejections of
/// the whole body, numbered alike.
pub fn chunks(body: &[u8], chunk_bytes: usize) -> Vec<Chunk> {
    let chunk_bytes = chunk_bytes.max(1);
    let mut chunks = Vec::with_capacity(body.len() / chunk_bytes + 1);
    let (mut start, mut first_line) = (0_usize, 1);
    loop {
        let end = match start.checked_add(chunk_bytes) {
            Some(at) if at < body.len() => {
                memchr::memchr(b'\n', &body[at..]).map_or(body.len(), |feed| at + feed + 1)
            }
            _ => body.len(),
        };
        chunks.push(Chunk {
            range: start..end,
            first_line,
        });
        if end >= body.len() {
            return chunks;
        }
        first_line += memchr::memchr_iter(b'\n', &body[start..end]).count();
        start = end;
    }
}

/// The buffers chunks are cut into ([`Chunker`]), kept across requests: a
/// chunk of a megabyte in a fresh allocation is first touched page by page
/// as the body is copied in, and under full intake those page faults took
/// half of the request threads' time in the kernel (`perf`: 53 of 115
/// page-fault samples in [`Chunker::push`]; the allocator returns a freed
/// chunk's pages to the system 50 ms later, so the next body's chunks
/// fault them in again). A buffer is given back once its chunk is parsed
/// ([`give_bytes`](Self::give_bytes)); at most `max_idle` are kept idle,
/// and only of the usual size.
#[derive(Debug)]
pub struct ChunkBuffers {
    chunk_bytes: usize,
    buffers: crate::buffers::Buffers,
}

impl ChunkBuffers {
    /// Buffers for chunks of `chunk_bytes` (or a line more), at most
    /// `max_idle` kept between requests.
    pub fn new(chunk_bytes: usize, max_idle: usize) -> Self {
        let chunk_bytes = chunk_bytes.max(1);
        // A chunk and a line, up to 16 MiB.
        let room = chunk_bytes.saturating_add(4_096).min(1 << 24);
        Self {
            chunk_bytes,
            buffers: crate::buffers::Buffers::new(room, max_idle),
        }
    }

    /// What a chunk's buffer reserves.
    #[cfg(test)]
    fn room(&self) -> usize {
        self.buffers.room()
    }

    /// An empty buffer with room for a chunk and a line: an idle one if any.
    pub fn take(&self) -> Vec<u8> {
        self.buffers.take()
    }

    /// Keeps `buffer` for a later chunk, unless enough are idle or it grew
    /// past twice the usual room (a chunk ending in a very long line).
    pub fn give(&self, buffer: Vec<u8>) {
        self.buffers.give(buffer);
    }

    /// [`give`](Self::give) for a chunk handed on as [`bytes::Bytes`]:
    /// taken back only if nothing else holds it (a chunk of a decoded
    /// body is a slice of it, and is simply dropped).
    pub fn give_bytes(&self, chunk: bytes::Bytes) {
        if let Ok(unique) = chunk.try_into_mut() {
            self.give(unique.into());
        }
    }

    /// Buffers idle now.
    pub fn idle(&self) -> usize {
        self.buffers.idle()
    }
}

/// [`chunks`] as a body arrives: the bytes received are pushed in, and
/// each chunk is handed out as soon as it is whole, the same chunks
/// [`chunks`] cuts from the body received whole.
#[derive(Debug)]
pub struct Chunker {
    chunk_bytes: usize,
    /// Where each chunk's buffer comes from.
    buffers: std::sync::Arc<ChunkBuffers>,
    /// The bytes received after the last chunk handed out.
    buffer: Vec<u8>,
    /// The body's line number of the buffer's first line.
    first_line: usize,
    /// The buffer holds no line feed from `chunk_bytes` up to here.
    searched: usize,
    /// Whether a chunk was handed out (a body always has one).
    cut: bool,
}

impl Chunker {
    /// Chunks of `buffers`' chunk length, or a line more, each in one of
    /// its buffers.
    pub fn new(buffers: std::sync::Arc<ChunkBuffers>) -> Self {
        Self {
            chunk_bytes: buffers.chunk_bytes,
            buffers,
            buffer: Vec::new(),
            first_line: 1,
            searched: 0,
            cut: false,
        }
    }

    /// Adds bytes received; each chunk they complete is passed to `ready`
    /// with its first line's number.
    pub fn push(&mut self, mut data: &[u8], mut ready: impl FnMut(Vec<u8>, usize)) {
        while !data.is_empty() {
            if self.buffer.len() <= self.chunk_bytes {
                // Up to one byte past a chunk's length, no more: whole
                // chunks are copied once, however large the pieces.
                if self.buffer.capacity() == 0 {
                    self.buffer = self.buffers.take();
                }
                let wanted = self.chunk_bytes.saturating_add(1) - self.buffer.len();
                let (head, rest) = data.split_at(wanted.min(data.len()));
                self.buffer.extend_from_slice(head);
                data = rest;
                if self.buffer.len() <= self.chunk_bytes {
                    continue;
                }
            }
            // The chunk ends at the first line feed from `chunk_bytes` on.
            let from = self.searched.max(self.chunk_bytes);
            if let Some(at) = memchr::memchr(b'\n', &self.buffer[from..]) {
                self.hand_out(from + at + 1, &mut ready);
                continue;
            }
            self.searched = self.buffer.len();
            match memchr::memchr(b'\n', data) {
                Some(at) => {
                    let (line_end, rest) = data.split_at(at + 1);
                    self.buffer.extend_from_slice(line_end);
                    data = rest;
                    self.hand_out(self.buffer.len(), &mut ready);
                }
                None => {
                    // The line goes on in later bytes.
                    self.buffer.extend_from_slice(data);
                    data = &[];
                }
            }
        }
    }

    /// At the end of the body, the last chunk: what is left, and its first
    /// line's number. `None` when the body ended with a chunk's line feed
    /// (an empty body is one empty chunk), and on every later call.
    pub fn finish(&mut self) -> Option<(Vec<u8>, usize)> {
        let last = (!self.cut || !self.buffer.is_empty())
            .then(|| (std::mem::take(&mut self.buffer), self.first_line));
        self.cut = true;
        last
    }

    /// Hands out the buffer's first `end` bytes as a chunk.
    fn hand_out(&mut self, end: usize, ready: &mut impl FnMut(Vec<u8>, usize)) {
        let mut next = self.buffers.take();
        next.extend_from_slice(&self.buffer[end..]);
        self.searched = 0;
        self.buffer.truncate(end);
        let chunk = std::mem::replace(&mut self.buffer, next);
        let first_line = self.first_line;
        self.first_line += memchr::memchr_iter(b'\n', &chunk).count();
        self.cut = true;
        ready(chunk, first_line);
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
    parse_lines_capped(body, 1, rules, max_listed)
}

/// [`parse_body_capped`] on a part of a body (a [`Chunk`]) whose first line
/// is line `first_line` of the body: rows and rejections are numbered as
/// lines of the whole body.
pub fn parse_lines_capped(
    body: &[u8],
    first_line: usize,
    rules: &LineRules,
    max_listed: usize,
) -> (ParsedBody, Rejections) {
    parse_lines_into(body, first_line, rules, max_listed, Rows::default())
}

/// [`parse_lines_capped`] into `rows` (emptied first): a pooled write's
/// columns ([`crate::Preparer::empty_rows`]).
pub fn parse_lines_into(
    body: &[u8],
    first_line: usize,
    rules: &LineRules,
    max_listed: usize,
    mut rows: Rows,
) -> (ParsedBody, Rejections) {
    // Sized once for the usual body: grown by doubling, its columns were
    // copied about twice over into fresh memory. Not more than a valid line
    // could fill (a body of line feeds reserves nothing), nor past
    // `PRESIZED_LINES` (beyond, it grows as it fills).
    let lines = memchr::memchr_iter(b'\n', body).count() + 1;
    let presized = lines.min(body.len() / SHORTEST_LINE).min(PRESIZED_LINES);
    rows.clear();
    rows.reserve(presized);
    let mut parsed = ParsedBody {
        lines: Vec::with_capacity(presized),
        trackers: Vec::with_capacity(presized),
        rows,
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
                parsed.lines.push(first_line + index);
                parsed.trackers.push(tracker);
            }
            Err(e) => rejected.push(RejectedLine {
                line: first_line + index,
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

    /// A line of a generated body: valid, refused (by a rule or as JSON),
    /// blank, or ended by `\r\n`.
    fn generated_line(kind: u8, n: u32) -> String {
        let head = format!(
            r#""tracker_id":{},"msg_time":"2024-06-01T00:00:{:02}Z""#,
            n % 7 + 1,
            n % 60
        );
        match kind % 6 {
            0 => format!(
                "{{{head},\"lat\":{}.5,\"inputs\":{{\"fuel\":{n}}}}}",
                n % 80
            ),
            1 => format!("{{{head},\"lat\":91}}"),
            2 => "{\"tracker_id\":".to_owned(),
            3 => String::new(),
            4 => format!("{{{head},\"states\":{{\"s\":\"x{n}\"}}}}\r"),
            _ => format!("{{\"device_id\":\"35{n}\",\"msg_time\":\"2024-06-01T00:00:00Z\"}}"),
        }
    }

    proptest::proptest! {
        /// A body parsed chunk by chunk, whatever the chunks' size, gives
        /// the rows, line numbers and rejections (listed up to the cap, and
        /// counted) of the body parsed whole; each chunk is parsed into the
        /// rows of the one before (as the intake's pool hands them on),
        /// which hold nothing of it.
        #[test]
        fn a_body_parsed_in_chunks_is_the_body_parsed_whole(
            lines in proptest::collection::vec((0_u8..6, 0_u32..1_000), 0..60),
            chunk_bytes in 1_usize..600,
            cap in 1_usize..8,
            final_feed: bool,
        ) {
            let mut body = lines
                .iter()
                .map(|&(kind, n)| generated_line(kind, n))
                .collect::<Vec<_>>()
                .join("\n");
            if final_feed {
                body.push('\n');
            }
            let body = body.as_bytes();
            let rules = LineRules::at(1_717_200_000_000);
            let (whole, whole_rejected) = parse_body_capped(body, &rules, cap);
            let chunks = chunks(body, chunk_bytes);
            let mut rejected = Rejections::new(cap);
            let mut rows = Vec::new();
            let mut next = 0;
            let mut reused = Rows::default();
            for chunk in &chunks {
                proptest::prop_assert_eq!(chunk.range.start, next, "chunks are contiguous");
                next = chunk.range.end;
                let (part, part_rejected) = parse_lines_into(
                    &body[chunk.range.clone()],
                    chunk.first_line,
                    &rules,
                    cap,
                    reused,
                );
                rejected.absorb(part_rejected);
                rows.extend((0..part.rows.len()).map(|row| {
                    (part.lines[row], part.trackers[row].clone(), part.rows.message(row))
                }));
                reused = part.rows;
            }
            proptest::prop_assert_eq!(next, body.len(), "the chunks cover the body");
            let whole_rows: Vec<_> = (0..whole.rows.len())
                .map(|row| (whole.lines[row], whole.trackers[row].clone(), whole.rows.message(row)))
                .collect();
            proptest::prop_assert_eq!(rows, whole_rows);
            proptest::prop_assert_eq!(rejected.total(), whole_rejected.total());
            proptest::prop_assert_eq!(rejected.into_listed(), whole_rejected.into_listed());
        }
    }

    proptest::proptest! {
        /// Chunks cut as a body arrives, in pieces of any size, are the
        /// chunks of the body received whole.
        #[test]
        fn a_body_cut_as_it_arrives_is_cut_as_a_whole_one(
            lines in proptest::collection::vec(0_usize..40, 0..50),
            final_feed: bool,
            pieces in proptest::collection::vec(1_usize..300, 1..20),
            chunk_bytes in 1_usize..200,
        ) {
            let mut body = lines
                .iter()
                .map(|&n| "x".repeat(n))
                .collect::<Vec<_>>()
                .join("\n");
            if final_feed {
                body.push('\n');
            }
            let body = body.as_bytes();
            let whole: Vec<(Vec<u8>, usize)> = chunks(body, chunk_bytes)
                .into_iter()
                .map(|chunk| (body[chunk.range].to_vec(), chunk.first_line))
                .collect();
            // Each chunk's buffer given back as soon as it is read (every
            // other one as `Bytes`, as the intake hands them on): later
            // chunks are cut into buffers that held earlier ones.
            let buffers = std::sync::Arc::new(ChunkBuffers::new(chunk_bytes, 2));
            let mut chunker = Chunker::new(buffers.clone());
            let mut arrived = Vec::new();
            let mut rest = body;
            let keep = |chunk: Vec<u8>, first_line: usize, arrived: &mut Vec<(Vec<u8>, usize)>| {
                arrived.push((chunk.clone(), first_line));
                if arrived.len() % 2 == 0 {
                    buffers.give(chunk);
                } else {
                    buffers.give_bytes(chunk.into());
                }
            };
            for size in pieces.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (piece, after) = rest.split_at((*size).min(rest.len()));
                chunker.push(piece, |chunk, first_line| keep(chunk, first_line, &mut arrived));
                rest = after;
            }
            if let Some((chunk, first_line)) = chunker.finish() {
                keep(chunk, first_line, &mut arrived);
            }
            proptest::prop_assert!(buffers.idle() <= 2);
            proptest::prop_assert_eq!(arrived, whole);
            proptest::prop_assert_eq!(chunker.finish(), None);
        }
    }

    #[test]
    fn chunk_buffers_are_kept_for_later_chunks_up_to_their_limit() {
        let buffers = ChunkBuffers::new(1_000, 1);
        let first = buffers.take();
        let room = first.capacity();
        assert!(room >= 1_000 + 4_096);
        let address = first.as_ptr();
        // Handed on as `Bytes` and given back once parsed: the same memory.
        let mut chunk = first;
        chunk.extend_from_slice(b"{\"tracker_id\":1}\n");
        buffers.give_bytes(bytes::Bytes::from(chunk));
        assert_eq!(buffers.idle(), 1);
        let again = buffers.take();
        assert_eq!((again.as_ptr(), again.len()), (address, 0));
        assert!(again.capacity() >= room);
        // Beyond the limit, or shared, or grown large: dropped.
        buffers.give(again);
        buffers.give(Vec::with_capacity(buffers.room()));
        assert_eq!(buffers.idle(), 1);
        let shared = bytes::Bytes::from(buffers.take());
        let _other = shared.clone();
        buffers.give_bytes(shared);
        assert_eq!(buffers.idle(), 0);
        let mut large = buffers.take();
        large.reserve(room * 3);
        buffers.give(large);
        assert_eq!(buffers.idle(), 0);
    }

    #[test]
    fn a_body_is_cut_after_line_feeds_and_its_chunks_numbered_by_line() {
        let body = b"aaaa\nbb\n\ncccccc\nd";
        let cut: Vec<_> = chunks(body, 3)
            .into_iter()
            .map(|chunk| (&body[chunk.range], chunk.first_line))
            .collect();
        assert_eq!(
            cut,
            [
                (&b"aaaa\n"[..], 1),
                (&b"bb\n\n"[..], 2),
                (&b"cccccc\n"[..], 4),
                (&b"d"[..], 5),
            ]
        );
        assert_eq!(
            chunks(b"", 3),
            [Chunk {
                range: 0..0,
                first_line: 1
            }]
        );
        assert_eq!(
            chunks(body, 1_000),
            [Chunk {
                range: 0..body.len(),
                first_line: 1
            }]
        );
    }
}
