//! A location of a record (a garage, a department): a point, an address and
//! an optional radius, stored as four columns (`lat`, `lng`, `address`,
//! `radius`) that are all NULL when the location is null.

use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::{Error, Result};

/// Longest address, in characters.
pub(crate) const MAX_ADDRESS_CHARS: usize = 512;

/// A location (clarification 30): valid when `lat` is within -90..90, `lng`
/// within -180..180 and `radius`, when present, 1..100000 metres.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Location {
    /// Latitude, degrees.
    #[schema(minimum = -90, maximum = 90, example = 43.2567)]
    pub lat: f64,
    /// Longitude, degrees.
    #[schema(minimum = -180, maximum = 180, example = 76.9286)]
    pub lng: f64,
    /// The address; printable, at most 512 characters, trimmed.
    #[serde(default)]
    #[schema(max_length = 512, example = "Almaty, Abay Ave 52")]
    pub address: String,
    /// Radius in metres, or null.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 100000)]
    pub radius: Option<i64>,
}

impl Location {
    /// The location as stored, or the first member out of range, named by
    /// its path under `path` (`garage.location` → `garage.location.lat`).
    pub(crate) fn checked(self, path: &str) -> Result<Self> {
        let member = |name: &str| format!("{path}.{name}");
        if !(-90.0..=90.0).contains(&self.lat) {
            return Err(Error::invalid(member("lat"), "must be from -90 to 90"));
        }
        if !(-180.0..=180.0).contains(&self.lng) {
            return Err(Error::invalid(member("lng"), "must be from -180 to 180"));
        }
        if let Some(radius) = self.radius.filter(|r| !(1..=100_000).contains(r)) {
            return Err(Error::invalid(
                member("radius"),
                format!("must be from 1 to 100000 metres, got {radius}"),
            ));
        }
        let address = crate::trimmed_text(member("address"), &self.address, 0, MAX_ADDRESS_CHARS)?;
        Ok(Self { address, ..self })
    }

    /// The location of a row's `lat`, `lng`, `address`, `radius` columns.
    pub(crate) fn from_row(row: &SqliteRow) -> Result<Option<Self>> {
        let lat: Option<f64> = row.try_get("lat")?;
        let lng: Option<f64> = row.try_get("lng")?;
        Ok(match (lat, lng) {
            (Some(lat), Some(lng)) => Some(Self {
                lat,
                lng,
                address: row
                    .try_get::<Option<String>, _>("address")?
                    .unwrap_or_default(),
                radius: row.try_get("radius")?,
            }),
            _ => None,
        })
    }
}

/// The four location columns' values of a location that may be null, to bind in order.
pub(crate) fn columns(
    location: Option<&Location>,
) -> (Option<f64>, Option<f64>, Option<&str>, Option<i64>) {
    match location {
        Some(l) => (Some(l.lat), Some(l.lng), Some(l.address.as_str()), l.radius),
        None => (None, None, None, None),
    }
}
