//! The sliding median: two heaps with lazy deletion.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::order_key;

/// The median of a window that slides forward over a series.
///
/// `low` is a max-heap of the lower half and `high` a min-heap of the upper
/// half; every entry of `low` is smaller than every entry of `high` (the
/// partition), dead entries included. An entry packs the reading's value,
/// as an order key, above its scrambled index, so entries are distinct and
/// totally ordered. Readings leave in index order, so a leaving reading is
/// only counted out (`live_*`); it is dropped once it reaches a heap's top,
/// recognised by an index before the window's start. A heap is rebuilt
/// once its dead entries outnumber its live ones, so the heaps hold O(w)
/// entries and each reading costs O(log w) amortized.
///
/// Lazy deletion rather than an indexed heap with deletion in place:
/// `BinaryHeap`'s sifts are tighter than sifts that also maintain a position
/// index, and measured about 1.6× faster on the benchmark's fuel data.
#[derive(Debug, Default)]
pub(super) struct SlidingMedian {
    /// Max-heap of the lower half.
    low: BinaryHeap<u128>,
    /// Min-heap of the upper half.
    high: BinaryHeap<Reverse<u128>>,
    live_low: usize,
    live_high: usize,
}

/// A heap is rebuilt without its dead entries once it holds more than
/// `DEAD_FACTOR` × live + `SLACK` entries: amortized O(1) per reading, and
/// the heaps stay within a constant factor of the window. (4 measured no
/// faster: deeper heaps cost what the rarer rebuilds save.)
const DEAD_FACTOR: usize = 2;
const SLACK: usize = 32;

impl SlidingMedian {
    pub(super) fn clear(&mut self) {
        self.low.clear();
        self.high.clear();
        self.live_low = 0;
        self.live_high = 0;
    }

    /// Adds the readings `values`, the first of which has index `first`.
    pub(super) fn insert_all(&mut self, first: usize, values: &[f64]) {
        for (index, &value) in (first..).zip(values) {
            let entry = entry(index, value);
            if self.low.peek().is_some_and(|&top| entry < top) {
                self.low.push(entry);
                self.live_low += 1;
            } else {
                self.high.push(Reverse(entry));
                self.live_high += 1;
            }
        }
    }

    /// Counts out the readings `values` (all live), the first of which has index `first`.
    pub(super) fn remove_all(&mut self, first: usize, values: &[f64]) {
        let Some(&low_top) = self.low.peek() else {
            self.live_high = self.live_high.saturating_sub(values.len());
            return;
        };
        for (index, &value) in (first..).zip(values) {
            // By the partition, an entry is in `low` exactly when it is ≤ low's top.
            if entry(index, value) <= low_top {
                self.live_low = self.live_low.saturating_sub(1);
            } else {
                self.live_high = self.live_high.saturating_sub(1);
            }
        }
    }

    /// Rebalances the halves for the window starting at index `start`.
    ///
    /// Afterwards `low` holds the ⌈w/2⌉ smallest live readings and both
    /// tops are live.
    pub(super) fn settle(&mut self, start: usize) {
        loop {
            while self.low.peek().is_some_and(|&e| index_of(e) < start) {
                self.low.pop();
            }
            while self
                .high
                .peek()
                .is_some_and(|&Reverse(e)| index_of(e) < start)
            {
                self.high.pop();
            }
            if self.live_low > self.live_high + 1 {
                let Some(top) = self.low.pop() else { break };
                self.high.push(Reverse(top));
                self.live_low -= 1;
                self.live_high += 1;
            } else if self.live_high > self.live_low {
                let Some(Reverse(top)) = self.high.pop() else {
                    break;
                };
                self.low.push(top);
                self.live_high -= 1;
                self.live_low += 1;
            } else {
                break;
            }
        }
        if self.low.len() > DEAD_FACTOR * self.live_low + SLACK {
            self.low.retain(|&e| index_of(e) >= start);
        }
        if self.high.len() > DEAD_FACTOR * self.live_high + SLACK {
            self.high.retain(|&Reverse(e)| index_of(e) >= start);
        }
    }

    /// The median of the live readings, after [`settle`](Self::settle).
    pub(super) fn median(&self) -> Option<f64> {
        let low = value_of(*self.low.peek()?);
        if self.live_low > self.live_high {
            Some(low)
        } else {
            let Reverse(high) = *self.high.peek()?;
            Some(f64::midpoint(low, value_of(high)))
        }
    }
}

/// The heap entry of reading `index`: its order key above its scrambled index.
///
/// Equal values are ordered by the scrambled index, i.e. pseudo-randomly.
/// Ordered by the plain index, a flat stretch of data (a parked vehicle's
/// constant fuel level) would put every new reading above the median and
/// count every old one out below it, moving each across the halves.
fn entry(index: usize, value: f64) -> u128 {
    let scrambled = (index as u64).wrapping_mul(SCRAMBLE);
    (u128::from(order_key::key(value)) << 64) | u128::from(scrambled)
}

fn index_of(entry: u128) -> usize {
    (entry as u64).wrapping_mul(UNSCRAMBLE) as usize
}

fn value_of(entry: u128) -> f64 {
    order_key::value((entry >> 64) as u64)
}

/// An odd multiplier (so invertible modulo 2^64) with well-mixed bits.
const SCRAMBLE: u64 = 0x9e37_79b9_7f4a_7c15;

/// The inverse of [`SCRAMBLE`] modulo 2^64, by Newton's iteration: an odd
/// number is its own inverse to 3 bits, and each step doubles the bits.
const UNSCRAMBLE: u64 = {
    let mut inverse = SCRAMBLE;
    let mut step = 0;
    while step < 5 {
        inverse = inverse.wrapping_mul(2u64.wrapping_sub(SCRAMBLE.wrapping_mul(inverse)));
        step += 1;
    }
    inverse
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unscramble_inverts_scramble() {
        assert_eq!(SCRAMBLE.wrapping_mul(UNSCRAMBLE), 1);
    }

    #[test]
    fn entries_round_trip() {
        for (index, value) in [(0, -0.0), (7, 1.5), (usize::MAX, -1e300)] {
            let entry = entry(index, value);
            assert_eq!(index_of(entry), index);
            assert_eq!(value_of(entry).to_bits(), f64::to_bits(value));
        }
    }

    #[test]
    fn slides_over_a_window() {
        let values = [5.0, 1.0, 4.0, 2.0, 3.0, 3.0, 9.0];
        let mut median = SlidingMedian::default();
        median.insert_all(0, &values[..4]);
        median.settle(0);
        assert_eq!(median.median(), Some(3.0)); // 1 2 | 4 5
        median.remove_all(0, &values[..2]);
        median.insert_all(4, &values[4..6]);
        median.settle(2);
        assert_eq!(median.median(), Some(3.0)); // 2 3 | 3 4
        median.remove_all(2, &values[2..6]);
        median.settle(6);
        assert_eq!(median.median(), None);
        median.insert_all(6, &values[6..]);
        median.settle(6);
        assert_eq!(median.median(), Some(9.0));
    }

    #[test]
    fn matches_sorting_on_a_long_slide() {
        // A sawtooth with many repeats and a flat stretch; window 37 sliding by 5.
        let values: Vec<f64> = (0..3_000)
            .map(|i| {
                if i > 2_000 {
                    7.0
                } else {
                    f64::from((i * 37 % 101) / 3)
                }
            })
            .collect();
        let mut median = SlidingMedian::default();
        median.insert_all(0, &values[..37]);
        let mut start = 0;
        while start + 42 <= values.len() {
            median.settle(start);
            let mut sorted = values[start..start + 37].to_vec();
            sorted.sort_by(f64::total_cmp);
            assert_eq!(median.median(), Some(sorted[18]), "window at {start}");
            median.remove_all(start, &values[start..start + 5]);
            median.insert_all(start + 37, &values[start + 37..start + 42]);
            start += 5;
        }
    }
}
