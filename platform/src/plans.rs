//! A dealer's plans (tariffs) as the panel manages them (spec document 2,
//! `/panel/tariff/…`): create, read, update, list, and the defaults per
//! device type. A plan's `store_period` is the retention of its trackers'
//! data (`Store::retention_cutoffs` reads it at each run).

use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::listing::{ListRules, OrderedQuery, search_text};
use crate::{
    DeviceType, Error, Feature, PlanType, Result, Store, StorePeriod, records, trimmed_text,
};
use schemas::DealerId;

/// Prices of services: SMS, voice calls, traffic (per MB).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ServicePrices {
    /// An incoming SMS.
    #[serde(default)]
    pub incoming_sms: f64,
    /// An outgoing SMS.
    #[serde(default)]
    pub outgoing_sms: f64,
    /// A service SMS.
    #[serde(default)]
    pub service_sms: f64,
    /// A voice notification.
    #[serde(default)]
    pub phone_call: f64,
    /// One MB of traffic.
    #[serde(default)]
    pub traffic: f64,
}

impl ServicePrices {
    /// The prices, or 7 naming the first that is negative or not finite (`field.name`).
    pub(crate) fn checked(self, field: &'static str) -> Result<Self> {
        for (name, value) in [
            ("incoming_sms", self.incoming_sms),
            ("outgoing_sms", self.outgoing_sms),
            ("service_sms", self.service_sms),
            ("phone_call", self.phone_call),
            ("traffic", self.traffic),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(Error::invalid(
                    format!("{field}.{name}"),
                    "must be 0 or more",
                ));
            }
        }
        Ok(self)
    }
}

/// The plan object of spec document 2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Plan {
    /// Its id: answered by read and list, required by update, ignored by create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// Name, 1 to 255 characters, unique among the dealer's plans (244).
    #[schema(min_length = 1, max_length = 255, example = "Fleet Pro")]
    pub name: String,
    /// Plan group number (0 or more).
    #[serde(default)]
    pub group_id: i64,
    /// Whether a user may change to this plan.
    #[serde(default = "yes")]
    pub active: bool,
    /// `monthly`, or `activeday` (trackers only: 214).
    #[serde(rename = "type")]
    pub plan_type: PlanType,
    /// Subscription price, usually per month (0 or more).
    #[serde(default)]
    pub price: f64,
    /// Price of a change within 30 days of the last one; null: such changes are not allowed.
    #[serde(default)]
    pub early_change_price: Option<f64>,
    /// Devices per user at most (0 or more).
    #[serde(default = "thousand")]
    pub device_limit: i64,
    /// Whether reports are included.
    #[serde(default = "yes")]
    pub has_reports: bool,
    /// Data storage period: `2h`, `3d`, `12m`, `1y`; it is the retention of the plan's trackers.
    #[schema(example = "12m")]
    pub store_period: String,
    /// The device type (not changed by update).
    #[serde(default = "tracker")]
    pub device_type: DeviceType,
    /// Whether the monthly fee shrinks for days the device was blocked (monthly plans).
    #[serde(default)]
    pub proportional_charge: bool,
    /// Service prices.
    #[serde(default)]
    pub service_prices: ServicePrices,
}

fn yes() -> bool {
    true
}

fn thousand() -> i64 {
    1000
}

fn tracker() -> DeviceType {
    DeviceType::Tracker
}

/// The defaults of one device type.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PlanDefaults {
    /// The default plan of the device type (null: none).
    pub tariff_id: Option<i64>,
    /// Money added to the bonus balance when a device is registered (0 or more).
    #[serde(default)]
    pub activation_bonus: f64,
    /// Free days after registration (0 or more).
    #[serde(default)]
    pub free_days: i64,
    /// Activated devices of a user with a free period at most; null: no limit.
    #[serde(default)]
    pub free_days_device_limit: Option<i64>,
}

/// A page of a dealer's plans.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlanQuery {
    /// Only plans for this device type.
    pub device_type: Option<DeviceType>,
    /// The order (one of `id`, `name`, `device_type`, `group_id`, `price`), the filter and the page.
    pub list: OrderedQuery,
}

/// `tariff/list`: ordered by one property, filtered over id, name, price
/// and device type.
pub(crate) const PLAN_LIST_RULES: ListRules = ListRules {
    max_sort_items: 1,
    max_filter_chars: 255,
    properties: &[
        ("id", "p.id"),
        ("name", "p.name COLLATE NOCASE"),
        ("device_type", "p.device_type"),
        ("group_id", "p.group_id"),
        ("price", "p.price"),
    ],
    tie_breaker: "p.id",
    min_limit: 0,
};

impl Plan {
    fn checked(self, field: &'static str) -> Result<Self> {
        let at = |member: &str| format!("{field}.{member}");
        let non_negative = |member: &str, value: f64| {
            if value.is_finite() && value >= 0.0 {
                Ok(value)
            } else {
                Err(Error::invalid(at(member), "must be 0 or more"))
            }
        };
        if self.plan_type == PlanType::Activeday && self.device_type != DeviceType::Tracker {
            return Err(Error::NotSupportedByDevice {
                reason: format!(
                    "plans of type activeday are for trackers only, not for {}",
                    self.device_type
                ),
            });
        }
        if self.group_id < 0 {
            return Err(Error::invalid(at("group_id"), "must be 0 or more"));
        }
        if self.device_limit < 0 {
            return Err(Error::invalid(at("device_limit"), "must be 0 or more"));
        }
        StorePeriod::parse("tariff.store_period", &self.store_period)?;
        Ok(Self {
            name: trimmed_text(at("name"), &self.name, 1, 255)?,
            price: non_negative("price", self.price)?,
            early_change_price: self
                .early_change_price
                .map(|p| non_negative("early_change_price", p))
                .transpose()?,
            store_period: self.store_period.trim().to_owned(),
            service_prices: self.service_prices.checked("tariff.service_prices")?,
            ..self
        })
    }

    fn from_row(row: &SqliteRow) -> Result<Self> {
        let text = |name: &str| -> Result<String> { Ok(row.try_get::<String, _>(name)?) };
        let service_prices: ServicePrices =
            serde_json::from_str(&text("service_prices")?).unwrap_or_default();
        Ok(Self {
            id: Some(row.try_get("id")?),
            name: text("name")?,
            group_id: row.try_get("group_id")?,
            active: row.try_get("active")?,
            plan_type: PlanType::parse("plan_type", &text("plan_type")?)
                .map_err(|e| Error::corrupt("plans.plan_type", e))?,
            price: row.try_get("price")?,
            early_change_price: row.try_get("early_change_price")?,
            device_limit: row.try_get("device_limit")?,
            has_reports: row.try_get("has_reports")?,
            store_period: text("store_period")?,
            device_type: DeviceType::parse("device_type", &text("device_type")?)
                .map_err(|e| Error::corrupt("plans.device_type", e))?,
            proportional_charge: row.try_get("proportional_charge")?,
            service_prices,
        })
    }
}

fn duplicate(e: sqlx::Error, name: &str) -> Error {
    match &e {
        sqlx::Error::Database(db) if db.is_unique_violation() => Error::DuplicateName {
            entity: "plan",
            name: name.to_owned(),
        },
        _ => Error::from(e),
    }
}

fn prices_json(prices: &ServicePrices) -> Result<String> {
    serde_json::to_string(prices).map_err(|e| Error::corrupt("service_prices", e))
}

const PLAN_COLUMNS: &str = "p.id, p.name, p.group_id, p.active, p.plan_type, p.price, \
     p.early_change_price, p.device_limit, p.has_reports, p.store_period, p.device_type, \
     p.proportional_charge, p.service_prices";

impl Store {
    /// `tariff/create`: a plan of the dealer with every feature; its id.
    /// 214 for `activeday` on another device than a tracker, 244 for a
    /// name the dealer already uses.
    pub async fn create_dealer_plan(&self, dealer: DealerId, plan: Plan) -> Result<i64> {
        let plan = plan.checked("tariff")?;
        let features: Vec<&str> = Feature::ALL.iter().map(|f| f.as_str()).collect();
        let id = sqlx::query_scalar(
            "INSERT INTO plans (dealer_id, name, group_id, active, plan_type, price, \
             early_change_price, device_limit, has_reports, store_period, device_type, \
             proportional_charge, service_prices, features, search_text, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING id",
        )
        .bind(dealer.0)
        .bind(&plan.name)
        .bind(plan.group_id)
        .bind(plan.active)
        .bind(plan.plan_type.as_str())
        .bind(plan.price)
        .bind(plan.early_change_price)
        .bind(plan.device_limit)
        .bind(plan.has_reports)
        .bind(&plan.store_period)
        .bind(plan.device_type.as_str())
        .bind(plan.proportional_charge)
        .bind(prices_json(&plan.service_prices)?)
        .bind(serde_json::to_string(&features).map_err(|e| Error::corrupt("features", e))?)
        .bind(search_text(&[&plan.name]))
        .bind(self.clock.now())
        .fetch_one(&self.pool)
        .await
        .map_err(|e| duplicate(e, &plan.name))?;
        Ok(id)
    }

    /// `tariff/read`: the dealer's plan; 201 when it has none with this id.
    pub async fn dealer_plan(&self, dealer: DealerId, id: i64) -> Result<Plan> {
        let row = sqlx::query(&format!(
            "SELECT {PLAN_COLUMNS} FROM plans p WHERE p.id = $1 AND p.dealer_id = $2"
        ))
        .bind(id)
        .bind(dealer.0)
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| records::not_found("plan", id))?;
        Plan::from_row(&row)
    }

    /// `tariff/update`: replaces every member of the dealer's plan `tariff.id`
    /// but its device type (214 and 244 as for create; 201 for another
    /// dealer's plan). A new `store_period` is the retention of the plan's
    /// trackers from the next retention run.
    pub async fn update_dealer_plan(&self, dealer: DealerId, plan: Plan) -> Result<()> {
        let id = records::required_id("tariff.id", plan.id)?;
        let current = self.dealer_plan(dealer, id).await?;
        let plan = Plan {
            device_type: current.device_type,
            ..plan
        }
        .checked("tariff")?;
        let done = sqlx::query(
            "UPDATE plans SET name = $1, group_id = $2, active = $3, plan_type = $4, price = $5, \
             early_change_price = $6, device_limit = $7, has_reports = $8, store_period = $9, \
             proportional_charge = $10, service_prices = $11, search_text = $12 \
             WHERE id = $13 AND dealer_id = $14",
        )
        .bind(&plan.name)
        .bind(plan.group_id)
        .bind(plan.active)
        .bind(plan.plan_type.as_str())
        .bind(plan.price)
        .bind(plan.early_change_price)
        .bind(plan.device_limit)
        .bind(plan.has_reports)
        .bind(&plan.store_period)
        .bind(plan.proportional_charge)
        .bind(prices_json(&plan.service_prices)?)
        .bind(search_text(&[&plan.name]))
        .bind(id)
        .bind(dealer.0)
        .execute(&self.pool)
        .await
        .map_err(|e| duplicate(e, &plan.name))?;
        records::one_changed(done.rows_affected(), "plan", id)
    }

    /// `tariff/list`: a page of the dealer's plans and how many match in all.
    pub async fn list_dealer_plans(
        &self,
        dealer: DealerId,
        query: &PlanQuery,
    ) -> Result<(Vec<Plan>, i64)> {
        let page = query.list.checked(&PLAN_LIST_RULES)?;
        let filter = " AND ($3 IS NULL OR p.search_text LIKE $3 ESCAPE '\\' \
                      OR CAST(p.id AS TEXT) LIKE $3 ESCAPE '\\' \
                      OR CAST(p.price AS TEXT) LIKE $3 ESCAPE '\\' \
                      OR p.device_type LIKE $3 ESCAPE '\\')";
        let from = format!(
            "FROM plans p WHERE p.dealer_id = $1 AND ($2 IS NULL OR p.device_type = $2){filter}"
        );
        let device_type = query.device_type.map(DeviceType::as_str);
        let rows = sqlx::query(&format!(
            "SELECT {PLAN_COLUMNS} {from} ORDER BY {} LIMIT $4 OFFSET $5",
            page.order_by
        ))
        .bind(dealer.0)
        .bind(device_type)
        .bind(page.pattern.as_deref())
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(&self.pool)
        .await?;
        let count: i64 = sqlx::query_scalar(&format!("SELECT count(*) {from}"))
            .bind(dealer.0)
            .bind(device_type)
            .bind(page.pattern.as_deref())
            .fetch_one(&self.pool)
            .await?;
        let plans = rows.iter().map(Plan::from_row).collect::<Result<_>>()?;
        Ok((plans, count))
    }

    /// What the dealer pays for services: its PaaS plan's prices.
    pub async fn wholesale_service_prices(&self, dealer: DealerId) -> Result<ServicePrices> {
        Ok(self.dealer_paas_tariff(dealer).await?.service_prices)
    }

    /// `tariff/defaults/read`: the defaults of trackers and cameras.
    pub async fn plan_defaults(&self, dealer: DealerId) -> Result<(PlanDefaults, PlanDefaults)> {
        let rows = sqlx::query(
            "SELECT device_type, plan_id, activation_bonus, free_days, free_days_device_limit \
             FROM plan_defaults WHERE dealer_id = $1",
        )
        .bind(dealer.0)
        .fetch_all(&self.pool)
        .await?;
        let none = PlanDefaults {
            tariff_id: None,
            activation_bonus: 0.0,
            free_days: 0,
            free_days_device_limit: None,
        };
        let (mut tracker, mut camera) = (none, none);
        for row in &rows {
            let defaults = PlanDefaults {
                tariff_id: row.try_get("plan_id")?,
                activation_bonus: row.try_get("activation_bonus")?,
                free_days: row.try_get("free_days")?,
                free_days_device_limit: row.try_get("free_days_device_limit")?,
            };
            match row.try_get::<String, _>("device_type")?.as_str() {
                "tracker" => tracker = defaults,
                "camera" => camera = defaults,
                _ => {}
            }
        }
        Ok((tracker, camera))
    }

    /// `tariff/defaults/update`: the defaults of `device_type`. 239 when the
    /// dealer has no plan `tariff_id`, 237 when it is for another device type.
    pub async fn update_plan_defaults(
        &self,
        dealer: DealerId,
        device_type: DeviceType,
        field: &'static str,
        defaults: PlanDefaults,
    ) -> Result<()> {
        let at = |member: &str| format!("{field}.{member}");
        if !(defaults.activation_bonus.is_finite() && defaults.activation_bonus >= 0.0) {
            return Err(Error::invalid(at("activation_bonus"), "must be 0 or more"));
        }
        if defaults.free_days < 0 {
            return Err(Error::invalid(at("free_days"), "must be 0 or more"));
        }
        if defaults.free_days_device_limit.is_some_and(|l| l < 0) {
            return Err(Error::invalid(
                at("free_days_device_limit"),
                "must be 0 or more",
            ));
        }
        let Some(plan_id) = defaults.tariff_id else {
            return Err(Error::invalid(at("tariff_id"), "is required"));
        };
        let plan_type: Option<String> =
            sqlx::query_scalar("SELECT device_type FROM plans WHERE id = $1 AND dealer_id = $2")
                .bind(plan_id)
                .bind(dealer.0)
                .fetch_optional(&self.pool)
                .await?;
        match plan_type {
            None => return Err(Error::NewPlanNotFound { plan_id }),
            Some(t) if t != device_type.as_str() => {
                return Err(Error::InvalidPlan {
                    reason: format!("plan {plan_id} is for {t}, not for {device_type}"),
                });
            }
            Some(_) => {}
        }
        sqlx::query(
            "INSERT INTO plan_defaults (dealer_id, device_type, plan_id, activation_bonus, free_days, \
             free_days_device_limit) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (dealer_id, device_type) DO UPDATE SET plan_id = excluded.plan_id, \
             activation_bonus = excluded.activation_bonus, free_days = excluded.free_days, \
             free_days_device_limit = excluded.free_days_device_limit",
        )
        .bind(dealer.0)
        .bind(device_type.as_str())
        .bind(plan_id)
        .bind(defaults.activation_bonus)
        .bind(defaults.free_days)
        .bind(defaults.free_days_device_limit)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
