//! Plans, trackers and fuel sensors; what a caller may see of them.

use schemas::{DealerId, PlanId, SensorId, TrackerId, UserId};
use sqlx::Row;

use crate::{Error, Feature, Result, Store, StorePeriod, UserAuth};

mod clones;
mod plan_changes;

/// A plan (tariff) to create for a dealer.
#[derive(Debug, Clone)]
pub struct NewPlan {
    /// The dealer selling it.
    pub dealer_id: DealerId,
    /// Name, unique among the dealer's plans.
    pub name: String,
    /// How long trackers on the plan keep data.
    pub store_period: StorePeriod,
    /// Features the plan includes.
    pub features: Vec<Feature>,
}

/// A tracker to create.
#[derive(Debug, Clone)]
pub struct NewTracker {
    /// The master user who owns it.
    pub user_id: UserId,
    /// Label.
    pub label: String,
    /// Device id (IMEI).
    pub device_id: String,
    /// Device model.
    pub model: String,
    /// Its plan; `None` takes the dealer's default tracker plan, or, with
    /// `store_period`, the dealer's plan with that period and every feature.
    pub plan_id: Option<PlanId>,
    /// Store period to pick a plan by, when `plan_id` is `None`.
    pub store_period: Option<StorePeriod>,
    /// IANA time zone; `None` follows the owner's.
    pub time_zone: Option<String>,
}

/// A tracker with what reads and resampling need to know of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tracker {
    /// Id.
    pub id: TrackerId,
    /// Owner (a master user).
    pub user_id: UserId,
    /// Label.
    pub label: String,
    /// Device id (IMEI).
    pub device_id: String,
    /// Device model.
    pub model: String,
    /// Plan.
    pub plan_id: PlanId,
    /// The plan's store period.
    pub store_period: StorePeriod,
    /// The plan's features.
    pub features: Vec<Feature>,
    /// Blocked.
    pub blocked: bool,
    /// Deleted.
    pub deleted: bool,
    /// The source tracker when this is a clone (another user's view of the
    /// source's device, reading the source's data).
    pub clone_of: Option<TrackerId>,
    /// The tracker's own zone, else the owner's (IANA id).
    pub time_zone: String,
    /// MOVEMENT: moving at or above this speed (km/h).
    pub idle_speed_threshold_kmh: f64,
    /// The column that reports ignition (`states.ignition`, `discrete_inputs.1`).
    pub ignition_source: String,
}

/// A fuel sensor's calibration table: raw input value to litres.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Calibration(pub Vec<(f64, f64)>);

impl Calibration {
    /// Parses `raw:litres,raw:litres,...`; at least two points, raw strictly increasing.
    pub fn parse(field: &'static str, text: &str) -> Result<Self> {
        let points = text
            .split(',')
            .map(|pair| {
                let (raw, litres) = pair
                    .split_once(':')
                    .ok_or_else(|| Error::invalid(field, format!("{pair:?} is not raw:litres")))?;
                let number = |s: &str| {
                    s.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .ok_or_else(|| Error::invalid(field, format!("{s:?} is not a number")))
                };
                Ok((number(raw)?, number(litres)?))
            })
            .collect::<Result<Vec<_>>>()?;
        Self::try_new(field, points)
    }

    /// Checks a table: at least two points, raw values strictly increasing.
    pub fn try_new(field: &'static str, points: Vec<(f64, f64)>) -> Result<Self> {
        if points.len() < 2 {
            return Err(Error::invalid(field, "needs at least two points"));
        }
        if points.windows(2).any(|w| matches!(w, [a, b] if a.0 >= b.0)) {
            return Err(Error::invalid(field, "raw values must increase strictly"));
        }
        Ok(Self(points))
    }
}

/// A fuel sensor of a tracker.
#[derive(Debug, Clone, PartialEq)]
pub struct FuelSensor {
    /// Id.
    pub id: SensorId,
    /// The tracker.
    pub tracker_id: TrackerId,
    /// Name (the resampling column).
    pub name: String,
    /// The raw input it reads, e.g. `lls_level_1`.
    pub input_name: String,
    /// Its calibration table, if any.
    pub calibration: Option<Calibration>,
}

impl Store {
    /// Creates a plan for a dealer (the operator's way, with features); 244
    /// when the dealer has a plan of that name.
    pub async fn create_plan(&self, new: NewPlan) -> Result<PlanId> {
        crate::check_printable("name", &new.name, 1, 255)?;
        let features: Vec<&str> = new.features.iter().map(|f| f.as_str()).collect();
        let id = sqlx::query_scalar::<_, i64>(
            "INSERT INTO plans (dealer_id, name, store_period, features, search_text, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        )
        .bind(new.dealer_id.0)
        .bind(&new.name)
        .bind(new.store_period.to_string())
        .bind(serde_json::to_string(&features).map_err(|e| Error::corrupt("features", e))?)
        .bind(crate::listing::search_text(&[&new.name]))
        .bind(self.clock.now())
        .fetch_one(&self.pool)
        .await
        .map_err(|e| match &e {
            sqlx::Error::Database(db) if db.is_unique_violation() => Error::DuplicateName {
                entity: "plan",
                name: new.name.clone(),
            },
            sqlx::Error::Database(db) if db.is_foreign_key_violation() => Error::NotFound {
                entity: "dealer",
                id: new.dealer_id.to_string(),
            },
            _ => Error::from(e),
        })?;
        Ok(PlanId(id))
    }

    /// Creates a tracker for a master user; 224 when the device id is taken.
    pub async fn create_tracker(&self, new: NewTracker) -> Result<TrackerId> {
        crate::check_printable("label", &new.label, 1, 255)?;
        let device_id = new.device_id.trim();
        if device_id.is_empty()
            || device_id.len() > 64
            || !device_id.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(Error::invalid(
                "device_id",
                "must be 1 to 64 visible ASCII characters",
            ));
        }
        if let Some(zone) = &new.time_zone {
            crate::check_time_zone("time_zone", zone)?;
        }
        let owner = sqlx::query(
            "SELECT dealer_id, master_user_id FROM users WHERE id = $1 AND deleted = FALSE",
        )
        .bind(new.user_id.0)
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| Error::NotFound {
            entity: "user",
            id: new.user_id.to_string(),
        })?;
        if owner.try_get::<Option<i64>, _>("master_user_id")?.is_some() {
            return Err(Error::invalid(
                "user_id",
                "trackers belong to master users, not sub-users",
            ));
        }
        let dealer = DealerId(owner.try_get("dealer_id")?);
        let plan_id = match (new.plan_id, new.store_period) {
            (Some(plan), _) => {
                // As `set_tracker_plan`: the dealer's own plan (201), for trackers (237).
                let device_type: Option<String> = sqlx::query_scalar(
                    "SELECT device_type FROM plans WHERE id = $1 AND dealer_id = $2",
                )
                .bind(plan.0)
                .bind(dealer.0)
                .fetch_optional(&self.pool)
                .await?;
                match device_type.as_deref() {
                    None => {
                        return Err(Error::NotFound {
                            entity: "plan",
                            id: plan.to_string(),
                        });
                    }
                    Some("tracker") => {}
                    Some(other) => {
                        return Err(Error::InvalidPlan {
                            reason: format!(
                                "plan {plan} is for devices of type {other}, not trackers"
                            ),
                        });
                    }
                }
                plan
            }
            (None, Some(period)) => self.plan_with_period(dealer, period).await?,
            (None, None) => self.default_tracker_plan(dealer).await?,
        };
        let id = sqlx::query_scalar::<_, i64>(
            "INSERT INTO trackers (user_id, label, device_id, model, plan_id, time_zone, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        )
        .bind(new.user_id.0)
        .bind(&new.label)
        .bind(device_id)
        .bind(&new.model)
        .bind(plan_id.0)
        .bind(&new.time_zone)
        .bind(self.clock.now())
        .fetch_one(&self.pool)
        .await
        .map_err(|e| match &e {
            sqlx::Error::Database(db) if db.is_unique_violation() => {
                Error::DeviceIdInUse { device_id: device_id.to_owned() }
            }
            _ => Error::from(e),
        })?;
        Ok(TrackerId(id))
    }

    /// The dealer's plan named after `period` with every feature, created on first use.
    async fn plan_with_period(&self, dealer: DealerId, period: StorePeriod) -> Result<PlanId> {
        let name = format!("Standard {period}");
        let existing: Option<i64> =
            sqlx::query_scalar("SELECT id FROM plans WHERE dealer_id = $1 AND name = $2")
                .bind(dealer.0)
                .bind(&name)
                .fetch_optional(&self.pool)
                .await?;
        match existing {
            Some(id) => Ok(PlanId(id)),
            None => {
                let plan = NewPlan {
                    dealer_id: dealer,
                    name,
                    store_period: period,
                    features: Feature::ALL.to_vec(),
                };
                self.create_plan(plan).await
            }
        }
    }

    /// Blocks or unblocks a tracker; takes effect on the next call that names it.
    pub async fn set_tracker_blocked(&self, tracker: TrackerId, blocked: bool) -> Result<()> {
        let done =
            sqlx::query("UPDATE trackers SET blocked = $1 WHERE id = $2 AND deleted = FALSE")
                .bind(blocked)
                .bind(tracker.0)
                .execute(&self.pool)
                .await?;
        if done.rows_affected() == 0 {
            return Err(Error::NotFound {
                entity: "tracker",
                id: tracker.to_string(),
            });
        }
        Ok(())
    }

    /// Sets how `MOVEMENT` is derived (clarification 26): moving at or above
    /// `idle_speed_threshold_kmh`, idle below it while `ignition_source`
    /// (`states.<name>`, `discrete_inputs.<n>` or `inputs.<name>`) is on.
    /// 201 for no such live tracker, 219 for a clone.
    pub async fn set_tracker_movement(
        &self,
        tracker: TrackerId,
        idle_speed_threshold_kmh: f64,
        ignition_source: &str,
    ) -> Result<()> {
        if !(idle_speed_threshold_kmh.is_finite() && idle_speed_threshold_kmh >= 0.0) {
            return Err(Error::invalid(
                "idle_speed_threshold_kmh",
                format!("must be a number of km/h at least 0, got {idle_speed_threshold_kmh}"),
            ));
        }
        // Spelled as the intake stores them: names 1 to 64 of `[A-Za-z0-9_]`,
        // discrete inputs numbered 1 to 65535 without a sign or leading zeros
        // (`discrete_inputs.+1` or `.01` would name a column that never exists).
        let valid_source = match ignition_source.split_once('.') {
            Some(("states" | "inputs", name)) => {
                (1..=64).contains(&name.len())
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            }
            Some(("discrete_inputs", n)) => {
                n.bytes().all(|b| b.is_ascii_digit())
                    && !n.starts_with('0')
                    && n.parse::<u16>().is_ok_and(|n| n >= 1)
            }
            _ => false,
        };
        if !valid_source {
            return Err(Error::invalid(
                "ignition_source",
                format!(
                    "must be states.<name>, inputs.<name> or discrete_inputs.<n>, got {ignition_source:?}"
                ),
            ));
        }
        self.device_tracker(tracker).await?;
        sqlx::query(
            "UPDATE trackers SET idle_speed_threshold_kmh = $1, ignition_source = $2 WHERE id = $3",
        )
        .bind(idle_speed_threshold_kmh)
        .bind(ignition_source)
        .bind(tracker.0)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// A tracker by id, whoever owns it.
    pub async fn tracker(&self, tracker: TrackerId) -> Result<Option<Tracker>> {
        let row = sqlx::query(
            "SELECT t.*, p.store_period, p.features, COALESCE(t.time_zone, u.time_zone) AS zone \
             FROM trackers t JOIN plans p ON p.id = t.plan_id JOIN users u ON u.id = t.user_id WHERE t.id = $1",
        )
        .bind(tracker.0)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|row| tracker_from_row(&row)).transpose()
    }

    /// Each tracker's retention cutoff at `now`: data with an older message
    /// time is past its plan's store period (clarification 19).
    pub async fn retention_cutoffs(
        &self,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<(TrackerId, chrono::DateTime<chrono::Utc>)>> {
        let rows = sqlx::query(
            "SELECT t.id, p.store_period FROM trackers t JOIN plans p ON p.id = t.plan_id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let period: String = row.try_get("store_period")?;
                let period = StorePeriod::parse("store_period", &period)
                    .map_err(|e| Error::corrupt("store_period", e))?;
                Ok((TrackerId(row.try_get("id")?), period.cutoff(now)))
            })
            .collect()
    }

    /// The live tracker holding a device id (IMEI), if any; clones are not device holders.
    pub async fn tracker_by_device_id(&self, device_id: &str) -> Result<Option<Tracker>> {
        let id: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM trackers WHERE device_id = $1 AND deleted = FALSE AND clone_of IS NULL",
        )
        .bind(device_id)
        .fetch_optional(&self.pool)
        .await?;
        match id {
            Some(id) => self.tracker(TrackerId(id)).await,
            None => Ok(None),
        }
    }

    /// A tracker the caller may read: 201 when no such id exists, 204 when it is
    /// not the caller's (or outside a sub-user's scope, or deleted), 208 when blocked.
    ///
    /// For a clone (checked as named: the caller's, in scope, not blocked),
    /// the answer is its source with the clone's time zone: the source's
    /// id, whose telemetry the clone shows, its fuel sensors, movement
    /// settings and store period; 204 when the source is gone, 208 when it
    /// is blocked.
    pub async fn tracker_for(&self, caller: &UserAuth, tracker: TrackerId) -> Result<Tracker> {
        let found = self
            .tracker(tracker)
            .await?
            .ok_or_else(|| Error::NotFound {
                entity: "tracker",
                id: tracker.to_string(),
            })?;
        let not_callers = Error::NotCallers {
            entity: "tracker",
            id: tracker.0,
        };
        if found.user_id != caller.master_id || found.deleted {
            return Err(not_callers);
        }
        if caller.is_subuser() && !self.subuser_sees(caller.user_id, tracker).await? {
            return Err(not_callers);
        }
        if found.blocked {
            return Err(Error::TrackerBlocked {
                tracker_id: tracker.0,
            });
        }
        match found.clone_of {
            Some(source) => self.read_through_clone(found, source).await,
            None => Ok(found),
        }
    }

    async fn subuser_sees(&self, subuser: UserId, tracker: TrackerId) -> Result<bool> {
        let seen: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM subuser_trackers WHERE user_id = $1 AND tracker_id = $2",
        )
        .bind(subuser.0)
        .bind(tracker.0)
        .fetch_optional(&self.pool)
        .await?;
        Ok(seen.is_some())
    }

    /// Trackers that lack `feature` in their plan: among `trackers`, or among
    /// all live trackers of the caller's account when `trackers` is `None`.
    pub async fn trackers_lacking(
        &self,
        caller: &UserAuth,
        feature: Feature,
        trackers: Option<&[TrackerId]>,
    ) -> Result<Vec<TrackerId>> {
        let rows = sqlx::query(
            "SELECT t.id, p.features FROM trackers t JOIN plans p ON p.id = t.plan_id \
             WHERE t.user_id = $1 AND t.deleted = FALSE ORDER BY t.id",
        )
        .bind(caller.master_id.0)
        .fetch_all(&self.pool)
        .await?;
        let mut lacking = Vec::new();
        for row in rows {
            let id = TrackerId(row.try_get("id")?);
            if trackers.is_some_and(|wanted| !wanted.contains(&id)) {
                continue;
            }
            let features = parse_features(&row.try_get::<String, _>("features")?)?;
            if !features.contains(&feature) {
                lacking.push(id);
            }
        }
        Ok(lacking)
    }

    /// Creates a fuel sensor on a tracker; 201 for no such live tracker,
    /// 219 for a clone.
    pub async fn create_fuel_sensor(
        &self,
        tracker: TrackerId,
        name: &str,
        input_name: &str,
        calibration: Option<Calibration>,
    ) -> Result<SensorId> {
        crate::check_printable("name", name, 1, 255)?;
        if input_name.is_empty()
            || !input_name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(Error::invalid(
                "input",
                "must be an input name such as lls_level_1",
            ));
        }
        self.device_tracker(tracker).await?;
        let calibration = calibration
            .map(|c| serde_json::to_string(&c.0))
            .transpose()
            .map_err(|e| Error::corrupt("calibration", e))?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO fuel_sensors (tracker_id, name, input_name, calibration, created_at) \
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(tracker.0)
        .bind(name)
        .bind(input_name)
        .bind(calibration)
        .bind(self.clock.now())
        .fetch_one(&self.pool)
        .await?;
        Ok(SensorId(id))
    }

    /// A live tracker that is not a clone: what a device's own settings
    /// (sensors, movement) belong to. 201 when there is no such live
    /// tracker, 219 for a clone (its source's settings serve it).
    async fn device_tracker(&self, tracker: TrackerId) -> Result<Tracker> {
        let found = self
            .tracker(tracker)
            .await?
            .filter(|t| !t.deleted)
            .ok_or_else(|| Error::NotFound {
                entity: "tracker",
                id: tracker.to_string(),
            })?;
        match found.clone_of {
            Some(source) => Err(Error::NotForClones {
                tracker_id: tracker.0,
                source_id: source.0,
            }),
            None => Ok(found),
        }
    }

    /// The fuel sensors of a tracker, in creation order.
    pub async fn fuel_sensors(&self, tracker: TrackerId) -> Result<Vec<FuelSensor>> {
        let rows = sqlx::query("SELECT id, name, input_name, calibration FROM fuel_sensors WHERE tracker_id = $1 ORDER BY id")
            .bind(tracker.0)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| {
                let calibration: Option<String> = row.try_get("calibration")?;
                Ok(FuelSensor {
                    id: SensorId(row.try_get("id")?),
                    tracker_id: tracker,
                    name: row.try_get("name")?,
                    input_name: row.try_get("input_name")?,
                    calibration: calibration
                        .map(|c| serde_json::from_str(&c).map(Calibration))
                        .transpose()
                        .map_err(|e| Error::corrupt("calibration", e))?,
                })
            })
            .collect()
    }
}

fn parse_features(json: &str) -> Result<Vec<Feature>> {
    let names: Vec<String> =
        serde_json::from_str(json).map_err(|e| Error::corrupt("plan features", e))?;
    // Names this build does not know (a newer release wrote them) are skipped, not fatal.
    Ok(names.iter().filter_map(|n| Feature::parse(n)).collect())
}

fn tracker_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<Tracker> {
    let period: String = row.try_get("store_period")?;
    Ok(Tracker {
        id: TrackerId(row.try_get("id")?),
        user_id: UserId(row.try_get("user_id")?),
        label: row.try_get("label")?,
        device_id: row.try_get("device_id")?,
        model: row.try_get("model")?,
        plan_id: PlanId(row.try_get("plan_id")?),
        store_period: StorePeriod::parse("store_period", &period)
            .map_err(|e| Error::corrupt("store_period", e))?,
        features: parse_features(&row.try_get::<String, _>("features")?)?,
        blocked: row.try_get("blocked")?,
        deleted: row.try_get("deleted")?,
        clone_of: row.try_get::<Option<i64>, _>("clone_of")?.map(TrackerId),
        time_zone: row.try_get("zone")?,
        idle_speed_threshold_kmh: row.try_get("idle_speed_threshold_kmh")?,
        ignition_source: row.try_get("ignition_source")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_tables_parse_and_reject_bad_ones() {
        let c = Calibration::parse("calibration", "0:0, 4095:400").unwrap();
        assert_eq!(c.0, vec![(0.0, 0.0), (4095.0, 400.0)]);
        for bad in [
            "",
            "0:0",
            "0:0,0:10",
            "10:0,5:10",
            "a:1,2:3",
            "1-2,3:4",
            "0:0,inf:3",
        ] {
            assert!(Calibration::parse("calibration", bad).is_err(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn a_tracker_is_made_on_a_tracker_plan_only() {
        let (_dir, store, ann, _) = crate::zones::tests::store_with_two_users().await;
        let dealer: i64 = sqlx::query_scalar("SELECT dealer_id FROM users WHERE id = $1")
            .bind(ann.0)
            .fetch_one(&store.pool)
            .await
            .unwrap();
        let plan = |name: &str, device_type| crate::Plan {
            id: None,
            name: name.into(),
            group_id: 0,
            active: true,
            plan_type: crate::PlanType::Monthly,
            price: 1.0,
            early_change_price: None,
            device_limit: 10,
            has_reports: true,
            store_period: "1m".into(),
            device_type,
            proportional_charge: false,
            service_prices: crate::ServicePrices::default(),
        };
        let camera = store
            .create_dealer_plan(DealerId(dealer), plan("Cams", crate::DeviceType::Camera))
            .await
            .unwrap();
        let trackers = store
            .create_dealer_plan(DealerId(dealer), plan("Trucks", crate::DeviceType::Tracker))
            .await
            .unwrap();
        let new = |plan: i64| NewTracker {
            user_id: ann,
            label: "T".into(),
            device_id: format!("dev-{plan}"),
            model: "fmb920".into(),
            plan_id: Some(PlanId(plan)),
            store_period: None,
            time_zone: None,
        };
        let refused = store.create_tracker(new(camera)).await.unwrap_err();
        assert_eq!(
            schemas::HasCode::code(&refused),
            schemas::ErrorCode::InvalidTariff,
            "{refused}"
        );
        let refused = store.create_tracker(new(999)).await.unwrap_err();
        assert_eq!(
            schemas::HasCode::code(&refused),
            schemas::ErrorCode::NotFoundInDatabase
        );
        store.create_tracker(new(trackers)).await.unwrap();
    }
}
