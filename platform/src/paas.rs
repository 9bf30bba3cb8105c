//! PaaS plans: what the platform operator sells dealers (the `tariff` of
//! `panel/dealer/get_info`, spec document 2). They are made and assigned
//! with `trackhouse admin paas-tariff create` and `admin dealer update
//! --tariff`; every dealer is on one (the first, "PaaS Standard", by
//! default). A plan's `allows_subpaas` decides whether its dealers may have
//! sub-dealers; its service prices are what they pay (`wholesale_service_prices`).

use schemas::DealerId;
use serde::Serialize;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::{Error, Result, ServicePrices, Store, StorePeriod, check_printable, records};

/// The PaaS plan every dealer is on unless the operator says otherwise.
pub const DEFAULT_PAAS_TARIFF: i64 = 1;

/// The `tariff` object of dealer info.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PaasTariff {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// How it charges (`monthly`).
    #[serde(rename = "type")]
    pub tariff_type: String,
    /// Currency of its prices (ISO 4217).
    pub currency: String,
    /// Price of a license, or null.
    pub license_price: Option<f64>,
    /// Least license payment, or null.
    pub min_license_pay: Option<f64>,
    /// Whether prices include VAT.
    pub vat: bool,
    /// Whether it is a trial.
    pub trial: bool,
    /// Premium maps and geocoding.
    pub premium_gis: bool,
    /// What the dealer pays for services.
    pub service_prices: ServicePrices,
    /// Longest data store period the dealer may sell (ISO 8601: `P1Y`).
    pub store_period: String,
    /// Whether its dealers may have sub-dealers.
    pub allows_subpaas: bool,
}

/// A PaaS plan to make.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPaasTariff {
    /// Name, 1 to 255 characters, unique.
    pub name: String,
    /// Currency (three letters).
    pub currency: String,
    /// Price of a license.
    pub license_price: Option<f64>,
    /// Least license payment.
    pub min_license_pay: Option<f64>,
    /// Prices include VAT.
    pub vat: bool,
    /// A trial.
    pub trial: bool,
    /// Premium GIS.
    pub premium_gis: bool,
    /// Service prices.
    pub service_prices: ServicePrices,
    /// Longest store period.
    pub store_period: StorePeriod,
    /// Sub-dealers allowed.
    pub allows_subpaas: bool,
}

impl PaasTariff {
    pub(crate) fn from_row(row: &SqliteRow) -> Result<Self> {
        let period: String = row.try_get("store_period")?;
        let prices: String = row.try_get("service_prices")?;
        Ok(Self {
            id: row.try_get("id")?,
            name: row.try_get("name")?,
            tariff_type: row.try_get("tariff_type")?,
            currency: row.try_get("currency")?,
            license_price: row.try_get("license_price")?,
            min_license_pay: row.try_get("min_license_pay")?,
            vat: row.try_get("vat")?,
            trial: row.try_get("trial")?,
            premium_gis: row.try_get("premium_gis")?,
            service_prices: serde_json::from_str(&prices).unwrap_or_default(),
            store_period: StorePeriod::parse("store_period", &period)
                .map_err(|e| Error::corrupt("paas_tariffs.store_period", e))?
                .to_iso8601(),
            allows_subpaas: row.try_get("allows_subpaas")?,
        })
    }
}

impl Store {
    /// Makes a PaaS plan; its id. 244 for a name in use.
    pub async fn create_paas_tariff(&self, new: NewPaasTariff) -> Result<i64> {
        check_printable("name", &new.name, 1, 255)?;
        if new.currency.len() != 3 || !new.currency.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(Error::invalid(
                "currency",
                "must be three capital letters (ISO 4217)",
            ));
        }
        for (field, price) in [
            ("license_price", new.license_price),
            ("min_license_pay", new.min_license_pay),
        ] {
            if price.is_some_and(|p| !(p.is_finite() && p >= 0.0)) {
                return Err(Error::invalid(field, "must be 0 or more"));
            }
        }
        let prices = serde_json::to_string(&new.service_prices.checked("service_prices")?)
            .map_err(|e| Error::corrupt("service_prices", e))?;
        sqlx::query_scalar(
            "INSERT INTO paas_tariffs (name, currency, license_price, min_license_pay, vat, trial, \
             premium_gis, service_prices, store_period, allows_subpaas, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
        )
        .bind(&new.name)
        .bind(&new.currency)
        .bind(new.license_price)
        .bind(new.min_license_pay)
        .bind(new.vat)
        .bind(new.trial)
        .bind(new.premium_gis)
        .bind(prices)
        .bind(new.store_period.to_string())
        .bind(new.allows_subpaas)
        .bind(self.clock.now())
        .fetch_one(&self.pool)
        .await
        .map_err(|e| match &e {
            sqlx::Error::Database(db) if db.is_unique_violation() => Error::DuplicateName {
                entity: "PaaS plan",
                name: new.name.clone(),
            },
            _ => Error::from(e),
        })
    }

    /// Puts a dealer on a PaaS plan; 201 for an unknown dealer or plan.
    pub async fn set_dealer_paas_tariff(&self, dealer: DealerId, tariff: i64) -> Result<()> {
        self.check_paas_tariff(tariff).await?;
        let done = sqlx::query("UPDATE dealers SET paas_plan_id = $1 WHERE id = $2")
            .bind(tariff)
            .bind(dealer.0)
            .execute(&self.pool)
            .await?;
        records::one_changed(done.rows_affected(), "dealer", dealer.0)
    }

    /// Creates a dealer on the PaaS plan `tariff` (201 when there is no
    /// such plan, and then no dealer is made).
    pub async fn create_dealer_on(&self, new: crate::NewDealer, tariff: i64) -> Result<DealerId> {
        // PaaS plans are never deleted: checked once, it stays there.
        self.check_paas_tariff(tariff).await?;
        let extras = crate::dealers::DealerExtras {
            paas_tariff: Some(tariff),
            ..Default::default()
        };
        self.insert_dealer(&new, &extras).await
    }

    /// 201 unless the PaaS plan `tariff` exists.
    async fn check_paas_tariff(&self, tariff: i64) -> Result<()> {
        let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM paas_tariffs WHERE id = $1")
            .bind(tariff)
            .fetch_optional(&self.pool)
            .await?;
        match exists {
            Some(_) => Ok(()),
            None => Err(records::not_found("PaaS plan", tariff)),
        }
    }

    /// The PaaS plan a dealer is on.
    pub async fn dealer_paas_tariff(&self, dealer: DealerId) -> Result<PaasTariff> {
        let row = sqlx::query(
            "SELECT t.* FROM dealers d JOIN paas_tariffs t ON t.id = d.paas_plan_id WHERE d.id = $1",
        )
        .bind(dealer.0)
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| records::not_found("dealer", dealer.0))?;
        PaasTariff::from_row(&row)
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_dealer_is_made_on_an_existing_plan_or_not_at_all() {
        let (_dir, store, _, _) = crate::zones::tests::store_with_two_users().await;
        let dealers = || async {
            sqlx::query_scalar::<_, i64>("SELECT count(*) FROM dealers")
                .fetch_one(&store.pool)
                .await
                .unwrap()
        };
        let new = || crate::NewDealer {
            id: None,
            title: "On a plan".into(),
            panel_password: "secret123".into(),
            contract_type: crate::ContractType::Paas,
            permissions: None,
            default_user_time_zone: "UTC".into(),
        };
        let before = dealers().await;
        let refused = store.create_dealer_on(new(), 999).await.unwrap_err();
        assert_eq!(
            schemas::HasCode::code(&refused),
            schemas::ErrorCode::NotFoundInDatabase,
            "{refused}"
        );
        assert_eq!(
            dealers().await,
            before,
            "no dealer is made on an unknown plan"
        );
        let made = store.create_dealer_on(new(), 1).await.unwrap();
        assert_eq!(store.dealer_paas_tariff(made).await.unwrap().id, 1);
        assert_eq!(dealers().await, before + 1);
        // Deleting is final: unblocking does not bring the dealer back.
        store.mark_dealer_deleted(made).await.unwrap();
        let refused = store
            .set_dealer_block_status(made, crate::BlockStatus::NotBlocked)
            .await
            .unwrap_err();
        assert_eq!(
            schemas::HasCode::code(&refused),
            schemas::ErrorCode::NotFoundInDatabase
        );
        let status: String = sqlx::query_scalar("SELECT block_status FROM dealers WHERE id = $1")
            .bind(made.0)
            .fetch_one(&store.pool)
            .await
            .unwrap();
        assert_eq!(status, "BLOCK_LOGIN");
    }
}
