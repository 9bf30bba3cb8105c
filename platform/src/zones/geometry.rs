//! Distances and point-in-polygon on latitude and longitude, in degrees.

use super::GeoPoint;

/// The earth's mean radius (IUGG), metres.
pub(super) const EARTH_RADIUS_M: f64 = 6_371_008.8;

/// The great-circle distance between two points, metres (haversine).
pub(super) fn distance_m(a: GeoPoint, b: GeoPoint) -> f64 {
    let (lat_a, lat_b) = (a.lat.to_radians(), b.lat.to_radians());
    let half_dlat = (lat_b - lat_a) / 2.0;
    let half_dlng = (b.lng - a.lng).to_radians() / 2.0;
    let h = half_dlat.sin().powi(2) + lat_a.cos() * lat_b.cos() * half_dlng.sin().powi(2);
    // Rounding can push `h` a hair above 1 for antipodes.
    2.0 * EARTH_RADIUS_M * h.sqrt().min(1.0).asin()
}

/// Whether `p` is inside the ring (even-odd rule on the plane of latitude
/// and longitude): a ray from `p` towards growing longitude crosses an odd
/// number of edges. Each edge counts its lower end and not its upper one,
/// so a ray through a vertex is counted once. A point exactly on an edge
/// may fall either way.
pub(super) fn in_polygon(ring: &[GeoPoint], p: GeoPoint) -> bool {
    let Some(mut prev) = ring.last().copied() else {
        return false;
    };
    let mut inside = false;
    for &next in ring {
        if (next.lat > p.lat) != (prev.lat > p.lat) {
            // The edge's longitude at the point's latitude (the two ends'
            // latitudes differ, or the test above is false).
            let lng = prev.lng + (p.lat - prev.lat) * (next.lng - prev.lng) / (next.lat - prev.lat);
            if p.lng < lng {
                inside = !inside;
            }
        }
        prev = next;
    }
    inside
}

/// The index of the first point whose edge from the previous one (the
/// last, for the first) spans more than 180 degrees of longitude: such an
/// edge crosses the antimeridian, which the plane test cannot follow.
pub(super) fn antimeridian_edge(ring: &[GeoPoint]) -> Option<usize> {
    let mut prev = *ring.last()?;
    for (i, &next) in ring.iter().enumerate() {
        if (next.lng - prev.lng).abs() > 180.0 {
            return Some(i);
        }
        prev = next;
    }
    None
}
