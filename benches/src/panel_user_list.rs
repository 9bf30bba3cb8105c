//! The `panel/user/list` load generator (issue 15): a dealer of 100,000
//! users among other dealers' users, listed a page of 100 at a time over
//! HTTP in each order the call offers, with and without a filter.
//!
//! - [`populate`] fills a fresh platform store through `platform`'s public
//!   functions: each dealer's users come as upload files of
//!   [`crate::user_upload::people`] (`Store::upload_panel_users`, the
//!   function behind `panel/user/upload`), some of them with trackers.
//! - [`Scenario`]s cross the orders with filters matching many, some, few,
//!   one and no users (and one of 2 characters, which no trigram can
//!   serve), and first, middle and last pages.
//! - [`Listed`] is a user as the list answers it; [`Scenario::expected`]
//!   sorts and filters the whole dealer again in memory, to check every
//!   scenario's page and count before it is timed.

pub mod populate;

use std::cmp::Ordering;

use anyhow::{Context, ensure};
use serde_json::{Value, json};

use crate::user_upload::PanelClient;
use crate::vehicle_list::list_of;

/// The orders of the scenarios: `order_by` (none: by id) and `ascending`.
pub const ORDERS: &[(Option<&str>, bool)] = &[
    (None, true),
    (Some("login"), true),
    (Some("last_name"), true),
    (Some("first_name"), false),
    (Some("legal_name"), false),
    (Some("creation_date"), false),
    (Some("activated"), true),
    (Some("balance"), false),
];

/// A filter of the scenarios.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterCase {
    /// What it matches, for the report.
    pub name: &'static str,
    /// The filter; `None` sends none.
    pub text: Option<String>,
}

/// The scenarios' filters over `rows`: none, a mail domain (many), a
/// company form (many), a Cyrillic surname (some), a phone fragment (few),
/// one user's whole login, 2 characters, and a fragment nobody has.
pub fn filters(rows: &[Listed]) -> Vec<FilterCase> {
    let one = rows
        .get(rows.len() / 3)
        .map(|r| r.login.clone())
        .unwrap_or_default();
    let case = |name, text: Option<&str>| FilterCase {
        name,
        text: text.map(str::to_owned),
    };
    vec![
        case("none", None),
        case("domain", Some("gmail")),
        case("company form", Some("LLP")),
        case("cyrillic surname", Some("Иванов")),
        case("phone fragment", Some("77012")),
        FilterCase {
            name: "one login",
            text: Some(one),
        },
        case("2 characters", Some("ov")),
        case("no match", Some("qqq")),
    ]
}

pub use crate::vehicle_list::Page;

/// One `panel/user/list` call, timed again and again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    /// `order_by` (none: by id).
    pub order_by: Option<&'static str>,
    /// `ascending`.
    pub ascending: bool,
    /// The filter.
    pub filter: FilterCase,
    /// Which page.
    pub page: Page,
    /// Its offset.
    pub offset: i64,
    /// Rows per page.
    pub limit: i64,
    /// Users the filter matches.
    pub matches: usize,
}

impl Scenario {
    /// Every order with every filter and page (one page when all matches
    /// fit on it).
    pub fn all(rows: &[Listed], limit: i64) -> Vec<Self> {
        let filters = filters(rows);
        let mut scenarios = Vec::new();
        for &(order_by, ascending) in ORDERS {
            for filter in &filters {
                let matches = rows
                    .iter()
                    .filter(|r| r.matches(filter.text.as_deref()))
                    .count();
                let last = (matches.saturating_sub(1) as i64 / limit) * limit;
                let mut pages = vec![(Page::First, 0)];
                if last > 0 {
                    pages.push((Page::Middle, (matches as i64 / 2 / limit) * limit));
                    pages.push((Page::Last, last));
                }
                for (page, offset) in pages {
                    scenarios.push(Self {
                        order_by,
                        ascending,
                        filter: filter.clone(),
                        page,
                        offset,
                        limit,
                        matches,
                    });
                }
            }
        }
        scenarios
    }

    /// The order for reports: `last_name desc`.
    pub fn order_name(&self) -> String {
        format!(
            "{} {}",
            self.order_by.unwrap_or("(id)"),
            if self.ascending { "asc" } else { "desc" }
        )
    }

    /// The request body (without the session).
    pub fn body(&self) -> Value {
        let mut body = json!({
            "ascending": self.ascending,
            "limit": self.limit,
            "offset": self.offset,
        });
        if let Some(map) = body.as_object_mut() {
            if let Some(order_by) = self.order_by {
                map.insert("order_by".into(), json!(order_by));
            }
            if let Some(filter) = &self.filter.text {
                map.insert("filter".into(), json!(filter));
            }
        }
        body
    }

    /// The ids its page must hold, in order, and the count of matches.
    pub fn expected(&self, rows: &[Listed]) -> (Vec<i64>, usize) {
        let mut matching: Vec<&Listed> = rows
            .iter()
            .filter(|r| r.matches(self.filter.text.as_deref()))
            .collect();
        // Ties by id; a descending order is the ascending one reversed,
        // ties included (decisions.md 92); without `order_by`, by id.
        let property = self.order_by.unwrap_or("id");
        matching.sort_by(|a, b| {
            let order = a.compare(b, property).then(a.id.cmp(&b.id));
            if self.ascending {
                order
            } else {
                order.reverse()
            }
        });
        let page = matching
            .iter()
            .skip(self.offset as usize)
            .take(self.limit as usize)
            .map(|r| r.id)
            .collect();
        (page, matching.len())
    }
}

/// A listed user: the members the scenarios sort and filter by.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// Id.
    pub id: i64,
    /// Login.
    pub login: String,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// Legal name.
    pub legal_name: String,
    /// When it was created, as the list writes it.
    pub creation_date: String,
    /// Allowed to log in.
    pub activated: bool,
    /// Balance.
    pub balance: f64,
    /// Login, names, legal name and phone lower-cased, as the server matches filters.
    search_text: String,
}

impl Listed {
    /// The members of one element of a `list` answer.
    pub fn from_json(v: &Value) -> anyhow::Result<Self> {
        let text = |name: &str| -> anyhow::Result<String> {
            Ok(v[name]
                .as_str()
                .with_context(|| format!("`{name}` of {v}"))?
                .to_owned())
        };
        let login = text("login")?;
        let first_name = text("first_name")?;
        let last_name = text("last_name")?;
        let legal_name = text("legal_name")?;
        let search_text = [
            login.as_str(),
            &first_name,
            &text("middle_name")?,
            &last_name,
            &legal_name,
            &text("phone")?,
        ]
        .map(str::to_lowercase)
        .join("\n");
        Ok(Self {
            id: v["id"].as_i64().context("`id`")?,
            creation_date: text("creation_date")?,
            activated: v["activated"].as_bool().context("`activated`")?,
            balance: v["balance"].as_f64().context("`balance`")?,
            login,
            first_name,
            last_name,
            legal_name,
            search_text,
        })
    }

    /// Whether the filter matches it: a substring of the search text,
    /// case-insensitive (Unicode); blank is none.
    fn matches(&self, filter: Option<&str>) -> bool {
        match filter.map(str::trim).filter(|f| !f.is_empty()) {
            Some(filter) => self.search_text.contains(&filter.to_lowercase()),
            None => true,
        }
    }

    /// Ascending order by `property` as SQLite sorts it: names `COLLATE
    /// NOCASE` (ASCII letters folded, then bytes), logins by bytes.
    fn compare(&self, other: &Self, property: &str) -> Ordering {
        fn nocase(a: &str, b: &str) -> Ordering {
            a.bytes()
                .map(|c| c.to_ascii_lowercase())
                .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
        }
        match property {
            "login" => self.login.cmp(&other.login),
            "first_name" => nocase(&self.first_name, &other.first_name),
            "last_name" => nocase(&self.last_name, &other.last_name),
            "legal_name" => nocase(&self.legal_name, &other.legal_name),
            "creation_date" => self.creation_date.cmp(&other.creation_date),
            "activated" => self.activated.cmp(&other.activated),
            "balance" => self.balance.total_cmp(&other.balance),
            _ => self.id.cmp(&other.id),
        }
    }
}

/// Reads the dealer's whole list (by id, 10,000 a call).
pub async fn everyone(client: &PanelClient) -> anyhow::Result<Vec<Listed>> {
    client
        .everyone()
        .await?
        .iter()
        .map(Listed::from_json)
        .collect()
}

/// Calls the scenario: its time and the answer's size in bytes.
pub async fn call(
    client: &PanelClient,
    scenario: &Scenario,
) -> anyhow::Result<(std::time::Duration, usize)> {
    let (elapsed, bytes) = client.list(scenario.body()).await?;
    Ok((elapsed, bytes.len()))
}

/// The scenario's query as `platform` takes it.
pub fn ordered_query(scenario: &Scenario) -> platform::OrderedQuery {
    platform::OrderedQuery::new(
        scenario.order_by.map(str::to_owned),
        Some(scenario.ascending),
        scenario.filter.text.clone(),
        Some(scenario.limit),
        Some(scenario.offset),
    )
}

/// Checks that the scenario's page holds the expected users in order and
/// its count is the number of matches; the size of the answer in bytes.
pub async fn verify(
    client: &PanelClient,
    scenario: &Scenario,
    rows: &[Listed],
) -> anyhow::Result<usize> {
    let (_, bytes) = client.list(scenario.body()).await?;
    let count = serde_json::from_slice::<Value>(&bytes)?["count"]
        .as_u64()
        .context("`count`")?;
    let got: Vec<i64> = list_of(&bytes)?
        .iter()
        .map(|v| v["id"].as_i64().context("`id`"))
        .collect::<anyhow::Result<_>>()?;
    let (expected, matches) = scenario.expected(rows);
    ensure!(
        count == matches as u64,
        "{scenario:?}: the server counted {count} matches, expected {matches}"
    );
    ensure!(
        got == expected,
        "{scenario:?}: the server answered ids {:?}… ({} rows), expected {:?}… ({} rows)",
        &got[..got.len().min(5)],
        got.len(),
        &expected[..expected.len().min(5)],
        expected.len()
    );
    Ok(bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, login: &str, last_name: &str) -> Listed {
        Listed::from_json(&json!({
            "id": id, "login": login, "first_name": "Dana", "middle_name": "",
            "last_name": last_name, "legal_name": "", "phone": "77011234567",
            "creation_date": "2026-11-21 10:00:00", "activated": true, "balance": 0.0,
        }))
        .unwrap()
    }

    #[test]
    fn pages_sort_like_sqlite_nocase_with_the_id_last_and_filters_fold_unicode() {
        let rows = [
            row(1, "b@x.kz", "beta"),
            row(2, "a@x.kz", "Alpha"),
            row(3, "c@x.kz", "alpha"),
            row(4, "d@x.kz", "Ахметова"),
        ];
        let scenario = |order_by: Option<&'static str>, ascending, filter: Option<&str>| Scenario {
            order_by,
            ascending,
            filter: FilterCase {
                name: "",
                text: filter.map(str::to_owned),
            },
            page: Page::First,
            offset: 0,
            limit: 10,
            matches: 0,
        };
        let ids = |s: Scenario| s.expected(&rows).0;
        assert_eq!(ids(scenario(Some("last_name"), true, None)), [2, 3, 1, 4]);
        assert_eq!(ids(scenario(Some("last_name"), false, None)), [4, 1, 3, 2]);
        assert_eq!(ids(scenario(Some("login"), true, None)), [2, 1, 3, 4]);
        assert_eq!(ids(scenario(None, false, None)), [4, 3, 2, 1]);
        assert_eq!(ids(scenario(None, true, Some(" АХМЕТ "))), [4]);
        assert_eq!(scenario(None, true, Some("7701")).expected(&rows).1, 4);
    }
}
