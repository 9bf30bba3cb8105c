use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl From<i64> for $name {
            fn from(id: i64) -> Self {
                Self(id)
            }
        }
    };
}

id_type!(
    /// A dealer (reseller); its numeric id is also its panel login.
    DealerId
);
id_type!(
    /// A user account: a master user or one of its sub-users.
    UserId
);
id_type!(
    /// A tracker (a device as registered on the platform).
    TrackerId
);
id_type!(
    /// A plan (tariff) of a dealer.
    PlanId
);
id_type!(
    /// A fuel sensor of a tracker.
    SensorId
);
id_type!(
    /// A security group that grants sub-users their rights.
    SecurityGroupId
);
id_type!(
    /// A token that authorises device data intake.
    IngestTokenId
);
id_type!(
    /// A zone (a circle or a polygon) of a master user's account.
    ZoneId
);
id_type!(
    /// A place (a named point of interest) of a master user's account.
    PlaceId
);
