//! The `vehicle/list` load generator (issue 14): an account of 100,000
//! vehicles among 1,000 accounts, listed a page of 100 at a time over HTTP
//! with two sort items and a filter.
//!
//! - [`populate`] fills a fresh platform store (through `platform`'s public
//!   functions, not HTTP), with vehicles from [`data`].
//! - [`Scenario`]s cross sort pairs (first on an indexed column, on the
//!   joined `tracker_label` and `garage_organization_name`, on a plain
//!   number) with filters matching many, few, one and no vehicles, and
//!   first, middle and last pages.
//! - [`ListClient::everything`] reads the whole account as the server lists
//!   it; [`Scenario::expected`] sorts and filters it again in memory, to
//!   check every scenario's page before it is timed.

pub mod data;
pub mod populate;

use std::cmp::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

/// Sort pairs of the scenarios.
pub const SORTS: &[[&str; 2]] = &[
    ["model=asc", "label=desc"],
    ["label=asc", "reg_number=asc"],
    ["reg_number=desc", "vin=asc"],
    ["tracker_label=asc", "model=desc"],
    ["garage_organization_name=desc", "max_speed=asc"],
    ["max_speed=desc", "label=asc"],
];

/// A filter of the scenarios.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterCase {
    /// What it matches, for the report.
    pub name: &'static str,
    /// The filter; `None` sends none.
    pub text: Option<String>,
}

/// The scenarios' filters over `rows`: none, a make (about a sixth of the
/// vehicles), a registration-number fragment (about a hundred), one
/// vehicle's whole registration number, and a fragment no vehicle has.
pub fn filters(rows: &[Listed]) -> Vec<FilterCase> {
    let one = rows
        .get(rows.len() / 3)
        .map(|r| r.reg_number.clone())
        .unwrap_or_default();
    vec![
        FilterCase {
            name: "none",
            text: None,
        },
        FilterCase {
            name: "make",
            text: Some("volvo".into()),
        },
        FilterCase {
            name: "reg fragment",
            text: Some("k 48".into()),
        },
        FilterCase {
            name: "one reg",
            text: Some(one),
        },
        FilterCase {
            name: "no match",
            text: Some("qqq".into()),
        },
    ]
}

/// Which page of the matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    /// Offset 0.
    First,
    /// The page holding the middle match.
    Middle,
    /// The page holding the last match.
    Last,
}

impl Page {
    /// The page's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::First => "first",
            Self::Middle => "middle",
            Self::Last => "last",
        }
    }
}

/// One `vehicle/list` call, timed again and again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    /// The two sort items.
    pub sort: [&'static str; 2],
    /// The filter.
    pub filter: FilterCase,
    /// Which page.
    pub page: Page,
    /// Its offset.
    pub offset: i64,
    /// Rows per page.
    pub limit: i64,
    /// Vehicles the filter matches.
    pub matches: usize,
}

impl Scenario {
    /// Every sort pair with every filter and page (one page when all
    /// matches fit on it).
    pub fn all(rows: &[Listed], limit: i64) -> Vec<Self> {
        let filters = filters(rows);
        let mut scenarios = Vec::new();
        for sort in SORTS {
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
                        sort: *sort,
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

    /// The request body.
    pub fn body(&self, hash: &str) -> Value {
        let mut body = json!({
            "hash": hash,
            "sort": self.sort,
            "limit": self.limit,
            "offset": self.offset,
        });
        if let (Some(filter), Some(map)) = (&self.filter.text, body.as_object_mut()) {
            map.insert("filter".into(), json!(filter));
        }
        body
    }

    /// The ids its page must hold, in order.
    pub fn expected(&self, rows: &[Listed]) -> anyhow::Result<Vec<i64>> {
        let sort = self
            .sort
            .iter()
            .map(|item| {
                let (property, direction) = item.split_once('=').context("a sort item")?;
                Ok((property, direction == "desc"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut matching: Vec<&Listed> = rows
            .iter()
            .filter(|r| r.matches(self.filter.text.as_deref()))
            .collect();
        for (property, _) in &sort {
            Listed::check_property(property)?;
        }
        matching.sort_by(|a, b| {
            sort.iter()
                .map(|(property, descending)| {
                    let order = a.compare(b, property);
                    if *descending { order.reverse() } else { order }
                })
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
                .then(a.id.cmp(&b.id))
        });
        Ok(matching
            .iter()
            .skip(self.offset as usize)
            .take(self.limit as usize)
            .map(|r| r.id)
            .collect())
    }
}

/// A listed vehicle: the members the scenarios sort and filter by.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// Id.
    pub id: i64,
    /// Label.
    pub label: String,
    /// Registration number.
    pub reg_number: String,
    /// VIN.
    pub vin: String,
    /// Model.
    pub model: String,
    /// Highest speed.
    pub max_speed: i64,
    /// The bound tracker's label.
    pub tracker_label: Option<String>,
    /// The garage's organization name.
    pub garage_organization_name: Option<String>,
    /// Label, registration number and VIN lower-cased, as the server matches filters.
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
        let optional = |name: &str| v[name].as_str().map(str::to_owned);
        let label = text("label")?;
        let reg_number = text("reg_number")?;
        let vin = text("vin")?;
        let search_text = [&label, &reg_number, &vin]
            .map(|p| p.to_lowercase())
            .join("\n");
        Ok(Self {
            id: v["id"].as_i64().context("`id`")?,
            model: text("model")?,
            max_speed: v["max_speed"].as_i64().context("`max_speed`")?,
            tracker_label: optional("tracker_label"),
            garage_organization_name: optional("garage_organization_name"),
            label,
            reg_number,
            vin,
            search_text,
        })
    }

    /// Whether the filter matches it: a substring of label, registration
    /// number or VIN, case-insensitive (Unicode); blank is none.
    fn matches(&self, filter: Option<&str>) -> bool {
        match filter.map(str::trim).filter(|f| !f.is_empty()) {
            Some(filter) => self.search_text.contains(&filter.to_lowercase()),
            None => true,
        }
    }

    fn check_property(property: &str) -> anyhow::Result<()> {
        match property {
            "id"
            | "label"
            | "reg_number"
            | "vin"
            | "model"
            | "max_speed"
            | "tracker_label"
            | "garage_organization_name" => Ok(()),
            other => bail!("the benchmark cannot sort by {other} in memory"),
        }
    }

    /// Ascending order by `property` as SQLite sorts it: texts `COLLATE
    /// NOCASE` (ASCII letters folded, then bytes), nulls first.
    fn compare(&self, other: &Self, property: &str) -> Ordering {
        fn nocase(a: &str, b: &str) -> Ordering {
            a.bytes()
                .map(|c| c.to_ascii_lowercase())
                .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
        }
        fn nullable(a: Option<&String>, b: Option<&String>) -> Ordering {
            match (a, b) {
                (Some(a), Some(b)) => nocase(a, b),
                (a, b) => a.is_some().cmp(&b.is_some()),
            }
        }
        match property {
            "label" => nocase(&self.label, &other.label),
            "reg_number" => nocase(&self.reg_number, &other.reg_number),
            "vin" => nocase(&self.vin, &other.vin),
            "model" => nocase(&self.model, &other.model),
            "max_speed" => self.max_speed.cmp(&other.max_speed),
            "tracker_label" => nullable(self.tracker_label.as_ref(), other.tracker_label.as_ref()),
            "garage_organization_name" => nullable(
                self.garage_organization_name.as_ref(),
                other.garage_organization_name.as_ref(),
            ),
            _ => self.id.cmp(&other.id),
        }
    }
}

/// A client of one account's `vehicle/list`.
#[derive(Debug, Clone)]
pub struct ListClient {
    http: reqwest::Client,
    url: String,
    hash: String,
}

impl ListClient {
    /// Logs in at `base` with `login` and `password` (`/v2/user/auth`).
    pub async fn login(base: &str, login: &str, password: &str) -> anyhow::Result<Self> {
        let http = reqwest::Client::new();
        let answer: Value = http
            .post(format!("{base}/v2/user/auth"))
            .json(&json!({"login": login, "password": password}))
            .send()
            .await?
            .json()
            .await?;
        let hash = answer["hash"]
            .as_str()
            .with_context(|| format!("login answered {answer}"))?
            .to_owned();
        Ok(Self {
            http,
            url: format!("{base}/v2/vehicle/list"),
            hash,
        })
    }

    /// Sends `body` and reads the whole answer; the time from sending to
    /// the last byte, and the body.
    pub async fn call(&self, body: &Value) -> anyhow::Result<(Duration, bytes::Bytes)> {
        let started = Instant::now();
        let response = self.http.post(&self.url).json(body).send().await?;
        let status = response.status();
        let bytes = response.bytes().await?;
        let elapsed = started.elapsed();
        ensure!(
            status.is_success(),
            "vehicle/list answered {status}: {}",
            String::from_utf8_lossy(&bytes)
        );
        Ok((elapsed, bytes))
    }

    /// One scenario's call: its time and body.
    pub async fn scenario(&self, scenario: &Scenario) -> anyhow::Result<(Duration, bytes::Bytes)> {
        self.call(&scenario.body(&self.hash)).await
    }

    /// Every vehicle of the account, by id, 10,000 a call.
    pub async fn everything(&self) -> anyhow::Result<Vec<Listed>> {
        let mut rows = Vec::new();
        loop {
            let body = json!({
                "hash": self.hash,
                "sort": ["id=asc"],
                "limit": 10_000,
                "offset": rows.len(),
            });
            let (_, bytes) = self.call(&body).await?;
            let page = list_of(&bytes)?;
            for v in &page {
                rows.push(Listed::from_json(v)?);
            }
            if page.len() < 10_000 {
                return Ok(rows);
            }
        }
    }

    /// Checks that the scenario's page holds the expected vehicles in
    /// order; the size of the answer in bytes.
    pub async fn verify(&self, scenario: &Scenario, rows: &[Listed]) -> anyhow::Result<usize> {
        let (_, bytes) = self.scenario(scenario).await?;
        let got: Vec<i64> = list_of(&bytes)?
            .iter()
            .map(|v| v["id"].as_i64().context("`id`"))
            .collect::<anyhow::Result<_>>()?;
        let expected = scenario.expected(rows)?;
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
}

/// The `list` member of a list call's answer.
pub fn list_of(bytes: &[u8]) -> anyhow::Result<Vec<Value>> {
    let mut answer: Value = serde_json::from_slice(bytes)?;
    match answer["list"].take() {
        Value::Array(list) => Ok(list),
        other => bail!("no list in the answer: {other}"),
    }
}

/// A latency in milliseconds, two decimals, as the reports print it.
pub fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

/// Percentiles of a set of latencies (nearest rank).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Samples.
    pub count: usize,
    /// Median.
    pub p50: Duration,
    /// 90th percentile.
    pub p90: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Slowest.
    pub max: Duration,
}

impl Stats {
    /// The percentiles of `samples`.
    pub fn of(samples: &[Duration]) -> Self {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let rank = |p: f64| {
            let i = ((p * sorted.len() as f64).ceil() as usize).max(1) - 1;
            sorted.get(i).copied().unwrap_or_default()
        };
        Self {
            count: sorted.len(),
            p50: rank(0.50),
            p90: rank(0.90),
            p99: rank(0.99),
            max: sorted.last().copied().unwrap_or_default(),
        }
    }
}

/// A deterministic order of `n` items (Fisher-Yates with [`crate::fleet::SplitMix64`]).
pub fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut rng = crate::fleet::SplitMix64::new(seed);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.between(0, i as u32 + 1) as usize;
        order.swap(i, j);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, label: &str, tracker: Option<&str>) -> Listed {
        Listed::from_json(&json!({
            "id": id, "label": label, "reg_number": "AB 1234 CE", "vin": "YV2RT40A0LK123456",
            "model": "Volvo FH 460", "max_speed": 90, "tracker_label": tracker,
            "garage_organization_name": null,
        }))
        .unwrap()
    }

    #[test]
    fn pages_sort_like_sqlite_nocase_with_nulls_first_and_the_id_last() {
        let rows = [
            row(1, "beta", Some("x")),
            row(2, "Alpha", None),
            row(3, "alpha", Some("X")),
            row(4, "Äpfel", Some("a")),
        ];
        let scenario = |sort: [&'static str; 2], filter: Option<&str>| Scenario {
            sort,
            filter: FilterCase {
                name: "",
                text: filter.map(str::to_owned),
            },
            page: Page::First,
            offset: 0,
            limit: 10,
            matches: 0,
        };
        let ids = |s: Scenario| s.expected(&rows).unwrap();
        assert_eq!(ids(scenario(["label=asc", "id=desc"], None)), [3, 2, 1, 4]);
        assert_eq!(
            ids(scenario(["tracker_label=asc", "label=desc"], None)),
            [2, 4, 1, 3]
        );
        assert_eq!(
            ids(scenario(["tracker_label=desc", "id=asc"], None)),
            [1, 3, 4, 2]
        );
        assert_eq!(ids(scenario(["label=asc", "id=asc"], Some(" ÄP "))), [4]);
        assert_eq!(
            ids(scenario(["label=asc", "id=asc"], Some("1234 ce"))).len(),
            4
        );
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<Duration> = (1..=200).map(Duration::from_millis).collect();
        let stats = Stats::of(&samples);
        assert_eq!(stats.p50, Duration::from_millis(100));
        assert_eq!(stats.p99, Duration::from_millis(198));
        assert_eq!(stats.max, Duration::from_millis(200));
        assert_eq!(Stats::of(&[]).count, 0);
    }
}
