//! The storage layout keeps narrow reads cheap: the bound of the issue,
//! measured on 2 days at 1 Hz (the `layout` binary measures 30; see
//! BENCHMARKS.md).

use benches::fleet::MESSAGES_PER_DAY;
use benches::layout::{self, LayoutConfig, LayoutReport};

/// The bound on bytes(tracker_id, msg_time, inputs.lls_level_1) / bytes(every column).
const BOUND: f64 = 0.15;

async fn measure_two_days() -> LayoutReport {
    let dir = tempfile::tempdir().unwrap();
    let report = layout::run(&LayoutConfig::new(2, 1), dir.path())
        .await
        .unwrap();
    assert_eq!(report.ingest.messages, 2 * MESSAGES_PER_DAY);
    assert_eq!(report.ingest.files, 2, "one file per day");
    for comparison in &report.comparisons {
        assert_eq!(comparison.projection.rows, 2 * MESSAGES_PER_DAY);
        assert_eq!(comparison.everything.rows, 2 * MESSAGES_PER_DAY);
    }
    report
}

#[tokio::test]
async fn reading_one_inner_value_touches_under_15_percent_of_a_full_read() {
    let report = measure_two_days().await;
    for comparison in &report.comparisons {
        assert!(
            comparison.ratio() < BOUND,
            "ratio {:.4} (page index: {}): {comparison:?}",
            comparison.ratio(),
            comparison.page_index
        );
    }
}
