//! Hand-computed cases for every method; `props` compares against `reference`.

mod props;
mod reference;

use super::*;
use crate::DeltaMs;

const N: Option<f64> = None;

/// Readings at 10, 20, 20 (a tie: 6.0 is the last), 40; gaps at the head
/// (before 10), in the middle (20-40) and at the tail (after 40).
const TIMES: [i64; 4] = [10, 20, 20, 40];
const VALUES: [f64; 4] = [1.0, 2.0, 6.0, 4.0];

/// T = 0, 5, 10, …, 50.
fn grid() -> Grid {
    Grid::try_new(0, 5, 11).unwrap()
}

fn delta(ms: i64) -> DeltaMs {
    DeltaMs::try_new(ms).unwrap()
}

fn run_on(
    times: &[i64],
    values: &[f64],
    grid: &Grid,
    method: Method,
    fixed: Option<f64>,
) -> Vec<Option<f64>> {
    let series = Series::try_new(times, values).unwrap();
    let out = resample(
        &series,
        grid,
        &Rule {
            method,
            fixed_value: fixed,
        },
    );
    assert_eq!(out.len(), grid.len());
    out.iter().collect()
}

fn run(method: Method, fixed: Option<f64>) -> Vec<Option<f64>> {
    run_on(&TIMES, &VALUES, &grid(), method, fixed)
}

fn some(values: &[f64]) -> Vec<Option<f64>> {
    values.iter().copied().map(Some).collect()
}

#[test]
fn following_without_delta() {
    // T=15 takes the last tied reading at 20; after 40 the last reading.
    let want = some(&[1.0, 1.0, 1.0, 6.0, 6.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0]);
    assert_eq!(run(Method::Following { delta: None }, None), want);
}

#[test]
fn previous_without_delta() {
    // Before 10 the first reading; at 20 the last tied reading.
    let want = some(&[1.0, 1.0, 1.0, 1.0, 6.0, 6.0, 6.0, 6.0, 4.0, 4.0, 4.0]);
    assert_eq!(run(Method::Previous { delta: None }, None), want);
}

#[test]
fn average_without_delta() {
    // T=15: (1 + 6) / 2; T=25..35: (6 + 4) / 2; head and tail: the only neighbour.
    let want = some(&[1.0, 1.0, 1.0, 3.5, 6.0, 5.0, 5.0, 5.0, 4.0, 4.0, 4.0]);
    assert_eq!(run(Method::Average { delta: None }, None), want);
}

#[test]
fn following_with_delta_looks_back() {
    let method = Method::Following {
        delta: Some(delta(5)),
    };
    let want = [
        N,
        N,
        Some(1.0),
        Some(1.0),
        Some(6.0),
        Some(6.0),
        N,
        N,
        Some(4.0),
        Some(4.0),
        N,
    ];
    assert_eq!(run(method, None), want);
    let fixed = want.map(|v| v.or(Some(-1.0)));
    assert_eq!(run(method, Some(-1.0)), fixed);
}

#[test]
fn previous_with_delta_looks_ahead() {
    let method = Method::Previous {
        delta: Some(delta(5)),
    };
    let want = [
        N,
        Some(1.0),
        Some(1.0),
        Some(6.0),
        Some(6.0),
        N,
        N,
        Some(4.0),
        Some(4.0),
        N,
        N,
    ];
    assert_eq!(run(method, None), want);
    assert_eq!(run(method, Some(0.0)), want.map(|v| v.or(Some(0.0))));
}

#[test]
fn average_with_delta_uses_neighbours_inside_the_window() {
    let method = Method::Average {
        delta: Some(delta(5)),
    };
    // T=5: only the reading after; T=15: both; T=25: only the one before (40 is too far).
    let want = [
        N,
        Some(1.0),
        Some(1.0),
        Some(3.5),
        Some(6.0),
        Some(6.0),
        N,
        Some(4.0),
        Some(4.0),
        Some(4.0),
        N,
    ];
    assert_eq!(run(method, None), want);
    assert_eq!(run(method, Some(7.5)), want.map(|v| v.or(Some(7.5))));
    // A wider delta reaches both sides of the middle gap.
    let wide = run(
        Method::Average {
            delta: Some(delta(10)),
        },
        None,
    );
    assert_eq!(wide[6], Some(5.0));
}

#[test]
fn median_in_window() {
    let method = Method::MedianInWindow { delta: delta(5) };
    // T=15: {1, 2, 6} → 2; T=20, 25: {2, 6} → 4.
    let want = [
        N,
        Some(1.0),
        Some(1.0),
        Some(2.0),
        Some(4.0),
        Some(4.0),
        N,
        Some(4.0),
        Some(4.0),
        Some(4.0),
        N,
    ];
    assert_eq!(run(method, None), want);
    assert_eq!(run(method, Some(3.0)), want.map(|v| v.or(Some(3.0))));
}

#[test]
fn average_in_window() {
    let method = Method::AverageInWindow { delta: delta(5) };
    // T=15: (1 + 2 + 6) / 3; T=20, 25: (2 + 6) / 2.
    let want = [
        N,
        Some(1.0),
        Some(1.0),
        Some(3.0),
        Some(4.0),
        Some(4.0),
        N,
        Some(4.0),
        Some(4.0),
        Some(4.0),
        N,
    ];
    assert_eq!(run(method, None), want);
    assert_eq!(run(method, Some(3.0)), want.map(|v| v.or(Some(3.0))));
}

#[test]
fn window_aggregates_take_every_reading() {
    // T=25, D=15: [10, 40] holds 1, 2, 6, 4.
    let grid = Grid::try_new(25, 5, 1).unwrap();
    let median = run_on(
        &TIMES,
        &VALUES,
        &grid,
        Method::MedianInWindow { delta: delta(15) },
        None,
    );
    assert_eq!(median, [Some(3.0)]);
    let mean = run_on(
        &TIMES,
        &VALUES,
        &grid,
        Method::AverageInWindow { delta: delta(15) },
        None,
    );
    assert_eq!(mean, [Some(3.25)]);
}

#[test]
fn delta_zero_is_the_instant_itself() {
    let at_t = [N, N, Some(1.0), N, Some(6.0), N, N, N, Some(4.0), N, N];
    for method in [
        Method::Following {
            delta: Some(DeltaMs::ZERO),
        },
        Method::Previous {
            delta: Some(DeltaMs::ZERO),
        },
        Method::Average {
            delta: Some(DeltaMs::ZERO),
        },
    ] {
        assert_eq!(run(method, None), at_t, "{method:?}");
    }
    // The window aggregates use both tied readings at 20.
    let both = [N, N, Some(1.0), N, Some(4.0), N, N, N, Some(4.0), N, N];
    assert_eq!(
        run(
            Method::MedianInWindow {
                delta: DeltaMs::ZERO
            },
            None
        ),
        both
    );
    assert_eq!(
        run(
            Method::AverageInWindow {
                delta: DeltaMs::ZERO
            },
            None
        ),
        both
    );
}

fn all_methods(delta: DeltaMs) -> [Method; 8] {
    [
        Method::Following { delta: None },
        Method::Following { delta: Some(delta) },
        Method::Previous { delta: None },
        Method::Previous { delta: Some(delta) },
        Method::Average { delta: None },
        Method::Average { delta: Some(delta) },
        Method::MedianInWindow { delta },
        Method::AverageInWindow { delta },
    ]
}

#[test]
fn empty_series_gives_fixed_value_or_null() {
    for method in all_methods(delta(1_000)) {
        assert_eq!(
            run_on(&[], &[], &grid(), method, None),
            [N; 11],
            "{method:?}"
        );
        assert_eq!(
            run_on(&[], &[], &grid(), method, Some(2.5)),
            [Some(2.5); 11],
            "{method:?}"
        );
    }
}

#[test]
fn empty_grid_gives_empty_array() {
    let empty = Grid::try_new(0, 1, 0).unwrap();
    for method in all_methods(delta(10)) {
        assert!(run_on(&TIMES, &VALUES, &empty, method, Some(1.0)).is_empty());
    }
}

#[test]
fn ties_at_the_head_and_tail_pick_the_last() {
    let grid = Grid::try_new(0, 30, 2).unwrap(); // T = 0, 30
    let head = run_on(
        &[10, 10, 20],
        &[1.0, 2.0, 3.0],
        &grid,
        Method::Previous { delta: None },
        None,
    );
    assert_eq!(head[0], Some(2.0));
    let head = run_on(
        &[10, 10, 20],
        &[1.0, 2.0, 3.0],
        &grid,
        Method::Following { delta: None },
        None,
    );
    assert_eq!(head[0], Some(2.0));
    let tail = run_on(
        &[10, 20, 20],
        &[1.0, 2.0, 3.0],
        &grid,
        Method::Following { delta: None },
        None,
    );
    assert_eq!(tail[1], Some(3.0));
    let tail = run_on(
        &[10, 20, 20],
        &[1.0, 2.0, 3.0],
        &grid,
        Method::Average { delta: None },
        None,
    );
    assert_eq!(tail, [Some(1.0), Some(3.0)]);
}

#[test]
fn grid_entirely_before_or_after_the_data() {
    let before = Grid::try_new(-100, 10, 3).unwrap();
    let after = Grid::try_new(100, 10, 3).unwrap();
    let on = |grid: &Grid, method| run_on(&TIMES, &VALUES, grid, method, None);
    assert_eq!(
        on(&before, Method::Following { delta: None }),
        [Some(1.0); 3]
    );
    assert_eq!(
        on(&before, Method::Previous { delta: None }),
        [Some(1.0); 3]
    );
    assert_eq!(on(&before, Method::Average { delta: None }), [Some(1.0); 3]);
    assert_eq!(
        on(&after, Method::Following { delta: None }),
        [Some(4.0); 3]
    );
    assert_eq!(on(&after, Method::Previous { delta: None }), [Some(4.0); 3]);
    assert_eq!(on(&after, Method::Average { delta: None }), [Some(4.0); 3]);
    for method in [
        Method::Following {
            delta: Some(delta(50)),
        },
        Method::Previous {
            delta: Some(delta(50)),
        },
        Method::MedianInWindow { delta: delta(50) },
        Method::AverageInWindow { delta: delta(50) },
    ] {
        assert_eq!(on(&before, method), [N; 3], "{method:?}");
        assert_eq!(on(&after, method), [N; 3], "{method:?}");
    }
}

#[test]
fn extreme_times_and_deltas_saturate() {
    let times = [i64::MIN, 0, i64::MAX];
    let values = [1.0, 2.0, 3.0];
    let grid = Grid::try_new(i64::MIN, i64::MAX, 3).unwrap(); // MIN, -1, MAX - 1
    let huge = DeltaMs::try_new(i64::MAX).unwrap();
    let median = run_on(
        &times,
        &values,
        &grid,
        Method::MedianInWindow { delta: huge },
        None,
    );
    // [MIN, -1] ∋ MIN; [MIN, MAX - 1] ∋ MIN, 0; [-1, MAX] ∋ 0, MAX.
    assert_eq!(median, [Some(1.0), Some(1.5), Some(2.5)]);
    let following = run_on(
        &times,
        &values,
        &grid,
        Method::Following { delta: Some(huge) },
        None,
    );
    assert_eq!(following, [Some(1.0), Some(1.0), Some(2.0)]);
    let previous = run_on(
        &times,
        &values,
        &grid,
        Method::Previous { delta: Some(huge) },
        None,
    );
    assert_eq!(previous, [Some(1.0), Some(2.0), Some(3.0)]);
}

#[test]
fn gallop_finds_boundaries_from_any_start() {
    let times = [1, 2, 2, 2, 5, 8, 8, 13, 21, 34];
    for target in -1..40 {
        let ge = times
            .iter()
            .position(|&t| t >= target)
            .unwrap_or(times.len());
        let gt = times
            .iter()
            .position(|&t| t > target)
            .unwrap_or(times.len());
        for from in 0..=ge {
            assert_eq!(seek_ge(&times, from, target), ge, "ge {target} from {from}");
        }
        for from in 0..=gt {
            assert_eq!(seek_gt(&times, from, target), gt, "gt {target} from {from}");
        }
    }
}

#[test]
fn sum_matches_sequential_sum() {
    for len in 0..12 {
        let values: Vec<f64> = (0..len).map(|i| f64::from(i) * 0.5 - 1.0).collect();
        assert_eq!(sum(&values), values.iter().sum::<f64>(), "{len}");
    }
}

#[test]
fn median_strategy_follows_the_overlap() {
    let minute = Grid::try_new(0, 60_000, 10).unwrap();
    let choose = |secs| MedianStrategy::for_windows(&minute, DeltaMs::try_from_secs(secs).unwrap());
    assert_eq!(choose(0), MedianStrategy::Select);
    assert_eq!(choose(30), MedianStrategy::Select);
    assert_eq!(choose(690), MedianStrategy::Select); // 24 windows per reading
    assert_eq!(choose(720), MedianStrategy::Sliding); // 25
    assert_eq!(choose(3_600), MedianStrategy::Sliding);
    let huge = DeltaMs::try_new(i64::MAX).unwrap();
    assert_eq!(
        MedianStrategy::for_windows(&minute, huge),
        MedianStrategy::Sliding
    );
}
