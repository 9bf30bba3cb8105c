//! A dealer's activation codes (spec document 2,
//! `/panel/dealer/activation_code/…`, clarification 52): codes for a plan
//! of the dealer, with a bonus and free days, made from the CSPRNG.

use chrono::{DateTime, Utc};
use schemas::DealerId;
use serde::Serialize;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::listing::{ListRules, OrderedQuery};
use crate::{Error, Result, Store, records};

/// Codes one call creates at most.
pub const MAX_CODES_PER_CALL: i64 = 1_000;
/// Codes one update names at most.
pub const MAX_CODES_PER_UPDATE: usize = 10_000;

/// The activation code object of spec document 2.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ActivationCode {
    /// The code: 10 digits.
    #[schema(pattern = "^[0-9]{10}$")]
    pub code: String,
    /// Its plan.
    pub tariff_id: i64,
    /// The plan's name.
    pub tariff_name: String,
    /// The plan's device type.
    pub device_type: String,
    /// Added to the bonus balance at activation.
    pub bonus_amount: i64,
    /// Free days.
    pub free_days: i64,
    /// Added to the user's balance.
    pub money_amount: i64,
    /// Whether a device was activated with it.
    pub activated: bool,
    /// When (UTC, `YYYY-MM-DD HH:MM:SS`), or null.
    #[serde(serialize_with = "crate::model::utc_text")]
    #[schema(value_type = Option<String>)]
    pub activation_date: Option<DateTime<Utc>>,
    /// The device activated with it; 0 before.
    pub device_id: i64,
}

/// What codes give: the plan, a bonus and free days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeTerms {
    /// A plan of the dealer (201 otherwise).
    pub tariff_id: i64,
    /// 0 or more.
    pub bonus_amount: i64,
    /// 0 or more.
    pub free_days: i64,
}

impl CodeTerms {
    fn checked(self) -> Result<Self> {
        if self.bonus_amount < 0 {
            return Err(Error::invalid("bonus_amount", "must be 0 or more"));
        }
        if self.free_days < 0 {
            return Err(Error::invalid("free_days", "must be 0 or more"));
        }
        Ok(self)
    }
}

/// `activation_code/list`: ordered by one property, filtered over the
/// code, plan id, device id and device type.
const CODE_LIST_RULES: ListRules = ListRules {
    max_sort_items: 1,
    max_filter_chars: 255,
    properties: &[
        ("code", "c.code"),
        ("activated", "c.activated"),
        ("tariff_id", "c.plan_id"),
        ("tariff_name", "p.name COLLATE NOCASE"),
        ("device_type", "p.device_type"),
        ("money_amount", "c.money_amount"),
        ("bonus_amount", "c.bonus_amount"),
        ("free_days", "c.free_days"),
    ],
    tie_breaker: "c.code",
    min_limit: 0,
};

impl ActivationCode {
    fn from_row(row: &SqliteRow) -> Result<Self> {
        Ok(Self {
            code: row.try_get("code")?,
            tariff_id: row.try_get("plan_id")?,
            tariff_name: row.try_get("name")?,
            device_type: row.try_get("device_type")?,
            bonus_amount: row.try_get("bonus_amount")?,
            free_days: row.try_get("free_days")?,
            money_amount: row.try_get("money_amount")?,
            activated: row.try_get("activated")?,
            activation_date: row.try_get("activation_date")?,
            device_id: row.try_get("device_id")?,
        })
    }
}

/// A fresh code: 10 decimal digits from the operating system's CSPRNG.
fn new_code() -> Result<String> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::PasswordHash(format!("OS random source failed: {e}")))?;
    // 2^64 is 1.8e9 times 10^10: the modulo's bias is below 1e-9.
    Ok(format!(
        "{:010}",
        u64::from_le_bytes(bytes) % 10_000_000_000
    ))
}

impl Store {
    /// The device type of the dealer's plan `tariff_id`; 201 for another dealer's or none.
    async fn dealer_plan_device_type(&self, dealer: DealerId, plan: i64) -> Result<String> {
        sqlx::query_scalar("SELECT device_type FROM plans WHERE id = $1 AND dealer_id = $2")
            .bind(plan)
            .bind(dealer.0)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| records::not_found("plan", plan))
    }

    /// `activation_code/create`: `count` (1 to 1,000) new codes; how many were made.
    pub async fn create_activation_codes(
        &self,
        dealer: DealerId,
        count: i64,
        terms: CodeTerms,
    ) -> Result<i64> {
        if !(1..=MAX_CODES_PER_CALL).contains(&count) {
            return Err(Error::invalid(
                "count",
                format!("must be 1 to {MAX_CODES_PER_CALL}"),
            ));
        }
        let terms = terms.checked()?;
        self.dealer_plan_device_type(dealer, terms.tariff_id)
            .await?;
        let now = self.clock.now();
        let mut tx = self.write_tx().await?;
        let mut made = 0;
        // A collision (one in 10^10 per code and code held) only costs another draw.
        let mut draws = 0;
        while made < count && draws < count * 10 {
            draws += 1;
            let done = sqlx::query(
                "INSERT INTO activation_codes (code, dealer_id, plan_id, bonus_amount, free_days, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (code) DO NOTHING",
            )
            .bind(new_code()?)
            .bind(dealer.0)
            .bind(terms.tariff_id)
            .bind(terms.bonus_amount)
            .bind(terms.free_days)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            made += i64::try_from(done.rows_affected()).unwrap_or(0);
        }
        tx.commit().await?;
        Ok(made)
    }

    /// `activation_code/list`: a page of the dealer's codes and how many match.
    pub async fn list_activation_codes(
        &self,
        dealer: DealerId,
        query: &OrderedQuery,
    ) -> Result<(Vec<ActivationCode>, i64)> {
        let page = query.checked(&CODE_LIST_RULES)?;
        let from = "FROM activation_codes c JOIN plans p ON p.id = c.plan_id \
                    WHERE c.dealer_id = $1 AND ($2 IS NULL OR c.code LIKE $2 ESCAPE '\\' \
                    OR CAST(c.plan_id AS TEXT) LIKE $2 ESCAPE '\\' \
                    OR CAST(c.device_id AS TEXT) LIKE $2 ESCAPE '\\' \
                    OR p.device_type LIKE $2 ESCAPE '\\')";
        let rows = sqlx::query(&format!(
            "SELECT c.*, p.name, p.device_type {from} ORDER BY {} LIMIT $3 OFFSET $4",
            page.order_by
        ))
        .bind(dealer.0)
        .bind(page.pattern.as_deref())
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(&self.pool)
        .await?;
        let count: i64 = sqlx::query_scalar(&format!("SELECT count(*) {from}"))
            .bind(dealer.0)
            .bind(page.pattern.as_deref())
            .fetch_one(&self.pool)
            .await?;
        let codes = rows
            .iter()
            .map(ActivationCode::from_row)
            .collect::<Result<_>>()?;
        Ok((codes, count))
    }

    /// `activation_code/update`: gives the listed codes of the dealer that
    /// are not activated and whose plan is for the same device type as
    /// `terms.tariff_id` the new terms; how many changed.
    pub async fn update_activation_codes(
        &self,
        dealer: DealerId,
        codes: &[String],
        terms: CodeTerms,
    ) -> Result<i64> {
        if codes.is_empty() || codes.len() > MAX_CODES_PER_UPDATE {
            return Err(Error::invalid(
                "codes",
                format!("must name 1 to {MAX_CODES_PER_UPDATE} codes"),
            ));
        }
        let terms = terms.checked()?;
        let device_type = self
            .dealer_plan_device_type(dealer, terms.tariff_id)
            .await?;
        let codes: Vec<&str> = codes.iter().map(|c| c.trim()).collect();
        let codes = serde_json::to_string(&codes).map_err(|e| Error::corrupt("codes", e))?;
        let done = sqlx::query(
            "UPDATE activation_codes SET plan_id = $1, bonus_amount = $2, free_days = $3 \
             WHERE dealer_id = $4 AND activated = FALSE \
             AND code IN (SELECT value FROM json_each($5)) \
             AND (SELECT device_type FROM plans WHERE id = activation_codes.plan_id) = $6",
        )
        .bind(terms.tariff_id)
        .bind(terms.bonus_amount)
        .bind(terms.free_days)
        .bind(dealer.0)
        .bind(codes)
        .bind(device_type)
        .execute(&self.pool)
        .await?;
        Ok(i64::try_from(done.rows_affected()).unwrap_or(i64::MAX))
    }

    /// Marks a code activated by a tracker (the operation that activates a
    /// code is not in the spec: `trackhouse admin` and tests use this).
    pub async fn activate_code(&self, code: &str, tracker: i64) -> Result<()> {
        let done = sqlx::query(
            "UPDATE activation_codes SET activated = TRUE, activation_date = $1, device_id = $2 \
             WHERE code = $3 AND activated = FALSE",
        )
        .bind(self.clock.now())
        .bind(tracker)
        .bind(code)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(Error::NotFound {
                entity: "activation code (not activated)",
                id: code.to_owned(),
            });
        }
        Ok(())
    }
}
