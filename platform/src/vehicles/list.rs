//! `vehicle/list`: the page is chosen among the narrow copies of
//! `vehicle_list_keys` (migration 0008), with the trigram index
//! `vehicle_search` for filters and a pivot for deep pages; only the page's
//! rows of `vehicles` are read (`decisions.md` 90).

use sqlx::Row;

use super::{ListedVehicle, Vehicle, scope};
use crate::listing::{ListQuery, ListRules};
use crate::{Result, Store, UserAuth};

/// `vehicle/list`'s rules: two sort items over these properties, a filter
/// of at most 100 characters over label, registration number and VIN.
const LIST_RULES: ListRules = ListRules {
    max_sort_items: 2,
    max_filter_chars: 100,
    properties: &[
        ("id", "v.id"),
        ("label", "v.label COLLATE NOCASE"),
        ("reg_number", "v.reg_number COLLATE NOCASE"),
        ("model", "v.model COLLATE NOCASE"),
        ("type", "v.type"),
        (
            "garage_organization_name",
            "v.garage_organization_name COLLATE NOCASE",
        ),
        ("vin", "v.vin COLLATE NOCASE"),
        ("tracker_label", "v.tracker_label COLLATE NOCASE"),
        ("fuel_type", "v.fuel_type"),
        ("fuel_grade", "v.fuel_grade COLLATE NOCASE"),
        ("norm_avg_fuel_consumption", "v.norm_avg_fuel_consumption"),
        ("fuel_tank_volume", "v.fuel_tank_volume"),
        ("payload_weight", "v.payload_weight"),
        ("chassis_number", "v.chassis_number COLLATE NOCASE"),
        ("subtype", "v.subtype"),
        ("wheel_arrangement", "v.wheel_arrangement COLLATE NOCASE"),
        ("tyres_number", "v.tyres_number"),
        // The document lists `tyres_size` for the member `tyre_size`: both sort it.
        ("tyres_size", "v.tyre_size COLLATE NOCASE"),
        ("tyre_size", "v.tyre_size COLLATE NOCASE"),
        ("max_speed", "v.max_speed"),
        ("passengers", "v.passengers"),
    ],
    tie_breaker: "v.id",
    min_limit: 0,
};

impl Store {
    /// The vehicles the caller sees, sorted, filtered and paged in SQL.
    ///
    /// The page is chosen among the narrow copies in `vehicle_list_keys`
    /// (migration 0008), then only its rows of `vehicles` are read. A
    /// filter of 3 or more characters takes its candidates from the trigram
    /// index `vehicle_search`; without a filter, a page past the first
    /// starts at its first row's value of the first sort item
    /// (`pivot`). `decisions.md` 90 says what each kind of call costs.
    pub async fn list_vehicles(
        &self,
        caller: &UserAuth,
        query: &ListQuery,
    ) -> Result<Vec<ListedVehicle>> {
        let list = query.checked(&LIST_RULES)?;
        let phrase = list.needle.as_deref().and_then(search_phrase);
        let walked = list
            .sort
            .first()
            .filter(|_| list.pattern.is_none() && list.offset > 0)
            .and_then(|first| {
                INDEXED_TEXT
                    .iter()
                    .find(|(property, _)| *property == first.property)
                    .map(|(_, column)| (*column, first.descending))
            });
        // One snapshot for the pivot and the page.
        let mut tx = self.pool.begin().await?;
        let (rest, value, offset) = match walked {
            Some((column, descending)) => {
                match pivot(&mut tx, caller, column, descending, list.offset).await? {
                    Some(pivot) => pivot,
                    None => return Ok(Vec::new()),
                }
            }
            None => (String::new(), None, list.offset),
        };
        // With candidates from the index, they drive (CROSS JOIN keeps them
        // outside); without, the planner walks the first sort item's index
        // when there is one, so a first page stops early.
        let source = if phrase.is_some() {
            "(SELECT rowid AS id FROM vehicle_search WHERE vehicle_search MATCH $6) c \
             CROSS JOIN vehicle_list_keys v ON v.id = c.id WHERE v.master_user_id = $1"
        } else {
            "vehicle_list_keys v WHERE v.master_user_id = $1 AND $6 IS NULL"
        };
        let filter = if list.pattern.is_some() {
            " AND v.search_text LIKE $3 ESCAPE '\\'"
        } else {
            " AND $3 IS NULL"
        };
        let order_by = &list.order_by;
        // The outer query orders the page's rows again by the same (total)
        // order: a subquery's order is not kept by a join.
        let sql = format!(
            "SELECT w.id, w.tracker_id, w.garage_id, w.body, t.label AS tracker_label, \
             g.organization_name AS garage_organization_name \
             FROM (SELECT v.id FROM {source}{}{filter}{rest} AND $7 IS $7 \
                   ORDER BY {order_by} LIMIT $4 OFFSET $5) p \
             CROSS JOIN vehicle_list_keys v ON v.id = p.id \
             CROSS JOIN vehicles w ON w.id = p.id \
             LEFT JOIN trackers t ON t.id = w.tracker_id \
             LEFT JOIN garages g ON g.id = w.garage_id \
             ORDER BY {order_by}",
            scope(caller)
        );
        let rows = sqlx::query(&sql)
            .bind(caller.master_id.0)
            .bind(caller.user_id.0)
            .bind(list.pattern)
            .bind(list.limit)
            .bind(offset)
            .bind(phrase)
            .bind(value)
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        rows.iter()
            .map(|row| {
                Ok(ListedVehicle {
                    vehicle: Vehicle::from_row(row)?,
                    tracker_label: row.try_get("tracker_label")?,
                    garage_organization_name: row.try_get("garage_organization_name")?,
                })
            })
            .collect()
    }
}

/// The FTS5 query finding the vehicles whose search text holds `needle`:
/// its trigrams as one phrase. `None` when the index cannot answer: fewer
/// than 3 characters (no trigram), or control characters.
fn search_phrase(needle: &str) -> Option<String> {
    (needle.chars().count() >= 3 && !needle.chars().any(char::is_control))
        .then(|| format!("\"{}\"", needle.replace('"', "\"\"")))
}

/// The sortable text properties `vehicle_list_keys` has an index of
/// (`master_user_id`, the column `COLLATE NOCASE`, the id), and their columns.
const INDEXED_TEXT: [(&str, &str); 6] = [
    ("label", "v.label"),
    ("reg_number", "v.reg_number"),
    ("model", "v.model"),
    ("vin", "v.vin"),
    ("tracker_label", "v.tracker_label"),
    ("garage_organization_name", "v.garage_organization_name"),
];

/// Where a page at `offset` starts when the list sorts first by `column`
/// (one of [`INDEXED_TEXT`]), found in the column's index alone: the
/// column's value at `offset` (the pivot), the condition of the rows from
/// the pivot's value on (`$7` is the value), the value, and the page's
/// offset among those rows. `None` when the list is shorter than `offset`.
///
/// The rows before the pivot's value come before every row from it on, in
/// any order whose first item is `column`; so the page is the same rows of
/// the rest, `offset` less the rows before. SQLite's own `OFFSET` would
/// sort every row it skips by the second item first (hundreds of
/// milliseconds at offset 50,000 of 100,000); counting index entries does
/// not. NULLs come first ascending and last descending, as SQLite sorts.
async fn pivot(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    caller: &UserAuth,
    column: &str,
    descending: bool,
    offset: i64,
) -> Result<Option<(String, Option<String>, i64)>> {
    let scope = scope(caller);
    let direction = if descending { "DESC" } else { "ASC" };
    let value: Option<Option<String>> = sqlx::query_scalar(&format!(
        "SELECT {column} FROM vehicle_list_keys v WHERE v.master_user_id = $1{scope} \
         ORDER BY {column} COLLATE NOCASE {direction} LIMIT 1 OFFSET $3"
    ))
    .bind(caller.master_id.0)
    .bind(caller.user_id.0)
    .bind(offset)
    .fetch_optional(&mut **tx)
    .await?;
    let Some(value) = value else {
        return Ok(None);
    };
    let c = format!("{column} COLLATE NOCASE");
    let (before, rest) = match (&value, descending) {
        (None, false) => ("$3 IS NOT NULL".to_owned(), "TRUE".to_owned()),
        (Some(_), false) => (
            format!("({column} IS NULL OR {c} < $3)"),
            format!("{c} >= $7"),
        ),
        (None, true) => (
            format!("{column} IS NOT NULL AND $3 IS NULL"),
            format!("{column} IS NULL"),
        ),
        (Some(_), true) => (
            format!("{c} > $3"),
            format!("({c} <= $7 OR {column} IS NULL)"),
        ),
    };
    let skipped: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM vehicle_list_keys v WHERE v.master_user_id = $1{scope} AND {before}"
    ))
    .bind(caller.master_id.0)
    .bind(caller.user_id.0)
    .bind(&value)
    .fetch_one(&mut **tx)
    .await?;
    Ok(Some((format!(" AND {rest}"), value, offset - skipped)))
}
