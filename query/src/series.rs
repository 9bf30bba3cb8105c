//! The series reads behind fuel resampling: one tracker's message times and
//! a few columns over a message-time range, whole and in message-time order,
//! ready for the `resample` kernels.
//!
//! The read is the plan of [`scan`] (so it prunes files,
//! row groups and columns exactly as the raw data export does, and sees
//! unflushed rows), its days run concurrently. Memory is about 8 bytes per row
//! per column plus the key columns: 7 days at 1 Hz with six columns is 43 MB.

use std::sync::Arc;

use datafusion::arrow::array::{Array, RecordBatch, TimestampMillisecondArray};
use datafusion::execution::TaskContext;
use futures::TryStreamExt;
use schemas::TelemetrySnapshot;
use schemas::columns::MESSAGE_TIME;

use crate::scan::{ScanRequest, day_plans, scan};
use crate::{Error, Result};

/// Rows per batch of a series read: give [`read_series`] a task context with
/// this batch size ([`crate::task_context_with_batch_size`]).
pub const BATCH_ROWS: usize = 65_536;

/// One batch's message times (ms) and one of its columns.
pub type Chunk<'a> = (&'a [i64], &'a Arc<dyn Array>);

/// One tracker's readings: message times (ms) and the requested columns,
/// as the scan's batches in message-time order (not concatenated: the
/// caller gathers what it needs from each).
#[derive(Debug, Clone)]
pub struct Readings {
    /// The scan's batches: `tracker_id`, `msg_time`, then the columns asked for.
    pub batches: Vec<RecordBatch>,
}

impl Readings {
    /// Each batch's message times (ms since the epoch, ascending across batches)
    /// with the column `name` (as requested), `None` when it was not requested.
    pub fn chunks<'a>(&'a self, name: &str) -> Result<Option<Vec<Chunk<'a>>>> {
        let mut chunks = Vec::with_capacity(self.batches.len());
        for batch in &self.batches {
            let times = batch
                .column_by_name(MESSAGE_TIME)
                .and_then(|c| c.as_any().downcast_ref::<TimestampMillisecondArray>())
                .ok_or_else(|| Error::Internal("a scan without msg_time".into()))?;
            let Some(column) = batch.column_by_name(name) else {
                return Ok(None);
            };
            chunks.push((times.values().as_ref(), column));
        }
        Ok(Some(chunks))
    }

    /// Rows read.
    pub fn len(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// Whether no rows were read.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Reads `columns` (storage names: `speed`, `inputs.lls_level_1`,
/// `states.ignition`, ...) of `tracker` with message time in `[from, to)`.
///
/// The days are read concurrently, each in its own task (so the runtime's
/// workers share the decoding), and their batches kept in day order.
pub async fn read_series(
    snapshot: Arc<TelemetrySnapshot>,
    tracker: i64,
    message: (i64, i64),
    columns: Vec<String>,
    ctx: Arc<TaskContext>,
) -> Result<Readings> {
    let request = ScanRequest {
        tracker,
        message: (message.0, message.1.max(message.0)),
        server: None,
        columns,
        batch_size: BATCH_ROWS,
        with_server_time: false,
        string_views: true,
    };
    if snapshot.clickhouse.is_some() {
        // One query: ClickHouse reads the days in parallel itself.
        let batches: Vec<RecordBatch> = scan(snapshot, request, ctx)?
            .try_collect()
            .await
            .map_err(Error::Plan)?;
        return Ok(Readings {
            batches: batches.into_iter().filter(|b| b.num_rows() > 0).collect(),
        });
    }
    let (_, plans) = day_plans(&snapshot, &request, &ctx)?;
    // The plans hold copies of the memtable rows they read: from here on
    // only the files are needed (see `TelemetrySnapshot::files_only`).
    let files = Arc::new(snapshot.files_only());
    drop(snapshot);
    let tasks: Vec<_> = plans
        .into_iter()
        .map(|plan| {
            let ctx = ctx.clone();
            // Each task holds the files on disk while it reads.
            let files = files.clone();
            tokio::spawn(async move {
                let _files = files;
                plan.execute(0, ctx)?.try_collect::<Vec<_>>().await
            })
        })
        .collect();
    let mut batches = Vec::new();
    for task in tasks {
        let day = task
            .await
            .map_err(|e| Error::Internal(format!("a day's read failed: {e}")))?
            .map_err(Error::Plan)?;
        batches.extend(day.into_iter().filter(|b| b.num_rows() > 0));
    }
    Ok(Readings { batches })
}
