use std::collections::BTreeMap;

use proptest::prelude::*;
use schemas::{GpsFixType, Message, MnType, StateValue, TrackerId};

use super::*;
use crate::batch::Entry;

fn name() -> impl Strategy<Value = Name> {
    // Short names (inline) and long ones (past `Name`'s 24 inline bytes).
    prop_oneof!["[a-z_]{1,6}", "[a-z0-9_]{25,40}"].prop_map(|n| Name::from(n.as_str()))
}

/// Any finite number (a NaN would not equal itself when read back).
fn finite() -> impl Strategy<Value = f64> {
    any::<f64>().prop_filter("finite", |n| n.is_finite())
}

fn state() -> impl Strategy<Value = StateValue> {
    prop_oneof![
        "[ -~]{0,30}".prop_map(|t| StateValue::Text(Name::from(t.as_str()))),
        finite().prop_map(StateValue::Number),
        any::<bool>().prop_map(StateValue::Flag),
    ]
}

prop_compose! {
    fn scalars()(
        tracker in any::<i64>(),
        times in (any::<i64>(), any::<i64>()),
        gps in proptest::option::of(0u8..4),
        floats in proptest::array::uniform5(proptest::option::of(finite())),
        ints in proptest::array::uniform6(proptest::option::of(any::<i32>())),
        longs in proptest::array::uniform3(proptest::option::of(any::<i64>())),
        mn_name in proptest::option::of("[ -~é]{0,20}"),
        mn_type in proptest::option::of(0u8..6),
    ) -> Message {
        Message {
            tracker_id: TrackerId(tracker),
            message_time_ms: times.0,
            server_time_ms: times.1,
            gps_fix_type: gps.and_then(GpsFixType::from_number),
            lat: floats[0],
            lng: floats[1],
            speed: floats[2],
            alt: ints[0],
            satellites: ints[1],
            heading: ints[2],
            precision: ints[3],
            hdop: floats[3],
            pdop: floats[4],
            event_id: longs[0],
            mn_name,
            mn_roaming: ints[4],
            mn_code: longs[1],
            mn_csq: ints[5],
            mn_type: mn_type.and_then(MnType::from_number),
            flags: longs[2],
            ..Message::default()
        }
    }
}

/// A map's entries in key order, as `Message` keeps its inner lists.
fn sorted<K, V>(map: BTreeMap<K, V>) -> Vec<(K, V)> {
    map.into_iter().collect()
}

prop_compose! {
    fn message()(
        m in scalars(),
        discrete_inputs in proptest::collection::btree_map(1..=u16::MAX, 0u8..2, 0..4),
        discrete_outputs in proptest::collection::btree_map(1..=u16::MAX, 0u8..2, 0..3),
        inputs in proptest::collection::btree_map(name(), finite(), 0..6),
        states in proptest::collection::btree_map(name(), state(), 0..4),
    ) -> Message {
        Message {
            discrete_inputs: sorted(discrete_inputs),
            discrete_outputs: sorted(discrete_outputs),
            inputs: sorted(inputs),
            states: sorted(states),
            ..m
        }
    }
}

proptest! {
    /// A row's WAL encoding is byte for byte the postcard of its `Entry`
    /// (what earlier builds wrote and replay reads), its hash the xxh3 of
    /// the message's postcard with the server time 0 (what earlier builds
    /// stored), and the row reads back as the message it was made from,
    /// whatever the rows before it named.
    #[test]
    fn a_rows_encoding_is_the_postcard_of_its_message(
        messages in proptest::collection::vec(message(), 1..6)
    ) {
        let rows = Rows::from_messages(&messages);
        prop_assert_eq!(rows.len(), messages.len());
        let (mut out, mut scratch) = (vec![0xAA], Vec::new());
        for (row, m) in messages.iter().enumerate() {
            out.truncate(1);
            let hash = rows.encode(row, &mut out, &mut scratch);
            let zeroed = Message { server_time_ms: 0, ..m.clone() };
            let old = xxhash_rust::xxh3::xxh3_64(&postcard::to_stdvec(&zeroed).unwrap());
            prop_assert_eq!(hash, old);
            let entry = Entry { message: m.clone(), content_hash: hash };
            let expected = postcard::to_stdvec(&entry).unwrap();
            prop_assert_eq!(&out[1..], expected.as_slice());
            prop_assert_eq!(&rows.message(row), m);
        }
    }

    /// Rows emptied and filled again (a pooled write's) read back and
    /// encode as rows made afresh: nothing of the rows before them (their
    /// names, text, entries) is left.
    #[test]
    fn rows_filled_again_are_rows_made_afresh(
        before in proptest::collection::vec(message(), 0..6),
        messages in proptest::collection::vec(message(), 0..6),
    ) {
        let mut rows = Rows::from_messages(&before);
        rows.clear();
        prop_assert!(rows.is_empty());
        for m in &messages {
            rows.push_message(m);
        }
        let fresh = Rows::from_messages(&messages);
        prop_assert_eq!(rows.len(), fresh.len());
        prop_assert_eq!(rows.entry_count(), fresh.entry_count());
        prop_assert_eq!(rows.names.len(), fresh.names.len());
        let mut scratch = Vec::new();
        for (row, m) in messages.iter().enumerate() {
            prop_assert_eq!(&rows.message(row), m);
            let (mut out, mut expected) = (Vec::new(), Vec::new());
            let hash = rows.encode(row, &mut out, &mut scratch);
            prop_assert_eq!(hash, fresh.encode(row, &mut expected, &mut scratch));
            prop_assert_eq!(out, expected);
        }
    }

    /// Keeping some rows keeps them whole, in order.
    #[test]
    fn retained_rows_are_the_rows_kept(
        messages in proptest::collection::vec(message(), 0..8),
        mask in proptest::collection::vec(any::<bool>(), 8),
    ) {
        let mut rows = Rows::from_messages(&messages);
        let kept: Vec<usize> = (0..messages.len()).filter(|&i| mask[i]).collect();
        rows.retain(&kept);
        let got: Vec<Message> = (0..rows.len()).map(|row| rows.message(row)).collect();
        let expected: Vec<Message> = kept.iter().map(|&i| messages[i].clone()).collect();
        prop_assert_eq!(got, expected);
    }
}

#[test]
fn a_write_names_each_inner_column_once() {
    let a = Message {
        inputs: vec![("fuel".into(), 1.0), ("lls".into(), 2.0)],
        states: vec![("fuel".into(), StateValue::Flag(true))],
        discrete_inputs: vec![(1, 1)],
        discrete_outputs: vec![(1, 0)],
        ..Message::default()
    };
    let mut b = a.clone();
    b.inputs = vec![("fuel".into(), 3.0)];
    let mut rows = Rows::from_messages([&a, &b, &a]);
    // fuel and lls of inputs, fuel of states, input 1, output 1.
    assert_eq!(rows.names.len(), 5);
    let storage: Vec<String> = (0..5).map(|id| rows.names.get(id).storage_name()).collect();
    assert_eq!(
        storage,
        [
            "discrete_inputs.1",
            "discrete_outputs.1",
            "inputs.fuel",
            "inputs.lls",
            "states.fuel"
        ]
    );
    rows.set_tracker(1, TrackerId(9));
    assert_eq!(rows.message(1).tracker_id, TrackerId(9));
    assert_eq!(rows.message(2), a);
}

#[test]
fn rows_read_back_whole_across_entry_blocks() {
    let inputs = |n: usize, at: usize| -> Vec<(Name, f64)> {
        (0..n)
            .map(|i| (Name::from(format!("in{i:05}")), (at * 10_000 + i) as f64))
            .collect()
    };
    // Rows of 7 entries fill blocks with room left at their ends; a row
    // of more than a block's entries gets one of its own; rows of none
    // take none.
    let mut messages: Vec<Message> = (0..700)
        .map(|at| Message {
            message_time_ms: at as i64,
            inputs: inputs(if at % 50 == 0 { 0 } else { 7 }, at),
            ..Message::default()
        })
        .collect();
    messages.insert(
        350,
        Message {
            inputs: inputs(super::ENTRY_BLOCK + 5, 1),
            ..Message::default()
        },
    );
    messages.insert(0, Message::default());
    let mut rows = Rows::from_messages(&messages);
    let entries: usize = messages.iter().map(|m| m.inputs.len()).sum();
    assert_eq!(rows.entry_count(), entries);
    assert!(
        rows.entries.blocks.len() >= 3,
        "{} blocks",
        rows.entries.blocks.len()
    );
    for (row, m) in messages.iter().enumerate() {
        assert_eq!(&rows.message(row), m, "row {row}");
    }
    let kept: Vec<usize> = (0..messages.len()).filter(|i| i % 3 != 1).collect();
    rows.retain(&kept);
    assert_eq!(
        rows.entry_count(),
        kept.iter()
            .map(|&i| messages[i].inputs.len())
            .sum::<usize>()
    );
    for (row, &i) in kept.iter().enumerate() {
        assert_eq!(rows.message(row), messages[i], "kept row {row}");
    }
    // Emptied, its blocks of the usual size are kept for the next rows
    // (the one of a row larger than a block is not), and serve them.
    rows.clear();
    let spare = rows.entries.spare.len();
    assert!(spare >= 2, "{spare} spare blocks");
    for m in &messages {
        rows.push_message(m);
    }
    assert!(rows.entries.spare.len() < spare, "spare blocks were used");
    assert_eq!(rows.entry_count(), entries);
    for (row, m) in messages.iter().enumerate() {
        assert_eq!(&rows.message(row), m, "row {row} filled again");
    }
}
