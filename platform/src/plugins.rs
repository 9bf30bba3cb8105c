//! Plugins (spec document 3, clarification 46): the catalog, and which are
//! available to a user: those enabled for the user, else for its dealer,
//! else the configured defaults.

use schemas::{DealerId, UserId};
use serde::Serialize;
use sqlx::Row;

use crate::{Error, Result, Store, records};

/// The billing plugin: bills need it (clarification 45).
pub const BILLING_PLUGIN: i64 = 29;

/// Which device models a plugin supports.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct PluginFilter {
    /// When true, `values` lists the models NOT supported; when false, the ones supported.
    pub exclusion: bool,
    /// Regular expressions of device models.
    pub values: Vec<String>,
}

/// A plugin of the catalog.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Plugin {
    /// Its id.
    pub id: i64,
    /// What it changes (`tracker_register`, `tracker_report`, `billing`).
    #[serde(rename = "type")]
    pub plugin_type: String,
    /// The UI module.
    pub ui_module: String,
    /// The server module.
    pub module: String,
    /// The device models it supports.
    pub filter: PluginFilter,
    /// Its own settings; omitted when null.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub parameters: Option<serde_json::Value>,
}

/// Who a plugin is enabled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginOwner {
    /// A master user.
    User(UserId),
    /// A dealer (for every user of it without plugins of their own).
    Dealer(DealerId),
}

impl Store {
    /// The plugins available to a master user: its own, else its dealer's,
    /// else `defaults` (the configured default ids), by id.
    pub async fn plugins_of(
        &self,
        user: UserId,
        dealer: DealerId,
        defaults: &[i64],
    ) -> Result<Vec<Plugin>> {
        const SELECT: &str =
            "SELECT p.id, p.type, p.ui_module, p.module, p.filter, p.parameters FROM plugins p";
        let mut rows = sqlx::query(&format!(
            "{SELECT} JOIN user_plugins u ON u.plugin_id = p.id WHERE u.user_id = $1 ORDER BY p.id"
        ))
        .bind(user.0)
        .fetch_all(&self.pool)
        .await?;
        if rows.is_empty() {
            rows = sqlx::query(&format!(
                "{SELECT} JOIN dealer_plugins d ON d.plugin_id = p.id WHERE d.dealer_id = $1 ORDER BY p.id"
            ))
            .bind(dealer.0)
            .fetch_all(&self.pool)
            .await?;
        }
        if rows.is_empty() && !defaults.is_empty() {
            let ids =
                serde_json::to_string(defaults).map_err(|e| Error::corrupt("plugin ids", e))?;
            rows = sqlx::query(&format!(
                "{SELECT} WHERE p.id IN (SELECT value FROM json_each($1)) ORDER BY p.id"
            ))
            .bind(ids)
            .fetch_all(&self.pool)
            .await?;
        }
        rows.iter()
            .map(|row| {
                let filter: String = row.try_get("filter")?;
                let parameters: Option<String> = row.try_get("parameters")?;
                Ok(Plugin {
                    id: row.try_get("id")?,
                    plugin_type: row.try_get("type")?,
                    ui_module: row.try_get("ui_module")?,
                    module: row.try_get("module")?,
                    filter: serde_json::from_str(&filter)
                        .map_err(|e| Error::corrupt("plugins.filter", e))?,
                    parameters: parameters
                        .map(|p| serde_json::from_str(&p))
                        .transpose()
                        .map_err(|e| Error::corrupt("plugins.parameters", e))?,
                })
            })
            .collect()
    }

    /// Whether plugin `plugin` is available to the user (as [`Store::plugins_of`] finds them).
    pub async fn has_plugin(
        &self,
        user: UserId,
        dealer: DealerId,
        defaults: &[i64],
        plugin: i64,
    ) -> Result<bool> {
        Ok(self
            .plugins_of(user, dealer, defaults)
            .await?
            .iter()
            .any(|p| p.id == plugin))
    }

    /// Enables or disables a plugin of the catalog for a master user or a
    /// dealer (`trackhouse admin`). 201 for an unknown plugin or owner.
    pub async fn set_plugin(&self, owner: PluginOwner, plugin: i64, enabled: bool) -> Result<()> {
        let known: Option<i64> = sqlx::query_scalar("SELECT id FROM plugins WHERE id = $1")
            .bind(plugin)
            .fetch_optional(&self.pool)
            .await?;
        known.ok_or_else(|| records::not_found("plugin", plugin))?;
        let (table, column, id, exists) = match owner {
            PluginOwner::User(user) => (
                "user_plugins",
                "user_id",
                user.0,
                "SELECT id FROM users WHERE id = $1 AND master_user_id IS NULL AND deleted = FALSE",
            ),
            PluginOwner::Dealer(dealer) => (
                "dealer_plugins",
                "dealer_id",
                dealer.0,
                "SELECT id FROM dealers WHERE id = $1",
            ),
        };
        let found: Option<i64> = sqlx::query_scalar(exists)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        found.ok_or_else(|| records::not_found(column.trim_end_matches("_id"), id))?;
        let sql = if enabled {
            format!(
                "INSERT INTO {table} ({column}, plugin_id) VALUES ($1, $2) ON CONFLICT DO NOTHING"
            )
        } else {
            format!("DELETE FROM {table} WHERE {column} = $1 AND plugin_id = $2")
        };
        sqlx::query(&sql)
            .bind(id)
            .bind(plugin)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
