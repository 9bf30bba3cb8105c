//! What every account record's calls share: ids required by updates, and
//! the answer when an id names no record of the account (201, whether it
//! does not exist or is another account's: clarification 32; 204 when
//! another call's parameter refers to it: clarification 44); the owner the
//! operator names for a record (a live master user).

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

/// Ok when `user` is a live master user (the owner of an account's
/// records); 201 when there is no such live user, 7 naming `user_id` for a
/// sub-user.
pub(crate) async fn require_master(pool: &sqlx::SqlitePool, user: schemas::UserId) -> Result<()> {
    let is_master: Option<bool> = sqlx::query_scalar(
        "SELECT master_user_id IS NULL FROM users WHERE id = $1 AND deleted = FALSE",
    )
    .bind(user.0)
    .fetch_optional(pool)
    .await?;
    match is_master {
        Some(true) => Ok(()),
        Some(false) => Err(Error::invalid(
            "user_id",
            format!("user {user} is a sub-user: an account's records belong to its master user"),
        )),
        None => Err(Error::NotFound {
            entity: "user",
            id: user.to_string(),
        }),
    }
}

/// The rows `ids` of `table` (a table with `id` and `master_user_id`: a
/// constant of the caller, never input) owned by `master`, in the order
/// asked, an id asked twice answered once; 204 naming the first id that is
/// not the account's (a record another call refers to, clarification 44).
pub(crate) async fn owned_rows(
    pool: &sqlx::SqlitePool,
    table: &'static str,
    entity: &'static str,
    master: schemas::UserId,
    ids: &[i64],
) -> Result<Vec<sqlx::sqlite::SqliteRow>> {
    use sqlx::Row;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let wanted = serde_json::to_string(ids).map_err(|e| Error::corrupt("ids", e))?;
    let rows = sqlx::query(&format!(
        "SELECT * FROM {table} WHERE master_user_id = $1 AND id IN (SELECT value FROM json_each($2))"
    ))
    .bind(master.0)
    .bind(wanted)
    .fetch_all(pool)
    .await?;
    let mut found = std::collections::HashMap::with_capacity(rows.len());
    for row in rows {
        found.insert(row.try_get::<i64, _>("id")?, row);
    }
    if let Some(&id) = ids.iter().find(|id| !found.contains_key(id)) {
        return Err(Error::NotCallers { entity, id });
    }
    Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
}
