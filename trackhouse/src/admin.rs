//! `trackhouse admin`: operator commands, one JSON object on stdout each.
//!
//! They write straight to the data directory's SQLite database, which a
//! running server reads on every call, so changes take effect at once.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use platform::{
    Calibration, Feature, NewPlan, NewSubuser, NewTracker, NewUser, Right, StorePeriod,
};
use schemas::{DealerId, HasCode, PlanId, TrackerId, UserId};
use serde_json::{Value, json};

mod dealer;
mod geo;
mod panel;

/// Options of `trackhouse admin`.
#[derive(Debug, Args)]
pub(crate) struct AdminArgs {
    /// The data directory to act on (the one `serve` uses).
    #[arg(
        long,
        env = "TRACKHOUSE_DATA_DIR",
        default_value = "./trackhouse-data",
        global = true
    )]
    data_dir: PathBuf,

    #[command(subcommand)]
    command: AdminCommand,
}

#[derive(Debug, Subcommand)]
enum AdminCommand {
    /// Dealers and their panel accounts.
    #[command(subcommand)]
    Dealer(dealer::DealerCommand),
    /// PaaS plans: what the platform operator sells dealers.
    #[command(subcommand, name = "paas-tariff")]
    PaasTariff(dealer::PaasTariffCommand),
    /// Plans (tariffs) of a dealer.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// Master users.
    #[command(subcommand)]
    User(UserCommand),
    /// Trackers.
    #[command(subcommand)]
    Tracker(TrackerCommand),
    /// Fuel sensors.
    #[command(subcommand)]
    Sensor(SensorCommand),
    /// Sub-users.
    #[command(subcommand)]
    Subuser(SubuserCommand),
    /// API keys.
    #[command(subcommand, name = "api-key")]
    ApiKey(ApiKeyCommand),
    /// Tokens for device data intake.
    #[command(subcommand, name = "ingest-token")]
    IngestToken(IngestTokenCommand),
    /// Plugins enabled for a master user or a dealer (`plugin/list`; 29 is billing).
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Retranslator quotas of users.
    #[command(subcommand)]
    Retranslator(RetranslatorCommand),
    /// Service tasks of vehicles (the maintenance module's records; while a
    /// vehicle has open ones, `vehicle/update` cannot change its tracker: 261).
    #[command(subcommand, name = "service-task")]
    ServiceTask(ServiceTaskCommand),
    /// Zones (circles, polygons) of master users, which geo links bound positions by.
    #[command(subcommand)]
    Zone(geo::ZoneCommand),
    /// Places (points of interest) of master users, which geo links draw.
    #[command(subcommand)]
    Place(geo::PlaceCommand),
    /// E-mail (SMTP) gateways of dealers and of the platform operator.
    #[command(subcommand, name = "email-gateway")]
    EmailGateway(panel::EmailGatewayCommand),
    /// Orders of tracker bundles of dealers' master users.
    #[command(subcommand)]
    Order(panel::OrderCommand),
}

#[derive(Debug, Subcommand)]
enum PluginCommand {
    /// Enable a plugin for a master user or a dealer → `{"plugin_id":N,"user_id"|"dealer_id":N,"enabled":true}`.
    Enable(PluginTarget),
    /// Disable it → `{..., "enabled":false}`.
    Disable(PluginTarget),
}

#[derive(Debug, clap::Args)]
struct PluginTarget {
    /// The plugin.
    #[arg(long)]
    plugin_id: i64,
    /// For this master user.
    #[arg(
        long,
        conflicts_with = "dealer_id",
        required_unless_present = "dealer_id"
    )]
    user_id: Option<i64>,
    /// For this dealer's users (those without plugins of their own).
    #[arg(long)]
    dealer_id: Option<i64>,
}

#[derive(Debug, Subcommand)]
enum RetranslatorCommand {
    /// Set how many retranslators a master user may hold → `{"user_id":N,"retranslator_quota":N}`.
    Quota {
        /// The master user.
        #[arg(long)]
        user_id: i64,
        /// The quota (omit to return to the default of 10).
        #[arg(long)]
        max: Option<u32>,
    },
}

#[derive(Debug, Subcommand)]
enum ServiceTaskCommand {
    /// Open a service task of a vehicle → `{"task_id":N,"vehicle_id":N}`.
    Create {
        /// The vehicle.
        #[arg(long)]
        vehicle_id: i64,
        /// What is to be done (1 to 255 characters).
        #[arg(long)]
        description: String,
    },
    /// Close a service task → `{"task_id":N,"closed":true}`.
    Close {
        /// The task.
        #[arg(long)]
        task_id: i64,
    },
}

#[derive(Debug, Subcommand)]
enum PlanCommand {
    /// Create a tracker plan → `{"plan_id":N}`.
    Create {
        /// The dealer selling it.
        #[arg(long)]
        dealer_id: i64,
        /// Name, unique among the dealer's plans.
        #[arg(long)]
        name: String,
        /// Store period: 2h, 3d, 12m, 1y.
        #[arg(long, default_value = "3m")]
        store_period: String,
        /// Plan features, comma-separated (multilevel_access, weblocator); default none.
        #[arg(long, value_delimiter = ',')]
        features: Vec<String>,
    },
    /// Set a plan's features for every tracker on it, from the next call on → `{"plan_id":N,"features":[..]}`.
    Features {
        /// The plan.
        #[arg(long)]
        plan_id: i64,
        /// Features, comma-separated (multilevel_access, weblocator); `""` for none.
        #[arg(long, value_delimiter = ',', required = true)]
        features: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
enum UserCommand {
    /// Create a master user → `{"user_id":N}`.
    Create {
        /// The dealer.
        #[arg(long)]
        dealer_id: i64,
        /// E-mail login.
        #[arg(long)]
        login: String,
        /// Password (1 to 40 printable characters).
        #[arg(long)]
        password: String,
        /// IANA time zone (default: the dealer's default).
        #[arg(long)]
        time_zone: Option<String>,
        /// Create the user not activated (cannot log in: code 103).
        #[arg(long)]
        inactive: bool,
    },
    /// Deactivate a user: its sessions and API keys, and a master user's
    /// sub-users, are refused (code 103) until activated → `{"user_id":N,"activated":false}`.
    Deactivate {
        /// The user (master or sub-user).
        #[arg(long)]
        user_id: i64,
    },
    /// Activate a user again → `{"user_id":N,"activated":true}`.
    Activate {
        /// The user.
        #[arg(long)]
        user_id: i64,
    },
    /// Set a user's password; every session of the user ends (API keys stay) → `{"user_id":N,"sessions_ended":true}`.
    SetPassword {
        /// The user.
        #[arg(long)]
        user_id: i64,
        /// The new password (1 to 40 printable characters).
        #[arg(long)]
        password: String,
    },
}

#[derive(Debug, Subcommand)]
enum TrackerCommand {
    /// Create a tracker → `{"tracker_id":N}`.
    Create {
        /// The owner (a master user).
        #[arg(long)]
        user_id: i64,
        /// Label.
        #[arg(long)]
        label: String,
        /// Device id (IMEI).
        #[arg(long)]
        device_id: String,
        /// Device model.
        #[arg(long, default_value = "")]
        model: String,
        /// Plan id (default: the dealer's standard plan).
        #[arg(long)]
        plan_id: Option<i64>,
        /// Store period, choosing the dealer's plan with that period (2h, 3d, 12m, 1y).
        #[arg(long, conflicts_with = "plan_id")]
        store_period: Option<String>,
        /// IANA time zone (default: the owner's).
        #[arg(long)]
        time_zone: Option<String>,
    },
    /// Block a tracker → `{"tracker_id":N,"blocked":true}`.
    Block {
        /// The tracker.
        #[arg(long)]
        tracker_id: i64,
    },
    /// Unblock a tracker → `{"tracker_id":N,"blocked":false}`.
    Unblock {
        /// The tracker.
        #[arg(long)]
        tracker_id: i64,
    },
    /// How resampling derives MOVEMENT → `{"tracker_id":N,"idle_speed_threshold_kmh":..,"ignition_source":".."}`.
    Movement {
        /// The tracker.
        #[arg(long)]
        tracker_id: i64,
        /// Moving at or above this speed, km/h.
        #[arg(long, default_value_t = 3.0)]
        idle_speed_threshold_kmh: f64,
        /// The column reporting ignition: `states.<name>`, `inputs.<name>` or `discrete_inputs.<n>`.
        #[arg(long, default_value = "states.ignition")]
        ignition_source: String,
    },
    /// Move a tracker to another plan of its owner's dealer → `{"tracker_id":N,"plan_id":N}`.
    Plan {
        /// The tracker.
        #[arg(long)]
        tracker_id: i64,
        /// The plan (another dealer's: 201).
        #[arg(long)]
        plan_id: i64,
    },
    /// Clone a tracker for another master user: a view of the same device
    /// and its data → `{"tracker_id":N,"clone_of":N,"user_id":N}`.
    Clone {
        /// The source tracker (not a clone: 219).
        #[arg(long)]
        tracker_id: i64,
        /// The master user who gets the clone (not the source's owner).
        #[arg(long)]
        user_id: i64,
        /// The clone's label (default: the source's).
        #[arg(long)]
        label: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum SensorCommand {
    /// Create a fuel sensor → `{"sensor_id":N}`.
    Create {
        /// The tracker.
        #[arg(long)]
        tracker_id: i64,
        /// Name (the column of resampling answers).
        #[arg(long)]
        name: String,
        /// The raw input it reads, e.g. lls_level_1.
        #[arg(long)]
        input: String,
        /// Calibration table `raw:litres,raw:litres,...` (omit for an uncalibrated sensor).
        #[arg(long)]
        calibration: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum SubuserCommand {
    /// Create a sub-user → `{"subuser_id":N}`.
    Create {
        /// The master user.
        #[arg(long)]
        user_id: i64,
        /// E-mail login.
        #[arg(long)]
        login: String,
        /// Password (6 to 20 characters).
        #[arg(long)]
        password: String,
        /// Rights, comma-separated (vehicle_update, employee_update, payment_create, weblocator_session_create).
        #[arg(long, value_delimiter = ',')]
        rights: Vec<String>,
        /// Trackers the sub-user may see, comma-separated ids.
        #[arg(long, value_delimiter = ',')]
        trackers: Vec<i64>,
    },
}

#[derive(Debug, Subcommand)]
enum ApiKeyCommand {
    /// Create an API key for a user → `{"hash":".."}`.
    Create {
        /// The user.
        #[arg(long)]
        user_id: i64,
        /// Title (1 to 255 printable characters).
        #[arg(long)]
        title: String,
    },
}

#[derive(Debug, Subcommand)]
enum IngestTokenCommand {
    /// Create an ingest token → `{"token":"..","token_id":N,"backfill":B,"user_id":N|null}`.
    Create {
        /// Title.
        #[arg(long)]
        title: String,
        /// Allow lines that carry their own server_time (backfills).
        #[arg(long)]
        backfill: bool,
        /// Send only for this master user's trackers (lines for others: code 204).
        #[arg(long)]
        user_id: Option<i64>,
    },
    /// List the ingest tokens, revoked ones too (never their secrets) → `{"tokens":[..]}`.
    List,
    /// Revoke an ingest token: requests with it are refused (code 2) from now on → the token as listed.
    Revoke {
        /// The token (its `token_id`).
        #[arg(long)]
        token_id: i64,
    },
}

pub(crate) async fn run(args: AdminArgs) -> ExitCode {
    let outcome = match crate::serve::open_store(&args.data_dir).await {
        Ok(store) => {
            let outcome = execute(&store, args.command).await;
            store.close().await;
            outcome.map_err(|e| (e.code(), e.to_string()))
        }
        Err(e) => Err((schemas::ErrorCode::Database, format!("{e:#}"))),
    };
    match outcome {
        Ok(answer) => {
            let mut out = std::io::stdout().lock();
            if writeln!(out, "{answer}").is_err() {
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err((code, description)) => {
            let error = json!({"success": false, "status": {"code": code.number(), "description": description}});
            let _ = writeln!(std::io::stderr(), "{error}");
            ExitCode::FAILURE
        }
    }
}

fn parse_list<T>(
    field: &'static str,
    names: &[String],
    parse: impl Fn(&str) -> Option<T>,
) -> platform::Result<Vec<T>> {
    names
        .iter()
        .map(|name| {
            parse(name.trim()).ok_or_else(|| platform::Error::InvalidArgument {
                field: field.into(),
                reason: format!("unknown value {name:?}"),
            })
        })
        .collect()
}

async fn execute(store: &platform::Store, command: AdminCommand) -> platform::Result<Value> {
    Ok(match command {
        AdminCommand::Dealer(command) => dealer::dealer(store, command).await?,
        AdminCommand::PaasTariff(command) => dealer::paas_tariff(store, command).await?,
        AdminCommand::EmailGateway(command) => panel::email_gateway(store, command).await?,
        AdminCommand::Order(command) => panel::order(store, command).await?,
        AdminCommand::Plan(PlanCommand::Create {
            dealer_id,
            name,
            store_period,
            features,
        }) => {
            let id = store
                .create_plan(NewPlan {
                    dealer_id: DealerId(dealer_id),
                    name,
                    store_period: StorePeriod::parse("store_period", &store_period)?,
                    features: parse_list("features", &features, Feature::parse)?,
                })
                .await?;
            json!({"plan_id": id})
        }
        AdminCommand::Plan(PlanCommand::Features { plan_id, features }) => {
            let names: Vec<String> = features
                .into_iter()
                .filter(|f| !f.trim().is_empty())
                .collect();
            let features = parse_list("features", &names, Feature::parse)?;
            let stored = store.set_plan_features(PlanId(plan_id), &features).await?;
            json!({"plan_id": plan_id, "features": stored.iter().map(|f| f.as_str()).collect::<Vec<_>>()})
        }
        AdminCommand::User(UserCommand::Create {
            dealer_id,
            login,
            password,
            time_zone,
            inactive,
        }) => {
            let id = store
                .create_user(NewUser {
                    dealer_id: DealerId(dealer_id),
                    login,
                    password,
                    time_zone,
                    activated: !inactive,
                    legal_type: platform::LegalType::Individual,
                    first_name: String::new(),
                    last_name: String::new(),
                })
                .await?;
            json!({"user_id": id})
        }
        AdminCommand::Tracker(TrackerCommand::Create {
            user_id,
            label,
            device_id,
            model,
            plan_id,
            store_period,
            time_zone,
        }) => {
            let id = store
                .create_tracker(NewTracker {
                    user_id: UserId(user_id),
                    label,
                    device_id,
                    model,
                    plan_id: plan_id.map(PlanId),
                    store_period: store_period
                        .map(|p| StorePeriod::parse("store_period", &p))
                        .transpose()?,
                    time_zone,
                })
                .await?;
            json!({"tracker_id": id})
        }
        AdminCommand::Tracker(TrackerCommand::Block { tracker_id }) => {
            store
                .set_tracker_blocked(TrackerId(tracker_id), true)
                .await?;
            json!({"tracker_id": tracker_id, "blocked": true})
        }
        AdminCommand::Tracker(TrackerCommand::Unblock { tracker_id }) => {
            store
                .set_tracker_blocked(TrackerId(tracker_id), false)
                .await?;
            json!({"tracker_id": tracker_id, "blocked": false})
        }
        AdminCommand::Tracker(TrackerCommand::Movement {
            tracker_id,
            idle_speed_threshold_kmh,
            ignition_source,
        }) => {
            store
                .set_tracker_movement(
                    TrackerId(tracker_id),
                    idle_speed_threshold_kmh,
                    &ignition_source,
                )
                .await?;
            json!({
                "tracker_id": tracker_id,
                "idle_speed_threshold_kmh": idle_speed_threshold_kmh,
                "ignition_source": ignition_source,
            })
        }
        AdminCommand::Tracker(TrackerCommand::Plan {
            tracker_id,
            plan_id,
        }) => {
            store
                .set_tracker_plan(TrackerId(tracker_id), PlanId(plan_id))
                .await?;
            json!({"tracker_id": tracker_id, "plan_id": plan_id})
        }
        AdminCommand::Tracker(TrackerCommand::Clone {
            tracker_id,
            user_id,
            label,
        }) => {
            let clone = store
                .clone_tracker(TrackerId(tracker_id), UserId(user_id), label.as_deref())
                .await?;
            json!({"tracker_id": clone, "clone_of": tracker_id, "user_id": user_id})
        }
        AdminCommand::Zone(command) => geo::zone(store, command).await?,
        AdminCommand::Place(command) => geo::place(store, command).await?,
        AdminCommand::Sensor(SensorCommand::Create {
            tracker_id,
            name,
            input,
            calibration,
        }) => {
            let calibration = calibration
                .map(|c| Calibration::parse("calibration", &c))
                .transpose()?;
            let id = store
                .create_fuel_sensor(TrackerId(tracker_id), &name, &input, calibration)
                .await?;
            json!({"sensor_id": id})
        }
        AdminCommand::Subuser(SubuserCommand::Create {
            user_id,
            login,
            password,
            rights,
            trackers,
        }) => {
            let id = store
                .create_subuser(NewSubuser {
                    master_id: UserId(user_id),
                    login,
                    password,
                    rights: parse_list("rights", &rights, Right::parse)?,
                    trackers: trackers.into_iter().map(TrackerId).collect(),
                    first_name: String::new(),
                    last_name: String::new(),
                })
                .await?;
            json!({"subuser_id": id})
        }
        AdminCommand::ApiKey(ApiKeyCommand::Create { user_id, title }) => {
            let key = store.create_api_key(UserId(user_id), &title).await?;
            json!({"hash": key.hash.expose()})
        }
        AdminCommand::IngestToken(IngestTokenCommand::Create {
            title,
            backfill,
            user_id,
        }) => {
            let (id, secret) = store
                .create_ingest_token_for(&title, backfill, user_id.map(UserId))
                .await?;
            json!({"token": secret.expose(), "token_id": id, "backfill": backfill, "user_id": user_id})
        }
        AdminCommand::IngestToken(IngestTokenCommand::List) => {
            json!({"tokens": store.list_ingest_tokens().await?})
        }
        AdminCommand::Plugin(command) => {
            let (target, enabled) = match command {
                PluginCommand::Enable(target) => (target, true),
                PluginCommand::Disable(target) => (target, false),
            };
            let (owner, answer) = match (target.user_id, target.dealer_id) {
                (Some(user), _) => (
                    platform::PluginOwner::User(UserId(user)),
                    json!({"plugin_id": target.plugin_id, "user_id": user, "enabled": enabled}),
                ),
                (None, dealer) => {
                    let dealer = dealer.unwrap_or_default();
                    (
                        platform::PluginOwner::Dealer(schemas::DealerId(dealer)),
                        json!({"plugin_id": target.plugin_id, "dealer_id": dealer, "enabled": enabled}),
                    )
                }
            };
            store.set_plugin(owner, target.plugin_id, enabled).await?;
            answer
        }
        AdminCommand::Retranslator(RetranslatorCommand::Quota { user_id, max }) => {
            store.set_retranslator_quota(UserId(user_id), max).await?;
            let quota = store.retranslator_quota(UserId(user_id)).await?;
            json!({"user_id": user_id, "retranslator_quota": quota})
        }
        AdminCommand::ServiceTask(ServiceTaskCommand::Create {
            vehicle_id,
            description,
        }) => {
            let task_id = store.create_service_task(vehicle_id, &description).await?;
            json!({"task_id": task_id, "vehicle_id": vehicle_id})
        }
        AdminCommand::ServiceTask(ServiceTaskCommand::Close { task_id }) => {
            store.close_service_task(task_id).await?;
            json!({"task_id": task_id, "closed": true})
        }
        AdminCommand::IngestToken(IngestTokenCommand::Revoke { token_id }) => {
            json!(
                store
                    .revoke_ingest_token(schemas::IngestTokenId(token_id))
                    .await?
            )
        }
        AdminCommand::User(UserCommand::Deactivate { user_id }) => {
            store.set_user_activated(UserId(user_id), false).await?;
            json!({"user_id": user_id, "activated": false})
        }
        AdminCommand::User(UserCommand::Activate { user_id }) => {
            store.set_user_activated(UserId(user_id), true).await?;
            json!({"user_id": user_id, "activated": true})
        }
        AdminCommand::User(UserCommand::SetPassword { user_id, password }) => {
            store
                .change_user_password(UserId(user_id), &password)
                .await?;
            json!({"user_id": user_id, "sessions_ended": true})
        }
    })
}
