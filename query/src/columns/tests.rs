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
        let err = plan_columns(&req(&[bad]), &BTreeSet::new()).unwrap_err();
        assert!(
            matches!(&err, Error::UnknownColumn { column } if column == bad),
            "{bad}: {err:?}"
        );
    }
}
