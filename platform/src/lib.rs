//! The platform's own records: dealers and their panel accounts, plans, users
//! and sub-users with their rights, trackers and fuel sensors, an account's
//! garages and departments, and every
//! credential (user sessions, API keys, panel sessions, ingest tokens).
//!
//! [`Store`] is the entry point: it opens the SQLite database in the data
//! directory (WAL mode, so the `admin` CLI and a running server share it and
//! see each other's changes at once), applies the embedded migrations, and
//! answers every question the API asks about who may do what. Nothing is
//! cached in memory, so a change made by one process is seen by the next call
//! in another; the one exception, [`IntakeLookup`] (the intake's tokens and
//! trackers), checks a change counter kept by triggers on every look-up.
//!
//! Statements use `$N` placeholders and standard SQL so that PostgreSQL can be
//! added as a second backend; only the DDL of identity columns differs.
//!
//! This crate does not own HTTP (`api`), nor telemetry (`ingest`, `query`).

mod access;
mod activation_codes;
mod bills;
mod credentials;
mod dealers;
mod departments;
mod error;
mod garages;
mod gateways;
mod ingest_tokens;
mod intake_lookup;
mod links;
mod listing;
mod location;
mod model;
mod orders;
mod paas;
mod panel_users;
mod places;
mod plans;
mod plugins;
mod profile;
mod records;
mod retranslators;
mod secret;
mod security_groups;
mod spreadsheet;
mod store;
mod subdealers;
mod subusers;
mod trackers;
mod uploads;
mod user_upload;
mod users;
mod validate;
mod vehicle_batch;
mod vehicles;
mod zones;

pub use access::{Feature, Permission, Right};
pub use activation_codes::{ActivationCode, CodeTerms, MAX_CODES_PER_CALL, MAX_CODES_PER_UPDATE};
pub use bills::Bill;
pub use credentials::{ApiKey, CredentialKind, PanelAuth, UserAuth};
pub use dealers::{DealerInfo, NewDealer};
pub use departments::{Department, MAX_DEPARTMENT_LABEL_CHARS};
pub use error::{Error, Result, RowIssue, RowsFault};
pub use garages::{Garage, MAX_GARAGE_NAME_CHARS};
pub use gateways::{
    EmailGateways, LeasedGateway, MAX_SMTP_TIMEOUT_MS, NewEmailGateway, OwnGateway, SMTP_PROVIDER,
    SmtpParams,
};
pub use ingest_tokens::{IngestToken, IngestTokenInfo};
pub use intake_lookup::{
    IntakeLookup, IntakeTracker, LookupMap, LookupStats, TrackerKey, TrackerKeyRef,
};
pub use links::{
    BoundingMode, Condition, DEFAULT_GEO_LINK_QUOTA, DisplayOptions, GeoLink, Lifetime, LinkFields,
    LinkPage, LinkPageTracker, LinkParams, LinkState, LinkTracker, MAX_CONDITIONS,
    MAX_LINK_ALIAS_CHARS, MAX_LINK_DESCRIPTION_CHARS, MAX_LINK_TRACKERS, MAX_LINK_ZONES,
    MAX_TRACE_DURATION_S, ObjectData, Period, TrackerParams,
};
pub use listing::{ListQuery, MAX_LIST_LIMIT, OrderedQuery};
pub use location::Location;
pub use model::{BlockStatus, ContractType, DeviceType, LegalType, PlanType, StorePeriod};
pub use orders::{Bundle, MAX_ORDER_BUNDLES, NewBundle, NewOrder, Order, OrderStatus, OrderType};
pub use paas::{DEFAULT_PAAS_TARIFF, NewPaasTariff, PaasTariff};
pub use panel_users::{
    Discount, DiscountStrategy, NewPanelUser, PanelScope, PanelUser, PanelUserRecord,
    PanelUserTerms,
};
pub use places::{MAX_PLACE_DESCRIPTION_CHARS, MAX_PLACE_LABEL_CHARS, Place};
pub use plans::{Plan, PlanDefaults, PlanQuery, ServicePrices};
pub use plugins::{BILLING_PLUGIN, Plugin, PluginFilter, PluginOwner};
pub use retranslators::{
    DEFAULT_RETRANSLATOR_QUOTA, RETRANSLATOR_PROTOCOLS, Retranslator, RetranslatorProtocol,
};
pub use secret::{Secret, hash_in as password_hash_in, hash_memory as password_hash_memory};
pub use security_groups::{MAX_SECURITY_GROUP_LABEL_CHARS, SecurityGroup};
pub use spreadsheet::{Format, Table, read_file, read_text, sniff_delimiter};
pub use store::{Store, StoreConfig};
pub use subdealers::{ListedSubdealer, NewSubdealer, Subdealer, SubdealerChange};
pub use subusers::Subuser;
pub use trackers::{Calibration, FuelSensor, NewPlan, NewTracker, Tracker};
pub use uploads::{UploadRules, UploadedFile};
pub use user_upload::UserUploadRules;
pub use users::{NewSubuser, NewUser};
pub use validate::{check_login, check_printable, check_time_zone, optional_text, trimmed_text};
pub use vehicle_batch::{
    BatchError, BatchRules, BatchSource, ConvertedBatch, ConvertedVehicle, DEFAULT_BATCH_FIELDS,
};
pub use vehicles::{FuelType, ListedVehicle, Vehicle, VehicleType};
pub use zones::{
    DEFAULT_ZONE_COLOR, GeoPoint, MAX_ZONE_LABEL_CHARS, MAX_ZONE_POINTS, MAX_ZONE_RADIUS_M,
    MIN_POLYGON_POINTS, Zone, ZoneShape,
};
