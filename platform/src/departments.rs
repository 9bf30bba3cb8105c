//! An account's departments: `department/list|create|update|delete`.

use schemas::UserId;
use serde::{Deserialize, Serialize};

use crate::location::{self, Location};
use crate::{Result, Store, records, trimmed_text};

/// Longest department label, in characters.
pub const MAX_DEPARTMENT_LABEL_CHARS: usize = 255;

/// A department of spec document 3: it groups employees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Department {
    /// The department's id: answered by `list`, required by `update`, ignored by `create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// Its name: printable, 1 to 255 characters once trimmed.
    #[schema(min_length = 1, max_length = 255, example = "Night shift")]
    pub label: String,
    /// Where it is, or null.
    #[serde(default)]
    pub location: Option<Location>,
}

impl Department {
    /// The department as stored, or the first member that is not valid,
    /// named by its path (`department.label`).
    fn checked(self) -> Result<Self> {
        Ok(Self {
            id: self.id,
            label: trimmed_text(
                "department.label",
                &self.label,
                1,
                MAX_DEPARTMENT_LABEL_CHARS,
            )?,
            location: self
                .location
                .map(|l| l.checked("department.location"))
                .transpose()?,
        })
    }
}

impl Store {
    /// The master user's departments, by id.
    pub async fn list_departments(&self, master: UserId) -> Result<Vec<Department>> {
        let rows = sqlx::query(
            "SELECT id, label, lat, lng, address, radius FROM departments \
             WHERE master_user_id = $1 ORDER BY id",
        )
        .bind(master.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                use sqlx::Row;
                Ok(Department {
                    id: Some(row.try_get("id")?),
                    label: row.try_get("label")?,
                    location: Location::from_row(row)?,
                })
            })
            .collect()
    }

    /// Stores a new department of the master user (its `id`, if any, is
    /// ignored); its id.
    pub async fn create_department(&self, master: UserId, department: Department) -> Result<i64> {
        let department = department.checked()?;
        let (lat, lng, address, radius) = location::columns(department.location.as_ref());
        let id = sqlx::query_scalar(
            "INSERT INTO departments (master_user_id, label, lat, lng, address, radius, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        )
        .bind(master.0)
        .bind(&department.label)
        .bind(lat)
        .bind(lng)
        .bind(address)
        .bind(radius)
        .bind(self.clock.now())
        .fetch_one(&self.pool)
        .await?;
        Ok(id)
    }

    /// Replaces every member of the master user's department
    /// `department.id`; 201 when the account has no such department.
    pub async fn update_department(&self, master: UserId, department: Department) -> Result<()> {
        let id = records::required_id("department.id", department.id)?;
        let department = department.checked()?;
        let (lat, lng, address, radius) = location::columns(department.location.as_ref());
        let done = sqlx::query(
            "UPDATE departments SET label = $3, lat = $4, lng = $5, address = $6, radius = $7 \
             WHERE id = $1 AND master_user_id = $2",
        )
        .bind(id)
        .bind(master.0)
        .bind(&department.label)
        .bind(lat)
        .bind(lng)
        .bind(address)
        .bind(radius)
        .execute(&self.pool)
        .await?;
        records::one_changed(done.rows_affected(), "department", id)
    }

    /// Deletes the master user's department `id`; 201 when the account has
    /// no such department.
    pub async fn delete_department(&self, master: UserId, id: i64) -> Result<()> {
        records::delete_owned(&self.pool, "departments", "department", master, id).await
    }
}
