//! Date/time cells: zones, offsets, daylight saving changes, units.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, TimestampMicrosecondArray, TimestampMillisecondArray, TimestampSecondArray,
};
use chrono::DateTime;
use chrono_tz::Tz;

use super::{cells, iso};
use crate::csv::Cell;

fn ms(rfc3339: &str) -> i64 {
    DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .timestamp_millis()
}

fn times(values: &[&str]) -> ArrayRef {
    Arc::new(
        TimestampMillisecondArray::from(values.iter().map(|v| ms(v)).collect::<Vec<_>>())
            .with_timezone("UTC"),
    )
}

#[test]
fn times_are_iso_with_offset_in_the_zone() {
    let zone: Tz = "Asia/Omsk".parse().unwrap();
    assert_eq!(
        cells(
            iso(zone),
            times(&["2024-10-10T07:13:14.999Z", "1969-12-31T23:59:59.5Z"])
        ),
        [
            "\"2024-10-10T13:13:14+0600\"",
            "\"1970-01-01T05:59:59+0600\""
        ]
    );
}

#[test]
fn times_at_a_zero_offset_end_with_z() {
    let instants = times(&["2024-01-15T10:00:00Z", "2024-07-15T10:00:00Z"]);
    assert_eq!(
        cells(iso(Tz::UTC), instants.clone()),
        ["\"2024-01-15T10:00:00Z\"", "\"2024-07-15T10:00:00Z\""]
    );
    assert_eq!(
        cells(iso(Tz::Europe__London), instants),
        ["\"2024-01-15T10:00:00Z\"", "\"2024-07-15T11:00:00+0100\""]
    );
}

#[test]
fn times_follow_daylight_saving_changes() {
    let instants = times(&[
        "2024-03-31T00:59:59Z",
        "2024-03-31T01:00:00Z",
        "2024-03-31T01:59:59Z",
        "2024-10-27T00:59:59Z",
        "2024-10-27T01:00:00Z",
    ]);
    assert_eq!(
        cells(iso(Tz::Europe__Berlin), instants.clone()),
        [
            "\"2024-03-31T01:59:59+0100\"",
            "\"2024-03-31T03:00:00+0200\"",
            "\"2024-03-31T03:59:59+0200\"",
            "\"2024-10-27T02:59:59+0200\"",
            "\"2024-10-27T02:00:00+0100\"",
        ]
    );
    assert_eq!(
        cells(iso(Tz::America__New_York), instants),
        [
            "\"2024-03-30T20:59:59-0400\"",
            "\"2024-03-30T21:00:00-0400\"",
            "\"2024-03-30T21:59:59-0400\"",
            "\"2024-10-26T20:59:59-0400\"",
            "\"2024-10-26T21:00:00-0400\"",
        ]
    );
}

#[test]
fn times_in_zones_off_the_hour() {
    // Lord Howe moves by 30 minutes: +1030 in winter, +1100 in summer.
    assert_eq!(
        cells(
            iso(Tz::Australia__Lord_Howe),
            times(&["2024-06-01T00:00:00Z", "2024-12-01T00:00:00Z"])
        ),
        [
            "\"2024-06-01T10:30:00+1030\"",
            "\"2024-12-01T11:00:00+1100\""
        ]
    );
    assert_eq!(
        cells(iso(Tz::Asia__Kathmandu), times(&["2024-10-10T07:28:14Z"])),
        ["\"2024-10-10T13:13:14+0545\""]
    );
    // A transition at an odd second (local mean time +05:41:16 to +05:30),
    // inside one cache bucket.
    assert_eq!(
        cells(
            iso(Tz::Asia__Kathmandu),
            times(&["1919-12-31T18:18:43Z", "1919-12-31T18:18:44Z"])
        ),
        [
            "\"1919-12-31T23:59:59+0541\"",
            "\"1919-12-31T23:48:44+0530\""
        ]
    );
    assert_eq!(
        cells(iso(Tz::America__New_York), times(&["1960-01-01T00:00:00Z"])),
        ["\"1959-12-31T19:00:00-0500\""]
    );
}

#[test]
fn times_without_iso_are_plain_local_times() {
    let zone: Tz = "Asia/Omsk".parse().unwrap();
    assert_eq!(
        cells(
            Cell::Time { zone, iso: false },
            times(&["2024-10-10T07:13:14Z"])
        ),
        ["\"2024-10-10 13:13:14\""]
    );
}

#[test]
fn times_accept_every_unit_and_nulls() {
    let utc = iso(Tz::UTC);
    assert_eq!(
        cells(
            utc.clone(),
            Arc::new(TimestampSecondArray::from(vec![Some(0), None]).with_timezone("UTC"))
        ),
        ["\"1970-01-01T00:00:00Z\"", "\\N"]
    );
    assert_eq!(
        cells(
            utc.clone(),
            Arc::new(TimestampMicrosecondArray::from(vec![
                -1,
                1_728_544_394_000_001
            ]))
        ),
        ["\"1969-12-31T23:59:59Z\"", "\"2024-10-10T07:13:14Z\""]
    );
    // Beyond chrono's range: no date to write.
    assert_eq!(
        cells(
            utc,
            Arc::new(TimestampMillisecondArray::from(vec![i64::MIN, i64::MAX]))
        ),
        ["\\N", "\\N"]
    );
}
