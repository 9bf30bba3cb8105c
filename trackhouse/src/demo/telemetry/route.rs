//! The random source and the road: a splitmix64 generator and a smooth loop route.

const METRES_PER_DEGREE: f64 = 111_320.0;

/// splitmix64: tiny, fast, and random enough to make a demo look lived-in.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(super) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub(super) fn range(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.unit()
    }

    pub(super) fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// About N(0, 1): a sum of four uniforms, scaled.
    pub(super) fn normal(&mut self) -> f64 {
        (self.unit() + self.unit() + self.unit() + self.unit() - 2.0) * 3f64.sqrt()
    }
}

/// A smooth closed loop: an ellipse around (`lat0`, `lng0`) with radial wobbles.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    pub(crate) lat0: f64,
    pub(crate) lng0: f64,
    pub(crate) north_m: f64,
    pub(crate) east_m: f64,
    /// `(amplitude, frequency, phase)` of the radius's wobbles.
    pub(crate) wobble: [(f64, f64, f64); 2],
    /// The depot's angle on the loop.
    pub(crate) home: f64,
}

impl Route {
    pub(super) fn offset_m(&self, theta: f64) -> (f64, f64) {
        let radius = 1.0
            + self
                .wobble
                .iter()
                .map(|(amplitude, k, phase)| amplitude * (k * theta + phase).sin())
                .sum::<f64>();
        (
            self.north_m * radius * theta.sin(),
            self.east_m * radius * theta.cos(),
        )
    }

    pub(super) fn position(&self, theta: f64) -> (f64, f64) {
        let (north, east) = self.offset_m(theta);
        let lat = self.lat0 + north / METRES_PER_DEGREE;
        let lng = self.lng0 + east / (METRES_PER_DEGREE * self.lat0.to_radians().cos());
        (lat, lng)
    }

    /// Metres per radian at `theta`, and the bearing (degrees) when moving in `dir`.
    pub(super) fn tangent(&self, theta: f64, dir: f64) -> (f64, f64) {
        const H: f64 = 1e-4;
        let (n1, e1) = self.offset_m(theta - H);
        let (n2, e2) = self.offset_m(theta + H);
        let (dn, de) = ((n2 - n1) / (2.0 * H), (e2 - e1) / (2.0 * H));
        let bearing = (de * dir).atan2(dn * dir).to_degrees().rem_euclid(360.0);
        (dn.hypot(de).max(1.0), bearing)
    }

    /// The angle after `metres` from `theta` in `dir` (midpoint rule).
    pub(super) fn advance(&self, theta: f64, metres: f64, dir: f64) -> f64 {
        let (first, _) = self.tangent(theta, dir);
        let (middle, _) = self.tangent(theta + dir * metres / (2.0 * first), dir);
        theta + dir * metres / middle
    }
}
