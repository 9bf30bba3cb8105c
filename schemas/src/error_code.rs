/// Implemented by every crate's `Error`: which platform error code a failure maps to.
///
/// Implementations match exhaustively (no `_ =>` arm) so that a new variant
/// cannot silently fall into a generic code; wrapper variants forward the
/// inner error's code.
pub trait HasCode {
    /// The platform error code for this failure.
    fn code(&self) -> ErrorCode;
}

macro_rules! error_codes {
    ($($(#[$doc:meta])* $name:ident = $code:literal, $http:literal, $meaning:literal;)*) => {
        /// A platform error code: the spec's table (document 1), declared once.
        ///
        /// Each code carries its HTTP status and the spec's meaning, which is
        /// the default `status.description` of an error response.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $(
                #[doc = $meaning]
                $name = $code,
            )*
        }

        impl ErrorCode {
            /// Every code, in the order of the spec's table.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$name),*];

            /// The numeric code sent in `status.code`.
            pub const fn number(self) -> u16 {
                self as u16
            }

            /// The HTTP status an error with this code is answered with.
            pub const fn http_status(self) -> u16 {
                match self {
                    $(ErrorCode::$name => $http,)*
                }
            }

            /// The spec's meaning of the code, the default error description.
            pub const fn meaning(self) -> &'static str {
                match self {
                    $(ErrorCode::$name => $meaning,)*
                }
            }

            /// The code with this number, if the table has one.
            pub const fn from_number(number: u16) -> Option<ErrorCode> {
                match number {
                    $($code => Some(ErrorCode::$name),)*
                    _ => None,
                }
            }
        }
    };
}

error_codes! {
Database = 1, 500, "Database error";
ServiceAuth = 2, 403, "Service Auth error";
WrongHash = 3, 400, "Wrong hash";
CredentialNotFound = 4, 400, "User or API key not found or session ended";
WrongRequestFormat = 5, 400, "Wrong request format";
Unexpected = 6, 500, "Unexpected error";
InvalidParameters = 7, 400, "Invalid parameters";
QueueUnavailable = 8, 503, "Queue service error, try again later";
TooLargeRequest = 9, 412, "Too large request";
AccessDenied = 11, 403, "Access denied";
DealerNotFound = 12, 400, "Dealer not found";
OperationNotPermitted = 13, 403, "Operation not permitted";
DatabaseUnavailable = 14, 503, "Database unavailable";
TooManyRequests = 15, 429, "Too many requests (rate limit exceeded)";
DemoModeDisabled = 101, 403, "In demo mode this function is disabled";
WrongLoginOrPassword = 102, 400, "Wrong login or password";
UserNotActivated = 103, 400, "User not activated";
WrongHandler = 111, 400, "Wrong handler";
WrongMethod = 112, 400, "Wrong method";
NotFoundInDatabase = 201, 400, "Not found in database";
TooManyPointsInZone = 202, 400, "Too many points in zone";
DeleteEntityAssociated = 203, 400, "Delete entity associated with";
EntityNotFound = 204, 404, "Entity not found";
LoginAlreadyInUse = 206, 400, "Login already in use";
InvalidCaptcha = 207, 400, "Invalid captcha";
DeviceBlocked = 208, 403, "Device blocked";
FailedSendingEmail = 209, 400, "Failed sending email";
GeocodingFailed = 210, 400, "Geocoding failed";
TimeSpanTooBig = 211, 400, "Requested time span is too big";
LimitTooBig = 212, 400, "Requested limit is too big";
DeviceOffline = 213, 400, "Cannot perform action: the device is offline";
NotSupportedByDevice = 214, 400, "Requested operation or parameters are not supported by the device";
ExternalServiceError = 215, 400, "External service error";
NonexistentEntitiesInList = 217, 400, "List contains nonexistent entities";
MalformedExternalServiceParameters = 218, 400, "Malformed external service parameters";
NotAllowedForClones = 219, 403, "Not allowed for clones of the device";
UnknownDeviceModel = 220, 400, "Unknown device model";
DeviceLimitExceeded = 221, 403, "Device limit exceeded";
PluginNotFound = 222, 400, "Plugin not found";
PhoneAlreadyInUse = 223, 400, "Phone number already in use";
DeviceIdAlreadyInUse = 224, 400, "Device ID already in use";
NotAllowedForLegalType = 225, 403, "Not allowed for this legal type";
WrongIccid = 226, 400, "Wrong ICCID";
WrongActivationCode = 227, 400, "Wrong activation code";
NotSupportedBySensor = 228, 400, "Not supported by sensor";
DataNotReady = 229, 404, "Requested data is not ready yet";
NotSupportedForEntityType = 230, 400, "Not supported for this entity type";
EntityTypeMismatch = 231, 409, "Entity type mismatch";
InputAlreadyInUse = 232, 400, "Input already in use";
NoDataFile = 233, 400, "No data file";
InvalidDataFormat = 234, 400, "Invalid data format";
MissingCalibration = 235, 400, "Missing calibration data";
FeatureUnavailable = 236, 402, "Feature unavailable due to tariff restrictions";
InvalidTariff = 237, 400, "Invalid tariff";
TariffChangeNotAllowed = 238, 403, "Changing tariff is not allowed";
NewTariffNotFound = 239, 404, "New tariff does not exist";
TariffChangeTooFrequent = 240, 403, "Not allowed to change tariff too frequently";
CannotChangeToBundledSim = 241, 400, "Cannot change phone to bundled sim. Contact tech support.";
ContentValidationErrors = 242, 400, "There were errors during content validation";
DeviceAlreadyConnected = 243, 400, "Device already connected.";
DuplicateEntityLabel = 244, 400, "Duplicate entity label.";
NewPasswordMustDiffer = 245, 400, "New password must be different";
InvalidUserId = 246, 400, "Invalid user ID";
EntityAlreadyExists = 247, 409, "Entity already exists";
WrongPassword = 248, 400, "Wrong password";
ClonesOnly = 249, 403, "Operation available for clones only";
NotAllowedForDeletedDevices = 250, 403, "Not allowed for deleted devices";
InsufficientFunds = 251, 403, "Insufficient funds";
DeviceAlreadyCorrupted = 252, 400, "Device already corrupted";
DeviceHasClones = 253, 400, "Device has clones";
CannotSaveFile = 254, 500, "Cannot save file";
InvalidTaskState = 255, 400, "Invalid task state";
LocationAlreadyActual = 256, 400, "Location already actual";
RegistrationForbidden = 257, 403, "Registration forbidden";
BundleNotFound = 258, 404, "Bundle not found";
PaymentsCountMismatch = 259, 400, "Payments count not comply with summary";
PaymentsSumMismatch = 260, 400, "Payments sum not comply with summary";
EntityHasExternalLinks = 261, 403, "Entity has external links";
EntriesListMismatch = 262, 400, "Entries list is missing some entries or contains nonexistent entries";
NoChangeNeeded = 263, 400, "No change needed, old and new values are the same";
TimeoutNotReached = 264, 403, "Timeout not reached";
AlreadyDone = 265, 403, "Already done";
WrongDeviceStatus = 266, 403, "Cannot perform action for the device in current status";
TooManyEntities = 267, 400, "Too many entities";
OverQuota = 268, 402, "Over quota";
InvalidFileState = 269, 400, "Invalid file state";
TooManySensorsOfType = 270, 400, "Too many sensors of same type already exist";
FileOverMaxSize = 271, 413, "File over max size";
TrackersMustHaveSameModels = 272, 400, "Trackers must have same models";
DuplicateLogin = 273, 400, "Duplicate login";
EmptyDataFile = 274, 400, "Empty data file";
UserBlocked = 275, 403, "User is blocked";
ForbiddenForSessionType = 276, 403, "Action is forbidden for received session type";
SecurityGroupHasUsers = 277, 409, "Security group has users in it";
SecurityGroupIsDefault = 278, 409, "Security group is a default one";
InvalidTaskPeriod = 279, 400, "Invalid task period";
InvalidImportRequestState = 280, 400, "Invalid import request state";
ResourceClosed = 281, 400, "This resource is closed";
NotEnoughPointsForZone = 284, 400, "Not enough points for the specified zone type";}

impl ErrorCode {
    /// Whether a retry with back-off may succeed (the environment must act, not the caller).
    pub const fn is_transient(self) -> bool {
        matches!(
            self,
            ErrorCode::QueueUnavailable
                | ErrorCode::DatabaseUnavailable
                | ErrorCode::TooManyRequests
        )
    }

    /// Whether the failure is ours (HTTP 5xx other than a transient one): logged in full, answered generically.
    pub const fn is_server_fault(self) -> bool {
        self.http_status() >= 500 && !self.is_transient()
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.number(), self.meaning())
    }
}

#[cfg(test)]
mod tests;
