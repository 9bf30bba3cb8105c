//! What every account record's calls share: ids required by updates, and
//! the answer when an id names no record of the account (201, whether it
//! does not exist or is another account's: clarification 32).

use crate::{Error, Result};

/// The id an update names, or code 7 naming `field` when it names none.
pub(crate) fn required_id(field: &'static str, id: Option<i64>) -> Result<i64> {
    id.ok_or_else(|| Error::invalid(field, "is required"))
}

/// 201: the account has no `entity` with this id.
pub(crate) fn not_found(entity: &'static str, id: i64) -> Error {
    Error::NotFound {
        entity,
        id: id.to_string(),
    }
}

/// Ok when a statement changed the one record `id` of the account; 201 when it changed none.
pub(crate) fn one_changed(rows: u64, entity: &'static str, id: i64) -> Result<()> {
    if rows == 0 {
        return Err(not_found(entity, id));
    }
    Ok(())
}

/// Deletes the record `id` of `table` owned by `master` (a table with
/// `id` and `master_user_id`: a constant of the caller, never input); 201
/// when the account has none with this id.
pub(crate) async fn delete_owned(
    pool: &sqlx::SqlitePool,
    table: &'static str,
    entity: &'static str,
    master: schemas::UserId,
    id: i64,
) -> Result<()> {
    let done = sqlx::query(&format!(
        "DELETE FROM {table} WHERE id = $1 AND master_user_id = $2"
    ))
    .bind(id)
    .bind(master.0)
    .execute(pool)
    .await?;
    one_changed(done.rows_affected(), entity, id)
}
