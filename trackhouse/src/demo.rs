//! `trackhouse demo`: demo accounts on a fresh data directory, ready-to-paste calls, then serve.
//!
//! On a fresh directory it also generates days of telemetry for the demo's
//! trackers once the server listens, and sends it through the real intake
//! (see [`telemetry`]), before printing the calls.

mod telemetry;

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;

use anyhow::Context;
use chrono::{DateTime, Utc};
use clap::Args;
use platform::{
    Calibration, ContractType, NewDealer, NewSubuser, NewTracker, NewUser, Right, Secret, Store,
};
use serde::{Deserialize, Serialize};

use crate::config::ServerArgs;

/// Options of `trackhouse demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    #[command(flatten)]
    pub(crate) server: ServerArgs,

    /// Days of telemetry to generate, up to now, on a fresh data directory (0: none).
    #[arg(long, env = "TRACKHOUSE_DEMO_DAYS", default_value_t = 7,
          value_parser = clap::value_parser!(u32).range(0..=366))]
    pub(crate) days: u32,
}

/// A demo tracker: label, IMEI, whether it is blocked, and its fuel sensors
/// as `(name, input, calibration)`.
#[derive(Debug)]
pub(crate) struct TrackerSpec {
    pub(crate) label: &'static str,
    pub(crate) device_id: &'static str,
    pub(crate) blocked: bool,
    pub(crate) sensors: &'static [(&'static str, &'static str, &'static str)],
}

/// The demo's trackers, as created (and as simulated by [`telemetry`]).
pub(crate) const TRACKERS: [TrackerSpec; 3] = [
    TrackerSpec {
        label: "Truck 01 (MAN TGS)",
        device_id: "356307042441013",
        blocked: false,
        sensors: &[("Main tank", "lls_level_1", "0:0,1024:150,4095:600")],
    },
    TrackerSpec {
        label: "Truck 02 (Volvo FH)",
        device_id: "356307042441021",
        blocked: false,
        sensors: &[
            ("Left tank", "lls_level_1", "0:0,4095:400"),
            ("Right tank", "lls_level_2", "0:0,2048:210,4095:400"),
        ],
    },
    TrackerSpec {
        label: "Van 03 (blocked)",
        device_id: "356307042441039",
        blocked: true,
        sensors: &[("Tank", "lls_level_1", "0:0,4095:80")],
    },
];

/// Everything the demo created, written to `DATA_DIR/demo.json`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct DemoAccounts {
    pub(crate) dealer: DemoDealer,
    pub(crate) users: Vec<DemoUser>,
    pub(crate) subuser: DemoLogin,
    pub(crate) trackers: Vec<DemoTracker>,
    pub(crate) api_key: String,
    pub(crate) ingest_token: String,
    /// The hash of the demo's geo link (none in a `demo.json` written before links existed).
    #[serde(default)]
    pub(crate) link_hash: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct DemoDealer {
    pub(crate) dealer_id: i64,
    pub(crate) panel_login: String,
    pub(crate) panel_password: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct DemoUser {
    pub(crate) user_id: i64,
    pub(crate) login: String,
    pub(crate) password: String,
    pub(crate) time_zone: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct DemoLogin {
    pub(crate) user_id: i64,
    pub(crate) login: String,
    pub(crate) password: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct DemoTracker {
    pub(crate) tracker_id: i64,
    pub(crate) user_id: i64,
    pub(crate) label: String,
    pub(crate) device_id: String,
    pub(crate) blocked: bool,
    pub(crate) fuel_sensors: Vec<String>,
}

pub(crate) async fn run(args: DemoArgs, base: crate::priority::BaseThread) -> anyhow::Result<()> {
    let store = crate::serve::open_store(&args.server.data_dir).await?;
    let file = args.server.data_dir.join("demo.json");
    let fresh = !file.exists();
    let accounts = if fresh {
        let accounts = create(&store).await?;
        write_atomically(&file, &serde_json::to_vec_pretty(&accounts)?)?;
        accounts
    } else {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))?
    };
    let data_dir = args.server.data_dir.clone();
    let days = if fresh { args.days } else { 0 };
    let import_file = data_dir.join(IMPORT_FILE);
    let vehicles_file = data_dir.join(VEHICLES_FILE);
    crate::serve::serve(args.server, store, base, move |addr| {
        // The intake answers only once the server runs: generate on a task of its own.
        tokio::spawn(async move {
            let generated = if days == 0 {
                None
            } else {
                let sent = telemetry::send(&accounts, reachable(addr), days, Utc::now()).await;
                Some(sent.unwrap_or_else(|e| {
                    tracing::error!(error = format!("{e:#}"), "demo telemetry failed");
                    format!("Demo telemetry failed: {e:#}\n")
                }))
            };
            let now = Utc::now();
            let import =
                match write_atomically(&import_file, import_lines(&accounts, now).as_bytes()) {
                    Ok(()) => Some(import_file.as_path()),
                    Err(e) => {
                        tracing::warn!(
                            error = format!("{e:#}"),
                            "writing the demo's import file failed"
                        );
                        None
                    }
                };
            let vehicles = match write_atomically(&vehicles_file, VEHICLES_CSV.as_bytes()) {
                Ok(()) => Some(vehicles_file.as_path()),
                Err(e) => {
                    tracing::warn!(
                        error = format!("{e:#}"),
                        "writing the demo's vehicles file failed"
                    );
                    None
                }
            };
            let text = instructions(
                &accounts,
                &Printed {
                    addr: &addr.to_string(),
                    file: &file,
                    data_dir: &data_dir,
                    import,
                    vehicles,
                    invocation: &invocation(),
                },
                generated.as_deref(),
                now,
            );
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            // The trucks keep moving while the demo runs, so that the link's page is alive.
            telemetry::keep_moving(&accounts, reachable(addr)).await;
        });
    })
    .await
}

/// An address to connect to: a wildcard listener is reached on the loopback.
fn reachable(addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        SocketAddr::from((Ipv4Addr::LOCALHOST, addr.port()))
    } else {
        addr
    }
}

/// The NDJSON file the printed `import` command sends, in the data directory.
const IMPORT_FILE: &str = "demo-import.ndjson";
const VEHICLES_FILE: &str = "demo-vehicles.csv";

/// Vehicles to check in bulk (label, model, plate, tank litres); the last
/// line has two mistakes, so the printed call shows how they are named.
const VEHICLES_CSV: &str = "Refrigerator 4;Mercedes Actros;C 404 CC;500\n\
                            Tanker 5;Scania R450;D 505 DD;700\n\
                            ;Volvo FM;E 606 EE;-50\n";

/// How the printed commands run `trackhouse`: as it was started, through
/// `cargo run` (with `--release` for a release build) or by its path.
fn invocation() -> String {
    // `cargo run` sets the package's variables for the program it runs.
    if std::env::var_os("CARGO_MANIFEST_DIR").is_some() {
        return if cfg!(debug_assertions) {
            "cargo run --".to_owned()
        } else {
            "cargo run --release --".to_owned()
        };
    }
    std::env::current_exe()
        .map(|exe| shell_quote(&exe.to_string_lossy()))
        .unwrap_or_else(|_| "trackhouse".to_owned())
}

/// `text` as one shell word: as it is when it is plain, else in single quotes.
fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Ten messages of the first moving tracker over the ten minutes before `now`.
fn import_lines(accounts: &DemoAccounts, now: DateTime<Utc>) -> String {
    let device = accounts
        .trackers
        .iter()
        .find(|t| !t.blocked)
        .map_or("", |t| t.device_id.as_str());
    (1..=10)
        .rev()
        .map(|minutes| {
            let at = now - chrono::TimeDelta::minutes(minutes);
            format!(
                r#"{{"device_id":"{device}","msg_time":"{}","gps_fix_type":"HAS_FIX","lat":43.2389,"lng":76.8897,"speed":0,"satellites":10,"inputs":{{"board_voltage":24.{minutes}}},"states":{{"ignition":false}}}}"#,
                at.format("%Y-%m-%dT%H:%M:%SZ")
            ) + "\n"
        })
        .collect()
}

fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

/// A password of 16 letters and digits, safe to paste into a shell.
fn password() -> anyhow::Result<String> {
    Ok(Secret::generate()?.expose()[..16].to_owned())
}

pub(crate) async fn create(store: &Store) -> anyhow::Result<DemoAccounts> {
    let panel_password = password()?;
    let dealer_id = store
        .create_dealer(NewDealer {
            id: None,
            title: "Demo Fleet Services".to_owned(),
            panel_password: panel_password.clone(),
            contract_type: ContractType::Paas,
            permissions: None,
            default_user_time_zone: "UTC".to_owned(),
        })
        .await?;
    let mut users = Vec::new();
    for (login, zone, first, last) in [
        (
            "manager@demo-fleet.example",
            "Asia/Almaty",
            "Aigerim",
            "Sadykova",
        ),
        (
            "dispatch@other-fleet.example",
            "Europe/Berlin",
            "Jonas",
            "Weber",
        ),
    ] {
        let password = password()?;
        let user_id = store
            .create_user(NewUser {
                dealer_id,
                login: login.to_owned(),
                password: password.clone(),
                time_zone: Some(zone.to_owned()),
                activated: true,
                legal_type: platform::LegalType::LegalEntity,
                first_name: first.to_owned(),
                last_name: last.to_owned(),
            })
            .await?;
        users.push(DemoUser {
            user_id: user_id.0,
            login: login.to_owned(),
            password,
            time_zone: zone.to_owned(),
        });
    }
    let owner = schemas::UserId(users[0].user_id);
    let mut trackers = Vec::new();
    for spec in &TRACKERS {
        let tracker_id = store
            .create_tracker(NewTracker {
                user_id: owner,
                label: spec.label.to_owned(),
                device_id: spec.device_id.to_owned(),
                model: "teltonika_fmb920".to_owned(),
                plan_id: None,
                store_period: None,
                time_zone: None,
            })
            .await?;
        for (name, input, table) in spec.sensors {
            store
                .create_fuel_sensor(
                    tracker_id,
                    name,
                    input,
                    Some(Calibration::parse("calibration", table)?),
                )
                .await?;
        }
        if spec.blocked {
            store.set_tracker_blocked(tracker_id, true).await?;
        }
        trackers.push(DemoTracker {
            tracker_id: tracker_id.0,
            user_id: owner.0,
            label: spec.label.to_owned(),
            device_id: spec.device_id.to_owned(),
            blocked: spec.blocked,
            fuel_sensors: spec
                .sensors
                .iter()
                .map(|(name, _, _)| (*name).to_owned())
                .collect(),
        });
    }
    let sub_password = password()?;
    let sub_login = "driver@demo-fleet.example".to_owned();
    let subuser_id = store
        .create_subuser(NewSubuser {
            master_id: owner,
            login: sub_login.clone(),
            password: sub_password.clone(),
            rights: vec![Right::VehicleUpdate],
            trackers: vec![schemas::TrackerId(trackers[0].tracker_id)],
            first_name: "Nurlan".to_owned(),
            last_name: "Driver".to_owned(),
        })
        .await?;
    for (organization, mechanic, lat, lng, address) in [
        (
            "North depot",
            "Serik",
            43.2801,
            76.9102,
            "Almaty, Seifullin Ave 410",
        ),
        (
            "South depot",
            "Aidar",
            43.2102,
            76.8703,
            "Almaty, Al-Farabi Ave 77",
        ),
    ] {
        store
            .create_garage(
                owner,
                platform::Garage {
                    id: None,
                    location: Some(platform::Location {
                        lat,
                        lng,
                        address: address.to_owned(),
                        radius: Some(250),
                    }),
                    mechanic_name: Some(mechanic.to_owned()),
                    dispatcher_name: None,
                    organization_name: Some(organization.to_owned()),
                },
            )
            .await?;
    }
    for label in ["Drivers", "Maintenance"] {
        store
            .create_department(
                owner,
                platform::Department {
                    id: None,
                    label: label.to_owned(),
                    location: None,
                },
            )
            .await?;
    }
    let api_key = store.create_api_key(owner, "demo integration").await?;
    // The owner, as the demo API key authenticates it.
    let caller = store.authenticate_user(&api_key.hash).await?;
    for (tracker, (label, model, reg_number, vehicle_type, subtype)) in trackers.iter().zip([
        (
            "Tanker 12",
            "Volvo FH16",
            "123ABC02",
            platform::VehicleType::Truck,
            "tanker",
        ),
        (
            "Van 7",
            "Ford Transit",
            "456DEF02",
            platform::VehicleType::Car,
            "minivan",
        ),
        (
            "Bus 3",
            "MAN Lion's City",
            "789GHI02",
            platform::VehicleType::Bus,
            "city",
        ),
    ]) {
        store
            .create_vehicle(
                &caller,
                platform::Vehicle {
                    tracker_id: (!tracker.blocked).then_some(tracker.tracker_id),
                    label: label.to_owned(),
                    model: model.to_owned(),
                    reg_number: reg_number.to_owned(),
                    subtype: Some(subtype.to_owned()),
                    ..platform::Vehicle::new(label, vehicle_type)
                },
                true,
            )
            .await?;
    }
    store
        .create_security_group(
            owner,
            &platform::SecurityGroup {
                id: None,
                label: "Dispatchers".to_owned(),
                rights: vec!["vehicle_update".to_owned(), "employee_update".to_owned()],
            },
        )
        .await?;
    store
        .create_retranslator(
            owner,
            platform::Retranslator {
                id: None,
                name: "Insurer feed".to_owned(),
                protocol_id: 1,
                address: "gps.insurer.example".to_owned(),
                port: 20332,
                login: trackers.first().map(|t| t.device_id.clone()),
                password: None,
                enabled: true,
            },
        )
        .await?;
    // Billing (plugin 29) for the dealer's users, and a first bill.
    store
        .set_plugin(
            platform::PluginOwner::Dealer(dealer_id),
            platform::BILLING_PLUGIN,
            true,
        )
        .await?;
    store
        .create_bill(&caller, &[], "Demo Fleet LLP", 12_500.0)
        .await?;
    // The dealer's business in its panel: a plan, an activation code for
    // it, and a sub-dealer (waiting in its initial block).
    let plan = store
        .create_dealer_plan(
            dealer_id,
            platform::Plan {
                id: None,
                name: "Fleet Standard".to_owned(),
                group_id: 0,
                active: true,
                plan_type: platform::PlanType::Monthly,
                price: 9.9,
                early_change_price: None,
                device_limit: 1000,
                has_reports: true,
                store_period: "12m".to_owned(),
                device_type: platform::DeviceType::Tracker,
                proportional_charge: true,
                service_prices: platform::ServicePrices::default(),
            },
        )
        .await?;
    store
        .create_activation_codes(
            dealer_id,
            1,
            platform::CodeTerms {
                tariff_id: plan,
                bonus_amount: 0,
                free_days: 30,
            },
        )
        .await?;
    store
        .create_subdealer(
            dealer_id,
            platform::NewSubdealer {
                password: password()?,
                title: "Steppe Telematics".to_owned(),
                email: "office@steppe-telematics.example".to_owned(),
                jur_name: "Steppe Telematics LLP".to_owned(),
                jur_country: "Kazakhstan".to_owned(),
                link_monitoring: "gps.steppe-telematics.example".to_owned(),
            },
        )
        .await?;
    let link_hash = create_link(store, &caller, &trackers).await?;
    let (_, ingest_token) = store.create_ingest_token("demo devices", true).await?;
    Ok(DemoAccounts {
        dealer: DemoDealer {
            dealer_id: dealer_id.0,
            panel_login: dealer_id.to_string(),
            panel_password,
        },
        users,
        subuser: DemoLogin {
            user_id: subuser_id.0,
            login: sub_login,
            password: sub_password,
        },
        trackers,
        api_key: api_key.hash.expose().to_owned(),
        ingest_token: ingest_token.expose().to_owned(),
        link_hash: Some(link_hash),
    })
}

/// A geo link over the moving trucks, with the two depots drawn as places;
/// its hash (the key of its public page).
async fn create_link(
    store: &Store,
    caller: &platform::UserAuth,
    trackers: &[DemoTracker],
) -> anyhow::Result<String> {
    let mut place_ids = Vec::new();
    for (label, lat, lng) in telemetry::depots() {
        let place = store
            .create_place(
                caller.master_id,
                platform::Place {
                    id: None,
                    label: label.to_owned(),
                    location: platform::Location {
                        lat,
                        lng,
                        address: String::new(),
                        radius: Some(300),
                    },
                    description: None,
                },
            )
            .await?;
        place_ids.push(place.0);
    }
    let shown = |t: &DemoTracker| platform::LinkTracker {
        tracker_id: t.tracker_id,
        alias: None,
        params: platform::TrackerParams {
            object_data: vec![
                platform::ObjectData::Speed,
                platform::ObjectData::Address,
                platform::ObjectData::MovementStatus,
                platform::ObjectData::ConnectionStatus,
                platform::ObjectData::VehicleLabel,
                platform::ObjectData::VehicleRegNumber,
            ],
        },
    };
    let fields = platform::LinkFields {
        lifetime: None,
        description: "Demo Fleet: trucks on the road".to_owned(),
        trackers: trackers.iter().filter(|t| !t.blocked).map(shown).collect(),
        params: platform::LinkParams {
            place_ids: Some(place_ids),
            display_options: platform::DisplayOptions {
                map: Some("osm".to_owned()),
                show_vehicle_info: true,
                trace_duration: 600,
                ..platform::DisplayOptions::default()
            },
            ..platform::LinkParams::default()
        },
    };
    let id = store
        .create_link(caller, fields, platform::DEFAULT_GEO_LINK_QUOTA)
        .await?;
    Ok(store.read_link(caller, id).await?.hash)
}

/// Where the printed calls go and what they name.
#[derive(Debug)]
pub(crate) struct Printed<'a> {
    /// The server's address.
    pub(crate) addr: &'a str,
    /// `demo.json`.
    pub(crate) file: &'a Path,
    /// The data directory, as given.
    pub(crate) data_dir: &'a Path,
    /// The NDJSON file for the printed `import` (none: the line is not printed).
    pub(crate) import: Option<&'a Path>,
    /// The CSV file for the printed upload (none: those lines are not printed).
    pub(crate) vehicles: Option<&'a Path>,
    /// How to run `trackhouse` (`cargo run --release --`, or its path).
    pub(crate) invocation: &'a str,
}

/// The ready-to-paste calls printed once the server listens, after the
/// summary of the telemetry generated, if any; the sample intake line is from `now`.
pub(crate) fn instructions(
    accounts: &DemoAccounts,
    printed: &Printed<'_>,
    telemetry: Option<&str>,
    now: DateTime<Utc>,
) -> String {
    let user = &accounts.users[0];
    let base = format!("http://{}", printed.addr);
    let run = printed.invocation;
    let import = printed.import.map_or_else(String::new, |file| {
        format!(
            "# Whole files (plain or .gz) go in large compressed batches; this one holds ten messages:\n{run} import {} --url {base} --token {}\n",
            shell_quote(&file.to_string_lossy()),
            accounts.ingest_token
        )
    });
    let upload = printed.vehicles.map_or_else(String::new, |file| {
        format!(
            "FILE=$(curl -s {base}/v2/file/upload -H 'Authorization: NVX {key}' -F file=@{path} | {file_id_of}); echo \"$FILE\"\n\
             curl -s {base}/v2/vehicle/batch_convert -H 'Authorization: NVX {key}' -d \"file_id=$FILE\" -d 'fields=[\"label\",\"model\",\"reg_number\",\"fuel_tank_volume\"]'\n",
            key = accounts.api_key,
            path = shell_quote(&file.to_string_lossy()),
            file_id_of = r#"sed -nE 's/.*"file_id":"([0-9a-f]{32})".*/\1/p'"#,
        )
    });
    let link = accounts.link_hash.as_deref().map_or_else(String::new, |hash| {
        format!(
            "\n# A geo link shares the trucks' live position with anyone holding its address, which opens its page in a browser: {base}/links/{hash}\n\
             # The trucks keep moving while the demo runs. The account's links, and the feed the page polls:\n\
             curl -s {base}/v2/tracker/location/link/list -H 'Authorization: NVX {key}'\n\
             curl -s {base}/links/{hash}/positions\n",
            key = accounts.api_key,
        )
    });
    let tracker = accounts.trackers.first().map_or(0, |t| t.tracker_id);
    let telemetry = telemetry
        .map(|t| format!("{}\n", t.trim_end()))
        .unwrap_or_default();
    let device = accounts
        .trackers
        .iter()
        .find(|t| !t.blocked)
        .map_or("", |t| t.device_id.as_str());
    let message = format!(
        r#"{{"device_id":"{device}","msg_time":"{}","gps_fix_type":"HAS_FIX","lat":43.238901,"lng":76.889712,"speed":0,"satellites":11,"inputs":{{"board_voltage":24.9}},"states":{{"ignition":false}}}}"#,
        now.format("%Y-%m-%dT%H:%M:%SZ")
    );
    // Prints nothing unless the answer holds a hash, so a failed login leaves the variable empty.
    let hash_of = r#"sed -nE 's/.*"hash":"([0-9a-f]{32})".*/\1/p'"#;
    format!(
        r#"
Trackhouse demo is serving on {base}
Accounts, passwords and keys: {file}
{telemetry}
# Operator commands (dealers, users, trackers, keys; they work while the server runs):
{run} admin --data-dir {data_dir} --help

# Log in as the account's master user (time zone {zone}) and keep the session hash:
HASH=$(curl -s {base}/v2/user/auth -d 'login={login}' -d 'password={password}' | {hash_of}); echo "$HASH"

# List the account's API keys with that session (JSON body):
curl -s {base}/v2/api/key/list -H 'Content-Type: application/json' -d "{{\"hash\":\"$HASH\"}}"

# Create another API key (form-encoded), then list again with the GET form:
curl -s {base}/v2/api/key/create -d "hash=$HASH" -d 'title=My integration'
curl -s "{base}/v2/api/key/list?hash=$HASH"

# Use the demo API key (header form): register a dispatcher sub-user (a new login each time), then list sub-users:
curl -s {base}/v2/subuser/register -H 'Authorization: NVX {api_key}' -H 'Content-Type: application/json' -d '{{"user":{{"login":"dispatcher-'"$(date +%s%N)"'@demo-fleet.example","first_name":"Dana","last_name":"Seitkali"}},"password":"Dispatch-2024"}}'
curl -s {base}/v2/subuser/list -H 'Authorization: NVX {api_key}'

# The account's garages and departments: add a garage (JSON body), then list both:
curl -s {base}/v2/garage/create -H 'Authorization: NVX {api_key}' -H 'Content-Type: application/json' -d '{{"garage":{{"location":{{"lat":43.2389,"lng":76.8897,"address":"Almaty, Tole Bi 59","radius":200}},"organization_name":"West depot","mechanic_name":"Daniyar","dispatcher_name":null}}}}'
curl -s {base}/v2/garage/list -H 'Authorization: NVX {api_key}'
curl -s {base}/v2/department/list -H 'Authorization: NVX {api_key}'

# Vehicles sorted by label from Z to A, two per page; then those whose label, plate or VIN holds "02":
curl -s {base}/v2/vehicle/list -H 'Authorization: NVX {api_key}' -H 'Content-Type: application/json' -d '{{"sort":["label=desc"],"limit":2}}'
curl -s {base}/v2/vehicle/list -H 'Authorization: NVX {api_key}' -d 'filter=02'

# Check vehicles in bulk before creating them, each line with its mistakes: pasted tab-separated lines, then an uploaded CSV file:
curl -s {base}/v2/vehicle/batch_convert -H 'Authorization: NVX {api_key}' -H 'Content-Type: application/json' -d '{{"batch":"Truck 9\tVolvo FH\tA 009 AA\tDT-L\nVan 10\tFord Transit\tB 010 BB\tAI-95"}}'
{upload}
# Security groups, retranslators (where device data is to be forwarded) and the account's plugins:
curl -s {base}/v2/security_group/list -H 'Authorization: NVX {api_key}'
curl -s {base}/v2/retranslator/list -H 'Authorization: NVX {api_key}'
curl -s {base}/v2/plugin/list -H 'Authorization: NVX {api_key}'

# Bills (the demo dealer has the billing plugin): make one, then list them:
curl -s {base}/v2/bill/create -H 'Authorization: NVX {api_key}' -d 'payer=Demo Fleet LLP' -d 'sum=15000'
curl -s {base}/v2/bill/list -H 'Authorization: NVX {api_key}'

# Dealer panel: log in (the login is the dealer id), then read dealer info:
PANEL=$(curl -s {base}/v2/panel/account/auth -d 'login={panel_login}' -d 'password={panel_password}' | {hash_of}); echo "$PANEL"
curl -s {base}/v2/panel/dealer/get_info -d "hash=$PANEL"

# The dealer's plans, activation codes and sub-dealers (the demo made one of each), and its customers, five per page:
curl -s {base}/v2/panel/tariff/list -d "hash=$PANEL"
curl -s {base}/v2/panel/dealer/activation_code/list -d "hash=$PANEL"
curl -s {base}/v2/panel/subpaas/list -d "hash=$PANEL"
curl -s {base}/v2/panel/user/list -H 'Content-Type: application/json' -d "{{\"hash\":\"$PANEL\",\"order_by\":\"login\",\"limit\":5}}"

# Errors come as the platform's error object, e.g. an unknown key:
curl -s {base}/v2/api/key/delete -d "hash=$HASH" -d 'key=00000000000000000000000000000000'

# Send a device message (NDJSON: one JSON object per line) to the intake with the demo ingest token:
curl -s {base}/ingest/v1/messages -H 'Authorization: Bearer {ingest_token}' -H 'Content-Type: application/x-ndjson' --data-binary '{message}'
{import}{link}
# Export the last day of the first tracker as CSV (raw data interface, API key), then what it reports:
curl -s {base}/dwh/v1/tracker/raw_data/read -H 'Authorization: NVX {api_key}' -H 'Content-Type: application/json' -d '{{"tracker_id":{tracker},"from":"{day_ago}","to":"{until}","columns":["lat","lng","speed","inputs.*","states.ignition"]}}' | sed -n 1,5p
curl -s {base}/dwh/v1/tracker/raw_data/get_inputs -H 'Authorization: NVX {api_key}' -d 'tracker_id={tracker}'

# Fuel, speed, movement and position of the first tracker on a 15-minute grid over the last week (fuel resampling):
curl -s -X POST {base}/eco_fleet/v1/trackers/{tracker}/resampling -H 'Authorization: NVX {api_key}' -H 'Accept: text/csv' -H 'Content-Type: application/json' -d '{{"step_size":15,"resampling_props":[{{"data_type":"FUEL","resampling_method":"MEDIAN_IN_WINDOW","delta":300,"fixed_value":null}},{{"data_type":"SPEED","resampling_method":"AVERAGE_IN_WINDOW","delta":450,"fixed_value":0}},{{"data_type":"MOVEMENT","resampling_method":"PREVIOUS","delta":null,"fixed_value":null}},{{"data_type":"LNG","resampling_method":"PREVIOUS","delta":null,"fixed_value":null}},{{"data_type":"LAT","resampling_method":"PREVIOUS","delta":null,"fixed_value":null}}]}}' | sed -n 1,5p

# Tracker ids: {trackers} (first: {tracker}); health and metrics:
curl -s {base}/healthz
curl -s {base}/metrics | sed -n 1,10p

Stop with Ctrl-C.
"#,
        zone = user.time_zone,
        day_ago = (now - chrono::TimeDelta::days(1)).format("%Y-%m-%dT%H:%M:%SZ"),
        until = (now + chrono::TimeDelta::minutes(1)).format("%Y-%m-%dT%H:%M:%SZ"),
        login = user.login,
        password = user.password,
        api_key = accounts.api_key,
        ingest_token = accounts.ingest_token,
        panel_login = accounts.dealer.panel_login,
        panel_password = accounts.dealer.panel_password,
        file = printed.file.display(),
        data_dir = shell_quote(&printed.data_dir.to_string_lossy()),
        trackers = accounts
            .trackers
            .iter()
            .map(|t| t.tracker_id.to_string())
            .collect::<Vec<_>>()
            .join(", "),
    )
}
