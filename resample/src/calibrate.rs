use arrow_array::{Array, Float64Array};

/// Converts raw sensor readings to litres through a calibration table, piecewise linearly.
///
/// `table` holds `(raw, litres)` points with `raw` strictly increasing;
/// between two points the litres are interpolated linearly, below the first
/// point they are the first point's litres and above the last the last's. A
/// reading equal to a point's raw value gets exactly that point's litres.
/// Nulls stay null and NaN stays NaN.
///
/// The caller validates tables; should one still be empty, hold a non-finite
/// number or not be strictly increasing, every output is null rather than a
/// guess. A single point maps every reading to its litres.
pub fn calibrate(raw: &Float64Array, table: &[(f64, f64)]) -> Float64Array {
    let Some(curve) = Calibration::new(table) else {
        return Float64Array::new_null(raw.len());
    };
    let litres: Vec<f64> = raw.values().iter().map(|&x| curve.litres(x)).collect();
    Float64Array::new(litres.into(), raw.nulls().cloned())
}

/// A calibration table ready to apply reading by reading, for callers that
/// write litres straight into their own buffers; [`calibrate`] is the same
/// over an array.
#[derive(Debug, Clone)]
pub struct Calibration(Curve);

impl Calibration {
    /// The table's curve; `None` for a table [`calibrate`] would turn into
    /// nulls (empty, a non-finite number, raw values not strictly increasing).
    pub fn new(table: &[(f64, f64)]) -> Option<Self> {
        Curve::new(table).map(Self)
    }

    /// The litres of one raw reading, exactly as [`calibrate`] computes them.
    #[inline]
    pub fn litres(&self, raw: f64) -> f64 {
        self.0.at(raw)
    }
}

/// Tables up to this many points are searched linearly.
const LINEAR_SEARCH_MAX_POINTS: usize = 32;

/// A validated table as `raw` breakpoints and one linear piece per interval.
#[derive(Debug, Clone)]
struct Curve {
    /// The raw values of the points, strictly increasing.
    raw: Vec<f64>,
    /// `pieces[j]` covers readings with exactly `j` points at or below them:
    /// the clamp below the first point, the segments, the clamp above the last.
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone)]
struct Piece {
    raw: f64,
    litres: f64,
    litres_per_raw: f64,
}

impl Curve {
    fn new(table: &[(f64, f64)]) -> Option<Self> {
        let (&(first_raw, first_litres), &(last_raw, last_litres)) =
            (table.first()?, table.last()?);
        if !table.iter().all(|(x, y)| x.is_finite() && y.is_finite()) {
            return None;
        }
        let clamp = |raw, litres| Piece {
            raw,
            litres,
            litres_per_raw: 0.0,
        };
        let mut pieces = Vec::with_capacity(table.len() + 1);
        pieces.push(clamp(first_raw, first_litres));
        for pair in table.windows(2) {
            let [(x0, y0), (x1, y1)] = *pair else {
                return None;
            };
            let slope = (y1 - y0) / (x1 - x0);
            if x1 <= x0 || !slope.is_finite() {
                return None;
            }
            pieces.push(Piece {
                raw: x0,
                litres: y0,
                litres_per_raw: slope,
            });
        }
        pieces.push(clamp(last_raw, last_litres));
        let raw = table.iter().map(|&(x, _)| x).collect();
        Some(Self { raw, pieces })
    }

    #[inline]
    fn at(&self, x: f64) -> f64 {
        if !x.is_finite() {
            return self.non_finite(x);
        }
        // Tables have about ten points: a branch-free count over all of them
        // (vectorized) beats a binary search's unpredictable branches.
        let points_at_or_below = if self.raw.len() <= LINEAR_SEARCH_MAX_POINTS {
            self.raw.iter().map(|&raw| usize::from(raw <= x)).sum()
        } else {
            self.raw.partition_point(|&raw| raw <= x)
        };
        self.pieces
            .get(points_at_or_below)
            .map_or(f64::NAN, |p| p.litres + (x - p.raw) * p.litres_per_raw)
    }

    #[cold]
    fn non_finite(&self, x: f64) -> f64 {
        let piece = if x > 0.0 {
            self.pieces.last()
        } else {
            self.pieces.first()
        };
        match piece {
            Some(piece) if !x.is_nan() => piece.litres,
            _ => f64::NAN,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: [(f64, f64); 4] = [(100.0, 0.0), (200.0, 50.0), (400.0, 100.0), (500.0, 150.0)];

    fn litres(raw: Vec<Option<f64>>, table: &[(f64, f64)]) -> Vec<Option<f64>> {
        calibrate(&Float64Array::from(raw), table).iter().collect()
    }

    #[test]
    fn interpolates_inside_segments() {
        let got = litres(vec![Some(150.0), Some(300.0), Some(450.0)], &TABLE);
        assert_eq!(got, [Some(25.0), Some(75.0), Some(125.0)]);
    }

    #[test]
    fn exact_at_points() {
        let got = litres(TABLE.iter().map(|&(x, _)| Some(x)).collect(), &TABLE);
        assert_eq!(got, TABLE.map(|(_, y)| Some(y)));
    }

    #[test]
    fn clamps_at_both_ends() {
        let got = litres(
            vec![
                Some(-5.0),
                Some(99.9),
                Some(500.1),
                Some(1e9),
                Some(f64::INFINITY),
            ],
            &TABLE,
        );
        assert_eq!(
            got,
            [Some(0.0), Some(0.0), Some(150.0), Some(150.0), Some(150.0)]
        );
        assert_eq!(litres(vec![Some(f64::NEG_INFINITY)], &TABLE), [Some(0.0)]);
    }

    #[test]
    fn nulls_stay_null_and_nan_stays_nan() {
        let got = litres(vec![None, Some(200.0), None, Some(f64::NAN)], &TABLE);
        assert_eq!(got[..3], [None, Some(50.0), None]);
        assert!(got[3].is_some_and(f64::is_nan));
    }

    #[test]
    fn decreasing_litres_are_fine() {
        let table = [(0.0, 100.0), (10.0, 0.0)];
        assert_eq!(litres(vec![Some(2.5)], &table), [Some(75.0)]);
    }

    #[test]
    fn invalid_tables_give_nulls() {
        let raw = vec![Some(1.0), None, Some(3.0)];
        for table in [
            &[][..],
            &[(1.0, 0.0), (1.0, 5.0)][..],
            &[(2.0, 0.0), (1.0, 5.0)][..],
            &[(1.0, 0.0), (f64::NAN, 5.0)][..],
            &[(1.0, f64::INFINITY), (2.0, 5.0)][..],
            &[(0.0, -f64::MAX), (f64::MIN_POSITIVE, f64::MAX)][..],
        ] {
            assert_eq!(litres(raw.clone(), table), [None, None, None], "{table:?}");
        }
    }

    #[test]
    fn long_tables_search_the_same() {
        let table: Vec<(f64, f64)> = (0..100).map(|i| (f64::from(i), f64::from(i * i))).collect();
        let got = litres(
            vec![Some(-1.0), Some(10.5), Some(98.0), Some(150.0)],
            &table,
        );
        assert_eq!(got, [Some(0.0), Some(110.5), Some(9604.0), Some(9801.0)]);
    }

    #[test]
    fn single_point_is_constant() {
        let got = litres(vec![Some(-1.0), Some(7.0), Some(100.0)], &[(7.0, 42.0)]);
        assert_eq!(got, [Some(42.0); 3]);
    }
}
