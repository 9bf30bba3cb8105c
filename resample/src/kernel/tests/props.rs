//! Every method against the reference on random irregular series and grids.

use proptest::prelude::*;

use super::super::window::{MedianStrategy, median_with};
use super::reference;
use crate::{DeltaMs, Grid, Method, Rule, Series, resample};

/// Sorted timestamps with duplicates, short and long gaps; values with many
/// repeats (small integers) or spread out.
fn series() -> impl Strategy<Value = (Vec<i64>, Vec<f64>)> {
    let gap = prop_oneof![2 => Just(0i64), 5 => 1i64..5, 2 => 5i64..100];
    let value = prop_oneof![(-5i32..5).prop_map(f64::from), -1000.0..1000.0f64];
    (-100i64..100, prop::collection::vec((gap, value), 0..60)).prop_map(|(start, readings)| {
        let mut t = start;
        readings
            .into_iter()
            .map(|(gap, value)| {
                t += gap;
                (t, value)
            })
            .unzip()
    })
}

/// Grids that may start before, inside or after the data.
fn grid() -> impl Strategy<Value = Grid> {
    (-300i64..600, 1i64..60, 0usize..50)
        .prop_map(|(start, step, len)| Grid::try_new(start, step, len).unwrap())
}

fn method() -> impl Strategy<Value = Method> {
    let delta = (0i64..120).prop_map(|ms| DeltaMs::try_new(ms).unwrap());
    (0..5u8, delta, any::<bool>()).prop_map(|(kind, delta, with_delta)| {
        let optional = with_delta.then_some(delta);
        match kind {
            0 => Method::Following { delta: optional },
            1 => Method::Previous { delta: optional },
            2 => Method::Average { delta: optional },
            3 => Method::MedianInWindow { delta },
            _ => Method::AverageInWindow { delta },
        }
    })
}

fn rule() -> impl Strategy<Value = Rule> {
    (method(), prop::option::of(-10.0..10.0f64)).prop_map(|(method, fixed_value)| Rule {
        method,
        fixed_value,
    })
}

/// Equal null patterns; values equal, or within 1e-9 of the series' largest
/// magnitude (at least 1) for the means, whose summation order differs.
fn assert_matches(got: &[Option<f64>], want: &[Option<f64>], values: &[f64], exact: bool) {
    assert_eq!(got.len(), want.len());
    let scale = values.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        match (g, w) {
            (Some(g), Some(w)) if !exact => {
                assert!(
                    (g - w).abs() <= 1e-9 * scale,
                    "instant {k}: got {g}, want {w}"
                );
            }
            _ => assert_eq!(g, w, "instant {k}"),
        }
    }
}

proptest! {
    #[test]
    fn every_method_matches_the_reference((times, values) in series(), grid in grid(), rule in rule()) {
        let s = Series::try_new(&times, &values).unwrap();
        let got: Vec<Option<f64>> = resample(&s, &grid, &rule).iter().collect();
        let want = reference::resample(&times, &values, &grid, &rule);
        let exact = !matches!(rule.method, Method::Average { .. } | Method::AverageInWindow { .. });
        assert_matches(&got, &want, &values, exact);
    }

    #[test]
    fn both_median_strategies_match_the_reference(
        (times, values) in series(),
        grid in grid(),
        delta in 0i64..300,
        fixed in prop::option::of(-10.0..10.0f64),
    ) {
        let s = Series::try_new(&times, &values).unwrap();
        let delta = DeltaMs::try_new(delta).unwrap();
        let rule = Rule { method: Method::MedianInWindow { delta }, fixed_value: fixed };
        let want = reference::resample(&times, &values, &grid, &rule);
        for strategy in [MedianStrategy::Select, MedianStrategy::Sliding] {
            let got: Vec<Option<f64>> = median_with(&s, &grid, delta, fixed, strategy).iter().collect();
            assert_matches(&got, &want, &values, true);
        }
    }

    /// Long series, windows overlapping many times: the heaps' lazy deletion
    /// and rebuilds, and the running sum's recomputation, get exercised.
    #[test]
    fn long_overlapping_windows_match_the_reference(
        values in prop::collection::vec(prop_oneof![(0i32..4).prop_map(f64::from), -1e6..1e6f64], 0..400),
        ties in prop::collection::vec(any::<bool>(), 400),
        start in -50i64..50,
        step in 1i64..8,
        delta in 0i64..80,
    ) {
        let mut t = 0;
        let times: Vec<i64> = ties.iter().take(values.len()).map(|&tie| { t += i64::from(!tie); t }).collect();
        let s = Series::try_new(&times, &values).unwrap();
        let grid = Grid::try_new(start, step, (t as usize + 100) / step as usize).unwrap();
        let delta = DeltaMs::try_new(delta).unwrap();
        for method in [Method::MedianInWindow { delta }, Method::AverageInWindow { delta }] {
            let rule = Rule { method, fixed_value: None };
            let want = reference::resample(&times, &values, &grid, &rule);
            let exact = matches!(method, Method::MedianInWindow { .. });
            let got: Vec<Option<f64>> = resample(&s, &grid, &rule).iter().collect();
            assert_matches(&got, &want, &values, exact);
            if exact {
                let sliding: Vec<Option<f64>> =
                    median_with(&s, &grid, delta, None, MedianStrategy::Sliding).iter().collect();
                assert_matches(&sliding, &want, &values, true);
            }
        }
    }
}
