use std::collections::{HashMap, HashSet};

use super::*;
use crate::backends::intake_line;
use crate::fleet::{Fleet, FleetConfig};

fn devices(n: i64) -> Vec<Device> {
    (1..=n)
        .map(|i| Device {
            tracker: TrackerId(i),
            device_id: format!("35630704250{i:04}"),
        })
        .collect()
}

fn config(pool_lines: usize) -> StreamConfig {
    StreamConfig {
        pool_lines,
        expected_lines: pool_lines as u64 * 4,
        duplicate_share: 0.015,
        late_share: 0.01,
        midnight_ms: 1_717_200_000_000,
        midnight_at: 0.1,
        warmup_s: 600,
        seed: 17,
        threads: 2,
    }
}

/// Stream line `n` alone.
fn line(pool: &Pool, n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    pool.render(n..n + 1, &mut out);
    out
}

#[test]
fn the_stream_has_duplicates_late_lines_and_a_midnight() {
    let pool = Pool::generate(&devices(200), Format::Intake, &config(40_000)).unwrap();
    let lines = pool.pool_lines() as u64;
    assert!((36_000..44_000).contains(&lines), "{lines}");
    let (fresh, late, duplicates) = pool.kind_counts(0..lines);
    assert_eq!(fresh + late + duplicates, pool.pool_lines());
    assert_eq!(fresh + late, pool.pool_distinct());
    let share = duplicates as f64 / lines as f64;
    assert!((0.01..0.02).contains(&share), "{share}");
    assert!(late > 0);
    assert!(pool.keys.iter().any(|k| k.1 < pool.midnight_ms));
    assert!(pool.keys.iter().any(|k| k.1 >= pool.midnight_ms));
    // Distinct messages have distinct keys: a duplicate is only ever a copy.
    let keys: HashSet<_> = pool.keys.iter().collect();
    assert_eq!(keys.len(), pool.pool_distinct());
    // A copy is byte for byte its original.
    let first_copy = pool
        .kinds
        .iter()
        .position(|k| *k == LineKind::Duplicate)
        .unwrap();
    let original = pool.ids.iter().position(|&id| id == pool.ids[first_copy]);
    assert_eq!(
        line(&pool, first_copy as u64),
        line(&pool, original.unwrap() as u64)
    );
    let parsed: Value = serde_json::from_slice(&line(&pool, 0)).unwrap();
    assert!(parsed.get("device_id").is_some());
    assert!(parsed.get("tracker_id").is_none() && parsed.get("server_time").is_none());
}

#[test]
fn both_formats_carry_the_same_rows_and_bodies_cover_the_stream() {
    let intake = Pool::generate(&devices(50), Format::Intake, &config(5_000)).unwrap();
    let rows = Pool::generate(
        &devices(50),
        Format::ClickHouse { server_time_ms: 1 },
        &config(5_000),
    )
    .unwrap();
    assert_eq!(intake.ids, rows.ids);
    assert_eq!(intake.keys, rows.keys);
    // Bodies of 1,000 lines, the third epoch's included, some across an
    // epoch's end: each decodes to its lines, as rendered.
    let bodies = (3 * intake.pool_lines()).div_ceil(1000);
    for i in 0..bodies {
        let body = intake.body(i, 1000, Compression::Zstd(3)).unwrap();
        assert_eq!(
            (body.index, body.first_line, body.lines),
            (i, i as u64 * 1000, 1000)
        );
        let plain = zstd::decode_all(&body.bytes[..]).unwrap();
        assert_eq!(plain.len(), body.raw_bytes);
        assert_eq!(plain.iter().filter(|&&c| c == b'\n').count(), 1000);
        let mut rendered = Vec::new();
        intake.render(body.first_line..body.first_line + 1000, &mut rendered);
        assert_eq!(plain, rendered);
        assert_eq!(
            intake.body(i, 1000, Compression::None).unwrap().bytes,
            rendered
        );
    }
    let late = (0..rows.pool_lines() as u64 * 2)
        .rev()
        .find(|&n| rows.kind(n) == LineKind::Late)
        .unwrap();
    for n in [0, rows.pool_lines() as u64 + 7, late] {
        let row: Value = serde_json::from_slice(&line(&rows, n)).unwrap();
        let key = rows.key(rows.message(n));
        assert_eq!(row["tracker_id"], key.0);
        assert_eq!(row["msg_time"], key.1);
        // The same message's intake line names its time in ISO.
        let text: Value = serde_json::from_slice(&line(&intake, n)).unwrap();
        assert_eq!(
            text["msg_time"].as_str().unwrap(),
            iso_ms(intake.time_ms(n))
        );
    }
}

/// `ms` as `backends::intake_line` writes it.
fn iso_ms(ms: i64) -> String {
    let seconds = crate::export::iso(ms);
    match ms.rem_euclid(1000) {
        0 => seconds,
        fraction => format!("{}.{fraction:03}Z", seconds.trim_end_matches('Z')),
    }
}

#[test]
fn times_are_written_as_the_intake_line_writes_them() {
    let mut buffer = [0u8; TIME_WIDTH_MAX];
    for ms in [
        0,
        1_717_200_000_000,
        1_717_199_999_999,
        1_709_164_800_000 + 12_345,
        951_782_400_000 - 1,
        4_102_444_799_001,
    ] {
        let width = write_time(&mut buffer, ms, Format::Intake);
        assert_eq!(std::str::from_utf8(&buffer[..width]).unwrap(), iso_ms(ms));
        let width = write_time(&mut buffer, ms, Format::ClickHouse { server_time_ms: 0 });
        if ms >= 1_000_000_000_000 {
            assert_eq!(
                std::str::from_utf8(&buffer[..width]).unwrap(),
                ms.to_string()
            );
        }
    }
    let mut rng = SplitMix64::new(3);
    for _ in 0..10_000 {
        let ms = 1_600_000_000_000 + i64::from(rng.between(0, u32::MAX)) * 97;
        let width = write_time(&mut buffer, ms, Format::Intake);
        assert_eq!(std::str::from_utf8(&buffer[..width]).unwrap(), iso_ms(ms));
    }
}

#[test]
fn keys_stay_unique_across_epochs_and_map_back_to_their_messages() {
    let pool = Pool::generate(&devices(30), Format::Intake, &config(3_000)).unwrap();
    let epochs = 5u64;
    let lines = pool.pool_lines() as u64 * epochs;
    let mut keys: HashMap<(i64, i64), u64> = HashMap::new();
    let mut newest: HashMap<i64, i64> = HashMap::new();
    let mut fresh_per_tracker: HashMap<i64, Vec<i64>> = HashMap::new();
    for n in 0..lines {
        let m = pool.message(n);
        let key = pool.key(m);
        assert_eq!(pool.message_of(key), Some(m), "line {n}");
        match pool.kind(n) {
            LineKind::Duplicate => {
                // A copy repeats a message already sent, in its epoch.
                assert_eq!(keys.get(&key), Some(&m), "line {n}");
            }
            kind => {
                assert!(keys.insert(key, m).is_none(), "line {n}: {key:?} again");
                if kind == LineKind::Fresh {
                    fresh_per_tracker.entry(key.0).or_default().push(key.1);
                    newest.insert(key.0, key.1);
                } else {
                    assert!(key.1 < newest[&key.0] - 60_000, "line {n}: not late");
                }
            }
        }
    }
    // Every message of the epochs, once each: e × D + d.
    assert_eq!(keys.len() as u64, epochs * pool.pool_distinct() as u64);
    assert_eq!(
        keys.values().copied().collect::<HashSet<_>>().len(),
        keys.len()
    );
    // Each tracker's fresh messages go on second after second across epochs.
    for times in fresh_per_tracker.values() {
        assert!(times.windows(2).all(|w| w[1] - w[0] == 1000), "{times:?}");
        assert_eq!(times.len() as i64 * 1000, epochs as i64 * pool.epoch_ms);
    }
    // Keys the stream never has map to nothing.
    let (tracker, time) = pool.key(0);
    assert_eq!(pool.message_of((tracker, time + 1)), None);
    assert_eq!(pool.message_of((tracker, time - pool.epoch_ms)), None);
    assert_eq!(pool.message_of((99_999, time)), None);
}

#[test]
fn later_epochs_differ_from_the_pool_only_in_their_times() {
    let pool = Pool::generate(&devices(20), Format::Intake, &config(2_000)).unwrap();
    let lines = pool.pool_lines() as u64;
    for n in [0, 1, lines / 2, lines - 1] {
        let original = line(&pool, n);
        for epoch in [1, 7, 400] {
            let later = line(&pool, n + epoch * lines);
            assert_eq!(later.len(), original.len());
            let at = pool.time_at[n as usize] as usize;
            let width = if original[at + 19] == b'Z' { 20 } else { 24 };
            assert_eq!(original[..at], later[..at]);
            assert_eq!(original[at + width..], later[at + width..]);
            let parsed: Value = serde_json::from_slice(&later).unwrap();
            assert_eq!(
                parsed["msg_time"].as_str().unwrap(),
                iso_ms(pool.time_ms(n) + epoch as i64 * pool.epoch_ms)
            );
        }
    }
    // A copy in a later epoch is still byte for byte its original there.
    let copy = (0..lines)
        .rev()
        .find(|&n| pool.kind(n) == LineKind::Duplicate)
        .unwrap();
    let original = (0..copy)
        .find(|&n| pool.message(n) == pool.message(copy))
        .unwrap();
    assert_eq!(
        line(&pool, copy + 9 * lines),
        line(&pool, original + 9 * lines)
    );
    assert_ne!(line(&pool, copy + 9 * lines), line(&pool, copy));
}

#[test]
fn kind_counts_are_exact_over_epochs() {
    let pool = Pool::generate(&devices(20), Format::Intake, &config(2_000)).unwrap();
    let lines = pool.pool_lines() as u64;
    let (from, to) = (lines / 3, lines * 3 + 17);
    let mut counts = (0, 0, 0);
    for n in from..to {
        match pool.kind(n) {
            LineKind::Fresh => counts.0 += 1,
            LineKind::Late => counts.1 += 1,
            LineKind::Duplicate => counts.2 += 1,
        }
    }
    assert_eq!(pool.kind_counts(from..to), counts);
    let (fresh, late, copies) = pool.kind_counts(0..lines * 4);
    let (f1, l1, c1) = pool.kind_counts(0..lines);
    assert_eq!((fresh, late, copies), (4 * f1, 4 * l1, 4 * c1));
}

/// The intake line as `backends::intake_line` makes it, by `device_id`.
fn intake_text_by_value(message: &Message, device: &Device) -> String {
    let mut line = match intake_line(message) {
        Value::Object(fields) => fields,
        _ => serde_json::Map::new(),
    };
    line.shift_remove("tracker_id");
    line.shift_remove("server_time");
    line.shift_insert(0, "device_id".into(), Value::from(device.device_id.clone()));
    Value::Object(line).to_string()
}

#[test]
fn lines_are_written_as_intake_line_writes_them() {
    let mut fleet = Fleet::new(&FleetConfig {
        trackers: 40,
        ..FleetConfig::default()
    });
    let device = Device {
        tracker: TrackerId(1),
        device_id: "35630704\"25\\0001".to_owned(),
    };
    // Three simulated hours: parked, idling and driving vehicles, fixes
    // lost and found.
    let mut checked = 0;
    for hour in 0..3 {
        let messages = fleet.next_seconds(3600);
        for (i, mut message) in messages.into_iter().enumerate() {
            if i % 7 != hour {
                continue;
            }
            message.precision = message.precision.filter(|p| *p >= 0);
            if i % 5 == 0 {
                message.message_time_ms += 1 + (i as i64 % 999);
            }
            assert_eq!(
                intake_text(&message, &device),
                intake_text_by_value(&message, &device)
            );
            checked += 1;
        }
    }
    assert!(checked > 40_000);
    // Numbers that are not finite are left out, or null inside an object.
    let mut message = Fleet::new(&FleetConfig::default())
        .next_seconds(1)
        .remove(0);
    message.lat = Some(f64::NAN);
    message.inputs.push(("zz".into(), f64::INFINITY));
    assert_eq!(
        intake_text(&message, &device),
        intake_text_by_value(&message, &device)
    );
}
