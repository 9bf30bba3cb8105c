//! An account's garages (depots): `garage/list|create|update|delete`.

use schemas::UserId;
use serde::{Deserialize, Serialize};

use crate::location::{self, Location};
use crate::{Result, Store, optional_text, records};

/// Longest name of a garage's people and organization, in characters.
pub const MAX_GARAGE_NAME_CHARS: usize = 255;

/// A garage (depot) of spec document 3. Texts are trimmed, printable, at
/// most 255 characters; each may be null.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Garage {
    /// The garage's id: answered by `list`, required by `update`, ignored by `create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// Where it is, or null.
    #[serde(default)]
    pub location: Option<Location>,
    /// The mechanic's name.
    #[serde(default)]
    #[schema(max_length = 255)]
    pub mechanic_name: Option<String>,
    /// The dispatcher's name.
    #[serde(default)]
    #[schema(max_length = 255)]
    pub dispatcher_name: Option<String>,
    /// The organization's name (vehicle lists show it as `garage_organization_name`).
    #[serde(default)]
    #[schema(max_length = 255)]
    pub organization_name: Option<String>,
}

impl Garage {
    /// The garage as stored, or the first member that is not valid, named
    /// by its path (`garage.location.lat`).
    fn checked(self) -> Result<Self> {
        let name = |field: &'static str, value: Option<String>| {
            optional_text(field, value.as_deref(), MAX_GARAGE_NAME_CHARS)
        };
        Ok(Self {
            id: self.id,
            location: self
                .location
                .map(|l| l.checked("garage.location"))
                .transpose()?,
            mechanic_name: name("garage.mechanic_name", self.mechanic_name)?,
            dispatcher_name: name("garage.dispatcher_name", self.dispatcher_name)?,
            organization_name: name("garage.organization_name", self.organization_name)?,
        })
    }
}

impl Store {
    /// The master user's garages, by id.
    pub async fn list_garages(&self, master: UserId) -> Result<Vec<Garage>> {
        let rows = sqlx::query(
            "SELECT id, lat, lng, address, radius, mechanic_name, dispatcher_name, organization_name \
             FROM garages WHERE master_user_id = $1 ORDER BY id",
        )
        .bind(master.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                use sqlx::Row;
                Ok(Garage {
                    id: Some(row.try_get("id")?),
                    location: Location::from_row(row)?,
                    mechanic_name: row.try_get("mechanic_name")?,
                    dispatcher_name: row.try_get("dispatcher_name")?,
                    organization_name: row.try_get("organization_name")?,
                })
            })
            .collect()
    }

    /// Stores a new garage of the master user (its `id`, if any, is
    /// ignored); its id.
    pub async fn create_garage(&self, master: UserId, garage: Garage) -> Result<i64> {
        let garage = garage.checked()?;
        let (lat, lng, address, radius) = location::columns(garage.location.as_ref());
        let id = sqlx::query_scalar(
            "INSERT INTO garages (master_user_id, lat, lng, address, radius, mechanic_name, \
             dispatcher_name, organization_name, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        )
        .bind(master.0)
        .bind(lat)
        .bind(lng)
        .bind(address)
        .bind(radius)
        .bind(&garage.mechanic_name)
        .bind(&garage.dispatcher_name)
        .bind(&garage.organization_name)
        .bind(self.clock.now())
        .fetch_one(&self.pool)
        .await?;
        Ok(id)
    }

    /// Replaces every member of the master user's garage `garage.id`; 201
    /// when the account has no such garage.
    pub async fn update_garage(&self, master: UserId, garage: Garage) -> Result<()> {
        let id = records::required_id("garage.id", garage.id)?;
        let garage = garage.checked()?;
        let (lat, lng, address, radius) = location::columns(garage.location.as_ref());
        let done = sqlx::query(
            "UPDATE garages SET lat = $3, lng = $4, address = $5, radius = $6, mechanic_name = $7, \
             dispatcher_name = $8, organization_name = $9 WHERE id = $1 AND master_user_id = $2",
        )
        .bind(id)
        .bind(master.0)
        .bind(lat)
        .bind(lng)
        .bind(address)
        .bind(radius)
        .bind(&garage.mechanic_name)
        .bind(&garage.dispatcher_name)
        .bind(&garage.organization_name)
        .execute(&self.pool)
        .await?;
        records::one_changed(done.rows_affected(), "garage", id)
    }

    /// Deletes the master user's garage `id` (its vehicles keep no garage);
    /// 201 when the account has no such garage.
    pub async fn delete_garage(&self, master: UserId, id: i64) -> Result<()> {
        records::delete_owned(&self.pool, "garages", "garage", master, id).await
    }
}
