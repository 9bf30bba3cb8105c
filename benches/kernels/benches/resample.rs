//! Criterion benchmarks of the `resample` kernels on one vehicle's week at 1 Hz.
//!
//! 604,800 readings onto a one-minute grid (10,080 instants), throughput in
//! input readings. Each kernel runs as the resampling endpoint runs it for
//! the spec's columns, next to named baselines measured in the same run:
//! `baseline/copy` (reading every value once, the floor) and naive
//! per-window sorts and sums (what the kernels replace). `median_strategy/*`
//! runs both median strategies over growing windows to show the crossover.
//!
//! `cargo bench -p bench-kernels`

use std::hint::black_box;
use std::time::Duration;

use arrow_array::Float64Array;
use bench_kernels::{WEEK_READINGS, WEEK_START_MS, Week, fuel_table};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use resample::{
    DeltaMs, Grid, MedianStrategy, Method, Rule, Series, SeriesBuf, calibrate, median_in_window,
    movement, resample,
};

const STEP_MS: i64 = 60_000;
const GRID_LEN: usize = 10_080;
const IDLE_THRESHOLD_KMH: f64 = 3.0;
/// Deltas at which both median strategies are measured (windows per reading: 2D/step + 1).
const STRATEGY_DELTAS_SECS: [i64; 5] = [300, 600, 900, 1800, 3600];

/// The week, its one-minute grid and the per-reading movement codes.
struct Setup {
    week: Week,
    grid: Grid,
    movement_codes: Vec<f64>,
}

impl Setup {
    fn new() -> resample::Result<Self> {
        let week = Week::generate();
        let grid = Grid::try_new(WEEK_START_MS, STEP_MS, GRID_LEN)?;
        let codes = movement(&week.speed_kmh, Some(&week.ignition), IDLE_THRESHOLD_KMH);
        Ok(Self {
            movement_codes: codes.values().to_vec(),
            week,
            grid,
        })
    }

    fn series<'a>(&'a self, values: &'a [f64]) -> resample::Result<Series<'a>> {
        Series::try_new(&self.week.times, values)
    }

    /// The benchmarked resampling calls: name, series, method.
    fn columns(&self) -> resample::Result<Vec<(&'static str, Series<'_>, Method)>> {
        let week = &self.week;
        let fuel = self.series(&week.fuel_litres)?;
        let secs = DeltaMs::try_from_secs;
        Ok(vec![
            // The endpoint's default columns.
            (
                "fuel/median_in_window_d30",
                fuel,
                Method::MedianInWindow { delta: secs(30)? },
            ),
            (
                "speed/average_in_window_d30",
                self.series(week.speed_kmh.values())?,
                Method::AverageInWindow { delta: secs(30)? },
            ),
            (
                "movement/following",
                self.series(&self.movement_codes)?,
                Method::Following { delta: None },
            ),
            (
                "lat/previous",
                self.series(&week.lat)?,
                Method::Previous { delta: None },
            ),
            (
                "lng/previous",
                self.series(&week.lng)?,
                Method::Previous { delta: None },
            ),
            // The other point methods.
            ("fuel/average", fuel, Method::Average { delta: None }),
            (
                "fuel/average_d30",
                fuel,
                Method::Average {
                    delta: Some(secs(30)?),
                },
            ),
            (
                "fuel/following_d30",
                fuel,
                Method::Following {
                    delta: Some(secs(30)?),
                },
            ),
            (
                "fuel/previous_d30",
                fuel,
                Method::Previous {
                    delta: Some(secs(30)?),
                },
            ),
            // Overlapping windows, with the strategy `resample` picks: quickselect
            // at D = 600 s (21 windows per reading), the heaps at 3600 s (121).
            (
                "fuel/median_in_window_d600",
                fuel,
                Method::MedianInWindow { delta: secs(600)? },
            ),
            (
                "fuel/median_in_window_d3600",
                fuel,
                Method::MedianInWindow { delta: secs(3600)? },
            ),
            (
                "fuel/average_in_window_d600",
                fuel,
                Method::AverageInWindow { delta: secs(600)? },
            ),
        ])
    }
}

#[expect(
    clippy::expect_used,
    reason = "the benchmark's inputs are constants, valid by construction"
)]
fn kernels(c: &mut Criterion) {
    let setup = Setup::new().expect("valid benchmark grid");
    let columns = setup.columns().expect("valid benchmark series");
    let (week, grid) = (&setup.week, &setup.grid);
    let fuel = setup.series(&week.fuel_litres).expect("valid fuel series");

    let mut group = c.benchmark_group("resample");
    group.throughput(Throughput::Elements(WEEK_READINGS as u64));

    for (name, series, method) in columns {
        let rule = Rule {
            method,
            fixed_value: None,
        };
        group.bench_function(name, |b| {
            b.iter(|| resample(black_box(&series), black_box(grid), black_box(&rule)))
        });
    }

    let table = fuel_table();
    group.bench_function("calibrate/10_points", |b| {
        b.iter(|| calibrate(black_box(&week.fuel_raw), black_box(&table)))
    });
    group.bench_function("movement/codes", |b| {
        b.iter(|| {
            movement(
                black_box(&week.speed_kmh),
                black_box(Some(&week.ignition)),
                IDLE_THRESHOLD_KMH,
            )
        })
    });
    let mut buf = SeriesBuf::new();
    group.bench_function("gather/series_buf_fill_from", |b| {
        b.iter(|| {
            let filled = buf.fill_from(black_box(&week.times), black_box(&week.speed_kmh));
            black_box(filled.map(|()| buf.as_series().len()))
        })
    });

    // Both median strategies on overlapping windows: where they cross over.
    for delta_secs in STRATEGY_DELTAS_SECS {
        let delta = DeltaMs::try_from_secs(delta_secs).expect("valid delta");
        for (strategy, label) in [
            (MedianStrategy::Select, "select"),
            (MedianStrategy::Sliding, "sliding"),
        ] {
            group.bench_function(format!("median_strategy/{label}_d{delta_secs}"), |b| {
                b.iter(|| {
                    median_in_window(black_box(&fuel), black_box(grid), delta, None, strategy)
                })
            });
        }
    }

    group.bench_function("baseline/copy", |b| {
        b.iter(|| Float64Array::from(black_box(&week.fuel_litres).clone()))
    });
    for (name, delta_ms) in [
        ("baseline/median_sort_per_window_d30", 30_000),
        ("baseline/median_sort_per_window_d600", 600_000),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| naive_median(black_box(&fuel), black_box(grid), delta_ms))
        });
    }
    group.bench_function("baseline/average_sum_per_window_d600", |b| {
        b.iter(|| naive_average(black_box(&fuel), black_box(grid), 600_000))
    });
    group.finish();
}

/// Each instant's window `[t - delta, t + delta]`, by binary search.
fn naive_windows<'a>(
    series: &Series<'a>,
    grid: &Grid,
    delta_ms: i64,
) -> impl Iterator<Item = &'a [f64]> + use<'a> {
    let (times, values) = (series.times(), series.values());
    grid.instants().map(move |t| {
        let start = times.partition_point(|&x| x < t - delta_ms);
        let end = times.partition_point(|&x| x <= t + delta_ms);
        values.get(start..end).unwrap_or_default()
    })
}

/// Baseline: sort a copy of every window.
fn naive_median(series: &Series<'_>, grid: &Grid, delta_ms: i64) -> Float64Array {
    naive_windows(series, grid, delta_ms)
        .map(|window| {
            let mut sorted = window.to_vec();
            sorted.sort_unstable_by(f64::total_cmp);
            let mid = sorted.len() / 2;
            if sorted.len() % 2 == 1 {
                sorted.get(mid).copied()
            } else {
                Some((*sorted.get(mid.checked_sub(1)?)? + *sorted.get(mid)?) / 2.0)
            }
        })
        .collect()
}

/// Baseline: sum every window from scratch.
fn naive_average(series: &Series<'_>, grid: &Grid, delta_ms: i64) -> Float64Array {
    naive_windows(series, grid, delta_ms)
        .map(|window| {
            (!window.is_empty()).then(|| window.iter().sum::<f64>() / window.len() as f64)
        })
        .collect()
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = kernels
}
criterion_main!(benches);
