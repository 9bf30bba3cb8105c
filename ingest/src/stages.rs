//! The stages a write runs on its request's thread, one at a time, for the
//! criterion benchmark `benches/benches/intake.rs` (what each costs a
//! message). Not an API: the server goes through [`crate::Preparer::prepare`],
//! which runs the same functions.

use crate::Result;
use crate::batch::Encoding;
use crate::rows::Rows;

/// A write's rows after [`encode`].
#[derive(Debug)]
pub struct Encoded(Encoding);

/// Encodes each row for the WAL and hashes its content.
pub fn encode(rows: Rows) -> Encoded {
    Encoded(Encoding::new(rows))
}

/// Builds the memtable batches (sorted, cut, inner columns' keys listed)
/// and drops the rows; returns how many batches.
pub fn prepare(encoded: Encoded) -> Result<usize> {
    Ok(encoded.0.prepare(&[])?.batches())
}
