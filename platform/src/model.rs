//! Enumerations and value types of the platform's records.

use std::fmt;

use chrono::{DateTime, Months, TimeDelta, Utc};

use crate::{Error, Result};

/// Writes an optional instant as the panel does: `YYYY-MM-DD HH:MM:SS` in UTC, or null.
pub(crate) fn utc_text<S: serde::Serializer>(
    instant: &Option<DateTime<Utc>>,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    match instant {
        Some(t) => serializer.serialize_str(&t.format("%Y-%m-%d %H:%M:%S").to_string()),
        None => serializer.serialize_none(),
    }
}

macro_rules! text_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant,)*
        }

        impl $name {
            /// Every value, in the spec's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The value as the spec writes it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            /// Parses the spec's spelling; `field` names the parameter in the error.
            pub fn parse(field: &'static str, text: &str) -> Result<Self> {
                match text {
                    $($text => Ok($name::$variant),)*
                    _ => Err(Error::invalid(
                        field,
                        format!("must be one of {}", [$($text),*].join(", ")),
                    )),
                }
            }
        }

        // By hand: a derive does not see the `rename` of a macro's literal and
        // would document the variants' Rust names.
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                let mut schema = utoipa::openapi::schema::Object::with_type(
                    utoipa::openapi::schema::Type::String,
                );
                schema.enum_values = Some(vec![$(serde_json::Value::from($text)),*]);
                utoipa::openapi::RefOr::T(utoipa::openapi::schema::Schema::Object(schema))
            }
        }

        impl utoipa::ToSchema for $name {}

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

text_enum!(
    /// A dealer's contract with the platform operator.
    ContractType {
        /// A partner.
        Partner = "PARTNER",
        /// An agent.
        Agent = "AGENT",
        /// Platform as a service: the dealer runs its own branded platform.
        Paas = "PAAS",
    }
);

text_enum!(
    /// A dealer's block status.
    BlockStatus {
        /// Not blocked.
        NotBlocked = "NOT_BLOCKED",
        /// A new dealer not yet activated: panel and clients are blocked.
        InitialBlock = "INITIAL_BLOCK",
        /// The dealer's panel login is blocked; its clients still work.
        BlockLogin = "BLOCK_LOGIN",
        /// The panel login and every client of the dealer are blocked.
        ClientsBlocked = "CLIENTS_BLOCKED",
    }
);

impl BlockStatus {
    /// Whether the dealer's panel accepts logins and sessions.
    pub const fn allows_panel(self) -> bool {
        matches!(self, Self::NotBlocked)
    }

    /// Whether the dealer's users may log in and use the API.
    pub const fn allows_clients(self) -> bool {
        matches!(self, Self::NotBlocked | Self::BlockLogin)
    }
}

text_enum!(
    /// The legal type of a user.
    LegalType {
        /// A company.
        LegalEntity = "legal_entity",
        /// A private person.
        Individual = "individual",
        /// A sole trader.
        SoleTrader = "sole_trader",
    }
);

text_enum!(
    /// How a plan charges.
    PlanType {
        /// A monthly fee.
        Monthly = "monthly",
        /// A fee per day the device was active (trackers only).
        Activeday = "activeday",
    }
);

text_enum!(
    /// The kind of device a plan is for.
    DeviceType {
        /// A GPS tracker.
        Tracker = "tracker",
        /// A camera.
        Camera = "camera",
        /// A smart socket.
        Socket = "socket",
    }
);

/// How long a plan keeps data: `2h`, `3d`, `12m`, `1y`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StorePeriod {
    /// Hours.
    Hours(u32),
    /// Days.
    Days(u32),
    /// Calendar months.
    Months(u32),
    /// Calendar years.
    Years(u32),
}

impl StorePeriod {
    /// Three months: what a tracker keeps when its plan states no period.
    pub const DEFAULT: StorePeriod = StorePeriod::Months(3);

    /// Parses the short form of plan objects (`2h`, `3d`, `12m`, `1y`).
    pub fn parse(field: &'static str, text: &str) -> Result<Self> {
        let invalid = || {
            Error::invalid(
                field,
                format!("{text:?} is not a store period like 2h, 3d, 12m or 1y"),
            )
        };
        let text = text.trim();
        let unit = text.chars().last().ok_or_else(invalid)?;
        let count: u32 = text[..text.len() - unit.len_utf8()]
            .parse()
            .map_err(|_| invalid())?;
        if count == 0 {
            return Err(invalid());
        }
        match unit {
            'h' => Ok(Self::Hours(count)),
            'd' => Ok(Self::Days(count)),
            'm' => Ok(Self::Months(count)),
            'y' => Ok(Self::Years(count)),
            _ => Err(invalid()),
        }
    }

    /// The ISO 8601 duration form used by dealer info (`PT2H`, `P3D`, `P12M`, `P1Y`).
    pub fn to_iso8601(self) -> String {
        match self {
            Self::Hours(n) => format!("PT{n}H"),
            Self::Days(n) => format!("P{n}D"),
            Self::Months(n) => format!("P{n}M"),
            Self::Years(n) => format!("P{n}Y"),
        }
    }

    /// The oldest instant still kept at `now`: data before it is neither returned nor kept.
    pub fn cutoff(self, now: DateTime<Utc>) -> DateTime<Utc> {
        let earliest = DateTime::<Utc>::MIN_UTC;
        match self {
            Self::Hours(n) => now.checked_sub_signed(TimeDelta::hours(i64::from(n))),
            Self::Days(n) => now.checked_sub_signed(TimeDelta::days(i64::from(n))),
            Self::Months(n) => now.checked_sub_months(Months::new(n)),
            Self::Years(n) => n
                .checked_mul(12)
                .and_then(|m| now.checked_sub_months(Months::new(m))),
        }
        .unwrap_or(earliest)
    }
}

impl fmt::Display for StorePeriod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Hours(n) => write!(f, "{n}h"),
            Self::Days(n) => write!(f, "{n}d"),
            Self::Months(n) => write!(f, "{n}m"),
            Self::Years(n) => write!(f, "{n}y"),
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn store_periods_parse_print_and_cut() {
        for (text, iso) in [
            ("2h", "PT2H"),
            ("3d", "P3D"),
            ("12m", "P12M"),
            ("1y", "P1Y"),
        ] {
            let period = StorePeriod::parse("store_period", text).unwrap();
            assert_eq!(period.to_string(), text);
            assert_eq!(period.to_iso8601(), iso);
        }
        for bad in ["", "m", "0m", "3w", "-1d", "1.5m", "३m"] {
            assert!(StorePeriod::parse("store_period", bad).is_err(), "{bad:?}");
        }
        let now = Utc.with_ymd_and_hms(2024, 5, 31, 12, 0, 0).unwrap();
        assert_eq!(
            StorePeriod::Months(3).cutoff(now),
            Utc.with_ymd_and_hms(2024, 2, 29, 12, 0, 0).unwrap()
        );
        assert_eq!(
            StorePeriod::Hours(2).cutoff(now),
            Utc.with_ymd_and_hms(2024, 5, 31, 10, 0, 0).unwrap()
        );
    }

    #[test]
    fn block_statuses_decide_panel_and_clients() {
        assert!(BlockStatus::NotBlocked.allows_panel() && BlockStatus::NotBlocked.allows_clients());
        assert!(
            !BlockStatus::BlockLogin.allows_panel() && BlockStatus::BlockLogin.allows_clients()
        );
        assert!(!BlockStatus::ClientsBlocked.allows_clients());
        assert!(!BlockStatus::InitialBlock.allows_clients());
    }
}
