//! Bills of an account (spec document 3, clarification 45): `bill/create`
//! and `bill/list`, for users with the billing plugin (29).

use chrono::{DateTime, Utc};
use sqlx::Row;

use crate::listing::{ListQuery, ListRules};
use crate::{BILLING_PLUGIN, Error, Result, Store, UserAuth, trimmed_text};

/// A bill as stored; the API writes `created` in the caller's zone and the `link`.
#[derive(Debug, Clone, PartialEq)]
pub struct Bill {
    /// Its id (`order_id`).
    pub order_id: i64,
    /// When it was made.
    pub created: DateTime<Utc>,
    /// The sum, in the panel's default currency.
    pub sum: f64,
    /// `created`, `settled` or `canceled`.
    pub status: String,
    /// Its positions: one text for a bill made by `bill/create`.
    pub positions: Vec<String>,
}

/// `bill/list`: by id, paged (no sort, no filter).
const LIST_RULES: ListRules = ListRules {
    max_sort_items: 0,
    max_filter_chars: 0,
    properties: &[],
    tie_breaker: "id",
    min_limit: 1,
};

impl Store {
    /// 222 unless the billing plugin is available to the caller's account
    /// (`default_plugins`: the configured defaults).
    async fn check_billing(&self, caller: &UserAuth, default_plugins: &[i64]) -> Result<()> {
        if self
            .has_plugin(
                caller.master_id,
                caller.dealer_id,
                default_plugins,
                BILLING_PLUGIN,
            )
            .await?
        {
            Ok(())
        } else {
            Err(Error::PluginUnavailable {
                plugin: BILLING_PLUGIN,
            })
        }
    }

    /// Makes a bill of the caller's account for `payer` (1 to 255
    /// characters) of `sum` (positive); its id. 222 without billing.
    pub async fn create_bill(
        &self,
        caller: &UserAuth,
        default_plugins: &[i64],
        payer: &str,
        sum: f64,
    ) -> Result<i64> {
        self.check_billing(caller, default_plugins).await?;
        let master = caller.master_id;
        let payer = trimmed_text("payer", payer, 1, 255)?;
        if !(sum.is_finite() && sum > 0.0) {
            return Err(Error::invalid("sum", "must be a positive number"));
        }
        let positions = serde_json::to_string(&[format!("Payment by {payer}")])
            .map_err(|e| Error::corrupt("bills.positions", e))?;
        let id = sqlx::query_scalar(
            "INSERT INTO bills (master_user_id, payer, sum, positions, created_at) \
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(master.0)
        .bind(&payer)
        .bind(sum)
        .bind(positions)
        .bind(self.clock.now())
        .fetch_one(&self.pool)
        .await?;
        Ok(id)
    }

    /// The account's bills by id, paged (`limit` 1 to 10,000), and how
    /// many there are in all. 222 without billing.
    pub async fn list_bills(
        &self,
        caller: &UserAuth,
        default_plugins: &[i64],
        page: &ListQuery,
    ) -> Result<(Vec<Bill>, i64)> {
        self.check_billing(caller, default_plugins).await?;
        let master = caller.master_id;
        let checked = page.checked(&LIST_RULES)?;
        let rows = sqlx::query(&format!(
            "SELECT id, created_at, sum, status, positions FROM bills WHERE master_user_id = $1 \
             ORDER BY {} LIMIT $2 OFFSET $3",
            checked.order_by
        ))
        .bind(master.0)
        .bind(checked.limit)
        .bind(checked.offset)
        .fetch_all(&self.pool)
        .await?;
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM bills WHERE master_user_id = $1")
            .bind(master.0)
            .fetch_one(&self.pool)
            .await?;
        let bills = rows
            .iter()
            .map(|row| {
                let positions: String = row.try_get("positions")?;
                Ok(Bill {
                    order_id: row.try_get("id")?,
                    created: row.try_get("created_at")?,
                    sum: row.try_get("sum")?,
                    status: row.try_get("status")?,
                    positions: serde_json::from_str(&positions)
                        .map_err(|e| Error::corrupt("bills.positions", e))?,
                })
            })
            .collect::<Result<_>>()?;
        Ok((bills, count))
    }
}
