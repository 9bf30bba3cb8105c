//! Fills a platform store with the benchmark's dealers and users. Dealers,
//! trackers and each dealer's first users go through the `platform`
//! crate's public functions (`Store::create_dealer`,
//! `Store::upload_panel_users`: what `panel/user/upload` calls, a `;` CSV of
//! [`People`], `Store::create_tracker`). The other users are written with
//! SQL, copying the stored columns of an uploaded user (password hash,
//! zone, locale) and the search text the platform computes: one Argon2
//! hash takes 30-60 ms on this machine, so 120,000 of them would take an
//! hour or more and measure the hashing, not the list. Files of the big
//! dealer alternate with the other dealers', so ids mix as they do in a
//! shared store; creation times spread over three years.

use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use chrono::{SecondsFormat, TimeDelta, Utc};
use platform::{
    ContractType, NewDealer, NewTracker, OrderedQuery, PanelScope, Store, StorePeriod,
    UserUploadRules,
};
use schemas::{DealerId, UserId};

use crate::fleet::SplitMix64;
use crate::user_upload::csv;
use crate::user_upload::people::{People, Person};

/// What to create.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PopulationConfig {
    /// Users of the big dealer.
    pub users: usize,
    /// Other dealers.
    pub dealers: usize,
    /// Users of each other dealer.
    pub users_per_dealer: usize,
    /// Users of each dealer uploaded through `Store::upload_panel_users`
    /// (the rest are written with SQL).
    pub uploaded_per_dealer: usize,
    /// Users with trackers, as a share of each dealer's.
    pub tracker_share: f64,
    /// Seed of every choice.
    pub seed: u64,
}

impl Default for PopulationConfig {
    /// The sizes of issue 15: a dealer of 100,000 users and four of 5,000.
    fn default() -> Self {
        Self {
            users: 100_000,
            dealers: 4,
            users_per_dealer: 5_000,
            uploaded_per_dealer: 100,
            tracker_share: 0.1,
            seed: 0x7061_6e65_6c75, // "panelu"
        }
    }
}

/// The big dealer's panel credentials, and what populating took.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Population {
    /// The big dealer (its id is its panel login).
    pub dealer: i64,
    /// Its panel password.
    pub password: String,
    /// Users created in all.
    pub users: usize,
    /// Trackers created in all.
    pub trackers: usize,
    /// Wall time of the whole population.
    pub elapsed: Duration,
}

/// The panel password of every benchmark dealer.
const PASSWORD: &str = "bench-panel-1";

/// Rows of one upload file.
const FILE_ROWS: usize = 10_000;

/// Creates the dealers and their users (and trackers) in `store`, a fresh one.
pub async fn populate(
    store: &Store,
    dir: &std::path::Path,
    config: &PopulationConfig,
) -> anyhow::Result<Population> {
    let started = Instant::now();
    let mut dealers = Vec::with_capacity(config.dealers + 1);
    for d in 0..=config.dealers {
        dealers.push(
            store
                .create_dealer(NewDealer {
                    id: None,
                    title: format!("Bench dealer {d}"),
                    panel_password: PASSWORD.into(),
                    contract_type: ContractType::Paas,
                    permissions: None,
                    default_user_time_zone: "Asia/Almaty".into(),
                })
                .await?,
        );
    }
    // Files in the order they are uploaded: the big dealer's, each followed
    // by one of another dealer's while they last.
    let mut files: Vec<(DealerId, usize)> = Vec::new();
    let mut others: Vec<(DealerId, usize)> = Vec::new();
    for dealer in &dealers[1..] {
        let mut left = config.users_per_dealer;
        while left > 0 {
            others.push((*dealer, left.min(FILE_ROWS)));
            left -= left.min(FILE_ROWS);
        }
    }
    let mut others = others.into_iter();
    let mut left = config.users;
    while left > 0 {
        files.push((dealers[0], left.min(FILE_ROWS)));
        left -= left.min(FILE_ROWS);
        files.extend(others.next());
    }
    files.extend(others);

    let rules = UserUploadRules {
        max_rows: FILE_ROWS,
        max_inflated_bytes: 1 << 30,
    };
    let database = dir.join("platform.sqlite");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", database.display())).await?;
    let mut users = 0;
    let mut uploaded = std::collections::HashSet::new();
    let mut rng = SplitMix64::new(config.seed);
    let now = Utc::now();
    for (n, (dealer, rows)) in files.iter().enumerate() {
        let mut people = People::new(config.seed ^ n as u64, (n as u64 + 1) * 1_000_000);
        let mut people = people.take(*rows);
        let file_started = Instant::now();
        if uploaded.insert(*dealer) {
            let first: Vec<Person> = people
                .drain(..config.uploaded_per_dealer.min(people.len()))
                .collect();
            let created = store
                .upload_panel_users(scope(*dealer), &rules, &csv(&first))
                .await
                .with_context(|| format!("uploading file {n} of dealer {dealer:?}"))?;
            ensure!(
                created == first.len(),
                "file {n}: {created} users of {rows}"
            );
        }
        let mut times = Vec::with_capacity(people.len());
        for _ in 0..people.len() {
            let age = TimeDelta::seconds(i64::from(rng.between(0, 3 * 365 * 86_400)));
            times.push((now - age).to_rfc3339_opts(SecondsFormat::AutoSi, false));
        }
        times.sort();
        insert_like_uploaded(&pool, *dealer, &people, &times).await?;
        users += rows;
        eprintln!(
            "file {}/{}: {rows} users of dealer {} in {:.1} s",
            n + 1,
            files.len(),
            dealer.0,
            file_started.elapsed().as_secs_f64()
        );
    }
    pool.close().await;

    let mut trackers = 0;
    for dealer in &dealers {
        for user in user_ids(store, *dealer).await? {
            if !rng.chance(config.tracker_share) {
                continue;
            }
            for _ in 0..rng.between(1, 4) {
                trackers += 1;
                store
                    .create_tracker(NewTracker {
                        user_id: user,
                        label: format!("Truck {trackers}"),
                        device_id: format!("86{:013}", trackers),
                        model: "fmb920".into(),
                        plan_id: None,
                        store_period: Some(StorePeriod::Years(1)),
                        time_zone: None,
                    })
                    .await?;
            }
        }
    }
    Ok(Population {
        dealer: dealers[0].0,
        password: PASSWORD.into(),
        users,
        trackers,
        elapsed: started.elapsed(),
    })
}

fn scope(dealer: DealerId) -> PanelScope {
    PanelScope {
        dealer,
        global: false,
    }
}

/// Every user of `dealer`, by id.
async fn user_ids(store: &Store, dealer: DealerId) -> anyhow::Result<Vec<UserId>> {
    let mut ids = Vec::new();
    loop {
        let query = OrderedQuery::new(
            Some("id".into()),
            None,
            None,
            Some(10_000),
            Some(ids.len() as i64),
        );
        let (page, _) = store.list_panel_users(scope(dealer), &query).await?;
        let more = page.len() == 10_000;
        ids.extend(page.iter().filter_map(|u| u.id).map(UserId));
        if !more {
            return Ok(ids);
        }
    }
}

/// Writes `people` as users of `dealer` the way `upload_panel_users`
/// stores them (the columns a row of the file fills, `search_text` as
/// `platform` computes it), with the password hash, zone and locale of one
/// of the dealer's uploaded users; `created` holds each one's creation time.
async fn insert_like_uploaded(
    pool: &sqlx::SqlitePool,
    dealer: DealerId,
    people: &[Person],
    created: &[String],
) -> anyhow::Result<()> {
    let rows: Vec<serde_json::Value> = people
        .iter()
        .zip(created)
        .map(|(p, created)| {
            let legal_type = match p.legal_status {
                2 => "legal_entity",
                3 => "sole_trader",
                _ => "individual",
            };
            let legal_name = if p.legal_status == 1 {
                ""
            } else {
                p.legal_name.as_str()
            };
            let search_text = [
                p.login.as_str(),
                &p.name,
                &p.middle_name,
                &p.surname,
                legal_name,
                &p.phone,
            ]
            .map(str::to_lowercase)
            .join("\n");
            let [country, region, city, street, zip] = &p.address;
            let [r_country, r_region, r_city, r_street, r_zip] = &p.registered;
            serde_json::json!([
                p.login,
                p.name,
                p.middle_name,
                p.surname,
                legal_type,
                p.phone,
                country,
                zip,
                region,
                city,
                street,
                r_country,
                r_zip,
                r_region,
                r_city,
                r_street,
                p.tax_number,
                legal_name,
                (p.legal_status == 2 && !p.iec.is_empty()).then_some(&p.iec),
                p.active,
                search_text,
                p.comment,
                p.device_limit.parse::<i64>().ok(),
                created,
            ])
        })
        .collect();
    sqlx::query(
        "INSERT INTO users (dealer_id, password_hash, time_zone, locale, created_at, \
         password_changed_at, login, first_name, middle_name, last_name, legal_type, phone, \
         post_country, post_index, post_region, post_city, post_street_address, \
         registered_country, registered_index, registered_region, registered_city, \
         registered_street_address, tin, legal_name, iec, activated, verified, search_text, \
         comment, device_limit) \
         SELECT $1, s.password_hash, s.time_zone, s.locale, r.value ->> 23, r.value ->> 23, \
         r.value ->> 0, r.value ->> 1, r.value ->> 2, r.value ->> 3, r.value ->> 4, \
         r.value ->> 5, r.value ->> 6, r.value ->> 7, r.value ->> 8, r.value ->> 9, \
         r.value ->> 10, r.value ->> 11, r.value ->> 12, r.value ->> 13, r.value ->> 14, \
         r.value ->> 15, r.value ->> 16, r.value ->> 17, r.value ->> 18, r.value ->> 19, \
         r.value ->> 19, r.value ->> 20, r.value ->> 21, r.value ->> 22 \
         FROM json_each($2) r \
         CROSS JOIN (SELECT password_hash, time_zone, locale FROM users \
                     WHERE dealer_id = $1 AND master_user_id IS NULL ORDER BY id LIMIT 1) s \
         ORDER BY r.key",
    )
    .bind(dealer.0)
    .bind(serde_json::to_string(&rows)?)
    .execute(pool)
    .await?;
    Ok(())
}
