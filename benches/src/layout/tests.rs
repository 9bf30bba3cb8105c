use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use schemas::columns;

use super::*;

/// One file, two row groups: tracker 1's 100 rows, then tracker 2's.
fn two_tracker_file(root: &Path) -> PathBuf {
    let schema = Arc::new(Schema::new(vec![
        Field::new(TRACKER_ID, DataType::Int64, false),
        Field::new(MESSAGE_TIME, columns::time_type(), false),
        Field::new("inputs.lls_level_1", DataType::Float64, true),
        Field::new("inputs.board_voltage", DataType::Float64, true),
    ]));
    let trackers: ArrayRef = Arc::new(Int64Array::from_iter_values((0..200).map(|i| 1 + i / 100)));
    let times: ArrayRef = Arc::new(
        TimestampMillisecondArray::from_iter_values((0..200).map(|i| (i % 100) * 1000))
            .with_timezone("UTC"),
    );
    let level: ArrayRef = Arc::new(Float64Array::from_iter_values((0..200).map(f64::from)));
    let volts: ArrayRef = Arc::new(Float64Array::from_iter_values(
        (0..200).map(|i| 12.0 + f64::from(i) / 1e3),
    ));
    let batch = RecordBatch::try_new(schema.clone(), vec![trackers, times, level, volts]).unwrap();
    let properties = WriterProperties::builder()
        .set_max_row_group_row_count(Some(100))
        .build();
    let path = PathBuf::from("f.parquet");
    let file = std::fs::File::create(root.join(&path)).unwrap();
    let mut writer = ArrowWriter::try_new(file, schema, Some(properties)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    path
}

#[test]
fn reads_prune_row_groups_and_count_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let files = [two_tracker_file(dir.path())];
    let file_bytes = std::fs::metadata(dir.path().join(&files[0])).unwrap().len();
    let narrow = measure(
        dir.path(),
        &files,
        TrackerId(2),
        (0, 100_000),
        Some(&PROJECTION),
        false,
    )
    .unwrap();
    let full = measure(dir.path(), &files, TrackerId(2), (0, 100_000), None, false).unwrap();
    assert_eq!(
        (narrow.rows, narrow.row_groups, narrow.column_chunks),
        (100, 1, 3)
    );
    assert_eq!(
        (full.rows, full.row_groups, full.column_chunks),
        (100, 1, 4)
    );
    assert!(narrow.metadata_bytes > 0 && narrow.metadata_bytes == full.metadata_bytes);
    assert!(narrow.bytes < full.bytes && full.bytes < file_bytes);
    // Half of the rows are out of the span: same row group, fewer rows.
    let half = measure(
        dir.path(),
        &files,
        TrackerId(2),
        (50_000, 100_000),
        None,
        false,
    )
    .unwrap();
    assert_eq!((half.rows, half.bytes), (50, full.bytes));
}
