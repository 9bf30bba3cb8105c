//! The series reads behind fuel resampling: one tracker's message times and
//! a few columns over a message-time range, whole and in message-time order,
//! ready for the `resample` kernels.
//!
//! The read is [`scan`](crate::scan::scan) (so it prunes files, row groups and
//! columns exactly as the raw data export does, and sees unflushed rows), its
//! batches concatenated once at the end. Memory is about 8 bytes per row per
//! column plus the message time: 7 days at 1 Hz with six columns is 34 MB.

use std::sync::Arc;

use datafusion::arrow::array::{Array, RecordBatch, TimestampMillisecondArray};
use datafusion::arrow::compute::concat_batches;
use datafusion::execution::TaskContext;
use futures::TryStreamExt;
use schemas::TelemetrySnapshot;
use schemas::columns::MESSAGE_TIME;

use crate::scan::{ScanRequest, scan, scan_schema};
use crate::{Error, Result};

/// One tracker's readings: message times (ms) and the requested columns, row for row.
#[derive(Debug, Clone)]
pub struct Readings {
    /// The scan's batch: `tracker_id`, `msg_time`, `server_time`, then the columns asked for.
    pub batch: RecordBatch,
}

impl Readings {
    /// Message times in ms since the epoch, ascending.
    pub fn times(&self) -> Result<&[i64]> {
        let times = self
            .batch
            .column_by_name(MESSAGE_TIME)
            .and_then(|c| c.as_any().downcast_ref::<TimestampMillisecondArray>())
            .ok_or_else(|| Error::Internal("a scan without msg_time".into()))?;
        Ok(times.values())
    }

    /// The column `name` (as requested), if it was requested.
    pub fn column(&self, name: &str) -> Option<&Arc<dyn Array>> {
        self.batch.column_by_name(name)
    }

    /// Rows read.
    pub fn len(&self) -> usize {
        self.batch.num_rows()
    }

    /// Whether no rows were read.
    pub fn is_empty(&self) -> bool {
        self.batch.num_rows() == 0
    }
}

/// Reads `columns` (storage names: `speed`, `inputs.lls_level_1`,
/// `states.ignition`, ...) of `tracker` with message time in `[from, to)`.
pub async fn read_series(
    snapshot: Arc<TelemetrySnapshot>,
    tracker: i64,
    message: (i64, i64),
    columns: Vec<String>,
    ctx: Arc<TaskContext>,
) -> Result<Readings> {
    let schema = scan_schema(&columns)?;
    let request = ScanRequest {
        tracker,
        message: (message.0, message.1.max(message.0)),
        server: None,
        columns,
        batch_size: 65_536,
    };
    let batches: Vec<RecordBatch> = scan(snapshot, request, ctx)?
        .try_collect()
        .await
        .map_err(Error::Plan)?;
    let batch = concat_batches(&schema, &batches).map_err(Error::Arrow)?;
    Ok(Readings { batch })
}
