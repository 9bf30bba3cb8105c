//! Zones of an account: circles and polygons on the map, which geo links
//! bound the positions they show by (`bounding_zone_ids`, clarification
//! 44). Made, listed and deleted with `trackhouse admin zone`.
//!
//! A zone is the object the production platform answers: `id`, `label`,
//! `address`, `color` and, by `type`, a `center` and `radius` (`circle`)
//! or `points` (`polygon`).

use std::borrow::Cow;

use schemas::{UserId, ZoneId};
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::{Error, Result, Store, records, trimmed_text};

mod geometry;

/// Longest zone label, in characters.
pub const MAX_ZONE_LABEL_CHARS: usize = 255;
/// Fewest points of a polygon zone (284 below).
pub const MIN_POLYGON_POINTS: usize = 3;
/// Most points of a polygon zone (202 above).
pub const MAX_ZONE_POINTS: usize = 1_000;
/// Most metres of a circle zone's radius (clarification 30); the least is 1.
pub const MAX_ZONE_RADIUS_M: i64 = 100_000;
/// The colour of a zone created without one.
pub const DEFAULT_ZONE_COLOR: &str = "27A9E3";

/// A point on the map, in degrees.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GeoPoint {
    /// Latitude, -90 to 90.
    pub lat: f64,
    /// Longitude, -180 to 180.
    pub lng: f64,
}

impl GeoPoint {
    /// The point, or code 7 naming `{path}.lat` or `{path}.lng` out of range.
    pub fn checked(self, path: &str) -> Result<Self> {
        if !(-90.0..=90.0).contains(&self.lat) {
            return Err(Error::invalid(
                format!("{path}.lat"),
                "must be from -90 to 90",
            ));
        }
        if !(-180.0..=180.0).contains(&self.lng) {
            return Err(Error::invalid(
                format!("{path}.lng"),
                "must be from -180 to 180",
            ));
        }
        Ok(self)
    }
}

/// What a zone covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ZoneShape {
    /// Every point within `radius` metres of `center`, along the earth.
    Circle {
        /// The centre.
        center: GeoPoint,
        /// Metres, 1 to 100,000.
        radius: i64,
    },
    /// The inside of a ring of 3 to 1,000 points, in order; the last joins
    /// the first (a ring may repeat its first point at the end, or not).
    Polygon {
        /// The ring.
        points: Vec<GeoPoint>,
    },
}

/// A zone of a master user's account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Zone {
    /// Its id: answered by lists, ignored on create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<ZoneId>,
    /// Label: printable, trimmed, 1 to 255 characters.
    pub label: String,
    /// Address: printable, trimmed, at most 512 characters; may be empty.
    #[serde(default)]
    pub address: String,
    /// Colour on the map: six hex digits without `#`.
    #[serde(default = "default_color")]
    pub color: String,
    /// Circle or polygon (`type` with its members).
    #[serde(flatten)]
    pub shape: ZoneShape,
}

fn default_color() -> String {
    DEFAULT_ZONE_COLOR.to_owned()
}

impl Zone {
    /// Whether the point `lat`, `lng` (degrees) is inside the zone.
    ///
    /// A circle measures the great-circle distance to its centre
    /// (haversine on a sphere of the earth's mean radius, within 0.5 % of
    /// the ellipsoid's distance) and includes its edge. A polygon is tested
    /// on the plane of latitude and longitude (even-odd rule): its edges
    /// are straight lines in degrees rather than great circles, which moves
    /// the middle of an edge by about L² · tan(latitude) / 8R: 2 metres for
    /// a 10 km edge at 45°, fine for zones of city size away from the
    /// poles. A point exactly on an edge may fall either way, and a zone may
    /// not cross the antimeridian (refused when stored).
    pub fn contains(&self, lat: f64, lng: f64) -> bool {
        let point = GeoPoint { lat, lng };
        match &self.shape {
            ZoneShape::Circle { center, radius } => {
                // Whole metres up to 100 km: exact in f64.
                geometry::distance_m(*center, point) <= *radius as f64
            }
            ZoneShape::Polygon { points } => geometry::in_polygon(points, point),
        }
    }

    /// The zone as stored, or the first member that is not valid, named by
    /// its path under `path` (`zone.points[3].lat`).
    pub(crate) fn checked(self, path: &str) -> Result<Self> {
        let member = |name: &str| -> Cow<'static, str> { format!("{path}.{name}").into() };
        let label = trimmed_text(member("label"), &self.label, 1, MAX_ZONE_LABEL_CHARS)?;
        let address = trimmed_text(
            member("address"),
            &self.address,
            0,
            crate::location::MAX_ADDRESS_CHARS,
        )?;
        let color = self.color.trim().to_owned();
        if color.len() != 6 || !color.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::invalid(
                member("color"),
                format!("must be six hex digits without #, got {color:?}"),
            ));
        }
        let shape = match self.shape {
            ZoneShape::Circle { center, radius } => {
                let center = center.checked(&member("center"))?;
                if !(1..=MAX_ZONE_RADIUS_M).contains(&radius) {
                    return Err(Error::invalid(
                        member("radius"),
                        format!("must be from 1 to {MAX_ZONE_RADIUS_M} metres, got {radius}"),
                    ));
                }
                ZoneShape::Circle { center, radius }
            }
            ZoneShape::Polygon { points } => {
                let field = member("points");
                if points.len() < MIN_POLYGON_POINTS {
                    return Err(Error::TooFewZonePoints {
                        field,
                        points: points.len(),
                        min: MIN_POLYGON_POINTS,
                    });
                }
                if points.len() > MAX_ZONE_POINTS {
                    return Err(Error::TooManyZonePoints {
                        field,
                        points: points.len(),
                        max: MAX_ZONE_POINTS,
                    });
                }
                for (i, point) in points.iter().enumerate() {
                    point.checked(&format!("{field}[{i}]"))?;
                }
                if let Some(i) = geometry::antimeridian_edge(&points) {
                    return Err(Error::invalid(
                        format!("{field}[{i}]"),
                        "the edge to this point spans more than 180 degrees of longitude: \
                         a zone may not cross the antimeridian",
                    ));
                }
                ZoneShape::Polygon { points }
            }
        };
        Ok(Self {
            id: self.id,
            label,
            address,
            color,
            shape,
        })
    }

    fn from_row(row: &sqlx::sqlite::SqliteRow) -> Result<Self> {
        let kind: String = row.try_get("type")?;
        let shape = match kind.as_str() {
            "circle" => ZoneShape::Circle {
                center: GeoPoint {
                    lat: row.try_get("center_lat")?,
                    lng: row.try_get("center_lng")?,
                },
                radius: row.try_get("radius")?,
            },
            "polygon" => ZoneShape::Polygon {
                points: serde_json::from_str(&row.try_get::<String, _>("points")?)
                    .map_err(|e| Error::corrupt("zone points", e))?,
            },
            other => return Err(Error::corrupt("zone type", other)),
        };
        Ok(Self {
            id: Some(ZoneId(row.try_get("id")?)),
            label: row.try_get("label")?,
            address: row.try_get("address")?,
            color: row.try_get("color")?,
            shape,
        })
    }
}

impl Store {
    /// Stores a zone of the master user `master` (its `id`, if any, is
    /// ignored); 201 when there is no such live user, 7 for a sub-user or
    /// a member that is not valid (202/284 for a polygon's point count).
    pub async fn create_zone(&self, master: UserId, zone: Zone) -> Result<ZoneId> {
        let zone = zone.checked("zone")?;
        records::require_master(&self.pool, master).await?;
        let (kind, lat, lng, radius, points) = match &zone.shape {
            ZoneShape::Circle { center, radius } => (
                "circle",
                Some(center.lat),
                Some(center.lng),
                Some(*radius),
                None,
            ),
            ZoneShape::Polygon { points } => (
                "polygon",
                None,
                None,
                None,
                Some(serde_json::to_string(points).map_err(|e| Error::corrupt("zone points", e))?),
            ),
        };
        let id = sqlx::query_scalar(
            "INSERT INTO zones (master_user_id, label, address, color, type, center_lat, center_lng, \
             radius, points, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
        )
        .bind(master.0)
        .bind(&zone.label)
        .bind(&zone.address)
        .bind(&zone.color)
        .bind(kind)
        .bind(lat)
        .bind(lng)
        .bind(radius)
        .bind(points)
        .bind(self.clock.now())
        .fetch_one(&self.pool)
        .await?;
        Ok(ZoneId(id))
    }

    /// The zones of the master user `master`, by id; 201 when there is no
    /// such live user.
    pub async fn zones(&self, master: UserId) -> Result<Vec<Zone>> {
        records::require_master(&self.pool, master).await?;
        let rows = sqlx::query("SELECT * FROM zones WHERE master_user_id = $1 ORDER BY id")
            .bind(master.0)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(Zone::from_row).collect()
    }

    /// The zones `ids` of the master user `master`, in the order asked
    /// (an id asked twice is answered once); 204 naming the first id that
    /// is not a zone of the account (clarification 44).
    pub async fn zones_of(&self, master: UserId, ids: &[ZoneId]) -> Result<Vec<Zone>> {
        let ids: Vec<i64> = ids.iter().map(|id| id.0).collect();
        let rows = records::owned_rows(&self.pool, "zones", "zone", master, &ids).await?;
        rows.iter().map(Zone::from_row).collect()
    }

    /// Deletes a zone, whoever owns it (the operator's command); 201 when
    /// there is none with this id.
    pub async fn delete_zone(&self, zone: ZoneId) -> Result<()> {
        let done = sqlx::query("DELETE FROM zones WHERE id = $1")
            .bind(zone.0)
            .execute(&self.pool)
            .await?;
        records::one_changed(done.rows_affected(), "zone", zone.0)
    }
}

#[cfg(test)]
pub(crate) mod tests;
