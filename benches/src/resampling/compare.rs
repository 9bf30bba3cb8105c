//! Cell-by-cell comparison of two resampling CSVs: the same header, the same
//! `Time` column, and every value equal, numbers within a relative
//! tolerance (`3641` equals `3641.0`) and `\N` only equal to `\N`.
//!
//! A relative tolerance cannot absorb rounding residue next to zero (an exact
//! `0` against `2.3e-16` from a sliding sum), so numbers that differ by less
//! than an absolute floor count as equal too, but are counted and listed
//! apart ([`Comparison::near`]) rather than hidden.

/// When two numbers count as equal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Relative to the larger magnitude.
    pub relative: f64,
    /// Absolute floor, for values next to zero.
    pub absolute: f64,
}

/// How two cells compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellMatch {
    /// The same text, or numbers within the relative tolerance.
    Equal,
    /// Numbers outside the relative tolerance but within the absolute floor.
    Near,
    /// Anything else.
    Differs,
}

/// One cell that differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// Data row, 1-based (the header is row 0).
    pub row: usize,
    /// The column's name (ours).
    pub column: String,
    /// The `Time` of the row (ours).
    pub time: String,
    /// Our cell.
    pub ours: String,
    /// Their cell.
    pub theirs: String,
}

/// What the comparison found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Comparison {
    /// Our header line.
    pub ours_header: String,
    /// Their header line.
    pub theirs_header: String,
    /// Our data rows.
    pub ours_rows: usize,
    /// Their data rows.
    pub theirs_rows: usize,
    /// Rows (of those both have) whose `Time` differs.
    pub time_mismatches: usize,
    /// Value cells compared (`Time` excluded).
    pub cells: usize,
    /// Value cells that differ, in total.
    pub mismatches: usize,
    /// Value cells equal only within the absolute floor.
    pub near: usize,
    /// The first cells equal only within the absolute floor.
    pub first_near: Vec<Mismatch>,
    /// Per column (ours, in header order, `Time` excluded): cells that differ.
    pub per_column: Vec<(String, usize)>,
    /// The first differing cells, `Time` included.
    pub first: Vec<Mismatch>,
}

impl Comparison {
    /// Whether the two CSVs agree: every cell equal or near.
    pub fn agrees(&self) -> bool {
        self.ours_header == self.theirs_header
            && self.ours_rows == self.theirs_rows
            && self.time_mismatches == 0
            && self.mismatches == 0
    }
}

/// The CSV's lines without the trailing empty one, `\r` stripped.
fn lines(csv: &str) -> Vec<&str> {
    csv.lines().map(|l| l.trim_end_matches('\r')).collect()
}

/// How two value cells compare under `tolerance`.
pub fn cell_match(ours: &str, theirs: &str, tolerance: Tolerance) -> CellMatch {
    if ours == theirs {
        return CellMatch::Equal;
    }
    match (ours.parse::<f64>(), theirs.parse::<f64>()) {
        (Ok(a), Ok(b)) if a.is_finite() && b.is_finite() => {
            let difference = (a - b).abs();
            if difference <= tolerance.relative * a.abs().max(b.abs()) {
                CellMatch::Equal
            } else if difference <= tolerance.absolute {
                CellMatch::Near
            } else {
                CellMatch::Differs
            }
        }
        _ => CellMatch::Differs,
    }
}

/// Compares `ours` with `theirs`, keeping the first `keep` differing (and near) cells.
///
/// Neither CSV quotes a cell here, so cells are split on commas.
pub fn compare(ours: &str, theirs: &str, tolerance: Tolerance, keep: usize) -> Comparison {
    let ours = lines(ours);
    let theirs = lines(theirs);
    let ours_header = ours.first().copied().unwrap_or_default();
    let names: Vec<&str> = ours_header.split(',').collect();
    let mut result = Comparison {
        ours_header: ours_header.to_owned(),
        theirs_header: theirs.first().copied().unwrap_or_default().to_owned(),
        ours_rows: ours.len().saturating_sub(1),
        theirs_rows: theirs.len().saturating_sub(1),
        per_column: names.iter().skip(1).map(|n| ((*n).to_owned(), 0)).collect(),
        ..Comparison::default()
    };
    for (row, (a, b)) in ours.iter().zip(&theirs).enumerate().skip(1) {
        let a: Vec<&str> = a.split(',').collect();
        let b: Vec<&str> = b.split(',').collect();
        let time = a.first().copied().unwrap_or_default();
        let width = a.len().max(b.len());
        for column in 0..width {
            let (x, y) = (
                a.get(column).copied().unwrap_or("<missing>"),
                b.get(column).copied().unwrap_or("<missing>"),
            );
            let cell = || Mismatch {
                row,
                column: names.get(column).copied().unwrap_or("?").to_owned(),
                time: time.to_owned(),
                ours: x.to_owned(),
                theirs: y.to_owned(),
            };
            let matched = if column == 0 {
                if x == y {
                    CellMatch::Equal
                } else {
                    CellMatch::Differs
                }
            } else {
                result.cells += 1;
                cell_match(x, y, tolerance)
            };
            match matched {
                CellMatch::Equal => continue,
                CellMatch::Near => {
                    result.near += 1;
                    if result.first_near.len() < keep {
                        result.first_near.push(cell());
                    }
                    continue;
                }
                CellMatch::Differs => {}
            }
            if column == 0 {
                result.time_mismatches += 1;
            } else {
                result.mismatches += 1;
                if let Some((_, count)) = result.per_column.get_mut(column - 1) {
                    *count += 1;
                }
            }
            if result.first.len() < keep {
                result.first.push(cell());
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOLERANCE: Tolerance = Tolerance {
        relative: 1e-9,
        absolute: 1e-12,
    };

    #[test]
    fn numbers_compare_by_value_and_nulls_by_text() {
        let m = |a, b| cell_match(a, b, TOLERANCE);
        assert_eq!(m("3641", "3641.0"), CellMatch::Equal);
        assert_eq!(m("0.1", "0.10000000000000002"), CellMatch::Equal);
        assert_eq!(m("\\N", "\\N"), CellMatch::Equal);
        assert_eq!(m("0", "2.3296483139675417e-16"), CellMatch::Near);
        assert_eq!(m("\\N", "0"), CellMatch::Differs);
        assert_eq!(m("1", "1.00001"), CellMatch::Differs);
        assert_eq!(m("0", "1e-9"), CellMatch::Differs);
    }

    #[test]
    fn counts_and_locates_mismatches() {
        let ours = "Time,A,B\n2024-06-01T00:00,1,\\N\n2024-06-01T00:01,2,3\n";
        let theirs = "Time,A,B\n2024-06-01T00:00,1.0,\\N\n2024-06-01T00:02,2.5,3\n";
        let got = compare(ours, theirs, TOLERANCE, 10);
        assert!(!got.agrees());
        assert_eq!((got.ours_rows, got.theirs_rows), (2, 2));
        assert_eq!(got.time_mismatches, 1);
        assert_eq!(got.cells, 4);
        assert_eq!(got.mismatches, 1);
        assert_eq!(got.per_column, [("A".to_owned(), 1), ("B".to_owned(), 0)]);
        assert_eq!(got.first.len(), 2);
        assert_eq!(got.first[1].column, "A");
        assert_eq!(
            (got.first[1].ours.as_str(), got.first[1].theirs.as_str()),
            ("2", "2.5")
        );
    }

    #[test]
    fn identical_csvs_agree() {
        let csv = "Time,A\n2024-06-01T00:00,1\n";
        assert!(compare(csv, csv, TOLERANCE, 10).agrees());
        let near = compare(
            csv,
            "Time,A\n2024-06-01T00:00,1.0000000000000001\n",
            TOLERANCE,
            10,
        );
        assert!(near.agrees());
        let zero = compare(
            "Time,A\n2024-06-01T00:00,0\n",
            "Time,A\n2024-06-01T00:00,1e-16\n",
            TOLERANCE,
            10,
        );
        assert!(zero.agrees());
        assert_eq!((zero.near, zero.first_near.len()), (1, 1));
    }
}
