//! A ring's points packed in blocks: each block holds up to
//! [`BLOCK_POINTS`] points in message time order, its first as it is and
//! each other as zigzagged varints of its differences from the one
//! before: the time's from the time between the two before (0 for a
//! tracker reporting at a steady interval), the reception delay's,
//! latitude's and longitude's from theirs. A tracker reporting every
//! second, moving or parked, takes 5 to 9 bytes a point instead of a
//! [`Kept`]'s 16: a steady interval takes one byte, and a reception delay
//! that varies by a second and a few metres of motion two each.
//!
//! A point is appended to the last block as its differences; one out of
//! order rewrites its block, and a full block is cut in two.

use super::Kept;

/// Points a block holds at most: its first point and its length take 24
/// bytes, and its `Vec` 24, under a byte a point; a point out of order
/// rewrites this many at most.
pub(super) const BLOCK_POINTS: usize = 64;

/// Bytes of differences a new block has room for: 63 points of seven bytes.
const OPEN_BLOCK_BYTES: usize = (BLOCK_POINTS - 1) * 7;

/// Consecutive points of a ring, packed.
#[derive(Debug, Clone)]
pub(super) struct Block {
    first: Kept,
    /// Points it holds, its first included (1 to [`BLOCK_POINTS`]).
    len: u8,
    /// The points after the first, each as differences from the one before.
    deltas: Vec<u8>,
}

impl Block {
    /// A block of one point, with room for its next ones.
    pub(super) fn new(first: Kept) -> Self {
        Self {
            first,
            len: 1,
            deltas: Vec::with_capacity(OPEN_BLOCK_BYTES),
        }
    }

    /// A block of `points` (1 to [`BLOCK_POINTS`] of them, in time order),
    /// taking no more room than they need.
    pub(super) fn of(points: &[Kept]) -> Self {
        debug_assert!((1..=BLOCK_POINTS).contains(&points.len()));
        let mut block = Self {
            first: points[0],
            len: 1,
            deltas: Vec::new(),
        };
        let mut step = 0;
        for pair in points.windows(2) {
            step = block.push_after(pair[0], step, pair[1]);
        }
        block.deltas.shrink_to_fit();
        block
    }

    /// Its oldest point.
    pub(super) fn first(&self) -> Kept {
        self.first
    }

    pub(super) fn len(&self) -> usize {
        usize::from(self.len)
    }

    pub(super) fn is_full(&self) -> bool {
        self.len() >= BLOCK_POINTS
    }

    /// Appends `point`, later than `last`, this block's newest, which
    /// came `step` ms after the one before it (0 if none); answers the
    /// time from `last` to `point`, the next one's `step`.
    pub(super) fn push_after(&mut self, last: Kept, step: i64, point: Kept) -> i64 {
        debug_assert!(!self.is_full() && last.time < point.time);
        let next_step = i64::from(point.time) - i64::from(last.time);
        // Written beside, then appended at once: one check of the room.
        let mut bytes = [0u8; 4 * MAX_VARINT];
        let mut at = varint(&mut bytes, 0, zigzag(next_step - step));
        for (before, now) in [
            (last.received, point.received),
            (last.lat, point.lat),
            (last.lng, point.lng),
        ] {
            at = varint(&mut bytes, at, zigzag(i64::from(now) - i64::from(before)));
        }
        self.deltas.extend_from_slice(&bytes[..at]);
        self.len += 1;
        next_step
    }

    /// Gives back the room no more points will take (it is no longer the last).
    pub(super) fn seal(&mut self) {
        self.deltas.shrink_to_fit();
    }

    /// Its points, oldest first.
    pub(super) fn points(&self) -> Points<'_> {
        Points {
            deltas: &self.deltas,
            at: 0,
            next: Some(self.first),
            step: 0,
            left: self.len(),
        }
    }

    /// The bytes it takes, its own and its deltas' room.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.deltas.capacity()
    }
}

/// The time between the last two of `points` (0 with fewer than two): what
/// [`Block::push_after`] takes for the point after them.
pub(super) fn last_step(points: &[Kept]) -> i64 {
    match points {
        [.., before, last] => i64::from(last.time) - i64::from(before.time),
        _ => 0,
    }
}

/// A block's points, decoded one after another.
pub(super) struct Points<'b> {
    deltas: &'b [u8],
    at: usize,
    next: Option<Kept>,
    /// The time between the last two points decoded.
    step: i64,
    left: usize,
}

impl Iterator for Points<'_> {
    type Item = Kept;

    fn next(&mut self) -> Option<Kept> {
        let point = self.next.take()?;
        self.left -= 1;
        if self.left > 0 {
            self.next = self.decode(point);
        }
        Some(point)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = if self.next.is_some() { self.left } else { 0 };
        (left, Some(left))
    }
}

impl Points<'_> {
    /// The point after `last`. The sums are the values that were
    /// subtracted (each an `i32`), so they fit.
    fn decode(&mut self, last: Kept) -> Option<Kept> {
        self.step += unzigzag(self.read()?);
        let time = i64::from(last.time) + self.step;
        let mut field = |before: i32| Some((i64::from(before) + unzigzag(self.read()?)) as i32);
        Some(Kept {
            time: time as i32,
            received: field(last.received)?,
            lat: field(last.lat)?,
            lng: field(last.lng)?,
        })
    }

    /// The next varint (`None` past the end: never for bytes [`Block`] wrote).
    fn read(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.deltas.get(self.at)?;
            self.at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(value);
            }
        }
        None
    }
}

fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    (value >> 1) as i64 ^ -((value & 1) as i64)
}

/// Bytes of the longest varint [`Block::push_after`] writes: a difference
/// of two `i32`s (or of two such differences) takes 34 bits zigzagged.
const MAX_VARINT: usize = 5;

/// Writes `value` (under 2^35) as LEB128, seven bits a byte, low first,
/// into `out` at `at`; answers where it ends.
fn varint(out: &mut [u8], mut at: usize, mut value: u64) -> usize {
    debug_assert!(value < 1 << (7 * MAX_VARINT));
    while value >= 0x80 {
        out[at] = value as u8 | 0x80;
        value >>= 7;
        at += 1;
    }
    out[at] = value as u8;
    at + 1
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn kept() -> impl Strategy<Value = Kept> {
        (any::<i32>(), any::<i32>(), any::<i32>(), any::<i32>()).prop_map(
            |(time, received, lat, lng)| Kept {
                time,
                received,
                lat,
                lng,
            },
        )
    }

    proptest! {
        #[test]
        fn a_block_gives_back_the_points_it_was_given_whatever_their_values(
            mut points in prop::collection::vec(kept(), 1..=BLOCK_POINTS),
        ) {
            points.sort_by_key(|p| p.time);
            points.dedup_by_key(|p| p.time);
            let block = Block::of(&points);
            prop_assert_eq!(block.points().collect::<Vec<_>>(), points.clone());
            let mut appended = Block::new(points[0]);
            let mut step = 0;
            for pair in points.windows(2) {
                step = appended.push_after(pair[0], step, pair[1]);
            }
            prop_assert_eq!(step, last_step(&points));
            prop_assert_eq!(appended.points().collect::<Vec<_>>(), points);
        }
    }

    #[test]
    fn zigzag_takes_small_deltas_of_either_sign_to_small_numbers() {
        for (value, coded) in [(0, 0), (-1, 1), (1, 2), (-2, 3), (i64::MAX, u64::MAX - 1)] {
            assert_eq!(zigzag(value), coded);
            assert_eq!(unzigzag(coded), value);
        }
        assert_eq!(unzigzag(u64::MAX), i64::MIN);
    }
}
