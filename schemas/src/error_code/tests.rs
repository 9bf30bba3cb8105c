//! The code table checked, row by row, against the spec's own table
//! (`docs/spec/`, the repository's copy of the specification).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::ErrorCode;

fn spec_table() -> BTreeMap<u16, (String, u16)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/spec/1-conventions-auth-errors-limits.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "the spec's copy must be in the repository at {}: {e}",
            path.display()
        )
    });
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if let [code, meaning, http] = cells[..] {
            if let (Ok(code), Ok(http)) = (code.parse::<u16>(), http.parse::<u16>()) {
                if (100..600).contains(&http) {
                    rows.insert(code, (meaning.to_owned(), http));
                }
            }
        }
    }
    rows
}

#[test]
fn table_matches_the_spec_exactly() {
    let spec = spec_table();
    assert_eq!(spec.len(), 99, "the spec's table has 99 rows");
    let ours: BTreeMap<u16, (String, u16)> = ErrorCode::ALL
        .iter()
        .map(|c| (c.number(), (c.meaning().to_owned(), c.http_status())))
        .collect();
    assert_eq!(ours, spec);
}

#[test]
fn numbers_round_trip() {
    for &code in ErrorCode::ALL {
        assert_eq!(ErrorCode::from_number(code.number()), Some(code));
    }
    assert_eq!(ErrorCode::from_number(10), None);
    assert_eq!(ErrorCode::from_number(216), None);
}

#[test]
fn classification_follows_the_status() {
    assert!(ErrorCode::TooManyRequests.is_transient());
    assert!(!ErrorCode::TooManyRequests.is_server_fault());
    assert!(ErrorCode::Database.is_server_fault());
    assert!(ErrorCode::CannotSaveFile.is_server_fault());
    assert!(!ErrorCode::InvalidParameters.is_server_fault());
}
