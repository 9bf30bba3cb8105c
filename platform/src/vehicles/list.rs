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

/// The index of `vehicle_list_keys` each sortable property is walked in
/// (migrations 0008 and 0016): `(master_user_id, property)`, then the id.
const INDEXES: [(&str, &str); 21] = [
    ("id", "vehicle_list_master"),
    ("label", "vehicle_list_label"),
    ("reg_number", "vehicle_list_reg_number"),
    ("model", "vehicle_list_model"),
    ("type", "vehicle_list_type"),
    ("garage_organization_name", "vehicle_list_garage"),
    ("vin", "vehicle_list_vin"),
    ("tracker_label", "vehicle_list_tracker_label"),
    ("fuel_type", "vehicle_list_fuel_type"),
    ("fuel_grade", "vehicle_list_fuel_grade"),
    (
        "norm_avg_fuel_consumption",
        "vehicle_list_norm_avg_fuel_consumption",
    ),
    ("fuel_tank_volume", "vehicle_list_fuel_tank_volume"),
    ("payload_weight", "vehicle_list_payload_weight"),
    ("chassis_number", "vehicle_list_chassis_number"),
    ("subtype", "vehicle_list_subtype"),
    ("wheel_arrangement", "vehicle_list_wheel_arrangement"),
    ("tyres_number", "vehicle_list_tyres_number"),
    ("tyres_size", "vehicle_list_tyre_size"),
    ("tyre_size", "vehicle_list_tyre_size"),
    ("max_speed", "vehicle_list_max_speed"),
    ("passengers", "vehicle_list_passengers"),
];

/// The index `property` is walked in.
pub(super) fn index_of(property: &str) -> Option<&'static str> {
    INDEXES
        .iter()
        .find(|(p, _)| *p == property)
        .map(|(_, index)| *index)
}

/// A group of equal first sort items at most this large is read and
/// sorted by the second item whatever the page; a larger one may be
/// walked in the second item's index instead. (Tests have small groups:
/// both ways are tested there.)
const SMALL_GROUP: i64 = if cfg!(test) { 2 } else { 1_000 };

impl Store {
    /// The vehicles the caller sees, sorted, filtered and paged in SQL.
    ///
    /// The page is chosen among the narrow copies in `vehicle_list_keys`
    /// (migrations 0008 and 0016), then only its rows of `vehicles` are
    /// read. A filter of 3 or more characters takes its candidates from the
    /// trigram index `vehicle_search`. Without a filter, the page is cut at
    /// the first sort item's values at its first and last rows, found in
    /// the item's index: the page is the end of the first value's group,
    /// the whole groups between, and the start of the last value's group,
    /// each group read in the index that costs less. `decisions.md` 90
    /// says what each kind of call costs.
    pub async fn list_vehicles(
        &self,
        caller: &UserAuth,
        query: &ListQuery,
    ) -> Result<Vec<ListedVehicle>> {
        let list = query.checked(&LIST_RULES)?;
        let trigrams = list.trigrams();
        let page = Page {
            caller,
            order_by: &list.order_by,
            pattern: list.pattern.as_deref(),
            trigrams: trigrams.as_deref(),
        };
        let groups = list
            .sort
            .first()
            .filter(|first| list.pattern.is_none() && first.property != "id")
            .and_then(|first| {
                let (_, column) = LIST_RULES
                    .properties
                    .iter()
                    .find(|(property, _)| *property == first.property)?;
                Some(Groups {
                    caller,
                    column,
                    descending: first.descending,
                    index: index_of(first.property)?,
                    second: list
                        .sort
                        .get(1)
                        .and_then(|second| index_of(second.property)),
                })
            });
        // One snapshot for the pivots, the counts and the page.
        let mut tx = self.pool.begin().await?;
        let rows = match groups {
            None => {
                page.rows(&mut tx, "", [&Key::Null; 2], None, list.limit, list.offset)
                    .await?
            }
            Some(groups) => groups.page(&mut tx, &page, list.limit, list.offset).await?,
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
    trigrams: Option<&'a str>,
}

impl Page<'_> {
    /// The rows (with their tracker's label and garage's name) holding
    /// `condition` (over `$7` and `$8`, the `keys`), in the list's order,
    /// `limit` of them from `offset` on, walking `index` when given.
    async fn rows(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
        condition: &str,
        keys: [&Key; 2],
        index: Option<&str>,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<SqliteRow>> {
        if limit <= 0 {
            return Ok(Vec::new());
        }
        // With candidates from the index, they drive (CROSS JOIN keeps them
        // outside); without, the planner walks the first sort item's index,
        // so a page stops early.
        let source = match (self.trigrams, index) {
            (Some(_), _) => {
                "(SELECT rowid AS id FROM vehicle_search WHERE vehicle_search MATCH $6) c \
                 CROSS JOIN vehicle_list_keys v ON v.id = c.id WHERE v.master_user_id = $1"
                    .to_owned()
            }
            (None, Some(index)) => format!(
                "vehicle_list_keys v INDEXED BY {index} WHERE v.master_user_id = $1 AND $6 IS NULL"
            ),
            (None, None) => {
                "vehicle_list_keys v WHERE v.master_user_id = $1 AND $6 IS NULL".to_owned()
            }
        };
        let filter = if self.pattern.is_some() {
            " AND v.search_text LIKE $3 ESCAPE '\\'"
        } else {
            " AND $3 IS NULL"
        };
        let condition = with_keys(condition, &["$7", "$8"]);
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
            .bind(self.trigrams);
        let [first, second] = keys;
        Ok(second.bind(first.bind(query)).fetch_all(&mut **tx).await?)
    }
}

/// ` AND condition`, naming each of `placeholders` (a statement must use
/// every parameter bound to it; `$n IS $n` holds for any value).
fn with_keys(condition: &str, placeholders: &[&str]) -> String {
    let mut sql = if condition.is_empty() {
        String::new()
    } else {
        format!(" AND {condition}")
    };
    for p in placeholders {
        if !condition.contains(p) {
            sql.push_str(&format!(" AND {p} IS {p}"));
        }
    }
    sql
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

/// A list without a filter sorted first by `column`, cut into groups of
/// equal values of it (`decisions.md` 90).
///
/// The rows before a value come before every row from it on, in any order
/// whose first item is `column`; so a page is found by counting entries of
/// the column's index, where SQLite's own `OFFSET` would sort every row it
/// skips by the second item (hundreds of milliseconds at offset 50,000 of
/// 100,000), and its first page would sort a whole first group (40,000
/// vehicles without a tracker under `tracker_label` ascending).
///
/// The conditions are ranges of the index wherever they can be (`x IS NULL
/// OR x < $p` is not one): NULLs come first ascending and last descending,
/// as SQLite sorts them.
struct Groups<'a> {
    caller: &'a UserAuth,
    /// The first sort item's expression (with its collation).
    column: &'a str,
    descending: bool,
    /// The first sort item's index.
    index: &'static str,
    /// The second sort item's index, if there is a second item.
    second: Option<&'static str>,
}

impl Groups<'_> {
    /// The rows with `key`'s value (`p`).
    fn same(&self, key: &Key, p: &str) -> String {
        let column = self.column;
        if *key == Key::Null {
            format!("{column} IS NULL AND {p} IS NULL")
        } else {
            format!("{column} = {p}")
        }
    }

    /// Disjoint ranges that together hold the rows before `key`'s value (`p`).
    fn before(&self, key: &Key, p: &str) -> Vec<String> {
        let column = self.column;
        match (*key == Key::Null, self.descending) {
            (true, false) => Vec::new(),
            (false, false) => vec![format!("{column} IS NULL"), format!("{column} < {p}")],
            (false, true) => vec![format!("{column} > {p}")],
            (true, true) => vec![format!("{column} IS NOT NULL")],
        }
    }

    /// The rows from `key`'s value (`p`) on.
    fn at_and_after(&self, key: &Key, p: &str) -> String {
        let column = self.column;
        match (*key == Key::Null, self.descending) {
            (true, false) => String::new(),
            (false, false) => format!("{column} >= {p}"),
            (true, true) => format!("{column} IS NULL"),
            // No range: walked from the top, at the cost of the rows before.
            (false, true) => format!("({column} <= {p} OR {column} IS NULL)"),
        }
    }

    /// The rows after `first`'s group (`$7`) and before `last`'s (`$8`),
    /// or, without `last`, every row after `first`'s group (the list ends
    /// within the page: fewer than a page).
    fn between(&self, first: &Key, last: Option<&Key>) -> String {
        let column = self.column;
        let null = |key: &Key| *key == Key::Null;
        match (self.descending, null(first), last) {
            (false, true, None) => format!("{column} IS NOT NULL"),
            (false, true, Some(_)) => format!("{column} < $8"),
            (false, false, None) => format!("{column} > $7"),
            (false, false, Some(_)) => format!("{column} > $7 AND {column} < $8"),
            // Descending, the NULL group is the last: nothing comes after it.
            (true, true, _) => "$7 IS NOT NULL".to_owned(),
            (true, false, None) => format!("({column} < $7 OR {column} IS NULL)"),
            (true, false, Some(last)) if null(last) => format!("{column} < $7"),
            (true, false, Some(_)) => format!("{column} < $7 AND {column} > $8"),
        }
    }

    /// The column's value at `offset` among the rows from `from`'s value on
    /// (among all rows without `from`), read in its index alone.
    async fn key_at(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
        offset: i64,
        from: Option<&Key>,
    ) -> Result<Option<Key>> {
        let (column, index) = (self.column, self.index);
        let direction = if self.descending { "DESC" } else { "ASC" };
        let from_on = from.map_or_else(String::new, |key| self.at_and_after(key, "$3"));
        let sql = format!(
            "SELECT {column} FROM vehicle_list_keys v INDEXED BY {index} \
             WHERE v.master_user_id = $1{}{} \
             ORDER BY {column} {direction} LIMIT 1 OFFSET $4",
            scope(self.caller),
            with_keys(&from_on, &["$3"])
        );
        let query = sqlx::query(&sql)
            .bind(self.caller.master_id.0)
            .bind(self.caller.user_id.0);
        let row = from
            .unwrap_or(&Key::Null)
            .bind(query)
            .bind(offset)
            .fetch_optional(&mut **tx)
            .await?;
        row.as_ref().map(Key::read).transpose()
    }

    /// The rows holding `condition` (over `$3`, the `key`), counted in the
    /// column's index.
    async fn count(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
        condition: &str,
        key: &Key,
    ) -> Result<i64> {
        let sql = format!(
            "SELECT count(*) FROM vehicle_list_keys v INDEXED BY {} \
             WHERE v.master_user_id = $1{}{}",
            self.index,
            scope(self.caller),
            with_keys(condition, &["$3"])
        );
        let query = sqlx::query(&sql)
            .bind(self.caller.master_id.0)
            .bind(self.caller.user_id.0);
        Ok(key.bind(query).fetch_one(&mut **tx).await?.try_get(0)?)
    }

    /// `limit` rows of `key`'s group from `offset` on, sorted by the second
    /// item. A group is read in the column's index and sorted, unless it
    /// is large and the rows it answers come early in it: walking the
    /// second item's index reads about `(offset + limit) × all / group`
    /// rows (checking each for the value), sorting reads the group. `all`
    /// is the list's length, counted once for a page's groups.
    async fn group(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
        page: &Page<'_>,
        key: &Key,
        (limit, offset): (i64, i64),
        all: &mut Option<i64>,
    ) -> Result<Vec<SqliteRow>> {
        let mut index = self.index;
        if let Some(second) = self.second {
            let size = self.count(tx, &self.same(key, "$3"), key).await?;
            if size > SMALL_GROUP {
                let all = match *all {
                    Some(all) => all,
                    None => *all.insert(self.count(tx, "", &Key::Null).await?),
                };
                let walked = (offset + limit) as f64 * all as f64 / size as f64;
                if walked < size as f64 {
                    index = second;
                }
            }
        }
        let same = self.same(key, "$7");
        page.rows(tx, &same, [key, &Key::Null], Some(index), limit, offset)
            .await
    }

    /// The page of `limit` rows at `offset`: the end of its first row's
    /// group, the whole groups between, the start of its last row's group.
    async fn page(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
        page: &Page<'_>,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<SqliteRow>> {
        if limit <= 0 {
            return Ok(Vec::new());
        }
        let Some(first) = self.key_at(tx, offset, None).await? else {
            return Ok(Vec::new());
        };
        let mut before = 0;
        for range in self.before(&first, "$3") {
            before += self.count(tx, &range, &first).await?;
        }
        // The page's last row is this far from the first group's start.
        let last = self
            .key_at(tx, offset + limit - 1 - before, Some(&first))
            .await?;
        let mut all = None;
        let mut rows = self
            .group(tx, page, &first, (limit, offset - before), &mut all)
            .await?;
        if last.as_ref() == Some(&first) {
            return Ok(rows);
        }
        let left = limit - rows.len() as i64;
        rows.extend(
            page.rows(
                tx,
                &self.between(&first, last.as_ref()),
                [&first, last.as_ref().unwrap_or(&Key::Null)],
                Some(self.index),
                left,
                0,
            )
            .await?,
        );
        if let Some(last) = &last {
            let left = limit - rows.len() as i64;
            rows.extend(self.group(tx, page, last, (left, 0), &mut all).await?);
        }
        Ok(rows)
    }
}
