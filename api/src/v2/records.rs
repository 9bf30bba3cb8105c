//! Answers shared by the calls of an account's records.

use serde::Serialize;
use utoipa::ToSchema;

/// The id of the record created.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct Created {
    /// Its id.
    pub(super) id: i64,
}
