//! Geo links (spec document 3, clarifications 41-44): a public page, found
//! by its `hash`, that shows the live location of 1 to 100 trackers of an
//! account to people without one. This module stores links and answers
//! what their page needs ([`LinkPage`]); the page itself is `api`'s.

use std::borrow::Cow;
use std::collections::HashMap;

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use schemas::{PlaceId, ZoneId};
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::listing::{ListQuery, ListRules};
use crate::secret::Secret;
use crate::{Error, Result, Store, UserAuth, optional_text, records, trimmed_text};

mod conditions;
mod page;

pub use conditions::{Condition, MAX_CONDITIONS, Period};
pub use page::{LinkPage, LinkPageTracker, LinkState};

/// Trackers a link shows: 1 to this many.
pub const MAX_LINK_TRACKERS: usize = 100;
/// Bounding zones and places of a link: at most this many each.
pub const MAX_LINK_ZONES: usize = 100;
/// Longest description, in characters.
pub const MAX_LINK_DESCRIPTION_CHARS: usize = 255;
/// Longest alias of a tracker of a link, in characters.
pub const MAX_LINK_ALIAS_CHARS: usize = 100;
/// Longest trail a link draws, in seconds (a day).
pub const MAX_TRACE_DURATION_S: i64 = 86_400;
/// Links an account holds unless configured otherwise (clarification 41).
pub const DEFAULT_GEO_LINK_QUOTA: u32 = 10_000;

/// What a link shows of a tracker besides its position and label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ObjectData {
    /// Speed, km/h.
    Speed,
    /// The nearest place's address.
    Address,
    /// Moving or stopped.
    MovementStatus,
    /// Active, idle or offline.
    ConnectionStatus,
    /// The driver's name (with `show_driver_info`).
    DriverName,
    /// The driver's phone (with `show_driver_info`).
    DriverPhone,
    /// The vehicle's label (with `show_vehicle_info`).
    VehicleLabel,
    /// The vehicle's registration number (with `show_vehicle_info`).
    VehicleRegNumber,
}

/// Which positions bounding zones let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BoundingMode {
    /// Only positions inside some zone.
    Inside,
    /// Only positions outside every zone.
    Outside,
}

/// When a link shows anything: main interface date/times in the account's
/// zone, each optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Lifetime {
    /// Nothing is shown before (`YYYY-MM-DD HH:MM:SS`), or null.
    #[serde(default)]
    #[schema(example = "2026-12-01 08:00:00")]
    pub from: Option<String>,
    /// Nothing is shown after, or null.
    #[serde(default)]
    #[schema(example = "2026-12-01 20:00:00")]
    pub to: Option<String>,
}

/// What a link shows of one tracker.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TrackerParams {
    /// The members shown besides position and label (may be empty).
    #[serde(default)]
    pub object_data: Vec<ObjectData>,
}

/// A tracker of a link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LinkTracker {
    /// A tracker of the account (217 otherwise).
    pub tracker_id: i64,
    /// The name shown instead of the tracker's label: at most 100 characters, or null.
    #[serde(default)]
    #[schema(max_length = 100)]
    pub alias: Option<String>,
    /// What is shown.
    #[serde(default)]
    pub params: TrackerParams,
}

/// How the page looks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DisplayOptions {
    /// The map: `roadmap`, `satellite`, `hybrid`, `osm`... (the page draws
    /// the server's configured tiles whatever it is), or null.
    #[serde(default)]
    #[schema(max_length = 32, example = "osm")]
    pub map: Option<String>,
    /// Zoom to the trackers (default true).
    #[serde(default = "yes")]
    pub autoscale: bool,
    /// Vehicle icons instead of arrows (default false).
    #[serde(default)]
    pub show_icons: bool,
    /// Driver members may be shown (default false).
    #[serde(default)]
    pub show_driver_info: bool,
    /// Vehicle members may be shown (default false).
    #[serde(default)]
    pub show_vehicle_info: bool,
    /// Seconds of trail drawn behind each tracker, 0 to 86,400 (default 5).
    #[serde(default = "five")]
    #[schema(minimum = 0, maximum = 86400)]
    pub trace_duration: i64,
}

impl Default for DisplayOptions {
    fn default() -> Self {
        Self {
            map: None,
            autoscale: true,
            show_icons: false,
            show_driver_info: false,
            show_vehicle_info: false,
            trace_duration: 5,
        }
    }
}

fn yes() -> bool {
    true
}

fn five() -> i64 {
    5
}

/// A link's `params`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LinkParams {
    /// Zones of the account bounding what is shown (0 to 100; 204 for one not the account's).
    #[serde(default)]
    #[schema(max_items = 100)]
    pub bounding_zone_ids: Vec<i64>,
    /// `inside` or `outside` the zones; required with zones.
    #[serde(default)]
    pub bounding_mode: Option<BoundingMode>,
    /// Places of the account drawn on the map (0 to 100; 204 for one not the account's), or null.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub place_ids: Option<Vec<i64>>,
    /// Answer a short address (default false; the hash is the address either way).
    #[serde(default)]
    pub shorten_url: bool,
    /// How the page looks.
    #[serde(default)]
    pub display_options: DisplayOptions,
}

/// What `create` and `update` take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LinkFields {
    /// When the link shows anything, or null for always.
    #[serde(default)]
    pub lifetime: Option<Lifetime>,
    /// Printable, at most 255 characters.
    #[schema(max_length = 255)]
    pub description: String,
    /// 1 to 100 trackers, each once.
    #[schema(min_items = 1, max_items = 100)]
    pub trackers: Vec<LinkTracker>,
    /// The link's parameters.
    #[serde(default)]
    pub params: LinkParams,
}

/// A stored link.
#[derive(Debug, Clone, PartialEq)]
pub struct GeoLink {
    /// Id.
    pub id: i64,
    /// The key of its public page.
    pub hash: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// The user who created it.
    pub creator_id: i64,
    /// False when switched off.
    pub enabled: bool,
    /// What was stored.
    pub fields: LinkFields,
}

/// A lifetime checked: the texts as stored and their instants.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Instants {
    from_ms: Option<i64>,
    to_ms: Option<i64>,
}

/// Parses a main interface date/time in `zone`; 7 naming `field`.
fn instant_ms(field: impl Into<Cow<'static, str>>, text: &str, zone: &str) -> Result<i64> {
    let field = field.into();
    let naive = NaiveDateTime::parse_from_str(text.trim(), "%Y-%m-%d %H:%M:%S")
        .map_err(|_| Error::invalid(field.clone(), "must be a date/time YYYY-MM-DD HH:MM:SS"))?;
    let zone: chrono_tz::Tz = zone.parse().unwrap_or(chrono_tz::UTC);
    // A time a clock change skips is taken at the later offset; a repeated one at the earlier.
    let local = zone
        .from_local_datetime(&naive)
        .earliest()
        .or_else(|| {
            zone.from_local_datetime(&(naive + chrono::Duration::hours(1)))
                .earliest()
        })
        .ok_or_else(|| Error::invalid(field, "is not a time of the account's zone"))?;
    Ok(local.timestamp_millis())
}

impl LinkFields {
    /// The fields as stored, or code 7 naming the first member that is not
    /// valid; the instants of the lifetime in the caller's zone.
    fn checked(self, zone: &str) -> Result<(Self, Instants)> {
        let description = trimmed_text(
            "description",
            &self.description,
            0,
            MAX_LINK_DESCRIPTION_CHARS,
        )?;
        let mut instants = Instants::default();
        let lifetime = match self.lifetime {
            None => None,
            Some(l) => {
                let from = l.from.map(|t| t.trim().to_owned());
                let to = l.to.map(|t| t.trim().to_owned());
                instants.from_ms = from
                    .as_deref()
                    .map(|t| instant_ms("lifetime.from", t, zone))
                    .transpose()?;
                instants.to_ms = to
                    .as_deref()
                    .map(|t| instant_ms("lifetime.to", t, zone))
                    .transpose()?;
                if let (Some(from), Some(to)) = (instants.from_ms, instants.to_ms) {
                    if to <= from {
                        return Err(Error::invalid("lifetime.to", "must be after lifetime.from"));
                    }
                }
                Some(Lifetime { from, to })
            }
        };
        if self.trackers.is_empty() || self.trackers.len() > MAX_LINK_TRACKERS {
            return Err(Error::invalid(
                "trackers",
                format!(
                    "must hold 1 to {MAX_LINK_TRACKERS} trackers, got {}",
                    self.trackers.len()
                ),
            ));
        }
        let mut trackers = Vec::with_capacity(self.trackers.len());
        for (i, t) in self.trackers.into_iter().enumerate() {
            if trackers
                .iter()
                .any(|seen: &LinkTracker| seen.tracker_id == t.tracker_id)
            {
                return Err(Error::invalid(
                    format!("trackers[{i}].tracker_id"),
                    format!("tracker {} is named twice", t.tracker_id),
                ));
            }
            trackers.push(LinkTracker {
                tracker_id: t.tracker_id,
                alias: optional_text(
                    format!("trackers[{i}].alias"),
                    t.alias.as_deref(),
                    MAX_LINK_ALIAS_CHARS,
                )?,
                params: t.params,
            });
        }
        let params = self.params;
        for (field, ids) in [
            ("params.bounding_zone_ids", Some(&params.bounding_zone_ids)),
            ("params.place_ids", params.place_ids.as_ref()),
        ] {
            if ids.is_some_and(|ids| ids.len() > MAX_LINK_ZONES) {
                return Err(Error::invalid(
                    field,
                    format!("at most {MAX_LINK_ZONES} ids"),
                ));
            }
        }
        if !params.bounding_zone_ids.is_empty() && params.bounding_mode.is_none() {
            return Err(Error::invalid(
                "params.bounding_mode",
                "is required with bounding zones: inside or outside",
            ));
        }
        let display = &params.display_options;
        if !(0..=MAX_TRACE_DURATION_S).contains(&display.trace_duration) {
            return Err(Error::invalid(
                "params.display_options.trace_duration",
                format!("must be 0 to {MAX_TRACE_DURATION_S} seconds"),
            ));
        }
        let map = optional_text("params.display_options.map", display.map.as_deref(), 32)?;
        Ok((
            Self {
                lifetime,
                description,
                trackers,
                params: LinkParams {
                    display_options: DisplayOptions {
                        map,
                        ..params.display_options
                    },
                    ..params
                },
            },
            instants,
        ))
    }
}

/// `link/list`'s sort properties (clarification 42's status order; `$2`
/// is the time of the request in ms).
const LIST_RULES: ListRules = ListRules {
    max_sort_items: 8,
    max_filter_chars: 760,
    properties: &[
        ("id", "l.id"),
        ("create_date", "l.created_at"),
        // No end sorts after every end.
        ("expire_date", "coalesce(l.to_ms, 9223372036854775807)"),
        (
            "trackers",
            "(SELECT group_concat(label, ', ') FROM (SELECT t.label FROM geo_link_trackers lt JOIN trackers t ON t.id = lt.tracker_id WHERE lt.link_id = l.id ORDER BY lt.position)) COLLATE NOCASE",
        ),
        (
            "aliases",
            "(SELECT group_concat(alias, ', ') FROM (SELECT lt.alias FROM geo_link_trackers lt WHERE lt.link_id = l.id AND lt.alias IS NOT NULL ORDER BY lt.position)) COLLATE NOCASE",
        ),
        (
            "status",
            "CASE WHEN NOT l.enabled THEN 3 WHEN l.from_ms > $2 THEN 1 WHEN l.to_ms < $2 THEN 2 ELSE 0 END",
        ),
        (
            "creator",
            "(SELECT u.first_name || ' ' || u.middle_name || ' ' || u.last_name FROM users u WHERE u.id = l.creator_id) COLLATE NOCASE",
        ),
        ("description", "l.description COLLATE NOCASE"),
    ],
    tie_breaker: "l.id",
    min_limit: 0,
};

/// The creator's full name, as conditions and the filter match it.
const CREATOR_NAME: &str = "(SELECT lower(trim(u.first_name || ' ' || u.middle_name || ' ' || u.last_name)) \
     FROM users u WHERE u.id = l.creator_id)";

/// The condition hiding, from a sub-user (`$3`), links with a tracker
/// outside its scope; none for a master.
fn scope(caller: &UserAuth) -> &'static str {
    if caller.is_subuser() {
        " AND NOT EXISTS (SELECT 1 FROM geo_link_trackers lt WHERE lt.link_id = l.id \
         AND lt.tracker_id NOT IN (SELECT tracker_id FROM subuser_trackers WHERE user_id = $3))"
    } else {
        " AND $3 = $3"
    }
}

/// A value bound to a list's SQL.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Bind {
    Int(i64),
    Text(String),
}

/// The members of a link row that [`GeoLink`] is made of.
const LINK_COLUMNS: &str = "l.id, l.hash, l.created_at, l.creator_id, l.enabled, l.description, \
     l.lifetime_from, l.lifetime_to, l.params";

fn link_from_row(row: &SqliteRow, trackers: Vec<LinkTracker>) -> Result<GeoLink> {
    let from: Option<String> = row.try_get("lifetime_from")?;
    let to: Option<String> = row.try_get("lifetime_to")?;
    let params: String = row.try_get("params")?;
    Ok(GeoLink {
        id: row.try_get("id")?,
        hash: row.try_get("hash")?,
        created_at: row.try_get("created_at")?,
        creator_id: row.try_get("creator_id")?,
        enabled: row.try_get("enabled")?,
        fields: LinkFields {
            lifetime: (from.is_some() || to.is_some()).then_some(Lifetime { from, to }),
            description: row.try_get("description")?,
            trackers,
            params: serde_json::from_str(&params).map_err(|e| Error::corrupt("link params", e))?,
        },
    })
}

impl Store {
    /// Stores a link of the caller's account, enabled, with a fresh hash;
    /// its id. 217 for a tracker not the caller's, 204 for a zone or place
    /// not the account's, 268 beyond `quota` links.
    pub async fn create_link(
        &self,
        caller: &UserAuth,
        fields: LinkFields,
        quota: u32,
    ) -> Result<i64> {
        let (fields, instants) = fields.checked(&caller.time_zone)?;
        self.check_link_refs(caller, &fields).await?;
        let hash = Secret::generate()?;
        let now = self.clock.now();
        let mut tx = self.write_tx().await?;
        let id: Option<i64> = sqlx::query_scalar(
            "INSERT INTO geo_links (master_user_id, creator_id, hash, description, enabled, \
             lifetime_from, lifetime_to, from_ms, to_ms, params, description_search, created_at, \
             created_ms) SELECT $1, $2, $3, $4, TRUE, $5, $6, $7, $8, $9, $10, $11, $13 \
             WHERE (SELECT count(*) FROM geo_links WHERE master_user_id = $1) < $12 RETURNING id",
        )
        .bind(caller.master_id.0)
        .bind(caller.user_id.0)
        .bind(hash.expose())
        .bind(&fields.description)
        .bind(fields.lifetime.as_ref().and_then(|l| l.from.as_deref()))
        .bind(fields.lifetime.as_ref().and_then(|l| l.to.as_deref()))
        .bind(instants.from_ms)
        .bind(instants.to_ms)
        .bind(params_json(&fields.params)?)
        .bind(fields.description.to_lowercase())
        .bind(now)
        .bind(i64::from(quota))
        .bind(now.timestamp_millis())
        .fetch_optional(&mut *tx)
        .await?;
        let Some(id) = id else {
            return Err(Error::OverQuota {
                what: "geo links",
                limit: quota,
            });
        };
        insert_trackers(&mut tx, id, &fields.trackers).await?;
        tx.commit().await?;
        Ok(id)
    }

    /// Replaces the lifetime, description, trackers and params of the
    /// caller's link `id` (its hash and state stay); 201 when the caller
    /// sees no such link, else as [`Self::create_link`].
    pub async fn update_link(&self, caller: &UserAuth, id: i64, fields: LinkFields) -> Result<()> {
        let (fields, instants) = fields.checked(&caller.time_zone)?;
        self.check_link_refs(caller, &fields).await?;
        let mut tx = self.write_tx().await?;
        let done = sqlx::query(&format!(
            "UPDATE geo_links AS l SET description = $4, lifetime_from = $5, lifetime_to = $6, \
             from_ms = $7, to_ms = $8, params = $9, description_search = $10 \
             WHERE l.master_user_id = $1 AND l.id = $2{}",
            scope(caller)
        ))
        .bind(caller.master_id.0)
        .bind(id)
        .bind(caller.user_id.0)
        .bind(&fields.description)
        .bind(fields.lifetime.as_ref().and_then(|l| l.from.as_deref()))
        .bind(fields.lifetime.as_ref().and_then(|l| l.to.as_deref()))
        .bind(instants.from_ms)
        .bind(instants.to_ms)
        .bind(params_json(&fields.params)?)
        .bind(fields.description.to_lowercase())
        .execute(&mut *tx)
        .await?;
        records::one_changed(done.rows_affected(), "geo link", id)?;
        sqlx::query("DELETE FROM geo_link_trackers WHERE link_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        insert_trackers(&mut tx, id, &fields.trackers).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Switches the caller's link `id` on or off; 201 when it sees none.
    pub async fn set_link_enabled(&self, caller: &UserAuth, id: i64, enabled: bool) -> Result<()> {
        let done = sqlx::query(&format!(
            "UPDATE geo_links AS l SET enabled = $4 WHERE l.master_user_id = $1 AND l.id = $2{}",
            scope(caller)
        ))
        .bind(caller.master_id.0)
        .bind(id)
        .bind(caller.user_id.0)
        .bind(enabled)
        .execute(&self.pool)
        .await?;
        records::one_changed(done.rows_affected(), "geo link", id)
    }

    /// Deletes the caller's link `id` (its page answers 404 at once); 201 when it sees none.
    pub async fn delete_link(&self, caller: &UserAuth, id: i64) -> Result<()> {
        let done = sqlx::query(&format!(
            "DELETE FROM geo_links AS l WHERE l.master_user_id = $1 AND l.id = $2{}",
            scope(caller)
        ))
        .bind(caller.master_id.0)
        .bind(id)
        .bind(caller.user_id.0)
        .execute(&self.pool)
        .await?;
        records::one_changed(done.rows_affected(), "geo link", id)
    }

    /// The caller's link `id`; 201 when it sees none.
    pub async fn read_link(&self, caller: &UserAuth, id: i64) -> Result<GeoLink> {
        let row = sqlx::query(&format!(
            "SELECT {LINK_COLUMNS} FROM geo_links l WHERE l.master_user_id = $1 AND l.id = $2{}",
            scope(caller)
        ))
        .bind(caller.master_id.0)
        .bind(id)
        .bind(caller.user_id.0)
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| records::not_found("geo link", id))?;
        let mut trackers = self.link_trackers(&[id]).await?;
        link_from_row(&row, trackers.remove(&id).unwrap_or_default())
    }

    /// The caller's links matching `query`'s filter (any member: description,
    /// tracker labels, aliases, and for a master user the creator's name)
    /// and every condition, in `query`'s order (by id without one), paged.
    pub async fn list_links(
        &self,
        caller: &UserAuth,
        query: &ListQuery,
        conditions: &[Condition],
    ) -> Result<Vec<GeoLink>> {
        let list = query.checked(&LIST_RULES)?;
        let mut binds = Vec::new();
        let mut sql = format!(
            "SELECT {LINK_COLUMNS} FROM geo_links l WHERE l.master_user_id = $1 AND $2 = $2{}",
            scope(caller)
        );
        if let Some(pattern) = list.pattern {
            binds.push(Bind::Text(pattern));
            let p = format!("${}", binds.len() + 3);
            let creator = if caller.is_subuser() {
                String::new()
            } else {
                format!(" OR {CREATOR_NAME} LIKE {p} ESCAPE '\\'")
            };
            sql.push_str(&format!(
                " AND (l.description_search LIKE {p} ESCAPE '\\' OR EXISTS (SELECT 1 FROM \
                 geo_link_trackers lt JOIN trackers t ON t.id = lt.tracker_id WHERE \
                 lt.link_id = l.id AND (lower(t.label) LIKE {p} ESCAPE '\\' OR \
                 lt.alias_search LIKE {p} ESCAPE '\\')){creator})"
            ));
        }
        let conditions = conditions::to_sql(conditions, caller, &mut binds, 3)?;
        if let Some(conditions) = conditions {
            sql.push_str(" AND ");
            sql.push_str(&conditions);
        }
        sql.push_str(&format!(
            " ORDER BY {} LIMIT {} OFFSET {}",
            list.order_by, list.limit, list.offset
        ));
        let mut q = sqlx::query(&sql)
            .bind(caller.master_id.0)
            .bind(self.clock.now().timestamp_millis())
            .bind(caller.user_id.0);
        for bind in binds {
            q = match bind {
                Bind::Int(v) => q.bind(v),
                Bind::Text(v) => q.bind(v),
            };
        }
        let rows = q.fetch_all(&self.pool).await?;
        let ids: Vec<i64> = rows
            .iter()
            .map(|r| r.try_get("id"))
            .collect::<std::result::Result<_, _>>()?;
        let mut trackers = self.link_trackers(&ids).await?;
        rows.iter()
            .map(|row| {
                let id: i64 = row.try_get("id")?;
                link_from_row(row, trackers.remove(&id).unwrap_or_default())
            })
            .collect()
    }

    /// The trackers of the links `ids`, by link, in order.
    async fn link_trackers(&self, ids: &[i64]) -> Result<HashMap<i64, Vec<LinkTracker>>> {
        let rows = sqlx::query(
            "SELECT link_id, tracker_id, alias, object_data FROM geo_link_trackers \
             WHERE link_id IN (SELECT value FROM json_each($1)) ORDER BY link_id, position",
        )
        .bind(serde_json::to_string(ids).map_err(|e| Error::corrupt("link ids", e))?)
        .fetch_all(&self.pool)
        .await?;
        let mut by_link: HashMap<i64, Vec<LinkTracker>> = HashMap::new();
        for row in rows {
            let object_data: String = row.try_get("object_data")?;
            by_link
                .entry(row.try_get("link_id")?)
                .or_default()
                .push(LinkTracker {
                    tracker_id: row.try_get("tracker_id")?,
                    alias: row.try_get("alias")?,
                    params: TrackerParams {
                        object_data: serde_json::from_str(&object_data)
                            .map_err(|e| Error::corrupt("link object_data", e))?,
                    },
                });
        }
        Ok(by_link)
    }

    /// 217 unless every tracker is a live tracker the caller sees; 204
    /// unless every zone and place is the account's.
    async fn check_link_refs(&self, caller: &UserAuth, fields: &LinkFields) -> Result<()> {
        let ids: Vec<i64> = fields.trackers.iter().map(|t| t.tracker_id).collect();
        let seen: Vec<i64> = sqlx::query_scalar(&format!(
            "SELECT t.id FROM trackers t WHERE t.user_id = $1 AND t.deleted = FALSE \
             AND t.id IN (SELECT value FROM json_each($2)){}",
            if caller.is_subuser() {
                " AND t.id IN (SELECT tracker_id FROM subuser_trackers WHERE user_id = $3)"
            } else {
                " AND $3 = $3"
            }
        ))
        .bind(caller.master_id.0)
        .bind(serde_json::to_string(&ids).map_err(|e| Error::corrupt("tracker ids", e))?)
        .bind(caller.user_id.0)
        .fetch_all(&self.pool)
        .await?;
        let missing: Vec<i64> = ids.into_iter().filter(|id| !seen.contains(id)).collect();
        if !missing.is_empty() {
            return Err(Error::NonexistentEntities {
                entity: "tracker",
                ids: missing,
            });
        }
        let zones: Vec<ZoneId> = fields
            .params
            .bounding_zone_ids
            .iter()
            .map(|&id| ZoneId(id))
            .collect();
        let found = self.zones_of(caller.master_id, &zones).await?;
        if let Some(id) = first_missing(
            &fields.params.bounding_zone_ids,
            found.iter().map(|z| z.id.map(|z| z.0)),
        ) {
            return Err(Error::NotCallers { entity: "zone", id });
        }
        let place_ids = fields.params.place_ids.as_deref().unwrap_or_default();
        let places: Vec<PlaceId> = place_ids.iter().map(|&id| PlaceId(id)).collect();
        let found = self.places_of(caller.master_id, &places).await?;
        if let Some(id) = first_missing(place_ids, found.iter().map(|p| p.id.map(|p| p.0))) {
            return Err(Error::NotCallers {
                entity: "place",
                id,
            });
        }
        Ok(())
    }
}

/// The first of `wanted` that is not among `found` (204's id).
fn first_missing(wanted: &[i64], found: impl Iterator<Item = Option<i64>>) -> Option<i64> {
    let found: Vec<Option<i64>> = found.collect();
    wanted
        .iter()
        .copied()
        .find(|id| !found.contains(&Some(*id)))
}

fn params_json(params: &LinkParams) -> Result<String> {
    serde_json::to_string(params).map_err(|e| Error::corrupt("link params", e))
}

async fn insert_trackers(
    tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    link: i64,
    trackers: &[LinkTracker],
) -> Result<()> {
    for (position, t) in trackers.iter().enumerate() {
        sqlx::query(
            "INSERT INTO geo_link_trackers (link_id, position, tracker_id, alias, alias_search, \
             object_data) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(link)
        .bind(position as i64)
        .bind(t.tracker_id)
        .bind(&t.alias)
        .bind(t.alias.as_deref().map(str::to_lowercase))
        .bind(
            serde_json::to_string(&t.params.object_data)
                .map_err(|e| Error::corrupt("link object_data", e))?,
        )
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
