use std::collections::BTreeSet;

use super::*;

fn present(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

fn headers(plan: &ColumnPlan) -> Vec<&str> {
    plan.outputs.iter().map(|o| o.header.as_str()).collect()
}

fn req(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

#[test]
fn msg_time_first_then_the_requested_order_with_expansion_in_place() {
    let have = present(&[
        "inputs.b",
        "inputs.a",
        "discrete_inputs.2",
        "discrete_inputs.1",
        "states.ignition",
    ]);
    let plan = plan_columns(
        &req(&["lat", "inputs.*", "msg_time", "discrete_inputs.*", "speed"]),
        &have,
        1_024,
    )
    .unwrap();
    assert_eq!(
        headers(&plan),
        [
            "msg_time",
            "lat",
            "inputs.a",
            "inputs.b",
            "discrete_inputs.1",
            "discrete_inputs.2",
            "speed"
        ]
    );
    assert_eq!(
        plan.scan_columns,
        [
            "lat",
            "inputs.a",
            "inputs.b",
            "discrete_inputs.1",
            "discrete_inputs.2",
            "speed"
        ]
    );
    assert_eq!(plan.scan_index("inputs.b"), Some(5));
    assert_eq!(plan.scan_index("msg_time"), Some(1));
}

#[test]
fn expansion_with_nothing_present_adds_nothing_and_unknown_inner_is_null() {
    let plan = plan_columns(
        &req(&["states.*", "inputs.nope", "flags.nope"]),
        &present(&["inputs.a"]),
        1_024,
    )
    .unwrap();
    assert_eq!(headers(&plan), ["msg_time", "inputs.nope", "flags.nope"]);
    assert_eq!(plan.outputs[1].output, Output::Null);
    assert_eq!(plan.outputs[2].output, Output::Null);
    assert!(plan.scan_columns.is_empty());
}

#[test]
fn complex_columns_without_inner_name_are_maps_and_flags_bits() {
    let have = present(&["inputs.fuel", "inputs.lls_level_1", "states.mode"]);
    let plan = plan_columns(
        &req(&["inputs", "flags", "flags.lbs", "flags.location_valid"]),
        &have,
        1_024,
    )
    .unwrap();
    assert_eq!(
        plan.outputs[1].output,
        Output::Map(
            InnerKind::Inputs,
            vec!["inputs.fuel".into(), "inputs.lls_level_1".into()]
        )
    );
    assert_eq!(plan.outputs[2].output, Output::Flags);
    assert_eq!(plan.outputs[3].output, Output::FlagBit(1));
    assert_eq!(plan.outputs[4].output, Output::FlagBit(0));
    assert_eq!(
        plan.scan_columns,
        ["inputs.fuel", "inputs.lls_level_1", "flags"]
    );
}

#[test]
fn unknown_columns_are_named() {
    for bad in ["latitude", "inputs.", "gps", "foo.bar", ""] {
        let err = plan_columns(&req(&[bad]), &BTreeSet::new(), 1_024).unwrap_err();
        assert!(
            matches!(&err, Error::UnknownColumn { column } if column == bad),
            "{bad}: {err:?}"
        );
    }
}

#[test]
fn repeated_columns_are_written_once_where_they_first_appear() {
    let have = present(&["inputs.a", "inputs.b"]);
    let plan = plan_columns(
        &req(&["inputs.b", "lat", "inputs.*", "lat", " lat "]),
        &have,
        1_024,
    )
    .unwrap();
    let headers: Vec<&str> = plan.outputs.iter().map(|o| o.header.as_str()).collect();
    assert_eq!(headers, ["msg_time", "inputs.b", "lat", "inputs.a"]);
    assert_eq!(plan.scan_columns, ["inputs.b", "lat", "inputs.a"]);
}

#[test]
fn more_columns_than_the_limit_are_refused_before_and_after_expansion() {
    let have = present(&["inputs.a", "inputs.b", "inputs.c"]);
    // Three explicit columns, or one expanding to three: the limit is 3.
    assert!(plan_columns(&req(&["lat", "lng", "speed"]), &have, 3).is_ok());
    assert!(plan_columns(&req(&["inputs.*"]), &have, 3).is_ok());
    let err = plan_columns(&req(&["lat", "inputs.*"]), &have, 3).unwrap_err();
    assert!(
        matches!(err, Error::TooManyColumns { columns: 4, max: 3 }),
        "{err:?}"
    );
    // A long list is refused before it is looked at, repeats or not.
    let long: Vec<String> = std::iter::repeat_n("lat".to_owned(), 100_000).collect();
    let err = plan_columns(&long, &have, 1_024).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooManyColumns {
                columns: 100_000,
                max: 1_024
            }
        ),
        "{err:?}"
    );
}
