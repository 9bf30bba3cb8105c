//! Dealers, their panel accounts, permissions and panel sessions.

use std::collections::BTreeMap;

use schemas::{DealerId, PlanId};
use serde::Serialize;
use sqlx::Row;

use crate::credentials::PanelAuth;
use crate::secret::{hash_password, verify_password};
use crate::{
    BlockStatus, ContractType, Error, PaasTariff, Permission, Result, Secret, Store, StorePeriod,
};

/// A dealer to create, with its panel account.
#[derive(Debug, Clone)]
pub struct NewDealer {
    /// The dealer's id and so its panel login; `None` picks the next free one.
    pub id: Option<DealerId>,
    /// Title.
    pub title: String,
    /// Password of the panel account.
    pub panel_password: String,
    /// Contract type.
    pub contract_type: ContractType,
    /// Permissions of the panel account; `None` grants all.
    pub permissions: Option<Vec<Permission>>,
    /// Time zone of the dealer's new users.
    pub default_user_time_zone: String,
}

/// What a dealer may be created with beyond [`NewDealer`] (sub-dealers).
#[derive(Debug, Clone)]
pub(crate) struct DealerExtras {
    pub(crate) parent: Option<DealerId>,
    pub(crate) paas_tariff: Option<i64>,
    pub(crate) block_status: BlockStatus,
    pub(crate) legal_name: String,
    pub(crate) email: String,
    pub(crate) jur_country: String,
    pub(crate) domain: String,
    pub(crate) contact_fio: String,
    pub(crate) contact_post: String,
    pub(crate) contact_phone: String,
}

impl Default for DealerExtras {
    fn default() -> Self {
        Self {
            parent: None,
            paas_tariff: None,
            block_status: BlockStatus::NotBlocked,
            legal_name: String::new(),
            email: String::new(),
            jur_country: String::new(),
            domain: String::new(),
            contact_fio: String::new(),
            contact_post: String::new(),
            contact_phone: String::new(),
        }
    }
}

/// The dealer info of `/panel/dealer/get_info`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DealerInfo {
    /// Dealer id.
    pub id: i64,
    /// Seller id.
    pub seller_id: Option<i64>,
    /// Parent dealer id.
    pub parent_dealer_id: Option<i64>,
    /// Contract type.
    pub contract_type: ContractType,
    /// The PaaS plan id.
    pub tariff_id: Option<i64>,
    /// The PaaS plan.
    pub tariff: PaasTariff,
    /// True for trial PaaS plans.
    pub demo_tariff: bool,
    /// End of the trackers' plan period, or null.
    pub tracker_tariff_end_date: Option<String>,
    /// End of the trial, or null.
    pub demo_ends: Option<String>,
    /// When the PaaS was paid for (the dealer's creation day, `YYYY-MM-DD`).
    pub paas_activation_date: String,
    /// License balance.
    pub license_balance: f64,
    /// The currency the dealer pays in (its PaaS plan's).
    pub seller_currency: String,
    /// Title.
    pub title: String,
    /// Block status.
    pub block_status: BlockStatus,
    /// Legal name.
    pub legal_name: String,
    /// Active trackers including sub-dealers'.
    pub active_amount: i64,
    /// Active trackers of the dealer's own users.
    pub active_amount_own: i64,
    /// Active trackers of sub-dealers.
    pub active_amount_subpaas: i64,
    /// Limit of active trackers.
    pub active_limit: i64,
    /// Default locale.
    pub locale: String,
    /// Domain.
    pub domain: String,
    /// Favicon path or URL.
    pub favicon: Option<String>,
    /// Logo path or URL.
    pub logo: Option<String>,
    /// Trackers enabled.
    pub enable_trackers: bool,
    /// Cameras enabled.
    pub enable_cameras: bool,
    /// Allowed dealer features.
    pub features: Vec<String>,
    /// Maximum store period of the dealer's default tracker plan (ISO 8601).
    pub store_period: String,
    /// Time zone of users created in the panel.
    pub default_user_time_zone: String,
}

impl Store {
    /// Creates a dealer, its panel account and its default tracker plan.
    pub async fn create_dealer(&self, new: NewDealer) -> Result<DealerId> {
        self.insert_dealer(&new, &DealerExtras::default()).await
    }

    /// Creates a dealer with the members only sub-dealers are made with.
    pub(crate) async fn insert_dealer(
        &self,
        new: &NewDealer,
        extras: &DealerExtras,
    ) -> Result<DealerId> {
        crate::check_printable("title", &new.title, 1, 255)?;
        crate::check_printable("panel_password", &new.panel_password, 6, 40)?;
        crate::check_time_zone("default_user_time_zone", &new.default_user_time_zone)?;
        if let Some(DealerId(id)) = new.id {
            if id <= 0 {
                return Err(Error::invalid("panel_login", "must be a positive number"));
            }
        }
        let password_hash = hash_password(&new.panel_password).await?;
        let now = self.clock.now();
        let mut tx = self.write_tx().await?;
        let exists = match new.id {
            Some(id) => sqlx::query("SELECT 1 FROM dealers WHERE id = $1")
                .bind(id.0)
                .fetch_optional(&mut *tx)
                .await?
                .is_some(),
            None => false,
        };
        if let (true, Some(id)) = (exists, new.id) {
            return Err(Error::AlreadyExists {
                entity: "dealer",
                id: id.0,
            });
        }
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO dealers (id, title, contract_type, default_user_time_zone, paas_plan_id, \
             parent_dealer_id, block_status, legal_name, email, jur_country, domain, contact_fio, \
             contact_post, contact_phone, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id",
        )
        .bind(new.id.map(|d| d.0))
        .bind(&new.title)
        .bind(new.contract_type.as_str())
        .bind(&new.default_user_time_zone)
        .bind(extras.paas_tariff.unwrap_or(crate::DEFAULT_PAAS_TARIFF))
        .bind(extras.parent.map(|p| p.0))
        .bind(extras.block_status.as_str())
        .bind(&extras.legal_name)
        .bind(&extras.email)
        .bind(&extras.jur_country)
        .bind(&extras.domain)
        .bind(&extras.contact_fio)
        .bind(&extras.contact_post)
        .bind(&extras.contact_phone)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        let all_features: Vec<&str> = crate::Feature::ALL.iter().map(|f| f.as_str()).collect();
        let plan_id: i64 = sqlx::query_scalar(
            "INSERT INTO plans (dealer_id, name, store_period, features, search_text, created_at) \
             VALUES ($1, 'Standard', $2, $3, 'standard', $4) RETURNING id",
        )
        .bind(id)
        .bind(StorePeriod::DEFAULT.to_string())
        .bind(serde_json::to_string(&all_features).map_err(|e| Error::corrupt("features", e))?)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO plan_defaults (dealer_id, device_type, plan_id) VALUES ($1, 'tracker', $2)",
        )
        .bind(id)
        .bind(plan_id)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO panel_accounts (dealer_id, password_hash, created_at) VALUES ($1, $2, $3)",
        )
        .bind(id)
        .bind(&password_hash)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let permissions = new
            .permissions
            .clone()
            .unwrap_or_else(|| Permission::ALL.to_vec());
        for permission in permissions {
            sqlx::query("INSERT INTO panel_permissions (dealer_id, permission) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                .bind(id)
                .bind(permission.as_str())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(DealerId(id))
    }

    /// Sets a dealer's block status; takes effect on the next call of its
    /// sessions. A deleted dealer is 201: deleting is final, and unblocking
    /// must not let its login in again.
    pub async fn set_dealer_block_status(
        &self,
        dealer: DealerId,
        status: BlockStatus,
    ) -> Result<()> {
        let done =
            sqlx::query("UPDATE dealers SET block_status = $1 WHERE id = $2 AND deleted = FALSE")
                .bind(status.as_str())
                .bind(dealer.0)
                .execute(&self.pool)
                .await?;
        if done.rows_affected() == 0 {
            return Err(Error::NotFound {
                entity: "dealer",
                id: dealer.to_string(),
            });
        }
        Ok(())
    }

    /// Marks a dealer deleted (the operator's act: no panel call deletes a
    /// dealer). Its records stay; its sessions end, and as a sub-dealer it
    /// reads `DELETED` and refuses every change (13).
    pub async fn mark_dealer_deleted(&self, dealer: DealerId) -> Result<()> {
        let mut tx = self.write_tx().await?;
        let done = sqlx::query(
            "UPDATE dealers SET deleted = TRUE, block_status = 'BLOCK_LOGIN' WHERE id = $1",
        )
        .bind(dealer.0)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(Error::NotFound {
                entity: "dealer",
                id: dealer.to_string(),
            });
        }
        sqlx::query("DELETE FROM panel_sessions WHERE dealer_id = $1")
            .bind(dealer.0)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// The default tracker plan of a dealer.
    pub async fn default_tracker_plan(&self, dealer: DealerId) -> Result<PlanId> {
        let plan: Option<Option<i64>> = sqlx::query_scalar(
            "SELECT pd.plan_id FROM dealers d LEFT JOIN plan_defaults pd \
             ON pd.dealer_id = d.id AND pd.device_type = 'tracker' WHERE d.id = $1",
        )
        .bind(dealer.0)
        .fetch_optional(&self.pool)
        .await?;
        match plan {
            None => Err(Error::NotFound {
                entity: "dealer",
                id: dealer.to_string(),
            }),
            Some(None) => Err(Error::corrupt("dealer", "has no default tracker plan")),
            Some(Some(id)) => Ok(PlanId(id)),
        }
    }

    /// Logs a dealer into the panel: `login` is the dealer id as text.
    ///
    /// Unknown dealer: 12; wrong password: 102; blocked dealer: 11 (checked
    /// after the password, so the status is not revealed to guessers).
    pub async fn panel_login(&self, login: &str, password: &str) -> Result<(Secret, PanelAuth)> {
        let not_found = || Error::DealerNotFound {
            login: login.to_owned(),
        };
        // Checked before any hashing: an arbitrary long password costs argon2 time.
        crate::check_printable("password", password, 1, 40)?;
        let dealer_id: i64 = login.trim().parse().map_err(|_| not_found())?;
        let row = sqlx::query(
            "SELECT d.block_status, a.password_hash FROM dealers d \
             JOIN panel_accounts a ON a.dealer_id = d.id WHERE d.id = $1",
        )
        .bind(dealer_id)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else {
            // Spend the time a real check would, so ids cannot be enumerated by timing.
            verify_password(password, None).await?;
            return Err(not_found());
        };
        let status: String = row.try_get("block_status")?;
        let hash: String = row.try_get("password_hash")?;
        if !verify_password(password, Some(hash)).await? {
            return Err(Error::WrongLoginOrPassword);
        }
        let status = BlockStatus::parse("block_status", &status)
            .map_err(|e| Error::corrupt("block_status", e))?;
        if !status.allows_panel() {
            return Err(Error::DealerBlocked {
                dealer_id,
                status: status.as_str(),
            });
        }
        let secret = Secret::generate()?;
        let now = self.clock.now();
        sqlx::query("INSERT INTO panel_sessions (token_digest, dealer_id, created_at, expires_at) VALUES ($1, $2, $3, $4)")
            .bind(secret.digest())
            .bind(dealer_id)
            .bind(now)
            .bind(now + self.config.panel_session_ttl)
            .execute(&self.pool)
            .await?;
        let permissions = self.panel_permissions(DealerId(dealer_id)).await?;
        Ok((
            secret,
            PanelAuth {
                dealer_id: DealerId(dealer_id),
                permissions,
            },
        ))
    }

    /// Resolves a panel session: 4 when unknown or expired, 11 when the dealer is blocked.
    pub async fn authenticate_panel(&self, secret: &Secret) -> Result<PanelAuth> {
        let row = sqlx::query(
            "SELECT s.dealer_id, s.expires_at, d.block_status FROM panel_sessions s \
             JOIN dealers d ON d.id = s.dealer_id WHERE s.token_digest = $1",
        )
        .bind(secret.digest())
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::CredentialNotFound)?;
        let dealer_id: i64 = row.try_get("dealer_id")?;
        let expires_at: chrono::DateTime<chrono::Utc> = row.try_get("expires_at")?;
        if expires_at <= self.clock.now() {
            sqlx::query("DELETE FROM panel_sessions WHERE token_digest = $1")
                .bind(secret.digest())
                .execute(&self.pool)
                .await?;
            return Err(Error::CredentialNotFound);
        }
        let status: String = row.try_get("block_status")?;
        let status = BlockStatus::parse("block_status", &status)
            .map_err(|e| Error::corrupt("block_status", e))?;
        if !status.allows_panel() {
            return Err(Error::DealerBlocked {
                dealer_id,
                status: status.as_str(),
            });
        }
        let permissions = self.panel_permissions(DealerId(dealer_id)).await?;
        Ok(PanelAuth {
            dealer_id: DealerId(dealer_id),
            permissions,
        })
    }

    /// Ends a panel session.
    pub async fn panel_logout(&self, secret: &Secret) -> Result<()> {
        sqlx::query("DELETE FROM panel_sessions WHERE token_digest = $1")
            .bind(secret.digest())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn panel_permissions(&self, dealer: DealerId) -> Result<Vec<Permission>> {
        let names: Vec<String> =
            sqlx::query_scalar("SELECT permission FROM panel_permissions WHERE dealer_id = $1")
                .bind(dealer.0)
                .fetch_all(&self.pool)
                .await?;
        let mut permissions = names
            .iter()
            .map(|name| {
                Permission::parse(name).ok_or_else(|| Error::corrupt("panel permission", name))
            })
            .collect::<Result<Vec<_>>>()?;
        permissions.sort();
        Ok(permissions)
    }

    /// The dealer info of the panel's `get_info` call.
    pub async fn dealer_info(&self, dealer: DealerId) -> Result<DealerInfo> {
        let row = sqlx::query(
            "SELECT d.*, p.store_period AS plan_store_period FROM dealers d \
             LEFT JOIN plan_defaults pd ON pd.dealer_id = d.id AND pd.device_type = 'tracker' \
             LEFT JOIN plans p ON p.id = pd.plan_id WHERE d.id = $1",
        )
        .bind(dealer.0)
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| Error::NotFound {
            entity: "dealer",
            id: dealer.to_string(),
        })?;
        let active_own: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM trackers t JOIN users u ON u.id = t.user_id \
             WHERE u.dealer_id = $1 AND t.deleted = FALSE AND t.blocked = FALSE AND t.clone_of IS NULL",
        )
        .bind(dealer.0)
        .fetch_one(&self.pool)
        .await?;
        let active_sub: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM trackers t JOIN users u ON u.id = t.user_id JOIN dealers d ON d.id = u.dealer_id \
             WHERE d.parent_dealer_id = $1 AND t.deleted = FALSE AND t.blocked = FALSE AND t.clone_of IS NULL",
        )
        .bind(dealer.0)
        .fetch_one(&self.pool)
        .await?;
        let text = |name: &str| -> Result<String> { Ok(row.try_get::<String, _>(name)?) };
        let features: Vec<String> = serde_json::from_str(&text("features")?)
            .map_err(|e| Error::corrupt("dealer features", e))?;
        let plan_period: Option<String> = row.try_get("plan_store_period")?;
        let store_period = match plan_period {
            Some(p) => StorePeriod::parse("store_period", &p)
                .map_err(|e| Error::corrupt("store_period", e))?,
            None => StorePeriod::DEFAULT,
        };
        let tariff = self.dealer_paas_tariff(dealer).await?;
        Ok(DealerInfo {
            id: dealer.0,
            seller_id: row.try_get("seller_id")?,
            parent_dealer_id: row.try_get("parent_dealer_id")?,
            contract_type: ContractType::parse("contract_type", &text("contract_type")?)
                .map_err(|e| Error::corrupt("contract_type", e))?,
            tariff_id: Some(tariff.id),
            demo_tariff: tariff.trial,
            tracker_tariff_end_date: None,
            demo_ends: None,
            paas_activation_date: row
                .try_get::<chrono::DateTime<chrono::Utc>, _>("created_at")?
                .format("%Y-%m-%d")
                .to_string(),
            license_balance: 0.0,
            seller_currency: tariff.currency.clone(),
            title: text("title")?,
            block_status: BlockStatus::parse("block_status", &text("block_status")?)
                .map_err(|e| Error::corrupt("block_status", e))?,
            legal_name: text("legal_name")?,
            active_amount: active_own + active_sub,
            active_amount_own: active_own,
            active_amount_subpaas: active_sub,
            active_limit: row.try_get("active_limit")?,
            locale: text("locale")?,
            domain: text("domain")?,
            favicon: None,
            logo: None,
            enable_trackers: true,
            enable_cameras: false,
            features,
            store_period: store_period.to_iso8601(),
            default_user_time_zone: text("default_user_time_zone")?,
            tariff,
        })
    }
}

/// Groups permissions as the panel answers them: `{"base": ["get_dealer_info"], ...}`.
pub(crate) fn permission_map(
    permissions: &[Permission],
) -> BTreeMap<&'static str, Vec<&'static str>> {
    let mut map: BTreeMap<&'static str, Vec<&'static str>> = BTreeMap::new();
    for p in permissions {
        map.entry(p.group()).or_default().push(p.name());
    }
    for names in map.values_mut() {
        names.sort_unstable();
    }
    map
}
