//! The nearest place by a grid of latitude/longitude cells, searched ring
//! by ring outward from the point's cell until no cell left outside can
//! hold a nearer place. Each cell also holds the places within [`MARGIN`]
//! of it, so that near places (where trackers are) the point's own cell
//! almost always settles it: one contiguous run of a dozen points. Far from
//! every place (at sea) it gives up after [`MAX_RING`] rings and the caller
//! asks its k-d tree.
//!
//! Distances are squared chords between points on the unit sphere in
//! `f32`, as in the tree, so both find the same place (or, between two
//! places within a metre of the same distance, either).

use crate::unit_sphere;

/// Side of a cell, degrees.
const CELL: f64 = 0.25;
/// How far beyond its edges a cell holds places, degrees (latitude and
/// longitude alike).
const MARGIN: f64 = 0.1;
const ROWS: usize = (180.0 / CELL) as usize;
const COLS: usize = (360.0 / CELL) as usize;
/// Rings searched before giving up: at least 2 degrees (about 220 km) in
/// latitude from the point.
const MAX_RING: usize = 8;
/// Rings searched, when they held no place at all, before giving up.
const GIVE_UP_EMPTY: usize = 3;

pub(crate) struct Grid {
    /// The points of cell `row * COLS + col` are
    /// `points[start[cell]..start[cell + 1]]`: a row's cells are contiguous.
    start: Vec<u32>,
    points: Vec<Entry>,
}

/// A point on the unit sphere and its item, side by side (one cache line
/// for both).
#[derive(Clone, Copy)]
struct Entry {
    point: [f32; 3],
    item: u32,
}

/// The cell's row of a latitude (row 0 starts at the south pole).
fn row_of(lat: f64) -> usize {
    (((lat + 90.0) / CELL).floor() as isize).clamp(0, ROWS as isize - 1) as usize
}

/// The cell's column of a longitude (column 0 starts at 180° W), with the
/// longitude's offset within the cell.
fn col_of(lng: f64) -> (usize, f64) {
    let x = lng + 180.0;
    let col = (x / CELL).floor();
    (
        (col as isize).rem_euclid(COLS as isize) as usize,
        x - col * CELL,
    )
}

/// The cells a point is within [`MARGIN`] of (wrapping around the
/// antimeridian).
fn cells_near(lat: f64, lng: f64) -> impl Iterator<Item = usize> {
    let (first, _) = col_of(lng - MARGIN);
    let (last, _) = col_of(lng + MARGIN);
    let width = (last + COLS - first) % COLS + 1;
    (row_of(lat - MARGIN)..=row_of(lat + MARGIN))
        .flat_map(move |row| (0..width).map(move |c| row * COLS + (first + c) % COLS))
}

fn chord2(a: &[f32; 3], b: &[f32; 3]) -> f32 {
    let (x, y, z) = (a[0] - b[0], a[1] - b[1], a[2] - b[2]);
    x * x + y * y + z * z
}

impl Grid {
    /// The grid over the points (latitude, longitude), the item of each
    /// being its index.
    pub(crate) fn new(points: impl Iterator<Item = (f64, f64)>) -> Self {
        // Each point in every cell it is within MARGIN of, counted, then
        // placed (a counting sort: a cell's points keep their order).
        let points: Vec<(f64, f64)> = points.collect();
        let mut start = vec![0u32; ROWS * COLS + 1];
        for &(lat, lng) in &points {
            for cell in cells_near(lat, lng) {
                start[cell + 1] += 1;
            }
        }
        for c in 0..ROWS * COLS {
            start[c + 1] += start[c];
        }
        let mut next = start.clone();
        let blank = Entry {
            point: [0.0; 3],
            item: 0,
        };
        let mut entries = vec![blank; start[ROWS * COLS] as usize];
        for (item, &(lat, lng)) in (0u32..).zip(&points) {
            let point = unit_sphere(lat, lng);
            for cell in cells_near(lat, lng) {
                entries[next[cell] as usize] = Entry { point, item };
                next[cell] += 1;
            }
        }
        Self {
            start,
            points: entries,
        }
    }

    /// The item nearest to the point (`q` is it on the unit sphere), or
    /// `None` when the rings searched could not settle it.
    pub(crate) fn nearest(&self, lat: f64, lng: f64, q: &[f32; 3]) -> Option<u32> {
        let row = row_of(lat);
        let (col, within) = col_of(lng);
        let cos_lat = f64::from(q[0] * q[0] + q[1] * q[1]).sqrt();
        let mut best = f32::INFINITY;
        let mut found = None;
        for ring in 0..=MAX_RING {
            let top = row + ring;
            let bottom = row.checked_sub(ring);
            for r in bottom.unwrap_or(0)..=top.min(ROWS - 1) {
                if ring == 0 || Some(r) == bottom || r == top {
                    self.scan_row(r, col, ring, q, &mut best, &mut found);
                } else if 2 * ring + 1 < COLS {
                    // The ring's left and right cells of a middle row.
                    for c in [col + COLS - ring, col + ring] {
                        self.scan(r, c % COLS, c % COLS, q, &mut best, &mut found);
                    }
                }
            }
            match found {
                Some(_) if (best as f64) <= outside_chord2(lat, within, row, ring, cos_lat) => {
                    return found;
                }
                // Nothing within a degree: most likely at sea, where the
                // tree is quicker than more rings.
                None if ring >= GIVE_UP_EMPTY => return None,
                _ => {}
            }
        }
        None
    }

    /// The cells `col - ring ..= col + ring` of a row (wrapping around the
    /// antimeridian; the whole row when that spans it).
    fn scan_row(
        &self,
        row: usize,
        col: usize,
        ring: usize,
        q: &[f32; 3],
        best: &mut f32,
        found: &mut Option<u32>,
    ) {
        if 2 * ring + 1 >= COLS {
            return self.scan(row, 0, COLS - 1, q, best, found);
        }
        let first = (col + COLS - ring) % COLS;
        let last = (col + ring) % COLS;
        if first <= last {
            self.scan(row, first, last, q, best, found);
        } else {
            self.scan(row, first, COLS - 1, q, best, found);
            self.scan(row, 0, last, q, best, found);
        }
    }

    /// The cells `first..=last` of a row: one contiguous run of points.
    fn scan(
        &self,
        row: usize,
        first: usize,
        last: usize,
        q: &[f32; 3],
        best: &mut f32,
        found: &mut Option<u32>,
    ) {
        let from = self.start[row * COLS + first] as usize;
        let to = self.start[row * COLS + last + 1] as usize;
        for entry in &self.points[from..to] {
            let d = chord2(&entry.point, q);
            if d < *best {
                *best = d;
                *found = Some(entry.item);
            }
        }
    }
}

/// A lower bound of the squared chord from the point to any place the
/// cells within `ring` of its cell do not hold: such a place is outside
/// their latitudes widened by [`MARGIN`] (at least as far as the nearer
/// edge's latitude) or outside their longitudes so widened (at least as far
/// as the meridian of the nearer edge, `asin(cos lat · sin Δlng)`). Without
/// trigonometry: `asin y ≥ y`, `sin x ≥ x - x³/6` and
/// `2 sin(a/2) ≥ a - a³/24`. `within` is the longitude's offset in its cell.
fn outside_chord2(lat: f64, within: f64, row: usize, ring: usize, cos_lat: f64) -> f64 {
    // No edge beyond the poles' rows: nothing lies there.
    let south = if row >= ring && row - ring > 0 {
        lat - ((row - ring) as f64 * CELL - 90.0) + MARGIN
    } else {
        f64::INFINITY
    };
    let north = if row + ring < ROWS - 1 {
        (row + ring + 1) as f64 * CELL - 90.0 - lat + MARGIN
    } else {
        f64::INFINITY
    };
    let mut angle = south.min(north).to_radians();
    if 2 * ring + 1 < COLS {
        let dlng = (within + ring as f64 * CELL).min((ring + 1) as f64 * CELL - within) + MARGIN;
        let x = dlng.clamp(0.0, 90.0).to_radians();
        angle = angle.min(cos_lat * (x - x * x * x / 6.0));
    }
    // The cubic stays a lower bound, and increasing, up to 2 radians.
    let angle = angle.min(2.0);
    // Less about a metre for the rounding of the points to `f32`, so that
    // a place at the very edge is not skipped.
    let chord = (angle - angle * angle * angle / 24.0 - 2e-7).max(0.0);
    chord * chord
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundled;

    /// Uniform numbers in [0, 1) (SplitMix64).
    fn uniform(seed: u64) -> impl FnMut() -> f64 {
        let mut state = seed;
        move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// The nearest place by the grid (and the tree where the grid gives
    /// up) is as near as the nearest by looking at every place.
    #[test]
    fn the_grid_finds_a_place_as_near_as_every_place_checked() {
        let g = bundled();
        let all: Vec<[f32; 3]> = g.places().map(|p| unit_sphere(p.lat, p.lng)).collect();
        let mut next = uniform(17);
        let mut points = Vec::new();
        for _ in 0..1500 {
            // Near a place, on cell edges, and anywhere.
            let p = g.place((next() * g.len() as f64) as usize);
            points.push((p.lat + next() * 0.6 - 0.3, p.lng + next() * 0.6 - 0.3));
            points.push(((p.lat * 2.0).round() / 2.0, (p.lng * 2.0).round() / 2.0));
            points.push((next() * 180.0 - 90.0, next() * 360.0 - 180.0));
        }
        for lat in [-90.0, -89.9, -60.0, 0.0, 71.0, 89.99, 90.0] {
            for lng in [-180.0, -179.99, -0.25, 0.0, 90.0, 179.75, 180.0] {
                points.push((lat, lng));
            }
        }
        let mut settled = 0;
        for (lat, lng) in points {
            let lat = lat.clamp(-90.0, 90.0);
            let lng = if lng > 180.0 {
                lng - 360.0
            } else if lng < -180.0 {
                lng + 360.0
            } else {
                lng
            };
            let q = unit_sphere(lat, lng);
            let nearest = all
                .iter()
                .map(|p| chord2(p, &q))
                .fold(f32::INFINITY, f32::min);
            let place = g.nearest(lat, lng);
            let found = chord2(&unit_sphere(place.lat, place.lng), &q);
            // Within about a metre: `f32` rounding between equally near places.
            assert!(
                found.sqrt() - nearest.sqrt() <= 2e-7,
                "({lat}, {lng}): {} at {} against {}",
                place.name,
                found.sqrt(),
                nearest.sqrt()
            );
            settled += usize::from(g.grid.nearest(lat, lng, &q).is_some());
        }
        // The grid settles the points near places (two thirds of them) itself.
        assert!(settled > 3000, "{settled}");
    }

    #[test]
    fn cells_wrap_at_the_antimeridian_and_stop_at_the_poles() {
        assert_eq!((row_of(-90.0), col_of(-180.0).0), (0, 0));
        assert_eq!((row_of(90.0), col_of(180.0).0), (ROWS - 1, 0));
        assert_eq!(
            (row_of(CELL / 2.0), col_of(180.0 - CELL / 2.0).0),
            (ROWS / 2, COLS - 1)
        );
        assert!((col_of(180.0 - CELL / 4.0).1 - CELL * 0.75).abs() < 1e-9);
        let grid = Grid::new([(0.1, 179.9), (0.1, -179.6)].into_iter());
        // Across the antimeridian, and the nearer of the two.
        assert_eq!(
            grid.nearest(0.1, -179.9, &unit_sphere(0.1, -179.9)),
            Some(0)
        );
        assert_eq!(
            grid.nearest(0.1, -179.7, &unit_sphere(0.1, -179.7)),
            Some(1)
        );
        // Nothing within the rings searched: the caller asks the tree.
        assert_eq!(grid.nearest(45.0, 0.0, &unit_sphere(45.0, 0.0)), None);
    }
}
