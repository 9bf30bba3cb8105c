use std::io;
use std::path::PathBuf;

use schemas::{ErrorCode, HasCode};

/// Everything that can go wrong in the write-ahead log.
///
/// `pub` (in a private module, re-exported `pub(crate)`) because the crate's
/// public `Error` wraps it: callers can display it, walk its sources and ask
/// for its code, but not name it.
#[derive(Debug, thiserror::Error)]
pub enum WalError {
    /// The WAL directory could not be created.
    #[error("creating WAL directory {path}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The failure.
        #[source]
        source: io::Error,
    },
    /// The WAL directory could not be listed.
    #[error("listing WAL directory {path}")]
    ListDir {
        /// The directory.
        path: PathBuf,
        /// The failure.
        #[source]
        source: io::Error,
    },
    /// A directory could not be synced after files were created or removed.
    #[error("syncing WAL directory {path}")]
    SyncDir {
        /// The directory.
        path: PathBuf,
        /// The failure.
        #[source]
        source: io::Error,
    },
    /// A new segment file could not be created, written or renamed into place.
    #[error("creating WAL segment {segment} at {path}")]
    CreateSegment {
        /// The file.
        path: PathBuf,
        /// The segment's sequence number.
        segment: u64,
        /// The failure.
        #[source]
        source: io::Error,
    },
    /// Reading a segment during recovery failed.
    #[error("reading WAL segment {segment} ({path}) at offset {offset}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The segment's sequence number.
        segment: u64,
        /// Where the read started.
        offset: u64,
        /// The failure.
        #[source]
        source: io::Error,
    },
    /// Appending to a segment (or flushing the buffer into it) failed.
    #[error("writing WAL segment {segment} ({path})")]
    Write {
        /// The file.
        path: PathBuf,
        /// The segment's sequence number.
        segment: u64,
        /// The failure.
        #[source]
        source: io::Error,
    },
    /// `fdatasync` of a segment failed: its unsynced records may be lost.
    #[error("syncing WAL segment {segment} ({path})")]
    Sync {
        /// The file.
        path: PathBuf,
        /// The segment's sequence number.
        segment: u64,
        /// The failure.
        #[source]
        source: io::Error,
    },
    /// Cutting a torn tail off a segment failed.
    #[error("truncating WAL segment {segment} ({path}) at offset {offset}")]
    Truncate {
        /// The file.
        path: PathBuf,
        /// The segment's sequence number.
        segment: u64,
        /// The length it was being cut to.
        offset: u64,
        /// The failure.
        #[source]
        source: io::Error,
    },
    /// A segment (or a leftover temporary segment) could not be deleted.
    #[error("removing WAL segment {segment} ({path})")]
    Remove {
        /// The file.
        path: PathBuf,
        /// The segment's sequence number.
        segment: u64,
        /// The failure.
        #[source]
        source: io::Error,
    },
    /// The thread that creates the next segment ahead could not be started.
    #[error("starting the WAL preparer thread")]
    StartThread(#[source] io::Error),
    /// A non-empty segment file does not start with a valid header.
    #[error("WAL segment {segment} ({path}) has a bad header: {reason}")]
    BadHeader {
        /// The file.
        path: PathBuf,
        /// The sequence number its name claims.
        segment: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A bad record is followed by more data: synced data was damaged.
    #[error("WAL segment {segment} is corrupt at offset {offset}: {reason}")]
    Corrupt {
        /// The segment's sequence number.
        segment: u64,
        /// Where the bad record starts.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// `append` was given an empty payload, which the format does not allow
    /// (an empty record would be indistinguishable from a zero-filled tail).
    #[error("empty WAL records are not allowed")]
    EmptyRecord,
    /// `append` was given a payload over the maximum record size.
    #[error("WAL record of {len} bytes exceeds the maximum of {max} bytes")]
    RecordTooLarge {
        /// The payload's size.
        len: usize,
        /// The maximum payload size.
        max: u32,
    },
    /// An earlier write, sync or roll-over failed, leaving the current
    /// segment's tail unknown; the log must be reopened.
    #[error("an earlier failure left WAL segment {segment} in an unknown state; reopen the log")]
    Poisoned {
        /// The segment that was being written.
        segment: u64,
    },
    /// No sequence number is left after `segment`.
    #[error("WAL segment sequence numbers are exhausted after {segment}")]
    SequenceOverflow {
        /// The highest sequence number in use.
        segment: u64,
    },
    /// The replay callback of `Wal::open` failed on a record.
    #[error("replaying the record of WAL segment {segment} at offset {offset}")]
    Replay {
        /// The record's segment.
        segment: u64,
        /// Where the record starts.
        offset: u64,
        /// What the callback returned.
        #[source]
        source: Box<WalError>,
    },
    /// The replay callback rejected a record's payload (built with
    /// [`WalError::rejected`]).
    #[error("the WAL record's payload was rejected")]
    Rejected(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
}

impl WalError {
    /// Whether the disk failed (full, or an I/O error) rather than the
    /// log's contents: the log heals once the disk takes writes again.
    pub(crate) fn is_storage_failure(&self) -> bool {
        matches!(
            self,
            Self::CreateDir { .. }
                | Self::SyncDir { .. }
                | Self::CreateSegment { .. }
                | Self::Write { .. }
                | Self::Sync { .. }
                | Self::Truncate { .. }
                | Self::Poisoned { .. }
        )
    }

    /// An error for a replay callback to return when it cannot use a
    /// payload (for example, when it does not decode).
    pub(crate) fn rejected(
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        Self::Rejected(source.into())
    }
}

impl HasCode for WalError {
    fn code(&self) -> ErrorCode {
        match self {
            Self::CreateDir { .. }
            | Self::ListDir { .. }
            | Self::SyncDir { .. }
            | Self::CreateSegment { .. }
            | Self::Read { .. }
            | Self::Write { .. }
            | Self::Sync { .. }
            | Self::Truncate { .. }
            | Self::Remove { .. }
            | Self::StartThread(_)
            | Self::Poisoned { .. }
            | Self::EmptyRecord => ErrorCode::Unexpected,
            Self::BadHeader { .. }
            | Self::Corrupt { .. }
            | Self::SequenceOverflow { .. }
            | Self::Rejected(_) => ErrorCode::Database,
            Self::RecordTooLarge { .. } => ErrorCode::TooLargeRequest,
            Self::Replay { source, .. } => source.code(),
        }
    }
}
