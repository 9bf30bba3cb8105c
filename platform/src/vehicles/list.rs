//! `vehicle/list`: the page is chosen among the narrow copies of
//! `vehicle_list_keys` (migration 0008), with the trigram index
//! `vehicle_search` for filters and a pivot for deep pages; only the page's
//! rows of `vehicles` are read (`decisions.md` 90).

use sqlx::sqlite::SqliteRow;
use sqlx::{Row, TypeInfo, ValueRef};

use super::{ListedVehicle, Vehicle, scope};
use crate::listing::{ListQuery, ListRules};
use crate::{Result, Store, UserAuth};

/// `vehicle/list`'s rules: two sort items over these properties, a filter
/// of at most 100 characters over label, registration number and VIN.
pub(super) const LIST_RULES: ListRules = ListRules {
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
    /// (migrations 0008 and 0016), then only its rows of `vehicles` are
    /// read. A filter of 3 or more characters takes its candidates from the
    /// trigram index `vehicle_search`. Without a filter, the page is cut at
    /// the first sort item's value at `offset` (the pivot, found in the
    /// item's index): first the rows of that value (sorted by the second
    /// item: one group, however large the groups before it), then, if the
    /// page is not full, the rows after it. `decisions.md` 90 says what
    /// each kind of call costs.
    pub async fn list_vehicles(
        &self,
        caller: &UserAuth,
        query: &ListQuery,
    ) -> Result<Vec<ListedVehicle>> {
        let list = query.checked(&LIST_RULES)?;
        let phrase = list.needle.as_deref().and_then(search_phrase);
        // Every sortable property but the id (the master index's own
        // order) has an index (`column`), so a first sort item can be walked.
        let walked = list
            .sort
            .first()
            .filter(|first| list.pattern.is_none() && first.property != "id")
            .and_then(|first| {
                LIST_RULES
                    .properties
                    .iter()
                    .find(|(property, _)| *property == first.property)
                    .map(|(_, column)| (*column, first.descending))
            });
        let page = Page {
            caller,
            order_by: &list.order_by,
            pattern: list.pattern.as_deref(),
            phrase: phrase.as_deref(),
        };
        // One snapshot for the pivot and the page.
        let mut tx = self.pool.begin().await?;
        let rows = match walked {
            None => {
                page.rows(&mut tx, "", &Key::Null, list.limit, list.offset)
                    .await?
            }
            Some((column, descending)) => {
                let Some(pivot) = pivot(&mut tx, caller, column, descending, list.offset).await?
                else {
                    return Ok(Vec::new());
                };
                let mut rows = page
                    .rows(&mut tx, &pivot.same, &pivot.key, list.limit, pivot.offset)
                    .await?;
                let left = list.limit - rows.len() as i64;
                if left > 0 {
                    rows.extend(
                        page.rows(&mut tx, &pivot.after, &pivot.key, left, 0)
                            .await?,
                    );
                }
                rows
            }
        };
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

/// What one list call's page queries share.
struct Page<'a> {
    caller: &'a UserAuth,
    order_by: &'a str,
    pattern: Option<&'a str>,
    phrase: Option<&'a str>,
}

impl Page<'_> {
    /// The rows (with their tracker's label and garage's name) holding
    /// `condition` (over `$7`, the `key`), in the list's order, `limit` of
    /// them from `offset` on.
    async fn rows(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
        condition: &str,
        key: &Key,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<SqliteRow>> {
        // With candidates from the index, they drive (CROSS JOIN keeps them
        // outside); without, the planner walks the first sort item's index,
        // so a page stops early.
        let source = if self.phrase.is_some() {
            "(SELECT rowid AS id FROM vehicle_search WHERE vehicle_search MATCH $6) c \
             CROSS JOIN vehicle_list_keys v ON v.id = c.id WHERE v.master_user_id = $1"
        } else {
            "vehicle_list_keys v WHERE v.master_user_id = $1 AND $6 IS NULL"
        };
        let filter = if self.pattern.is_some() {
            " AND v.search_text LIKE $3 ESCAPE '\\'"
        } else {
            " AND $3 IS NULL"
        };
        let condition = if condition.is_empty() {
            " AND $7 IS $7".to_owned()
        } else {
            format!(" AND {condition}")
        };
        let order_by = self.order_by;
        // The outer query orders the page's rows again by the same (total)
        // order: a subquery's order is not kept by a join.
        let sql = format!(
            "SELECT w.id, w.tracker_id, w.garage_id, w.body, t.label AS tracker_label, \
             g.organization_name AS garage_organization_name \
             FROM (SELECT v.id FROM {source}{}{filter}{condition} \
                   ORDER BY {order_by} LIMIT $4 OFFSET $5) p \
             CROSS JOIN vehicle_list_keys v ON v.id = p.id \
             CROSS JOIN vehicles w ON w.id = p.id \
             LEFT JOIN trackers t ON t.id = w.tracker_id \
             LEFT JOIN garages g ON g.id = w.garage_id \
             ORDER BY {order_by}",
            scope(self.caller)
        );
        let query = sqlx::query(&sql)
            .bind(self.caller.master_id.0)
            .bind(self.caller.user_id.0)
            .bind(self.pattern)
            .bind(limit)
            .bind(offset)
            .bind(self.phrase);
        Ok(key.bind(query).fetch_all(&mut **tx).await?)
    }
}

/// The FTS5 query finding the vehicles whose search text holds `needle`:
/// its trigrams as one phrase. `None` when the index cannot answer: fewer
/// than 3 characters (no trigram), or control characters.
fn search_phrase(needle: &str) -> Option<String> {
    (needle.chars().count() >= 3 && !needle.chars().any(char::is_control))
        .then(|| format!("\"{}\"", needle.replace('"', "\"\"")))
}

/// A sort key's value as SQLite holds it, to bind again as it was read
/// (a number compared as text, or a real rounded through text, would
/// compare differently).
#[derive(Debug, Clone, PartialEq)]
enum Key {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
}

impl Key {
    /// The first column of `row`.
    fn read(row: &SqliteRow) -> Result<Self> {
        let raw = row.try_get_raw(0)?;
        if raw.is_null() {
            return Ok(Self::Null);
        }
        Ok(match raw.type_info().name() {
            "INTEGER" => Self::Integer(row.try_get(0)?),
            "REAL" => Self::Real(row.try_get(0)?),
            _ => Self::Text(row.try_get(0)?),
        })
    }

    /// `query` with the key bound as its next parameter.
    fn bind<'q>(
        &'q self,
        query: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>>,
    ) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>> {
        match self {
            Self::Null => query.bind(None::<i64>),
            Self::Integer(value) => query.bind(*value),
            Self::Real(value) => query.bind(*value),
            Self::Text(value) => query.bind(value.as_str()),
        }
    }
}

/// Where a page at `offset` starts when the list sorts first by `column`
/// (an expression [`LIST_RULES`] sorts by, with an index): the column's
/// value there (the pivot), found in the index alone.
#[derive(Debug)]
struct Pivot {
    /// The pivot's value.
    key: Key,
    /// The rows with the pivot's value (`$7`).
    same: String,
    /// The rows after the pivot's value in the list's order (`$7`).
    after: String,
    /// The page's offset among the rows with the pivot's value.
    offset: i64,
}

/// The conditions of the rows before, at and after `$p`'s value of
/// `column` in its order; NULLs come first ascending and last descending,
/// as SQLite sorts. Each names `$p` (when NULL too), as every bound
/// parameter must be used.
fn around(column: &str, null: bool, descending: bool, p: &str) -> [String; 3] {
    match (null, descending) {
        (true, false) => [
            format!("{p} IS NOT NULL"),
            format!("{column} IS NULL AND {p} IS NULL"),
            format!("{column} IS NOT NULL AND {p} IS NULL"),
        ],
        (false, false) => [
            format!("({column} IS NULL OR {column} < {p})"),
            format!("{column} = {p}"),
            format!("{column} > {p}"),
        ],
        (true, true) => [
            format!("{column} IS NOT NULL AND {p} IS NULL"),
            format!("{column} IS NULL AND {p} IS NULL"),
            format!("{p} IS NOT NULL"),
        ],
        (false, true) => [
            format!("{column} > {p}"),
            format!("{column} = {p}"),
            format!("({column} < {p} OR {column} IS NULL)"),
        ],
    }
}

/// The [`Pivot`] of a page at `offset` of a list sorted first by `column`;
/// `None` when the list is shorter than `offset`.
///
/// The rows before the pivot's value come before every row from it on, in
/// any order whose first item is `column`; so the page is the same rows of
/// the rest, `offset` less the rows before. SQLite's own `OFFSET` would
/// sort every row it skips by the second item first (hundreds of
/// milliseconds at offset 50,000 of 100,000), and a first page would sort
/// a whole first group of tens of thousands of equal values; counting
/// index entries does neither.
async fn pivot(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    caller: &UserAuth,
    column: &str,
    descending: bool,
    offset: i64,
) -> Result<Option<Pivot>> {
    let scope = scope(caller);
    let direction = if descending { "DESC" } else { "ASC" };
    let row = sqlx::query(&format!(
        "SELECT {column} FROM vehicle_list_keys v WHERE v.master_user_id = $1{scope} \
         ORDER BY {column} {direction} LIMIT 1 OFFSET $3"
    ))
    .bind(caller.master_id.0)
    .bind(caller.user_id.0)
    .bind(offset)
    .fetch_optional(&mut **tx)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let key = Key::read(&row)?;
    let null = key == Key::Null;
    let [before, ..] = around(column, null, descending, "$3");
    let sql = format!(
        "SELECT count(*) FROM vehicle_list_keys v WHERE v.master_user_id = $1{scope} AND {before}"
    );
    let query = sqlx::query(&sql)
        .bind(caller.master_id.0)
        .bind(caller.user_id.0);
    let skipped: i64 = key.bind(query).fetch_one(&mut **tx).await?.try_get(0)?;
    let [_, same, after] = around(column, null, descending, "$7");
    Ok(Some(Pivot {
        key,
        same,
        after,
        offset: offset - skipped,
    }))
}
