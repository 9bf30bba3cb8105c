//! What a link's public page needs, found by the link's hash.

use schemas::{PlaceId, TrackerId, UserId, ZoneId};
use sqlx::Row;

use super::{BoundingMode, DisplayOptions, LinkParams, ObjectData};
use crate::{Error, Place, Result, Store, Zone};

/// A link as its public page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkPage {
    /// The link's id.
    pub link_id: i64,
    /// Its description.
    pub description: String,
    /// False when switched off.
    pub enabled: bool,
    /// Nothing is shown before (ms since the epoch).
    pub lifetime_from_ms: Option<i64>,
    /// Nothing is shown after.
    pub lifetime_to_ms: Option<i64>,
    /// How the page looks.
    pub display: DisplayOptions,
    /// Which positions the zones let through (none without zones).
    pub bounding_mode: Option<BoundingMode>,
    /// The bounding zones (those since deleted are left out).
    pub zones: Vec<Zone>,
    /// The places drawn (those since deleted are left out).
    pub places: Vec<Place>,
    /// The trackers shown, in the link's order; trackers since deleted,
    /// blocked or given to another account are left out.
    pub trackers: Vec<LinkPageTracker>,
}

/// A tracker as a link's page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkPageTracker {
    /// Whose messages to show (a clone's source).
    pub telemetry_id: TrackerId,
    /// The alias, else the tracker's label.
    pub label: String,
    /// What is shown besides position and label.
    pub object_data: Vec<ObjectData>,
    /// The label of the vehicle carrying the tracker.
    pub vehicle_label: Option<String>,
    /// The registration number of that vehicle.
    pub vehicle_reg_number: Option<String>,
    /// Moving at or above this speed (km/h).
    pub idle_speed_threshold_kmh: f64,
}

/// What a link shows now (clarification 42; the list's `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Shown.
    Enabled,
    /// Not yet: before `lifetime.from`.
    Inactive,
    /// No more: after `lifetime.to`.
    Expired,
    /// Switched off.
    Disabled,
}

impl LinkPage {
    /// The link's state at `now_ms`.
    pub fn state(&self, now_ms: i64) -> LinkState {
        if !self.enabled {
            LinkState::Disabled
        } else if self.lifetime_from_ms.is_some_and(|from| now_ms < from) {
            LinkState::Inactive
        } else if self.lifetime_to_ms.is_some_and(|to| now_ms > to) {
            LinkState::Expired
        } else {
            LinkState::Enabled
        }
    }
}

impl Store {
    /// The link with this hash as its page shows it; `None` when there is
    /// none (any text that is not a hash included).
    pub async fn link_page(&self, hash: &str) -> Result<Option<LinkPage>> {
        if hash.len() != 32 || !hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Ok(None);
        }
        let Some(row) = sqlx::query(
            "SELECT id, master_user_id, description, enabled, from_ms, to_ms, params \
             FROM geo_links WHERE hash = $1",
        )
        .bind(hash)
        .fetch_optional(&self.pool)
        .await?
        else {
            return Ok(None);
        };
        let link_id: i64 = row.try_get("id")?;
        let master = UserId(row.try_get("master_user_id")?);
        let params: LinkParams = serde_json::from_str(&row.try_get::<String, _>("params")?)
            .map_err(|e| Error::corrupt("link params", e))?;
        let rows = sqlx::query(
            "SELECT coalesce(t.clone_of, t.id) AS telemetry_id, coalesce(lt.alias, t.label) AS label, \
             lt.object_data, v.label AS vehicle_label, v.reg_number AS vehicle_reg_number, \
             coalesce(s.idle_speed_threshold_kmh, t.idle_speed_threshold_kmh) AS threshold \
             FROM geo_link_trackers lt JOIN trackers t ON t.id = lt.tracker_id \
             LEFT JOIN trackers s ON s.id = t.clone_of \
             LEFT JOIN vehicles v ON v.tracker_id = t.id \
             WHERE lt.link_id = $1 AND t.user_id = $2 AND t.deleted = FALSE AND t.blocked = FALSE \
             AND (s.id IS NULL OR (s.deleted = FALSE AND s.blocked = FALSE)) \
             ORDER BY lt.position",
        )
        .bind(link_id)
        .bind(master.0)
        .fetch_all(&self.pool)
        .await?;
        let trackers = rows
            .iter()
            .map(|r| {
                Ok(LinkPageTracker {
                    telemetry_id: TrackerId(r.try_get("telemetry_id")?),
                    label: r.try_get("label")?,
                    object_data: serde_json::from_str(&r.try_get::<String, _>("object_data")?)
                        .map_err(|e| Error::corrupt("link object_data", e))?,
                    vehicle_label: r.try_get("vehicle_label")?,
                    vehicle_reg_number: r.try_get("vehicle_reg_number")?,
                    idle_speed_threshold_kmh: r.try_get("threshold")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let zone_ids: Vec<ZoneId> = params
            .bounding_zone_ids
            .iter()
            .map(|&z| ZoneId(z))
            .collect();
        let place_ids: Vec<PlaceId> = params
            .place_ids
            .iter()
            .flatten()
            .map(|&p| PlaceId(p))
            .collect();
        Ok(Some(LinkPage {
            link_id,
            description: row.try_get("description")?,
            enabled: row.try_get("enabled")?,
            lifetime_from_ms: row.try_get("from_ms")?,
            lifetime_to_ms: row.try_get("to_ms")?,
            display: params.display_options,
            // A mode without zones bounds nothing (it is optional then).
            bounding_mode: params
                .bounding_mode
                .filter(|_| !params.bounding_zone_ids.is_empty()),
            zones: self.zones_of(master, &zone_ids).await?,
            places: self.places_of(master, &place_ids).await?,
            trackers,
        }))
    }
}
