//! The rules written as literally as possible: O(n·len), no sortedness assumed.

use std::cmp::Reverse;

use crate::{Grid, Method, Rule};

/// A reading as (timestamp, input position, value).
type Reading = (i64, usize, f64);

pub(super) fn resample(
    times: &[i64],
    values: &[f64],
    grid: &Grid,
    rule: &Rule,
) -> Vec<Option<f64>> {
    let readings: Vec<Reading> = times
        .iter()
        .zip(values)
        .enumerate()
        .map(|(i, (&t, &v))| (t, i, v))
        .collect();
    grid.instants()
        .map(|t| value_at(&readings, t, rule.method).or(rule.fixed_value))
        .collect()
}

fn value_at(readings: &[Reading], t: i64, method: Method) -> Option<f64> {
    let at = latest(readings, |x| x == t);
    let before = latest(readings, |x| x < t);
    let after = earliest(readings, |x| x > t);
    match method {
        Method::Following { delta: None } => at.or(after).or(latest(readings, |_| true)),
        Method::Previous { delta: None } => at.or(before).or(earliest(readings, |_| true)),
        Method::Average { delta: None } => at.or(mean_of_two(before, after)),
        Method::Following { delta: Some(d) } => {
            let from = t.saturating_sub(d.as_ms());
            latest(readings, |x| from <= x && x <= t)
        }
        Method::Previous { delta: Some(d) } => {
            let to = t.saturating_add(d.as_ms());
            earliest(readings, |x| t <= x && x <= to)
        }
        Method::Average { delta: Some(d) } => {
            let (from, to) = (t.saturating_sub(d.as_ms()), t.saturating_add(d.as_ms()));
            at.or(mean_of_two(
                latest(readings, |x| from <= x && x < t),
                earliest(readings, |x| t < x && x <= to),
            ))
        }
        Method::MedianInWindow { delta } => {
            let mut window = in_window(readings, t, delta.as_ms());
            window.sort_by(f64::total_cmp);
            let mid = window.len() / 2;
            match window.len() {
                0 => None,
                len if len % 2 == 1 => Some(window[mid]),
                _ => Some((window[mid - 1] + window[mid]) / 2.0),
            }
        }
        Method::AverageInWindow { delta } => {
            let window = in_window(readings, t, delta.as_ms());
            (!window.is_empty()).then(|| window.iter().sum::<f64>() / window.len() as f64)
        }
    }
}

/// The reading with the greatest timestamp among those matching; of ties, the last.
fn latest(readings: &[Reading], matches: impl Fn(i64) -> bool) -> Option<f64> {
    readings
        .iter()
        .filter(|r| matches(r.0))
        .max_by_key(|r| (r.0, r.1))
        .map(|r| r.2)
}

/// The reading with the smallest timestamp among those matching; of ties, the last.
fn earliest(readings: &[Reading], matches: impl Fn(i64) -> bool) -> Option<f64> {
    readings
        .iter()
        .filter(|r| matches(r.0))
        .min_by_key(|r| (r.0, Reverse(r.1)))
        .map(|r| r.2)
}

fn mean_of_two(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some((a + b) / 2.0),
        (a, b) => a.or(b),
    }
}

fn in_window(readings: &[Reading], t: i64, delta: i64) -> Vec<f64> {
    let (from, to) = (t.saturating_sub(delta), t.saturating_add(delta));
    readings
        .iter()
        .filter(|r| from <= r.0 && r.0 <= to)
        .map(|r| r.2)
        .collect()
}
