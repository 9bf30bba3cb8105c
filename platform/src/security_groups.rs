//! Security groups of a master account (clarification 37): a label and the
//! rights they grant their sub-users. `security_group/list|create|update|delete`.

use schemas::UserId;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::{Error, Result, Right, Store, records, trimmed_text};

/// Longest group label, in characters.
pub const MAX_SECURITY_GROUP_LABEL_CHARS: usize = 255;

/// A security group: what its sub-users may do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SecurityGroup {
    /// The group's id: answered by `list`, required by `update`, ignored by `create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// Its name: printable, 1 to 255 characters once trimmed.
    #[schema(min_length = 1, max_length = 255, example = "Dispatchers")]
    pub label: String,
    /// The rights it grants, by name: `vehicle_update`, `employee_update`,
    /// `payment_create`, `weblocator_session_create` (`admin` is the master
    /// user's only). Answered in that order, each once.
    #[serde(default)]
    #[schema(example = json!(["vehicle_update"]))]
    pub rights: Vec<String>,
}

impl SecurityGroup {
    /// The label trimmed and the rights parsed, or the first member that is
    /// not valid, named by its path (`security_group.rights[1]`).
    fn checked(&self) -> Result<(String, Vec<Right>)> {
        let label = trimmed_text(
            "security_group.label",
            &self.label,
            1,
            MAX_SECURITY_GROUP_LABEL_CHARS,
        )?;
        let mut rights = Vec::with_capacity(self.rights.len());
        for (i, name) in self.rights.iter().enumerate() {
            let field = format!("security_group.rights[{i}]");
            match Right::parse(name.trim()) {
                Some(Right::Admin) => {
                    return Err(Error::invalid(
                        field,
                        "`admin` belongs to the master user and cannot be granted",
                    ));
                }
                Some(right) => rights.push(right),
                None => {
                    let known: Vec<&str> = Right::ALL
                        .iter()
                        .filter(|r| **r != Right::Admin)
                        .map(|r| r.as_str())
                        .collect();
                    return Err(Error::invalid(
                        field,
                        format!("{name:?} is not one of {}", known.join(", ")),
                    ));
                }
            }
        }
        rights.sort_unstable();
        rights.dedup();
        Ok((label, rights))
    }
}

impl Store {
    /// The master user's security groups, by id.
    pub async fn list_security_groups(&self, master: UserId) -> Result<Vec<SecurityGroup>> {
        let rows = sqlx::query(
            "SELECT g.id, g.label, r.right_name FROM security_groups g \
             LEFT JOIN security_group_rights r ON r.security_group_id = g.id \
             WHERE g.master_user_id = $1 ORDER BY g.id",
        )
        .bind(master.0)
        .fetch_all(&self.pool)
        .await?;
        let mut groups: Vec<(SecurityGroup, Vec<Right>)> = Vec::new();
        for row in &rows {
            let id: i64 = row.try_get("id")?;
            if groups.last().is_none_or(|(g, _)| g.id != Some(id)) {
                let group = SecurityGroup {
                    id: Some(id),
                    label: row.try_get("label")?,
                    rights: Vec::new(),
                };
                groups.push((group, Vec::new()));
            }
            if let (Some(name), Some((_, rights))) = (
                row.try_get::<Option<String>, _>("right_name")?,
                groups.last_mut(),
            ) {
                rights.push(
                    Right::parse(&name)
                        .ok_or_else(|| Error::corrupt("security_group_rights", &name))?,
                );
            }
        }
        Ok(groups
            .into_iter()
            .map(|(mut group, mut rights)| {
                rights.sort_unstable();
                group.rights = rights.iter().map(|r| r.as_str().to_owned()).collect();
                group
            })
            .collect())
    }

    /// Stores a new security group of the master user; its id.
    pub async fn create_security_group(
        &self,
        master: UserId,
        group: &SecurityGroup,
    ) -> Result<i64> {
        let (label, rights) = group.checked()?;
        let mut tx = self.write_tx().await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO security_groups (master_user_id, label, created_at) VALUES ($1, $2, $3) RETURNING id",
        )
        .bind(master.0)
        .bind(&label)
        .bind(self.clock.now())
        .fetch_one(&mut *tx)
        .await?;
        set_rights(&mut tx, id, &rights).await?;
        tx.commit().await?;
        Ok(id)
    }

    /// Replaces the label and rights of the master user's group
    /// `group.id`; its sub-users hold the new rights from their next call.
    /// 201 when the account has no such group.
    pub async fn update_security_group(&self, master: UserId, group: &SecurityGroup) -> Result<()> {
        let id = records::required_id("security_group.id", group.id)?;
        let (label, rights) = group.checked()?;
        let mut tx = self.write_tx().await?;
        let done = sqlx::query(
            "UPDATE security_groups SET label = $3 WHERE id = $1 AND master_user_id = $2",
        )
        .bind(id)
        .bind(master.0)
        .bind(&label)
        .execute(&mut *tx)
        .await?;
        records::one_changed(done.rows_affected(), "security group", id)?;
        sqlx::query("DELETE FROM security_group_rights WHERE security_group_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        set_rights(&mut tx, id, &rights).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Deletes the master user's group `id`; its sub-users fall back to the
    /// default group, which grants nothing. 201 when the account has no such group.
    pub async fn delete_security_group(&self, master: UserId, id: i64) -> Result<()> {
        let mut tx = self.write_tx().await?;
        let owned: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM security_groups WHERE id = $1 AND master_user_id = $2",
        )
        .bind(id)
        .bind(master.0)
        .fetch_optional(&mut *tx)
        .await?;
        records::one_changed(u64::from(owned.is_some()), "security group", id)?;
        for statement in [
            "UPDATE users SET security_group_id = NULL WHERE security_group_id = $1",
            "DELETE FROM security_group_rights WHERE security_group_id = $1",
            "DELETE FROM security_groups WHERE id = $1",
        ] {
            sqlx::query(statement).bind(id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

async fn set_rights(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    group: i64,
    rights: &[Right],
) -> Result<()> {
    for right in rights {
        sqlx::query(
            "INSERT INTO security_group_rights (security_group_id, right_name) VALUES ($1, $2)",
        )
        .bind(group)
        .bind(right.as_str())
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
