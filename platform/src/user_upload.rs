//! `/panel/user/upload` (spec document 2, clarification 49): a dealer's
//! users from a CSV (`;`) or XLS/XLSX file with a header row, columns found
//! by their English header names in any order. The whole file is checked
//! before anything is stored: any bad row, and nothing is created, every
//! problem named by row and column. Passwords are hashed over every core;
//! the rows are stored in one transaction.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use chrono::NaiveDate;

use crate::panel_users::{Discount, DiscountStrategy, PanelScope, PanelUser};
use crate::profile::{PROFILE_COLUMNS, Profile};
use crate::secret::hash_passwords;
use crate::spreadsheet::{self, Table};
use crate::{Error, LegalType, Result, RowIssue, RowsFault, Store, check_printable};

/// Columns of the file: (header name, required).
const COLUMNS: &[(&str, bool)] = &[
    ("Email address", true),
    ("Password", true),
    ("Status", true),
    ("Legal status", true),
    ("Surname", true),
    ("Name", true),
    ("Middle name", false),
    ("Phone number", false),
    ("Comment", false),
    ("Country", false),
    ("Region", false),
    ("City", false),
    ("Street, address", false),
    ("Zip code", false),
    ("Legal name", false),
    ("Tax number", false),
    ("IEC", false),
    ("Registration country", false),
    ("Registration region", false),
    ("Registration city", false),
    ("Registration address", false),
    ("Registration zip code", false),
    ("Discount", false),
    ("End date of discount", false),
    ("Device limit", false),
];

/// The page cache of the connection that stores an upload, in KiB
/// (SQLite's default is 2,000).
const UPLOAD_CACHE_KIB: i64 = 64 * 1024;

/// Rows a statement stages (`Store::insert_users`).
const STAGED_ROWS: usize = 100;

/// Columns legal entities and sole traders must fill.
const COMPANY_COLUMNS: &[&str] = &[
    "Country",
    "Region",
    "City",
    "Street, address",
    "Zip code",
    "Legal name",
];

/// What an upload may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserUploadRules {
    /// Data rows at most (more: the file is refused, 7).
    pub max_rows: usize,
    /// Bytes an XLSX may expand to.
    pub max_inflated_bytes: u64,
}

/// A header as compared: lower case, single spaces, no `*`.
fn normalized(header: &str) -> String {
    header
        .trim()
        .trim_end_matches('*')
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// One checked row, ready to store.
struct Row {
    user: PanelUser,
    password: String,
    comment: String,
    discount: Option<(Discount, Option<chrono::DateTime<chrono::Utc>>)>,
    device_limit: Option<i64>,
}

/// Where each column is in the file; 7 naming `file` for an unknown,
/// repeated or missing column.
fn layout(header: &[String]) -> Result<HashMap<&'static str, usize>> {
    let mut found = HashMap::new();
    for (i, cell) in header.iter().enumerate() {
        if cell.trim().is_empty() {
            continue;
        }
        let name = normalized(cell);
        let Some((column, _)) = COLUMNS.iter().find(|(c, _)| normalized(c) == name) else {
            return Err(Error::invalid(
                "file",
                format!("the header has an unknown column {cell:?}"),
            ));
        };
        if found.insert(*column, i).is_some() {
            return Err(Error::invalid(
                "file",
                format!("the header has the column {column:?} twice"),
            ));
        }
    }
    let missing: Vec<&str> = COLUMNS
        .iter()
        .filter(|(c, required)| *required && !found.contains_key(c))
        .map(|(c, _)| *c)
        .collect();
    if !missing.is_empty() {
        return Err(Error::invalid(
            "file",
            format!(
                "the header lacks the required columns {}",
                missing.join(", ")
            ),
        ));
    }
    Ok(found)
}

/// Checks the data rows (numbered from 1) over every core; the problems in
/// row order.
fn check_rows(
    data: &[Vec<String>],
    layout: &HashMap<&'static str, usize>,
) -> (Vec<Option<Row>>, Vec<RowIssue>) {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let share = data.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let parts: Vec<_> = data
            .chunks(share)
            .enumerate()
            .map(|(part, cells)| {
                scope.spawn(move || {
                    let mut issues = Vec::new();
                    let rows: Vec<Option<Row>> = cells
                        .iter()
                        .enumerate()
                        .map(|(i, cells)| {
                            check_row(part * share + i + 1, cells, layout, &mut issues)
                        })
                        .collect();
                    (rows, issues)
                })
            })
            .collect();
        let mut rows = Vec::with_capacity(data.len());
        let mut issues = Vec::new();
        for part in parts {
            let (part_rows, part_issues) = part
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            rows.extend(part_rows);
            issues.extend(part_issues);
        }
        (rows, issues)
    })
}

/// Checks one row; its problems go to `issues`.
fn check_row(
    number: usize,
    cells: &[String],
    layout: &HashMap<&'static str, usize>,
    issues: &mut Vec<RowIssue>,
) -> Option<Row> {
    let cell = |column: &str| -> &str {
        layout
            .get(column)
            .and_then(|i| cells.get(*i))
            .map_or("", |c| c.trim())
    };
    let start = issues.len();
    let mut issue = |column: &str, error: String| {
        issues.push(RowIssue {
            row_number: number,
            parameter: column.to_owned(),
            error,
        });
    };
    for (column, required) in COLUMNS {
        if *required && cell(column).is_empty() {
            issue(column, "is required".into());
        }
    }
    let activated = match cell("Status").to_lowercase().as_str() {
        "1" | "true" | "yes" | "active" | "activated" => Some(true),
        "0" | "false" | "no" | "inactive" | "blocked" => Some(false),
        "" => None,
        other => {
            issue(
                "Status",
                format!("{other:?} is not 1 (active) or 0 (inactive)"),
            );
            None
        }
    };
    let legal_type = match cell("Legal status") {
        "1" => Some(LegalType::Individual),
        "2" => Some(LegalType::LegalEntity),
        "3" => Some(LegalType::SoleTrader),
        "" => None,
        other => {
            issue(
                "Legal status",
                format!("{other:?} is not 1 (individual), 2 (legal entity) or 3 (sole trader)"),
            );
            None
        }
    };
    if matches!(
        legal_type,
        Some(LegalType::LegalEntity | LegalType::SoleTrader)
    ) {
        for column in COMPANY_COLUMNS {
            if cell(column).is_empty() {
                issue(
                    column,
                    "is required for legal entities and sole traders".into(),
                );
            }
        }
    }
    let password = cell("Password").to_owned();
    if !password.is_empty() {
        if let Err(Error::InvalidArgument { reason, .. }) =
            check_printable("password", &password, 6, 20)
        {
            issue("Password", reason);
        }
    }
    let comment = cell("Comment").to_owned();
    if comment.chars().count() > 255 {
        issue("Comment", "must be at most 255 characters".into());
    }
    let discount = match cell("Discount").replace(',', ".").as_str() {
        "" => None,
        text => match text.parse::<f64>() {
            Ok(value) if value.is_finite() && (0.0..=100.0).contains(&value) => Some(value),
            _ => {
                issue(
                    "Discount",
                    format!("{text:?} is not a percent from 0 to 100"),
                );
                None
            }
        },
    };
    let end_date = match cell("End date of discount") {
        "" => None,
        text => {
            let day = text.get(..10).unwrap_or(text);
            match NaiveDate::parse_from_str(day, "%Y-%m-%d") {
                Ok(d) => d.and_hms_opt(23, 59, 59).map(|t| t.and_utc()),
                Err(_) => {
                    issue(
                        "End date of discount",
                        format!("{text:?} is not a date YYYY-MM-DD"),
                    );
                    None
                }
            }
        }
    };
    let device_limit = match cell("Device limit") {
        "" => None,
        text => match text.parse::<i64>() {
            Ok(n) if n >= 0 => Some(n),
            _ => {
                issue(
                    "Device limit",
                    format!("{text:?} is not a whole number, 0 or more"),
                );
                None
            }
        },
    };
    let (Some(activated), Some(legal_type)) = (activated, legal_type) else {
        return None;
    };
    let legal = legal_type != LegalType::Individual;
    let user = PanelUser {
        id: None,
        dealer_id: None,
        activated,
        verified: None,
        login: cell("Email address").to_owned(),
        first_name: cell("Name").to_owned(),
        middle_name: cell("Middle name").to_owned(),
        last_name: cell("Surname").to_owned(),
        legal_name: if legal {
            cell("Legal name").to_owned()
        } else {
            String::new()
        },
        legal_type,
        phone: cell("Phone number").to_owned(),
        post_country: cell("Country").to_owned(),
        post_index: cell("Zip code").to_owned(),
        post_region: cell("Region").to_owned(),
        post_city: cell("City").to_owned(),
        post_street_address: cell("Street, address").to_owned(),
        registered_country: cell("Registration country").to_owned(),
        registered_index: cell("Registration zip code").to_owned(),
        registered_region: cell("Registration region").to_owned(),
        registered_city: cell("Registration city").to_owned(),
        registered_street_address: cell("Registration address").to_owned(),
        state_reg_num: String::new(),
        tin: cell("Tax number").to_owned(),
        okpo_code: None,
        iec: Some(cell("IEC"))
            .filter(|i| legal_type == LegalType::LegalEntity && !i.is_empty())
            .map(str::to_owned),
        balance: 0.0,
        bonus: 0.0,
        creation_date: String::new(),
        trackers_count: 0,
        comment: String::new(),
    };
    let user = match user.checked() {
        Ok(user) => user,
        Err(Error::InvalidArgument { field, reason }) => {
            issue(column_of(&field), reason);
            return None;
        }
        Err(_) => return None,
    };
    if issues.len() > start {
        return None;
    }
    Some(Row {
        user,
        password,
        comment,
        discount: discount.map(|value| {
            (
                Discount {
                    value,
                    min_trackers: 0,
                    end_date: None,
                    strategy: DiscountStrategy::NoSumming,
                },
                end_date,
            )
        }),
        device_limit,
    })
}

/// The file column of an object member the profile check named.
fn column_of(member: &str) -> &'static str {
    match member.trim_start_matches("user.") {
        "login" => "Email address",
        "first_name" => "Name",
        "middle_name" => "Middle name",
        "last_name" => "Surname",
        "phone" => "Phone number",
        "post_country" => "Country",
        "post_index" => "Zip code",
        "post_region" => "Region",
        "post_city" => "City",
        "post_street_address" => "Street, address",
        "registered_country" => "Registration country",
        "registered_index" => "Registration zip code",
        "registered_region" => "Registration region",
        "registered_city" => "Registration city",
        "registered_street_address" => "Registration address",
        "tin" => "Tax number",
        "iec" => "IEC",
        "legal_name" => "Legal name",
        _ => "Legal status",
    }
}

fn refuse(fault: RowsFault, rows: Vec<RowIssue>) -> Error {
    Error::Rows { fault, rows }
}

impl Store {
    /// `user/upload`: every row of the file as a user of the panel's dealer
    /// (the dealer's default user time zone and locale), or nothing; how
    /// many were created. 274 for a file without data rows, 273 for a login
    /// twice in it, 206 for a login already registered, 7 for bad rows.
    pub async fn upload_panel_users(
        &self,
        scope: PanelScope,
        rules: &UserUploadRules,
        file: &[u8],
    ) -> Result<usize> {
        let started = Instant::now();
        let max_rows = rules.max_rows;
        let max_inflated = rules.max_inflated_bytes;
        let file = file.to_vec();
        let Table { rows, cut } = tokio::task::spawn_blocking(move || {
            spreadsheet::read_file("file", &file, max_rows.saturating_add(1), max_inflated)
        })
        .await
        .map_err(Error::Task)??;
        if cut {
            return Err(Error::invalid(
                "file",
                format!("holds more than {max_rows} rows (--max-upload-users)"),
            ));
        }
        let read = started.elapsed();
        let mut rows = rows.into_iter();
        let Some(header) = rows.next() else {
            return Err(refuse(RowsFault::Empty, Vec::new()));
        };
        let layout = layout(&header)?;
        let data: Vec<Vec<String>> = rows.collect();
        if data.is_empty() {
            return Err(refuse(RowsFault::Empty, Vec::new()));
        }
        let (checked, issues) = tokio::task::spawn_blocking(move || check_rows(&data, &layout))
            .await
            .map_err(Error::Task)?;
        if !issues.is_empty() {
            return Err(refuse(RowsFault::Invalid, issues));
        }
        let rows: Vec<Row> = checked.into_iter().flatten().collect();
        // A login twice in the file: every row holding it.
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut twice = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            if let Some(first) = seen.insert(row.user.login.as_str(), i + 1) {
                twice.push(RowIssue {
                    row_number: i + 1,
                    parameter: "Email address".into(),
                    error: format!("{} is also on row {first}", row.user.login),
                });
            }
        }
        if !twice.is_empty() {
            return Err(refuse(RowsFault::DuplicateInFile, twice));
        }
        let logins: Vec<&str> = rows.iter().map(|r| r.user.login.as_str()).collect();
        let taken: Vec<String> = sqlx::query_scalar(
            "SELECT login FROM users WHERE login IN (SELECT value FROM json_each($1))",
        )
        .bind(serde_json::to_string(&logins).map_err(|e| Error::corrupt("logins", e))?)
        .fetch_all(&self.pool)
        .await?;
        if !taken.is_empty() {
            let issues = rows
                .iter()
                .enumerate()
                .filter(|(_, r)| taken.contains(&r.user.login))
                .map(|(i, r)| RowIssue {
                    row_number: i + 1,
                    parameter: "Email address".into(),
                    error: format!("{} is registered already", r.user.login),
                })
                .collect();
            return Err(refuse(RowsFault::LoginInUse, issues));
        }
        let (zone, locale): (String, String) =
            sqlx::query_as("SELECT default_user_time_zone, locale FROM dealers WHERE id = $1")
                .bind(scope.dealer.0)
                .fetch_one(&self.pool)
                .await?;
        let checked = started.elapsed();
        let hashes = hash_passwords(rows.iter().map(|r| r.password.clone()).collect()).await?;
        let hashed = started.elapsed();
        let now = self.clock.now();
        let mut tx = self.write_tx().await?;
        // The connection's page cache (2 MiB by default) is too small for
        // the pages 10,000 users change: SQLite would write changed pages
        // to the log before the commit and read them back. Larger for this
        // transaction, as it was after, whatever happens.
        let cache: i64 = sqlx::query_scalar("PRAGMA cache_size")
            .fetch_one(&mut *tx)
            .await?;
        sqlx::query(&format!("PRAGMA cache_size = -{UPLOAD_CACHE_KIB}"))
            .execute(&mut *tx)
            .await?;
        let shared = (zone.as_str(), locale.as_str(), now);
        let inserted = self
            .insert_users(&mut tx, scope, shared, (&rows, &hashes), STAGED_ROWS)
            .await;
        let restored = sqlx::query(&format!("PRAGMA cache_size = {cache}"))
            .execute(&mut *tx)
            .await;
        inserted?;
        restored?;
        tx.commit().await?;
        let stored = started.elapsed();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        tracing::info!(
            target: "platform::user_upload",
            dealer_id = scope.dealer.0,
            rows = rows.len(),
            read_ms = ms(read),
            check_ms = ms(checked - read),
            hash_ms = ms(hashed - checked),
            store_ms = ms(stored - hashed),
            "panel users uploaded"
        );
        Ok(rows.len())
    }

    /// Stores `rows` (their passwords hashed as `hashes`) as users of the
    /// scope's dealer, then their discounts. The rows go into a temporary
    /// table in multi-row `INSERT … VALUES` statements of `per_statement`
    /// rows ([`STAGED_ROWS`]: 3,600 parameters, SQLite takes 32,766) with
    /// anonymous `?` parameters: SQLite numbers those in order, where
    /// SQLite's parser and sqlx's binding look each named `$n` up among the
    /// names before it (quadratic in a statement of thousands). From there
    /// one statement stores them all. A statement a row costs a round trip
    /// to the connection's thread per row; one `INSERT … SELECT` over the
    /// rows as a JSON array (`json_each`) made SQLite render each row's
    /// array anew for each of its 36 columns: both were slower for 10,000
    /// rows (BENCHMARKS.md). `shared` is the dealer's zone and locale and
    /// the creation time.
    async fn insert_users(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
        scope: PanelScope,
        shared: (&str, &str, chrono::DateTime<chrono::Utc>),
        (rows, hashes): (&[Row], &[String]),
        per_statement: usize,
    ) -> Result<()> {
        use serde_json::{Value, json};
        let columns = format!(
            "dealer_id, time_zone, locale, created_at, password_changed_at, \
             password_hash, comment, device_limit, {PROFILE_COLUMNS}, activated, verified, search_text"
        );
        let per_row = columns.split(',').count();
        let row_values = format!("({})", vec!["?"; per_row].join(", "));
        let profiles: Vec<Profile> = rows.iter().map(|r| r.user.profile()).collect();
        let searchable: Vec<String> = profiles
            .iter()
            .map(crate::panel_users::searchable)
            .collect();
        let (zone, locale, now) = shared;
        // The rows are staged in a temporary table (this connection's,
        // in memory; created and dropped inside the transaction), then
        // stored by one statement. FTS5 writes out its pending index at
        // the start of each statement that may have to be undone, which
        // every statement writing to it through a trigger is: statements
        // of rows straight into `users` made it write and merge an index
        // segment each (a sixth of the store's time for 10,000 users).
        sqlx::query(&format!(
            "DROP TABLE IF EXISTS temp.upload_rows; CREATE TEMP TABLE upload_rows ({columns})"
        ))
        .execute(&mut **tx)
        .await?;
        // One statement of `per_statement` rows, prepared once and run
        // again for each group (and one for the rest): parsing statements
        // of 30,000 parameters cost more than the trips to the
        // connection's thread that fewer rows a statement take.
        let per_statement = per_statement.max(1);
        let staging = |rows: usize| {
            format!(
                "INSERT INTO temp.upload_rows ({columns}) VALUES {}",
                vec![row_values.as_str(); rows].join(", ")
            )
        };
        let full = staging(per_statement);
        for start in (0..rows.len()).step_by(per_statement) {
            let end = rows.len().min(start + per_statement);
            let rest;
            let insert = if end - start == per_statement {
                &full
            } else {
                rest = staging(end - start);
                &rest
            };
            let mut query = sqlx::query(insert);
            for i in start..end {
                let (row, profile) = (&rows[i], &profiles[i]);
                query = query
                    .bind(scope.dealer.0)
                    .bind(zone)
                    .bind(locale)
                    .bind(now)
                    .bind(now)
                    .bind(&hashes[i])
                    .bind(&row.comment)
                    .bind(row.device_limit);
                query = profile
                    .bind(query)
                    .bind(row.user.activated)
                    .bind(row.user.activated)
                    .bind(&searchable[i]);
            }
            query.execute(&mut **tx).await?;
        }
        let store = format!(
            "INSERT OR ROLLBACK INTO users ({columns}) \
             SELECT {columns} FROM temp.upload_rows ORDER BY rowid; \
             DROP TABLE temp.upload_rows"
        );
        if let Err(e) = sqlx::query(&store).execute(&mut **tx).await {
            // SQLite has ended the transaction (`OR ROLLBACK`; after
            // another error it may have): open an empty one for `tx`
            // to roll back, else sqlx would count the connection as
            // still in a transaction.
            let _ = sqlx::query("BEGIN").execute(&mut **tx).await;
            // Registered since the check (another upload or create): name one.
            let login = self.registered_login(tx, &profiles).await?;
            return Err(crate::users::unique_login(e, &login.unwrap_or_default()));
        }
        // As sqlx binds a time: RFC 3339 with `+00:00`.
        let discounts: Vec<Value> = rows
            .iter()
            .zip(&profiles)
            .filter_map(|(row, profile)| {
                let (discount, end) = row.discount.as_ref()?;
                Some(json!([
                    profile.login,
                    discount.value,
                    end.map(|t| t.to_rfc3339())
                ]))
            })
            .collect();
        if !discounts.is_empty() {
            sqlx::query(
                "INSERT INTO user_discounts (user_id, value, min_trackers, end_date, strategy) \
                 SELECT u.id, d.value ->> 1, 0, d.value ->> 2, 'no_summing' \
                 FROM json_each($1) d JOIN users u ON u.login = d.value ->> 0",
            )
            .bind(Value::Array(discounts).to_string())
            .execute(&mut **tx)
            .await?;
        }
        Ok(())
    }

    /// The first of `profiles`' logins registered already.
    async fn registered_login(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
        profiles: &[Profile],
    ) -> Result<Option<String>> {
        let logins: Vec<&str> = profiles.iter().map(|p| p.login.as_str()).collect();
        Ok(sqlx::query_scalar(
            "SELECT login FROM users WHERE login IN (SELECT value FROM json_each($1)) LIMIT 1",
        )
        .bind(serde_json::to_string(&logins).map_err(|e| Error::corrupt("logins", e))?)
        .fetch_optional(&mut **tx)
        .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows as `check_row` makes them from the cells of a file.
    fn rows(logins: &[&str]) -> Vec<Row> {
        let header: Vec<String> = COLUMNS.iter().map(|(c, _)| (*c).to_owned()).collect();
        let layout = layout(&header).unwrap();
        let mut issues = Vec::new();
        let rows = logins
            .iter()
            .enumerate()
            .map(|(i, login)| {
                let cells: Vec<String> = COLUMNS
                    .iter()
                    .map(|(column, _)| match *column {
                        "Email address" => (*login).to_owned(),
                        "Password" => "secret12".to_owned(),
                        "Status" => if i % 2 == 0 { "1" } else { "0" }.to_owned(),
                        "Legal status" => "1".to_owned(),
                        "Surname" => format!("Ахметова {i}"),
                        "Name" => "Dana".to_owned(),
                        "Comment" => format!("row {i}"),
                        "Discount" => if i == 4 { "15" } else { "" }.to_owned(),
                        "Device limit" => if i == 5 { "7" } else { "" }.to_owned(),
                        _ => String::new(),
                    })
                    .collect();
                check_row(i + 1, &cells, &layout, &mut issues).unwrap()
            })
            .collect();
        assert!(issues.is_empty(), "{issues:?}");
        rows
    }

    #[test]
    fn rows_checked_over_every_core_keep_their_numbers_and_order() {
        let logins: Vec<String> = (0..9).map(|i| format!("u{i}@upload.example")).collect();
        let header: Vec<String> = COLUMNS.iter().map(|(c, _)| (*c).to_owned()).collect();
        let layout = layout(&header).unwrap();
        let mut data: Vec<Vec<String>> = logins
            .iter()
            .map(|login| {
                COLUMNS
                    .iter()
                    .map(|(column, _)| match *column {
                        "Email address" => login.clone(),
                        "Password" => "secret12".to_owned(),
                        "Status" | "Legal status" => "1".to_owned(),
                        "Surname" | "Name" => "Lee".to_owned(),
                        _ => String::new(),
                    })
                    .collect()
            })
            .collect();
        data[1][2] = "maybe".into();
        data[7][5] = String::new();
        let (rows, issues) = check_rows(&data, &layout);
        let named: Vec<(usize, &str)> = issues
            .iter()
            .map(|i| (i.row_number, i.parameter.as_str()))
            .collect();
        assert_eq!(named, [(2, "Status"), (8, "Name")]);
        let checked: Vec<Option<&str>> = rows
            .iter()
            .map(|r| r.as_ref().map(|r| r.user.login.as_str()))
            .collect();
        let expected: Vec<Option<&str>> = logins
            .iter()
            .enumerate()
            .map(|(i, l)| (i != 1 && i != 7).then_some(l.as_str()))
            .collect();
        assert_eq!(checked, expected);
    }

    type Stored = (String, String, String, i64, Option<i64>, String, String);

    async fn stored(store: &Store) -> Vec<Stored> {
        sqlx::query_as(
            "SELECT login, last_name, comment, activated, device_limit, password_hash, time_zone \
             FROM users WHERE login LIKE '%@upload.example' ORDER BY id",
        )
        .fetch_all(&store.pool)
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn rows_spread_over_several_statements_are_stored_in_file_order_or_not_at_all() {
        // One connection: the one the refused statement ran on serves on.
        let (_dir, store, _, _) = crate::zones::tests::store_with_two_users_on(1).await;
        let scope = PanelScope {
            dealer: schemas::DealerId(1),
            global: false,
        };
        let listed = || async {
            sqlx::query_scalar::<_, i64>("SELECT listed FROM panel_user_counts WHERE dealer_id = 1")
                .fetch_one(&store.pool)
                .await
                .unwrap()
        };
        let logins: Vec<String> = (0..10).map(|i| format!("u{i}@upload.example")).collect();
        let logins: Vec<&str> = logins.iter().map(String::as_str).collect();
        let hashes: Vec<String> = (0..10).map(|i| format!("hash {i}")).collect();
        // Three rows a statement: four statements.
        let three_rows = 3;
        let shared = ("Asia/Almaty", "ru", chrono::Utc::now());

        // A login registered already, in the third statement: nothing stays.
        let mut taken = rows(&logins);
        taken[7].user.login = "bob@example.com".into();
        let mut tx = store.write_tx().await.unwrap();
        let refused = store
            .insert_users(&mut tx, scope, shared, (&taken, &hashes), three_rows)
            .await
            .unwrap_err();
        drop(tx);
        assert!(
            matches!(&refused, Error::LoginInUse { login } if login == "bob@example.com"),
            "{refused:?}"
        );
        assert!(stored(&store).await.is_empty());
        assert_eq!(listed().await, 2);

        let mut tx = store.write_tx().await.unwrap();
        store
            .insert_users(
                &mut tx,
                scope,
                shared,
                (&rows(&logins), &hashes),
                three_rows,
            )
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let expected: Vec<Stored> = (0..10)
            .map(|i| {
                (
                    logins[i].to_owned(),
                    format!("Ахметова {i}"),
                    format!("row {i}"),
                    i64::from(i % 2 == 0),
                    (i == 5).then_some(7),
                    format!("hash {i}"),
                    "Asia/Almaty".to_owned(),
                )
            })
            .collect();
        assert_eq!(stored(&store).await, expected);
        assert_eq!(listed().await, 12);
        // The list's search index and the discount follow the rows.
        let found: Vec<String> = sqlx::query_scalar(
            "SELECT u.login FROM panel_user_search s JOIN users u ON u.id = s.rowid \
             WHERE panel_user_search MATCH '\"а 7\"'",
        )
        .fetch_all(&store.pool)
        .await
        .unwrap();
        assert_eq!(found, ["u7@upload.example"]);
        sqlx::query(
            "INSERT INTO panel_user_search (panel_user_search, rank) VALUES ('integrity-check', 1)",
        )
        .execute(&store.pool)
        .await
        .unwrap();
        let discounted: Vec<(String, f64)> = sqlx::query_as(
            "SELECT u.login, d.value FROM user_discounts d JOIN users u ON u.id = d.user_id",
        )
        .fetch_all(&store.pool)
        .await
        .unwrap();
        assert_eq!(discounted, [("u4@upload.example".to_owned(), 15.0)]);
    }

    #[tokio::test]
    async fn an_upload_leaves_its_connections_page_cache_as_it_found_it() {
        let (_dir, store, _, _) = crate::zones::tests::store_with_two_users_on(1).await;
        let cache = || async {
            sqlx::query_scalar::<_, i64>("PRAGMA cache_size")
                .fetch_one(&store.pool)
                .await
                .unwrap()
        };
        let before = cache().await;
        assert_ne!(before, -UPLOAD_CACHE_KIB);
        let header: Vec<&str> = COLUMNS.iter().map(|(c, _)| *c).collect();
        let line = |login: &str| {
            COLUMNS
                .iter()
                .map(|(column, _)| match *column {
                    "Email address" => login,
                    "Password" => "secret12",
                    "Status" | "Legal status" => "1",
                    "Surname" => "Omarova",
                    "Name" => "Dana",
                    _ => "",
                })
                .collect::<Vec<_>>()
                .join(";")
        };
        let file = [
            header.join(";"),
            line("c1@upload.example"),
            line("c2@upload.example"),
        ]
        .join("\n");
        let scope = PanelScope {
            dealer: schemas::DealerId(1),
            global: false,
        };
        let rules = UserUploadRules {
            max_rows: 10,
            max_inflated_bytes: 1 << 20,
        };
        let created = store
            .upload_panel_users(scope, &rules, file.as_bytes())
            .await
            .unwrap();
        assert_eq!(created, 2);
        assert_eq!(stored(&store).await.len(), 2);
        assert_eq!(cache().await, before);
    }
}
