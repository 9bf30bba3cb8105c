use schemas::{ErrorCode, HasCode};

/// Result of platform operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the platform store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A parameter failed validation.
    #[error("`{field}`: {reason}")]
    InvalidArgument {
        /// The parameter, as the caller named it (`garage.location.lat`).
        field: std::borrow::Cow<'static, str>,
        /// What is wrong with it.
        reason: String,
    },
    /// No record of this kind with this id (or key) exists for the caller.
    #[error("{entity} {id} not found")]
    NotFound {
        /// The kind of record.
        entity: &'static str,
        /// Its id or key, as given.
        id: String,
    },
    /// The vehicle's tracker cannot change while it has open service tasks (261).
    #[error("vehicle {vehicle_id} has {tasks} open service tasks")]
    OpenServiceTasks {
        /// The vehicle.
        vehicle_id: i64,
        /// Its open tasks.
        tasks: i64,
    },
    /// A retranslator with the same address, port and login exists (247).
    #[error("a retranslator to {address}:{port} with this login exists")]
    SameTarget {
        /// The address.
        address: String,
        /// The port.
        port: i64,
    },
    /// A plugin the call needs is not available to the account (222).
    #[error("plugin {plugin} is not available to the account")]
    PluginUnavailable {
        /// The plugin.
        plugin: i64,
    },
    /// A list asked for more rows than a page holds (212).
    #[error("limit {limit} is above the maximum of {max}")]
    LimitTooBig {
        /// The limit asked for.
        limit: i64,
        /// The most a page holds.
        max: i64,
    },
    /// A list names records that do not exist for the caller (217).
    #[error("no {entity} {ids:?} in the account")]
    NonexistentEntities {
        /// The kind of record.
        entity: &'static str,
        /// The ids not found.
        ids: Vec<i64>,
    },
    /// The entity exists but is not the caller's (or is outside a sub-user's scope).
    #[error("{entity} {id} not found among the caller's")]
    NotCallers {
        /// The kind of record.
        entity: &'static str,
        /// Its id.
        id: i64,
    },
    /// The tracker is blocked.
    #[error("tracker {tracker_id} is blocked")]
    TrackerBlocked {
        /// The blocked tracker.
        tracker_id: i64,
    },
    /// A login is already taken.
    #[error("login {login} is already in use")]
    LoginInUse {
        /// The login.
        login: String,
    },
    /// A device id is already held by another live tracker.
    #[error("device id {device_id} is already in use")]
    DeviceIdInUse {
        /// The device id.
        device_id: String,
    },
    /// A record with this id already exists.
    #[error("{entity} {id} already exists")]
    AlreadyExists {
        /// The kind of record.
        entity: &'static str,
        /// Its id.
        id: i64,
    },
    /// Unknown login or wrong password (never says which).
    #[error("wrong login or password")]
    WrongLoginOrPassword,
    /// The user exists and the password is right, but the account is not activated.
    #[error("user is not activated")]
    UserNotActivated,
    /// The dealer is blocked for this kind of access.
    #[error("dealer {dealer_id} is blocked ({status})")]
    DealerBlocked {
        /// The dealer.
        dealer_id: i64,
        /// Its block status.
        status: &'static str,
    },
    /// No dealer with this panel login.
    #[error("dealer {login} not found")]
    DealerNotFound {
        /// The login given.
        login: String,
    },
    /// Rows of an uploaded file that cannot be taken: nothing was stored.
    #[error("{}", rows_message(*fault, rows))]
    Rows {
        /// Why: bad rows (7), a login twice in the file (273), a login registered (206).
        fault: RowsFault,
        /// Each row's problem.
        rows: Vec<RowIssue>,
    },
    /// A tracker of the user is already corrupted (252).
    #[error("tracker {tracker_id} is already corrupted")]
    DeviceCorrupted {
        /// The tracker.
        tracker_id: i64,
    },
    /// Other users hold clones of the user's trackers (253).
    #[error("{clones} clones of the user's trackers exist; corrupt_clones is false")]
    DeviceHasClones {
        /// How many.
        clones: i64,
    },
    /// A polygon zone has more points than a zone may have (202).
    #[error("`{field}`: {points} points, at most {max}")]
    TooManyZonePoints {
        /// The parameter holding the points (`zone.points`).
        field: std::borrow::Cow<'static, str>,
        /// Points given.
        points: usize,
        /// The most a zone may have.
        max: usize,
    },
    /// A zone has fewer points than its type needs (284).
    #[error("`{field}`: {points} points, a polygon needs at least {min}")]
    TooFewZonePoints {
        /// The parameter holding the points (`zone.points`).
        field: std::borrow::Cow<'static, str>,
        /// Points given.
        points: usize,
        /// The fewest its type needs.
        min: usize,
    },
    /// The tracker is a clone, and this is for devices' own trackers only (219).
    #[error("tracker {tracker_id} is a clone of tracker {source_id}")]
    NotForClones {
        /// The clone.
        tracker_id: i64,
        /// Its source.
        source_id: i64,
    },
    /// The caller may not do this (13).
    #[error("{reason}")]
    NotPermitted {
        /// Why.
        reason: String,
    },
    /// Another record of the owner has this name (244).
    #[error("a {entity} named {name:?} exists")]
    DuplicateName {
        /// The kind of record.
        entity: &'static str,
        /// The name.
        name: String,
    },
    /// The device type does not support what was asked (214).
    #[error("{reason}")]
    NotSupportedByDevice {
        /// Why.
        reason: String,
    },
    /// A plan named as the new default does not exist for the dealer (239).
    #[error("plan {plan_id} does not exist")]
    NewPlanNotFound {
        /// The plan.
        plan_id: i64,
    },
    /// A plan cannot serve where it was named (237).
    #[error("{reason}")]
    InvalidPlan {
        /// Why.
        reason: String,
    },
    /// The credential is unknown, expired, ended, or of another kind.
    #[error("credential not found or session ended")]
    CredentialNotFound,
    /// A per-account quota is used up.
    #[error("quota of {limit} {what} reached")]
    OverQuota {
        /// What is counted.
        what: &'static str,
        /// The limit.
        limit: u32,
    },
    /// A fuel sensor has no calibration table.
    #[error("fuel sensor {sensor_id} has no calibration table")]
    MissingCalibration {
        /// The sensor.
        sensor_id: i64,
    },
    /// Hashing or verifying a password failed (not a mismatch: a malfunction).
    #[error("password hashing failed: {0}")]
    PasswordHash(String),
    /// The database is locked or unreachable; a retry may succeed.
    #[error("database unavailable")]
    DatabaseUnavailable(#[source] sqlx::Error),
    /// A database statement failed.
    #[error("database error")]
    Database(#[source] sqlx::Error),
    /// Applying the migrations failed.
    #[error("migrating the platform database failed")]
    Migrate(#[source] sqlx::migrate::MigrateError),
    /// A stored value could not be read back (corrupt record or a bug).
    #[error("stored {what} is malformed: {reason}")]
    CorruptRecord {
        /// Which value.
        what: &'static str,
        /// Why it cannot be read.
        reason: String,
    },
    /// The data directory could not be prepared.
    #[error("cannot prepare data directory {path}")]
    DataDir {
        /// The directory.
        path: String,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
    /// A blocking task was cancelled or panicked.
    #[error("background task failed")]
    Task(#[source] tokio::task::JoinError),
}

/// Why rows of an uploaded file were refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowsFault {
    /// A value is missing or not valid (7).
    Invalid,
    /// A login appears more than once in the file (273).
    DuplicateInFile,
    /// A login is registered already (206).
    LoginInUse,
    /// The file has no data rows (274).
    Empty,
}

fn rows_message(fault: RowsFault, rows: &[RowIssue]) -> String {
    let Some(first) = rows.first() else {
        return "the file has no data rows".into();
    };
    let what = match fault {
        RowsFault::Invalid => "rows are not valid",
        RowsFault::DuplicateInFile => "rows repeat a login of the file",
        RowsFault::LoginInUse => "rows hold a login registered already",
        RowsFault::Empty => "rows are empty",
    };
    format!(
        "nothing was created: {} {what}, the first row {} (`{}` {})",
        rows.len(),
        first.row_number,
        first.parameter,
        first.error
    )
}

/// One problem of one row of an uploaded file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowIssue {
    /// The row, 1-based, the header row not counted.
    pub row_number: usize,
    /// The column, by its header name, or the object member.
    pub parameter: String,
    /// What is wrong.
    pub error: String,
}

impl HasCode for Error {
    fn code(&self) -> ErrorCode {
        match self {
            Self::InvalidArgument { .. } => ErrorCode::InvalidParameters,
            Self::NotFound { .. } => ErrorCode::NotFoundInDatabase,
            Self::NotCallers { .. } => ErrorCode::EntityNotFound,
            Self::NonexistentEntities { .. } => ErrorCode::NonexistentEntitiesInList,
            Self::LimitTooBig { .. } => ErrorCode::LimitTooBig,
            Self::OpenServiceTasks { .. } => ErrorCode::EntityHasExternalLinks,
            Self::SameTarget { .. } => ErrorCode::EntityAlreadyExists,
            Self::PluginUnavailable { .. } => ErrorCode::PluginNotFound,
            Self::TrackerBlocked { .. } => ErrorCode::DeviceBlocked,
            Self::LoginInUse { .. } => ErrorCode::LoginAlreadyInUse,
            Self::DeviceIdInUse { .. } => ErrorCode::DeviceIdAlreadyInUse,
            Self::AlreadyExists { .. } => ErrorCode::EntityAlreadyExists,
            Self::WrongLoginOrPassword => ErrorCode::WrongLoginOrPassword,
            Self::UserNotActivated => ErrorCode::UserNotActivated,
            Self::DealerBlocked { .. } => ErrorCode::AccessDenied,
            Self::DealerNotFound { .. } => ErrorCode::DealerNotFound,
            Self::CredentialNotFound => ErrorCode::CredentialNotFound,
            Self::OverQuota { .. } => ErrorCode::OverQuota,
            Self::DuplicateName { .. } => ErrorCode::DuplicateEntityLabel,
            Self::NotPermitted { .. } => ErrorCode::OperationNotPermitted,
            Self::TooManyZonePoints { .. } => ErrorCode::TooManyPointsInZone,
            Self::TooFewZonePoints { .. } => ErrorCode::NotEnoughPointsForZone,
            Self::NotForClones { .. } => ErrorCode::NotAllowedForClones,
            Self::DeviceCorrupted { .. } => ErrorCode::DeviceAlreadyCorrupted,
            Self::Rows { fault, .. } => match fault {
                RowsFault::Invalid => ErrorCode::InvalidParameters,
                RowsFault::DuplicateInFile => ErrorCode::DuplicateLogin,
                RowsFault::LoginInUse => ErrorCode::LoginAlreadyInUse,
                RowsFault::Empty => ErrorCode::EmptyDataFile,
            },
            Self::DeviceHasClones { .. } => ErrorCode::DeviceHasClones,
            Self::NotSupportedByDevice { .. } => ErrorCode::NotSupportedByDevice,
            Self::NewPlanNotFound { .. } => ErrorCode::NewTariffNotFound,
            Self::InvalidPlan { .. } => ErrorCode::InvalidTariff,
            Self::MissingCalibration { .. } => ErrorCode::MissingCalibration,
            Self::PasswordHash(_) | Self::Task(_) | Self::DataDir { .. } => ErrorCode::Unexpected,
            Self::DatabaseUnavailable(_) => ErrorCode::DatabaseUnavailable,
            Self::Database(_) | Self::Migrate(_) | Self::CorruptRecord { .. } => {
                ErrorCode::Database
            }
        }
    }
}

impl Error {
    pub(crate) fn invalid(
        field: impl Into<std::borrow::Cow<'static, str>>,
        reason: impl Into<String>,
    ) -> Self {
        Self::InvalidArgument {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn corrupt(what: &'static str, reason: impl ToString) -> Self {
        Self::CorruptRecord {
            what,
            reason: reason.to_string(),
        }
    }
}

impl From<sqlx::Error> for Error {
    fn from(err: sqlx::Error) -> Self {
        let busy = match &err {
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => true,
            // SQLITE_BUSY (5) and SQLITE_LOCKED (6) once the busy timeout ran out.
            sqlx::Error::Database(db) => matches!(db.code().as_deref(), Some("5" | "6" | "517")),
            _ => false,
        };
        if busy {
            Self::DatabaseUnavailable(err)
        } else {
            Self::Database(err)
        }
    }
}
