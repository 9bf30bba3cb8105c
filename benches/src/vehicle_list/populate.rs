//! Fills a platform store with the benchmark's accounts through the
//! `platform` crate's public functions (the ones the `/v2` handlers call),
//! not over HTTP: creating 100,000 vehicles through `vehicle/create` would
//! measure the intake of records, not the list.

use std::time::{Duration, Instant};

use anyhow::Context;
use platform::{
    ContractType, CredentialKind, LegalType, NewDealer, NewTracker, NewUser, Store, StorePeriod,
    UserAuth,
};
use schemas::{DealerId, UserId};

use super::data::{FleetGenerator, PlannedVehicle};

/// What to create.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PopulationConfig {
    /// Accounts (master users) besides the big one.
    pub accounts: usize,
    /// Vehicles of each of those accounts.
    pub vehicles_per_account: usize,
    /// Vehicles of the big account.
    pub vehicles: usize,
    /// Dealers the accounts are spread over.
    pub dealers: usize,
    /// Garages of the big account (the others have one each).
    pub garages: usize,
    /// Vehicles bound to a tracker, as a share.
    pub tracker_share: f64,
    /// Vehicles in a garage, as a share.
    pub garage_share: f64,
    /// Seed of every choice.
    pub seed: u64,
}

impl Default for PopulationConfig {
    /// The sizes of issue 14: 1,000 accounts and one of 100,000 vehicles.
    fn default() -> Self {
        Self {
            accounts: 1000,
            vehicles_per_account: 5,
            vehicles: 100_000,
            dealers: 4,
            garages: 40,
            tracker_share: 0.6,
            garage_share: 0.85,
            seed: 0x7665_6869_636c_6573, // "vehicles"
        }
    }
}

/// The big account's credentials, and what populating took.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Population {
    /// The big account's login.
    pub login: String,
    /// Its password.
    pub password: String,
    /// Trackers created in all.
    pub trackers: usize,
    /// Vehicles created in all.
    pub vehicles: usize,
    /// Wall time of the whole population.
    pub elapsed: Duration,
}

/// One master user with what creating its records needs.
struct Account {
    auth: UserAuth,
    garages: Vec<i64>,
    fleet: FleetGenerator,
    created: usize,
}

/// The password of every benchmark user.
const PASSWORD: &str = "bench-pass-1";

/// Creates the dealers, the accounts and their garages, trackers and
/// vehicles in `store` (a fresh one). Vehicles are created in one
/// deterministic sequence (ids are the same on every run), the small
/// accounts' interleaved with the big one's as accounts grow side by side.
pub async fn populate(store: &Store, config: &PopulationConfig) -> anyhow::Result<Population> {
    let started = Instant::now();
    let mut dealers = Vec::with_capacity(config.dealers.max(1));
    for d in 0..config.dealers.max(1) {
        dealers.push(
            store
                .create_dealer(NewDealer {
                    id: None,
                    title: format!("Bench dealer {d}"),
                    panel_password: PASSWORD.into(),
                    contract_type: ContractType::Paas,
                    permissions: None,
                    default_user_time_zone: "Europe/Berlin".into(),
                })
                .await?,
        );
    }
    let login = "fleet@bench.example".to_owned();
    let big = create_user(store, dealers[0], &login, "Fleet", "Manager").await?;
    let mut big = Account {
        auth: big,
        garages: Vec::new(),
        fleet: FleetGenerator::new(
            config.seed,
            config.tracker_share,
            config.garage_share,
            config.garages,
        ),
        created: 0,
    };
    let small = create_small_users(store, &dealers, config).await?;
    let mut small: Vec<Account> = small
        .into_iter()
        .enumerate()
        .map(|(i, auth)| Account {
            auth,
            garages: Vec::new(),
            fleet: FleetGenerator::new(config.seed ^ (i as u64 + 1) << 20, 0.5, 0.5, 1),
            created: 0,
        })
        .collect();
    for account in std::iter::once(&mut big).chain(small.iter_mut()) {
        for garage in account.fleet.garages() {
            let id = store.create_garage(account.auth.master_id, garage).await?;
            account.garages.push(id);
        }
    }

    let mut trackers = 0;
    let small_total = config.accounts * config.vehicles_per_account;
    // One small account's vehicle after every `stride` of the big one's.
    let stride = (config.vehicles / small_total.max(1)).max(1);
    let mut next_small = 0;
    for n in 0..config.vehicles {
        trackers += create_vehicle(store, &mut big, n).await?;
        if n % stride == stride - 1 && next_small < small_total {
            let account = &mut small[next_small % config.accounts];
            trackers += create_vehicle(store, account, 0).await?;
            next_small += 1;
        }
    }
    while next_small < small_total {
        let account = &mut small[next_small % config.accounts];
        trackers += create_vehicle(store, account, 0).await?;
        next_small += 1;
    }
    Ok(Population {
        login,
        password: PASSWORD.into(),
        trackers,
        vehicles: config.vehicles + small_total,
        elapsed: started.elapsed(),
    })
}

/// Creates the account's next vehicle (with its tracker, if it has one); 1
/// when a tracker was created.
async fn create_vehicle(store: &Store, account: &mut Account, n: usize) -> anyhow::Result<usize> {
    let PlannedVehicle {
        mut vehicle,
        tracker,
        garage,
    } = account.fleet.vehicle(n + account.created);
    account.created += 1;
    vehicle.garage_id = garage.and_then(|g| account.garages.get(g).copied());
    let mut created = 0;
    if let Some((label, model)) = tracker {
        // Device ids are unique in the store: the account and the vehicle's
        // number in it make one.
        let device_id = format!("35{:07}{:06}", account.auth.master_id.0, account.created);
        let tracker = store
            .create_tracker(NewTracker {
                user_id: account.auth.master_id,
                label,
                device_id,
                model,
                plan_id: None,
                store_period: Some(StorePeriod::Years(1)),
                time_zone: None,
            })
            .await?;
        vehicle.tracker_id = Some(tracker.0);
        created = 1;
    }
    store
        .create_vehicle(&account.auth, vehicle, false)
        .await
        .with_context(|| format!("creating vehicle {n} of user {}", account.auth.master_id))?;
    Ok(created)
}

async fn create_user(
    store: &Store,
    dealer: DealerId,
    login: &str,
    first_name: &str,
    last_name: &str,
) -> anyhow::Result<UserAuth> {
    let user = store
        .create_user(NewUser {
            dealer_id: dealer,
            login: login.to_owned(),
            password: PASSWORD.into(),
            time_zone: Some("Europe/Berlin".into()),
            activated: true,
            legal_type: LegalType::LegalEntity,
            first_name: first_name.to_owned(),
            last_name: last_name.to_owned(),
        })
        .await
        .with_context(|| format!("creating user {login}"))?;
    Ok(master(user, dealer))
}

/// The caller a master user's own session would be.
fn master(user: UserId, dealer: DealerId) -> UserAuth {
    UserAuth {
        user_id: user,
        master_id: user,
        dealer_id: dealer,
        kind: CredentialKind::Session,
        time_zone: "Europe/Berlin".into(),
    }
}

/// Creates the small accounts, four at a time (each password is hashed
/// with Argon2, tens of milliseconds); in login order.
async fn create_small_users(
    store: &Store,
    dealers: &[DealerId],
    config: &PopulationConfig,
) -> anyhow::Result<Vec<UserAuth>> {
    const TASKS: usize = 4;
    let mut tasks = Vec::with_capacity(TASKS);
    for task in 0..TASKS {
        let store = store.clone();
        let dealers = dealers.to_vec();
        let accounts = config.accounts;
        tasks.push(tokio::spawn(async move {
            let mut users = Vec::new();
            for i in (task..accounts).step_by(TASKS) {
                let dealer = dealers[i % dealers.len()];
                let login = format!("account{i:04}@bench.example");
                let user = create_user(&store, dealer, &login, "Account", &format!("{i}")).await?;
                users.push((i, user));
            }
            anyhow::Ok(users)
        }));
    }
    let mut users = Vec::with_capacity(config.accounts);
    for task in tasks {
        users.extend(task.await??);
    }
    users.sort_by_key(|(i, _)| *i);
    Ok(users.into_iter().map(|(_, user)| user).collect())
}
