//! Lines gathered into request bodies, each remembering where its lines came from.
//!
//! The intake numbers the lines of a body from 1 and reports rejections by
//! that number; a [`Batch`] maps it back to the source and line it was read
//! from, keeping one entry per run of consecutive lines rather than per line.

/// Where a line came from: a source (file) by index, and its line number there, from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Origin {
    /// Index of the source in the sender's list of source names.
    pub(crate) source: u32,
    /// Line number in the source, from 1.
    pub(crate) line: u64,
}

/// How large one request body may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchLimits {
    /// Bytes of NDJSON before compression (a single longer line still makes a batch of its own).
    pub(crate) max_bytes: usize,
    /// Lines.
    pub(crate) max_lines: usize,
}

impl Default for BatchLimits {
    fn default() -> Self {
        Self {
            max_bytes: 8 * 1024 * 1024,
            max_lines: 50_000,
        }
    }
}

/// Body lines `body_line..` are lines `origin.line..` of `origin.source`.
#[derive(Debug, Clone, Copy)]
struct Run {
    body_line: u64,
    origin: Origin,
}

/// One request body: NDJSON lines, and where each came from.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// The lines, each ended by a line feed.
    pub(crate) body: Vec<u8>,
    /// Lines in `body`.
    pub(crate) lines: u64,
    /// Bytes of the sources (as stored, e.g. gzip) consumed for this batch, for progress.
    pub(crate) source_bytes: u64,
    /// Sorted by `body_line`; a new run starts wherever the source or its numbering jumps.
    runs: Vec<Run>,
}

impl Batch {
    fn push(&mut self, line: &[u8], origin: Origin) {
        self.lines += 1;
        let continues = self.runs.last().is_some_and(|run| {
            run.origin.source == origin.source
                && run.origin.line + (self.lines - run.body_line) == origin.line
        });
        if !continues {
            self.runs.push(Run {
                body_line: self.lines,
                origin,
            });
        }
        self.body.extend_from_slice(line);
        self.body.push(b'\n');
    }

    /// Where body line `line` (numbered from 1, as the intake numbers them) came from.
    pub(crate) fn origin(&self, line: u64) -> Option<Origin> {
        if line == 0 || line > self.lines {
            return None;
        }
        let index = self
            .runs
            .partition_point(|run| run.body_line <= line)
            .checked_sub(1)?;
        let run = self.runs.get(index)?;
        Some(Origin {
            source: run.origin.source,
            line: run.origin.line + (line - run.body_line),
        })
    }
}

/// Cuts a stream of lines into [`Batch`]es within [`BatchLimits`].
#[derive(Debug)]
pub(crate) struct Batcher {
    limits: BatchLimits,
    current: Batch,
}

impl Batcher {
    pub(crate) fn new(limits: BatchLimits) -> Self {
        Self {
            limits: BatchLimits {
                max_bytes: limits.max_bytes.max(1),
                max_lines: limits.max_lines.max(1),
            },
            current: Batch::default(),
        }
    }

    /// Adds `line` (without its line feed, which it must not contain); returns
    /// the batch that had no room left for it, if any.
    pub(crate) fn push(&mut self, line: &[u8], origin: Origin) -> Option<Batch> {
        let full = self.current.lines > 0
            && (self.current.lines >= self.limits.max_lines as u64
                || self.current.body.len() + line.len() + 1 > self.limits.max_bytes);
        let done = full.then(|| self.take());
        self.current.push(line, origin);
        done
    }

    /// Counts `bytes` of source input towards the batch being filled.
    pub(crate) fn add_source_bytes(&mut self, bytes: u64) {
        self.current.source_bytes += bytes;
    }

    /// The last, partly filled batch, if it holds any line.
    pub(crate) fn finish(mut self) -> Option<Batch> {
        (self.current.lines > 0).then(|| self.take())
    }

    fn take(&mut self) -> Batch {
        // The next batch will likely be as large as this one: allocate once.
        let capacity = self.current.body.len().min(self.limits.max_bytes);
        std::mem::replace(
            &mut self.current,
            Batch {
                body: Vec::with_capacity(capacity),
                ..Batch::default()
            },
        )
    }
}

/// Whether a line holds only JSON whitespace; the intake skips such lines (but counts them).
pub(crate) fn is_blank(line: &[u8]) -> bool {
    line.iter()
        .all(|byte| matches!(byte, b' ' | b'\t' | b'\n' | b'\r'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(source: u32, line: u64) -> Origin {
        Origin { source, line }
    }

    #[test]
    fn body_lines_map_back_to_their_source_lines() {
        let mut batcher = Batcher::new(BatchLimits::default());
        // Lines 1-3 of source 0, line 5 of source 0 (4 was blank), lines 1-2 of source 1.
        for origin in [at(0, 1), at(0, 2), at(0, 3), at(0, 5), at(1, 1), at(1, 2)] {
            assert!(batcher.push(b"{}", origin).is_none());
        }
        let batch = batcher.finish().unwrap();
        assert_eq!(batch.lines, 6);
        assert_eq!(batch.body, b"{}\n{}\n{}\n{}\n{}\n{}\n");
        assert_eq!(batch.runs.len(), 3);
        let mapped: Vec<_> = (0..=7).map(|line| batch.origin(line)).collect();
        assert_eq!(
            mapped,
            [
                None,
                Some(at(0, 1)),
                Some(at(0, 2)),
                Some(at(0, 3)),
                Some(at(0, 5)),
                Some(at(1, 1)),
                Some(at(1, 2)),
                None
            ]
        );
    }

    #[test]
    fn batches_are_cut_by_lines_and_by_bytes() {
        let mut batcher = Batcher::new(BatchLimits {
            max_bytes: 10,
            max_lines: 3,
        });
        let mut batches = Vec::new();
        for (i, line) in ["a", "b", "c", "d", "eeeeeee", "f"].iter().enumerate() {
            batches.extend(batcher.push(line.as_bytes(), at(0, i as u64 + 1)));
        }
        batches.extend(batcher.finish());
        let bodies: Vec<&[u8]> = batches.iter().map(|b| b.body.as_slice()).collect();
        assert_eq!(bodies, [&b"a\nb\nc\n"[..], b"d\neeeeeee\n", b"f\n"]);
        assert_eq!(batches[1].origin(2), Some(at(0, 5)));
        assert_eq!(batches[2].origin(1), Some(at(0, 6)));
        // A line longer than the limit still travels, alone.
        let mut batcher = Batcher::new(BatchLimits {
            max_bytes: 4,
            max_lines: 10,
        });
        assert!(batcher.push(b"0123456789", at(0, 1)).is_none());
        let alone = batcher.push(b"x", at(0, 2)).unwrap();
        assert_eq!(alone.lines, 1);
    }

    #[test]
    fn blank_means_json_whitespace_only() {
        assert!(is_blank(b""));
        assert!(is_blank(b" \t\r"));
        assert!(!is_blank(b" x "));
    }
}
