//! The stages a write runs on its request's thread, one at a time, for the
//! criterion benchmark `benches/benches/intake.rs` (what each costs a
//! message). Not an API: the server goes through [`crate::Preparer::prepare`],
//! which runs the same functions.

use schemas::Message;

use crate::Result;
use crate::batch::Encoding;

/// A write's messages after [`encode`].
#[derive(Debug)]
pub struct Encoded(Encoding);

/// Encodes each message for the WAL and hashes its content.
pub fn encode(messages: Vec<Message>) -> Result<Encoded> {
    Encoding::new(messages).map(Encoded)
}

/// Builds the memtable batches (sorted, cut, inner columns' keys
/// hashed) and drops the messages; returns how many batches.
pub fn prepare(encoded: Encoded) -> Result<usize> {
    Ok(encoded.0.prepare()?.batches())
}
