//! Each tracker's recent positions, in memory, for live views (geo links).
//!
//! The engine records every acknowledged message with a position here, the
//! moment its write is answered (and, at start, what the WAL replays), so a
//! live view sees a message before it is flushed anywhere. Nothing here is
//! durable: after a restart only the replayed, still unflushed messages are
//! back, and a tracker reappears with its next message.
//!
//! One `RwLock` over one map: a write takes it once for all of its
//! messages and holds it for a few inserts into sorted rings; a reader takes
//! it once for all the trackers it asks for ([`LivePositions::recent_many`])
//! and copies out the few points it needs, so neither holds it long.

use std::collections::{HashMap, VecDeque};
use std::sync::{RwLock, RwLockReadGuard};

use prometheus_client::metrics::gauge::Gauge;
use schemas::{Message, TrackerId};

use self::blocks::{BLOCK_POINTS, Block, last_step};

mod blocks;

/// One position of a tracker, as a live view needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LivePoint {
    /// When the device registered the position (ms since the epoch).
    pub message_time_ms: i64,
    /// When the message reached the server (ms since the epoch).
    pub server_time_ms: i64,
    /// Latitude, degrees.
    pub lat: f64,
    /// Longitude, degrees.
    pub lng: f64,
    /// Speed, km/h.
    pub speed: Option<f64>,
    /// Heading, degrees.
    pub heading: Option<i32>,
}

impl LivePoint {
    /// The live summary of a message: its tracker and point, when it has a position.
    pub fn of(message: &Message) -> Option<(TrackerId, Self)> {
        Some((
            message.tracker_id,
            Self {
                message_time_ms: message.message_time_ms,
                server_time_ms: message.server_time_ms,
                lat: message.lat?,
                lng: message.lng?,
                speed: message.speed,
                heading: message.heading,
            },
        ))
    }

    /// [`LivePoint::of`] row `row` of a write.
    pub(crate) fn of_row(rows: &crate::rows::Rows, row: usize) -> Option<(TrackerId, Self)> {
        Some((
            TrackerId(rows.tracker[row]),
            Self {
                message_time_ms: rows.message_time[row],
                server_time_ms: rows.server_time[row],
                lat: rows.lat[row]?,
                lng: rows.lng[row]?,
                speed: rows.speed[row],
                heading: rows.heading[row],
            },
        ))
    }
}

/// A tracker's recent points, oldest first; never empty.
#[derive(Debug, Clone, PartialEq)]
pub struct TrackerTrail {
    /// Points by message time, oldest first; the last is the newest
    /// position. Only the newest has its speed and heading (what a live
    /// view shows of where the tracker is); the others have neither.
    pub points: Vec<LivePoint>,
    /// The newest server time of any message recorded for the tracker (ms
    /// since the epoch), whatever its message time: when it was last heard of.
    pub last_server_time_ms: i64,
}

impl TrackerTrail {
    /// The newest position (by message time).
    pub fn newest(&self) -> Option<&LivePoint> {
        self.points.last()
    }
}

/// A point as a ring keeps it, before its [`Block`] packs it (to 6-9 bytes
/// at 1 Hz from these 16, where a [`LivePoint`] takes 64: 10,000 trackers
/// of 1,000 points take about 80 MB, not 640). Its message time is
/// kept in ms after its ring's base ([`Ring::base_ms`], within ±24.8 days
/// of every point kept), its server time in ms after its message time
/// (clamped to ±24.8 days: see [`Newest`]), its coordinates
/// in units of 1e-7 degree (about a centimetre, what Teltonika devices
/// send); what a live view shows is rounded to that. Speed and heading are
/// kept for the ring's newest point only ([`Newest`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Kept {
    time: i32,
    received: i32,
    lat: i32,
    lng: i32,
}

/// Units of [`Kept`]'s coordinates per degree.
const PER_DEGREE: f64 = 1e7;
/// A km/h in the units [`Newest`] rounds speed to.
const PER_KMH: f64 = 1e3;

impl Kept {
    /// `point`, whose message time is `time` ms after its ring's base.
    fn of(point: &LivePoint, time: i32) -> Self {
        // `as` saturates: a position is within ±180 degrees (±1.8e9 units).
        Self {
            time,
            received: clamp(point.server_time_ms.saturating_sub(point.message_time_ms)),
            lat: (point.lat * PER_DEGREE).round() as i32,
            lng: (point.lng * PER_DEGREE).round() as i32,
        }
    }

    /// The point, its ring's base being `base_ms`.
    fn point(&self, base_ms: i64) -> LivePoint {
        let message_time_ms = base_ms + i64::from(self.time);
        LivePoint {
            message_time_ms,
            server_time_ms: message_time_ms + i64::from(self.received),
            lat: f64::from(self.lat) / PER_DEGREE,
            lng: f64::from(self.lng) / PER_DEGREE,
            speed: None,
            heading: None,
        }
    }
}

/// `ms` within what an `i32` holds (±24.8 days).
fn clamp(ms: i64) -> i32 {
    ms.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

/// What a ring keeps of its newest point beyond its [`Kept`]: speed and
/// heading (the speed rounded to a thousandth of a km/h, as the feed shows
/// it) and its exact server time (a [`Kept`]'s is clamped to 24.8 days from
/// its message time). A live view shows, besides the newest, only points
/// of the last day (`MAX_TRACE_DURATION_S`), received at most two days
/// after their message times (the intake refuses times over a day ahead of
/// its clock), so no point a view shows has a clamped server time (but a
/// backfill token's, set weeks before its message time: decision 120). One
/// per tracker, so kept as they are, not packed.
#[derive(Debug, Clone, Copy, Default)]
struct Newest {
    speed: Option<f64>,
    heading: Option<i32>,
    server_time_ms: i64,
}

impl Newest {
    fn of(point: &LivePoint) -> Self {
        Self {
            speed: point
                .speed
                .map(|s| (s.max(0.0) * PER_KMH).round() / PER_KMH),
            heading: point.heading,
            server_time_ms: point.server_time_ms,
        }
    }

    fn apply(self, point: &mut LivePoint) {
        point.speed = self.speed;
        point.heading = self.heading;
        point.server_time_ms = self.server_time_ms;
    }
}

/// The points kept of one tracker, packed in [`Block`]s (6-9 bytes a point
/// at 1 Hz where a [`Kept`] takes 16; decision 143). A point after the
/// newest is appended to the last block, and the oldest dropped for room
/// is skipped until its block goes; a point out of order rewrites its
/// block.
#[derive(Debug, Default)]
struct Ring {
    /// Sorted by message time, at most one point per message time; each
    /// block's points after the previous block's.
    blocks: VecDeque<Block>,
    /// Points at the front of the first block dropped to make room (they
    /// go with their block, or when it is next rewritten).
    skipped: usize,
    /// Points held, the dropped not counted.
    len: usize,
    /// The newest point held (the last block's last), when any.
    last: Kept,
    /// The time between the last block's last two points (0 if one).
    step: i64,
    /// The message time [`Kept::time`] counts from: at or before the
    /// newest point's, and within ±24.8 days of every point's.
    base_ms: i64,
    /// Of the newest point.
    newest: Newest,
    last_server_time_ms: i64,
}

/// How far behind its newest a ring keeps a point: 24.8 days (what a
/// [`Kept`] offset holds), far more than a live view shows.
const KEPT_BEHIND_MS: i64 = i32::MAX as i64;

impl Ring {
    /// Puts `point` in its place; answers how many points the ring gained
    /// (1, 0, or fewer when a much newer point took points past
    /// [`KEPT_BEHIND_MS`] out).
    fn insert(&mut self, point: LivePoint, capacity: usize) -> i64 {
        self.last_server_time_ms = self.last_server_time_ms.max(point.server_time_ms);
        let t = point.message_time_ms;
        let mut gained = 0;
        if self.len == 0 {
            self.base_ms = t;
        } else if t.saturating_sub(self.base_ms) > KEPT_BEHIND_MS {
            gained -= self.rebase(t);
        } else if self.base_ms.saturating_sub(t) > KEPT_BEHIND_MS {
            return 0; // over 24.8 days older than the newest: never shown
        }
        let time = (t - self.base_ms) as i32;
        if self.len == 0 || self.last.time <= time {
            // The newest, or a later write of it: never dropped below.
            self.newest = Newest::of(&point);
        }
        let kept = Kept::of(&point, time);
        if self.len == 0 || self.last.time < time {
            // After every point held: appended, the oldest dropped if full.
            let full = self.len >= capacity;
            if full {
                self.drop_oldest();
            }
            self.append(kept, capacity);
            return if full { gained } else { gained + 1 };
        }
        gained + self.insert_within(kept, capacity)
    }

    /// Appends `kept`, later than every point held, to a ring of at most
    /// `capacity` points.
    fn append(&mut self, kept: Kept, capacity: usize) {
        match self.blocks.back_mut() {
            Some(block) if self.len > 0 && !block.is_full() => {
                self.step = block.push_after(self.last, self.step, kept);
            }
            last => {
                if let Some(block) = last {
                    block.seal();
                }
                self.room_for_a_block(capacity);
                self.blocks.push_back(Block::new(kept));
                self.step = 0;
            }
        }
        self.last = kept;
        self.len += 1;
    }

    /// Room for one more block: doubling, but not past what a full ring
    /// of `capacity` points needs (its blocks full but the first and the
    /// last, which may hold one point each), so 1,000 points take room for
    /// 18 blocks, not 32. Blocks cut in two by points out of order take a
    /// few more.
    fn room_for_a_block(&mut self, capacity: usize) {
        let blocks = self.blocks.len();
        if blocks < self.blocks.capacity() {
            return;
        }
        let needed = capacity.div_ceil(BLOCK_POINTS) + 2;
        let more = if blocks < needed {
            blocks.max(2).min(needed - blocks)
        } else {
            2
        };
        self.blocks.reserve_exact(more);
    }

    /// Drops the oldest point held; answers whether its block went with it.
    fn drop_oldest(&mut self) -> bool {
        self.skipped += 1;
        self.len -= 1;
        if self.blocks.front().is_some_and(|b| self.skipped >= b.len()) {
            self.blocks.pop_front();
            self.skipped = 0;
            return true;
        }
        false
    }

    /// Puts `kept`, at or before the newest point's time, in its place by
    /// rewriting its block: replaces the point of its time, or is refused
    /// when older than every point of a full ring, or goes in (the oldest
    /// dropped if full). Answers how many points the ring gained.
    fn insert_within(&mut self, kept: Kept, capacity: usize) -> i64 {
        let time = kept.time;
        // The last block that starts at or before it (else the first).
        let mut b = self
            .blocks
            .partition_point(|block| block.first().time <= time)
            .saturating_sub(1);
        let mut points: Vec<Kept> = self.blocks[b].points().collect();
        let skip = if b == 0 { self.skipped } else { 0 };
        let mut at = skip + points[skip..].partition_point(|p| p.time < time);
        let full = self.len >= capacity;
        let same = points.get(at).is_some_and(|p| p.time == time);
        if !same && full && b == 0 && at == skip {
            return 0; // older than everything held, and no room
        }
        if b == 0 {
            points.drain(..skip);
            at -= skip;
            self.skipped = 0;
        }
        if same {
            // The same message time again: a duplicate (nothing to do), or
            // a correction: the later write wins.
            if points[at] != kept {
                points[at] = kept;
                self.rewrite(b, &points);
            } else if b == 0 && skip > 0 {
                self.rewrite(b, &points);
            }
            return 0;
        }
        if full {
            if b == 0 {
                points.remove(0);
                at -= 1;
                self.len -= 1;
            } else if self.drop_oldest() {
                b -= 1;
            }
        }
        points.insert(at, kept);
        self.len += 1;
        if points.len() > BLOCK_POINTS {
            self.room_for_a_block(capacity);
        }
        self.rewrite(b, &points);
        if full { 0 } else { 1 }
    }

    /// Makes `points` (1 to 2 × [`BLOCK_POINTS`], in order) block `b`,
    /// cut in two blocks when more than one holds.
    fn rewrite(&mut self, b: usize, points: &[Kept]) {
        let is_last = b + 1 == self.blocks.len();
        let last = if points.len() > BLOCK_POINTS {
            let (front, back) = points.split_at(points.len() / 2);
            self.blocks[b] = Block::of(front);
            self.blocks.insert(b + 1, Block::of(back));
            back
        } else {
            self.blocks[b] = Block::of(points);
            points
        };
        if is_last && let Some(&newest) = last.last() {
            self.last = newest;
            self.step = last_step(last);
        }
    }

    /// The points held, oldest first.
    fn points(&self) -> impl Iterator<Item = Kept> + '_ {
        self.blocks
            .iter()
            .flat_map(Block::points)
            .skip(self.skipped)
    }

    /// Makes `newest_ms`, newer than every point, the base: points over
    /// [`KEPT_BEHIND_MS`] older than it go. Answers how many went.
    fn rebase(&mut self, newest_ms: i64) -> i64 {
        let shift = newest_ms - self.base_ms;
        let points: Vec<Kept> = self.points().collect();
        let keep_from = points.partition_point(|p| i64::from(p.time) - shift < -KEPT_BEHIND_MS);
        let shifted: Vec<Kept> = points[keep_from..]
            .iter()
            .map(|p| Kept {
                time: (i64::from(p.time) - shift) as i32,
                ..*p
            })
            .collect();
        self.blocks = shifted.chunks(BLOCK_POINTS).map(Block::of).collect();
        self.skipped = 0;
        self.len = shifted.len();
        self.last = shifted.last().copied().unwrap_or_default();
        self.step = shifted
            .chunks(BLOCK_POINTS)
            .next_back()
            .map_or(0, last_step);
        self.base_ms = newest_ms;
        keep_from as i64
    }

    fn recent(&self, since_ms: i64) -> Option<TrackerTrail> {
        if self.len == 0 {
            return None;
        }
        let since = since_ms.saturating_sub(self.base_ms);
        // The block before the first that starts at or after `since` may
        // hold points at or after it too.
        let b = self
            .blocks
            .partition_point(|block| i64::from(block.first().time) < since)
            .saturating_sub(1);
        let skip = if b == 0 { self.skipped } else { 0 };
        let mut points: Vec<LivePoint> = self
            .blocks
            .range(b..)
            .flat_map(Block::points)
            .skip(skip)
            .skip_while(|p| i64::from(p.time) < since)
            .map(|p| p.point(self.base_ms))
            .collect();
        if points.is_empty() {
            points.push(self.last.point(self.base_ms));
        }
        if let Some(newest) = points.last_mut() {
            self.newest.apply(newest);
        }
        Some(TrackerTrail {
            points,
            last_server_time_ms: self.last_server_time_ms,
        })
    }

    /// The bytes its points take.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.blocks.capacity() * std::mem::size_of::<Block>()
            + self
                .blocks
                .iter()
                .map(|b| b.bytes() - std::mem::size_of::<Block>())
                .sum::<usize>()
    }
}

/// The rings by tracker. Hashed with foldhash: tracker ids are the
/// platform's own, and SipHash of every acknowledged point's id showed in
/// the intake's profile.
type Trackers = HashMap<TrackerId, Ring, foldhash::fast::RandomState>;

/// Each tracker's most recent positions, at most a fixed number per tracker.
#[derive(Debug)]
pub struct LivePositions {
    capacity: usize,
    trackers: RwLock<Trackers>,
    trackers_held: Gauge,
    points_held: Gauge,
}

impl LivePositions {
    /// An empty store keeping at most `points_per_tracker` points of each
    /// tracker (at least 1), publishing its size on the two gauges.
    pub(crate) fn new(points_per_tracker: usize, trackers_held: Gauge, points_held: Gauge) -> Self {
        Self {
            capacity: points_per_tracker.max(1),
            trackers: RwLock::new(Trackers::default()),
            trackers_held,
            points_held,
        }
    }

    /// Records points, taking the lock once. A point with the message time of
    /// one already kept replaces it; one older than all those kept of a full
    /// tracker is dropped.
    pub(crate) fn record(&self, points: impl IntoIterator<Item = (TrackerId, LivePoint)>) {
        let mut points = points.into_iter().peekable();
        if points.peek().is_none() {
            return;
        }
        let mut trackers = self.trackers.write().unwrap_or_else(|p| p.into_inner());
        let (mut new_trackers, mut new_points) = (0, 0i64);
        for (tracker, point) in points {
            let ring = trackers.entry(tracker).or_insert_with(|| {
                new_trackers += 1;
                Ring::default()
            });
            new_points += ring.insert(point, self.capacity);
        }
        drop(trackers);
        self.trackers_held.inc_by(new_trackers);
        self.points_held.inc_by(new_points);
    }

    /// The points of `tracker` with a message time at or after `since_ms`,
    /// and always its newest one; `None` when nothing is known of it.
    pub fn recent(&self, tracker: TrackerId, since_ms: i64) -> Option<TrackerTrail> {
        self.read().get(&tracker)?.recent(since_ms)
    }

    /// [`recent`](Self::recent) of several trackers under one lock, in their order.
    pub fn recent_many(&self, trackers: &[TrackerId], since_ms: i64) -> Vec<Option<TrackerTrail>> {
        let map = self.read();
        trackers
            .iter()
            .map(|t| map.get(t).and_then(|ring| ring.recent(since_ms)))
            .collect()
    }

    /// How many trackers have points.
    pub fn trackers(&self) -> usize {
        self.read().len()
    }

    fn read(&self) -> RwLockReadGuard<'_, Trackers> {
        self.trackers.read().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(capacity: usize) -> LivePositions {
        LivePositions::new(capacity, Gauge::default(), Gauge::default())
    }

    fn at(message_time_ms: i64) -> LivePoint {
        LivePoint {
            message_time_ms,
            server_time_ms: message_time_ms + 5,
            lat: 1.0,
            lng: 2.0,
            speed: Some(3.5),
            heading: Some(90),
        }
    }

    fn times(trail: &TrackerTrail) -> Vec<i64> {
        trail.points.iter().map(|p| p.message_time_ms).collect()
    }

    const T: TrackerId = TrackerId(7);

    #[test]
    fn points_are_kept_to_a_centimetre_and_the_newests_speed_to_a_thousandth_of_a_kmh() {
        let live = store(10);
        let sent = LivePoint {
            message_time_ms: 1_000,
            server_time_ms: 1_250,
            lat: 55.755_831_27,
            lng: -37.617_3,
            speed: Some(62.345_6),
            heading: Some(359),
        };
        live.record([(T, sent)]);
        let rounded = LivePoint {
            lat: 55.755_831_3,
            speed: Some(62.346),
            ..sent
        };
        assert_eq!(
            live.recent(T, 0).unwrap().points,
            [rounded],
            "short decimals come back exactly"
        );

        let blank = LivePoint {
            message_time_ms: 2_000,
            lat: -90.0,
            lng: 180.0,
            speed: None,
            heading: None,
            ..sent
        };
        live.record([(T, blank)]);
        let behind = LivePoint {
            speed: None,
            heading: None,
            ..rounded
        };
        assert_eq!(
            live.recent(T, 0).unwrap().points,
            [behind, blank],
            "speed and heading are the newest's only"
        );
    }

    #[test]
    fn the_newests_speed_and_heading_follow_the_newest_point_whatever_arrives_late() {
        let live = store(3);
        let moving = |time, speed, heading| LivePoint {
            speed: Some(speed),
            heading: Some(heading),
            ..at(time)
        };
        live.record([(T, moving(20, 40.0, 10)), (T, moving(10, 5.0, 200))]);
        let newest = |live: &LivePositions| {
            let trail = live.recent(T, 0).unwrap();
            let newest = *trail.newest().unwrap();
            (newest.message_time_ms, newest.speed, newest.heading)
        };
        assert_eq!(
            newest(&live),
            (20, Some(40.0), Some(10)),
            "a late point changes nothing"
        );
        live.record([(T, moving(20, 41.0, 11))]);
        assert_eq!(
            newest(&live),
            (20, Some(41.0), Some(11)),
            "the newest written again"
        );
        live.record([
            (T, moving(30, 0.0, 0)),
            (T, moving(40, 7.5, 90)),
            (T, moving(5, 1.0, 1)),
        ]);
        assert_eq!(newest(&live), (40, Some(7.5), Some(90)));
        assert_eq!(
            times(&live.recent(T, 0).unwrap()),
            [20, 30, 40],
            "full: oldest dropped, older refused"
        );
        let trail = live.recent(T, 35).unwrap();
        assert_eq!(trail.points.len(), 1);
        assert_eq!(
            trail.points[0].speed,
            Some(7.5),
            "a cut trail still ends with the newest's"
        );
    }

    const DAY_MS: i64 = 86_400_000;

    #[test]
    fn points_weeks_apart_keep_exact_times_and_those_25_days_behind_the_newest_go() {
        let live = store(10);
        let t0 = 1_700_000_000_123;
        live.record([(T, at(t0)), (T, at(t0 + 20 * DAY_MS)), (T, at(t0 - DAY_MS))]);
        assert_eq!(
            times(&live.recent(T, i64::MIN).unwrap()),
            [t0 - DAY_MS, t0, t0 + 20 * DAY_MS]
        );
        // 40 days after t0: t0 and the day before it are over 24.8 days behind.
        live.record([(T, at(t0 + 40 * DAY_MS))]);
        let trail = live.recent(T, i64::MIN).unwrap();
        assert_eq!(times(&trail), [t0 + 20 * DAY_MS, t0 + 40 * DAY_MS]);
        assert!(
            trail
                .points
                .iter()
                .all(|p| p.server_time_ms == p.message_time_ms + 5)
        );
        assert_eq!(live.points_held.get(), 2);
        live.record([(T, at(t0 + 10 * DAY_MS)), (T, at(t0 + 30 * DAY_MS))]);
        assert_eq!(
            times(&live.recent(T, i64::MIN).unwrap()),
            [t0 + 20 * DAY_MS, t0 + 30 * DAY_MS, t0 + 40 * DAY_MS],
            "a point 30 days behind the newest is refused, 10 days behind kept"
        );
        assert_eq!(live.points_held.get(), 3);
        assert_eq!(
            times(&live.recent(T, t0 + 25 * DAY_MS).unwrap()),
            [t0 + 30 * DAY_MS, t0 + 40 * DAY_MS]
        );
    }

    #[test]
    fn a_server_time_weeks_from_its_message_time_is_exact_for_the_newest_and_clamped_behind_it() {
        let live = store(10);
        let backfilled = LivePoint {
            server_time_ms: 1_000 + 30 * DAY_MS,
            ..at(1_000)
        };
        live.record([(T, backfilled)]);
        assert_eq!(
            live.recent(T, 0).unwrap().points[0].server_time_ms,
            1_000 + 30 * DAY_MS
        );
        live.record([(T, at(2_000))]);
        let trail = live.recent(T, 0).unwrap();
        assert_eq!(
            trail
                .points
                .iter()
                .map(|p| p.server_time_ms)
                .collect::<Vec<_>>(),
            [1_000 + i64::from(i32::MAX), 2_005]
        );
        assert_eq!(trail.last_server_time_ms, 1_000 + 30 * DAY_MS);
    }

    /// A vehicle's trail at 1 Hz: `moving` about 15 m/s, else parked; a
    /// reception delay of 150 ms to 2 s.
    fn drive(ring: &mut Ring, seconds: i64, moving: bool, capacity: usize) {
        // SplitMix64, for a fixed trail.
        let mut state = 17u64;
        let mut unit = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut lat, mut lng) = (43.238_949, 76.889_709);
        for s in 0..seconds {
            if moving {
                lat += 1e-4 + unit() * 4e-5;
                lng -= 8e-5 + unit() * 4e-5;
            }
            let time = 1_765_000_000_000 + s * 1_000;
            ring.insert(
                LivePoint {
                    message_time_ms: time,
                    server_time_ms: time + 150 + (unit() * 1_850.0) as i64,
                    lat,
                    lng,
                    speed: Some(54.0),
                    heading: Some(135),
                },
                capacity,
            );
        }
    }

    #[test]
    fn a_trail_a_second_apart_takes_under_nine_bytes_a_point_moving_and_seven_parked() {
        for moving in [true, false] {
            let mut ring = Ring::default();
            drive(&mut ring, 1_500, moving, 1_000);
            assert_eq!(ring.len, 1_000);
            assert_eq!(ring.points().count(), 1_000);
            // 8.3 and 6.3 when written; a [`Kept`] takes 16.
            let per_point = ring.bytes() as f64 / 1_000.0;
            let bound = if moving { 9.0 } else { 7.0 };
            assert!(
                per_point < bound,
                "moving {moving}: {per_point} bytes a point"
            );
        }
    }

    /// What [`Ring`] is checked against.
    mod model {
        use super::*;

        /// The ring as it was before its points were packed (decision 120):
        /// a deque of [`Kept`], the model the packed ring must match.
        #[derive(Debug, Default)]
        pub(super) struct Plain {
            /// Sorted by message time, at most one point per message time.
            pub(super) points: VecDeque<Kept>,
            /// The message time [`Kept::time`] counts from: at or before the
            /// newest point's, and within ±24.8 days of every point's.
            base_ms: i64,
            /// Of the newest point.
            newest: Newest,
            last_server_time_ms: i64,
        }

        impl Plain {
            /// Puts `point` in its place; answers how many points the ring gained
            /// (1, 0, or fewer when a much newer point took points past
            /// [`KEPT_BEHIND_MS`] out).
            pub(super) fn insert(&mut self, point: LivePoint, capacity: usize) -> i64 {
                self.last_server_time_ms = self.last_server_time_ms.max(point.server_time_ms);
                let t = point.message_time_ms;
                let mut gained = 0;
                if self.points.is_empty() {
                    self.base_ms = t;
                } else if t.saturating_sub(self.base_ms) > KEPT_BEHIND_MS {
                    gained -= self.rebase(t);
                } else if self.base_ms.saturating_sub(t) > KEPT_BEHIND_MS {
                    return 0; // over 24.8 days older than the newest: never shown
                }
                let time = (t - self.base_ms) as i32;
                if self.points.back().is_none_or(|last| last.time <= time) {
                    // The newest, or a later write of it: never dropped below.
                    self.newest = Newest::of(&point);
                }
                let point = Kept::of(&point, time);
                let at = match self.points.back() {
                    Some(last) if last.time < time => self.points.len(),
                    None => 0,
                    Some(_) => self.points.partition_point(|p| p.time < time),
                };
                if let Some(same) = self.points.get_mut(at).filter(|p| p.time == time) {
                    // The same message time again: a duplicate, or a correction; the later write wins.
                    *same = point;
                    return gained;
                }
                if self.points.len() >= capacity {
                    if at == 0 {
                        return gained; // older than everything kept, and no room
                    }
                    self.points.pop_front();
                    self.points.insert(at - 1, point);
                    return gained;
                }
                if self.points.len() == self.points.capacity() {
                    // Doubling, but never past the ring's size: 1,000 points take
                    // room for 1,000, not 1,024.
                    let grown = (self.points.len() * 2).max(4).min(capacity);
                    self.points.reserve_exact(grown - self.points.len());
                }
                self.points.insert(at, point);
                gained + 1
            }

            /// Makes `newest_ms`, newer than every point, the base: points over
            /// [`KEPT_BEHIND_MS`] older than it go. Answers how many went.
            fn rebase(&mut self, newest_ms: i64) -> i64 {
                let shift = newest_ms - self.base_ms;
                let keep_from = self
                    .points
                    .partition_point(|p| i64::from(p.time) - shift < -KEPT_BEHIND_MS);
                self.points.drain(..keep_from);
                for p in &mut self.points {
                    p.time = (i64::from(p.time) - shift) as i32;
                }
                self.base_ms = newest_ms;
                keep_from as i64
            }

            pub(super) fn recent(&self, since_ms: i64) -> Option<TrackerTrail> {
                if self.points.is_empty() {
                    return None;
                }
                let since = since_ms.saturating_sub(self.base_ms);
                let from = self
                    .points
                    .partition_point(|p| i64::from(p.time) < since)
                    .min(self.points.len() - 1);
                let mut points = Vec::with_capacity(self.points.len() - from);
                points.extend(self.points.range(from..).map(|p| p.point(self.base_ms)));
                if let Some(newest) = points.last_mut() {
                    self.newest.apply(newest);
                }
                Some(TrackerTrail {
                    points,
                    last_server_time_ms: self.last_server_time_ms,
                })
            }
        }
    }

    /// One step of [`the_packed_ring_answers_as_the_plain_one_did`].
    #[derive(Debug, Clone)]
    enum Step {
        /// A point at this many ms after the start.
        Point {
            offset_ms: i64,
            lat: i32,
            lng: i32,
            received_ms: i64,
        },
        /// A point this many days after the newest (the ring rebases).
        Jump { days: i64 },
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            20 => (0..200_000i64, -5..5i32, -5..5i32, -100..3_000i64).prop_map(
                |(offset_ms, lat, lng, received_ms)| Step::Point { offset_ms, lat, lng, received_ms }
            ),
            // Mostly in order: a second after the one before.
            20 => Just(Step::Point { offset_ms: -1, lat: 1, lng: -1, received_ms: 500 }),
            1 => (1..40i64).prop_map(|days| Step::Jump { days }),
        ]
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_packed_ring_answers_as_the_plain_one_did(
            capacity in 1..80usize,
            steps in prop::collection::vec(step(), 1..400),
            sinces in prop::collection::vec(-1_000..250_000i64, 4),
        ) {
            let (mut packed, mut plain) = (Ring::default(), model::Plain::default());
            let start = 1_700_000_000_000i64;
            let (mut newest, mut next) = (start, start);
            let (mut lat, mut lng) = (0.0f64, 0.0f64);
            for step in steps {
                let time = match step {
                    Step::Point { offset_ms: -1, .. } => {
                        next += 1_000;
                        next
                    }
                    Step::Point { offset_ms, .. } => start + offset_ms,
                    Step::Jump { days } => newest + days * 86_400_000,
                };
                let received = match step {
                    Step::Point { received_ms, .. } => received_ms,
                    Step::Jump { .. } => 0,
                };
                if let Step::Point { lat: dlat, lng: dlng, .. } = step {
                    lat += f64::from(dlat) * 1e-5;
                    lng += f64::from(dlng) * 1e-5;
                }
                newest = newest.max(time);
                next = next.max(time);
                let point = LivePoint {
                    message_time_ms: time,
                    server_time_ms: time + received,
                    lat,
                    lng,
                    speed: Some(f64::from(dlat_of(&step))),
                    heading: Some(1),
                };
                prop_assert_eq!(packed.insert(point, capacity), plain.insert(point, capacity));
                prop_assert_eq!(packed.len, plain.points.len());
                prop_assert!(packed.points().eq(plain.points.iter().copied()));
            }
            for since in sinces {
                for since_ms in [start + since, newest - since] {
                    prop_assert_eq!(packed.recent(since_ms), plain.recent(since_ms));
                }
            }
            prop_assert_eq!(packed.recent(i64::MIN), plain.recent(i64::MIN));
        }
    }

    fn dlat_of(step: &Step) -> i32 {
        match step {
            Step::Point { lat, .. } => *lat,
            Step::Jump { .. } => 0,
        }
    }

    #[test]
    fn nothing_known_is_none() {
        let live = store(10);
        assert_eq!(live.recent(T, 0), None);
        live.record([(T, at(1))]);
        assert_eq!(live.recent(TrackerId(8), 0), None);
        assert_eq!(live.trackers(), 1);
    }

    #[test]
    fn keeps_message_time_order_and_late_points_go_in_their_place() {
        let live = store(10);
        live.record([(T, at(10)), (T, at(30)), (T, at(20))]);
        live.record([(T, at(5)), (T, at(40)), (T, at(25))]);
        let trail = live.recent(T, 0).unwrap();
        assert_eq!(times(&trail), [5, 10, 20, 25, 30, 40]);
        assert_eq!(trail.newest().unwrap().message_time_ms, 40);
    }

    #[test]
    fn since_cuts_old_points_but_keeps_the_newest() {
        let live = store(10);
        live.record((1..=5).map(|i| (T, at(i * 10))));
        assert_eq!(times(&live.recent(T, 30).unwrap()), [30, 40, 50]);
        assert_eq!(times(&live.recent(T, 31).unwrap()), [40, 50]);
        assert_eq!(times(&live.recent(T, 1_000).unwrap()), [50]);
        assert_eq!(times(&live.recent(T, i64::MIN).unwrap()).len(), 5);
    }

    #[test]
    fn a_full_ring_drops_its_oldest_and_refuses_older_points() {
        let live = store(3);
        live.record((1..=5).map(|i| (T, at(i * 10))));
        assert_eq!(times(&live.recent(T, 0).unwrap()), [30, 40, 50]);
        live.record([(T, at(5))]);
        assert_eq!(times(&live.recent(T, 0).unwrap()), [30, 40, 50]);
        live.record([(T, at(35))]);
        assert_eq!(times(&live.recent(T, 0).unwrap()), [35, 40, 50]);
        assert_eq!(live.points_held.get(), 3);
        assert_eq!(live.trackers_held.get(), 1);
    }

    #[test]
    fn the_same_message_time_again_replaces_in_place() {
        let live = store(5);
        live.record([(T, at(10)), (T, at(20))]);
        let mut again = at(10);
        again.lat = 9.0;
        live.record([(T, again), (T, at(20))]);
        let trail = live.recent(T, 0).unwrap();
        assert_eq!(times(&trail), [10, 20]);
        assert_eq!(trail.points[0].lat, 9.0);
        assert_eq!(live.points_held.get(), 2);
    }

    #[test]
    fn last_server_time_is_the_newest_seen_whatever_the_message_time() {
        let live = store(5);
        let mut late = at(1);
        late.server_time_ms = 1_000;
        live.record([(T, at(100)), (T, late)]);
        assert_eq!(live.recent(T, 0).unwrap().last_server_time_ms, 1_000);
    }

    #[test]
    fn gauges_count_trackers_and_points_and_many_reads_keep_order() {
        let live = store(4);
        live.record((0..3).flat_map(|t| (0..6).map(move |i| (TrackerId(t), at(i)))));
        assert_eq!(live.trackers_held.get(), 3);
        assert_eq!(live.points_held.get(), 12);
        let trails = live.recent_many(&[TrackerId(2), TrackerId(9), TrackerId(0)], 4);
        assert_eq!(times(trails[0].as_ref().unwrap()), [4, 5]);
        assert!(trails[1].is_none());
        assert_eq!(times(trails[2].as_ref().unwrap()), [4, 5]);
    }

    #[test]
    fn only_messages_with_a_position_have_a_point() {
        let mut message = Message {
            tracker_id: T,
            message_time_ms: 10,
            server_time_ms: 11,
            lat: Some(1.0),
            ..Message::default()
        };
        assert_eq!(LivePoint::of(&message), None);
        message.lng = Some(2.0);
        let (tracker, point) = LivePoint::of(&message).unwrap();
        assert_eq!((tracker, point.lat, point.lng), (T, 1.0, 2.0));
    }

    /// The engine's hook: acknowledged writes, not the rejected, and the WAL's replay.
    mod engine_hook {
        use prometheus_client::registry::Registry;

        use super::*;
        use crate::{Ingest, IngestConfig};

        fn open(dir: &std::path::Path) -> Ingest {
            let config = IngestConfig {
                flush_interval: std::time::Duration::from_secs(3600),
                max_inner_names_per_day: 1,
                live_points_per_tracker: 3,
                ..IngestConfig::new(dir)
            };
            Ingest::open(config, &mut Registry::default()).unwrap()
        }

        fn message(tracker: i64, time_ms: i64, inputs: &[&str]) -> Message {
            Message {
                tracker_id: TrackerId(tracker),
                message_time_ms: time_ms,
                server_time_ms: time_ms + 1,
                lat: Some(50.0),
                lng: Some(8.0),
                inputs: inputs.iter().map(|n| ((*n).into(), 1.0)).collect(),
                ..Message::default()
            }
        }

        #[tokio::test]
        async fn acknowledged_points_are_live_at_once_and_replayed_after_a_crash() {
            let dir = tempfile::tempdir().unwrap();
            let ingest = open(dir.path());
            let no_position = Message {
                lat: None,
                ..message(2, 10, &[])
            };
            let outcome = ingest
                .write(vec![
                    message(1, 10, &["a"]),
                    message(1, 20, &["a", "b"]), // a second inner name: rejected
                    message(1, 30, &[]),
                    no_position,
                ])
                .await
                .unwrap();
            assert_eq!(outcome.rejected.len(), 1);
            let trail = ingest.live().recent(TrackerId(1), 0).unwrap();
            assert_eq!(times(&trail), [10, 30]);
            assert_eq!(trail.last_server_time_ms, 31);
            assert_eq!(ingest.live().recent(TrackerId(2), 0), None);

            // A duplicate is recorded again, changing nothing.
            ingest.write(vec![message(1, 30, &[])]).await.unwrap();
            assert_eq!(
                times(&ingest.live().recent(TrackerId(1), 0).unwrap()),
                [10, 30]
            );

            ingest.crash_for_tests();
            drop(ingest);
            let ingest = open(dir.path());
            let trail = ingest.live().recent(TrackerId(1), 0).unwrap();
            assert_eq!(times(&trail), [10, 30]);
            assert_eq!(ingest.live().trackers(), 1);
        }
    }
}
