//! Users, sub-users, their rights and scopes.

use schemas::{DealerId, SecurityGroupId, TrackerId, UserId};
use sqlx::Row;

use crate::Secret;
use crate::secret::hash_password;
use crate::{Error, LegalType, Result, Right, Store, UserAuth};

/// A master user to create.
#[derive(Debug, Clone)]
pub struct NewUser {
    /// The dealer the user is a customer of.
    pub dealer_id: DealerId,
    /// E-mail login.
    pub login: String,
    /// Password, 1 to 40 printable characters.
    pub password: String,
    /// IANA time zone; `None` takes the dealer's default.
    pub time_zone: Option<String>,
    /// Whether the user may log in.
    pub activated: bool,
    /// Legal type.
    pub legal_type: LegalType,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
}

/// A sub-user to create under a master user.
#[derive(Debug, Clone)]
pub struct NewSubuser {
    /// The master user.
    pub master_id: UserId,
    /// E-mail login.
    pub login: String,
    /// Password, 6 to 20 characters.
    pub password: String,
    /// Rights of the sub-user's security group (`admin` is not grantable).
    pub rights: Vec<Right>,
    /// Trackers of the master user the sub-user may see.
    pub trackers: Vec<TrackerId>,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
}

impl Store {
    /// Creates a master user; 206 when the login is taken.
    pub async fn create_user(&self, new: NewUser) -> Result<UserId> {
        let login = crate::check_login("login", &new.login)?;
        crate::check_printable("password", &new.password, 1, 40)?;
        let default_zone: Option<String> =
            sqlx::query_scalar("SELECT default_user_time_zone FROM dealers WHERE id = $1")
                .bind(new.dealer_id.0)
                .fetch_optional(&self.pool)
                .await?;
        let default_zone = default_zone.ok_or_else(|| Error::NotFound {
            entity: "dealer",
            id: new.dealer_id.to_string(),
        })?;
        let time_zone = new.time_zone.unwrap_or(default_zone);
        crate::check_time_zone("time_zone", &time_zone)?;
        let password_hash = hash_password(&new.password).await?;
        let now = self.clock.now();
        let id = sqlx::query_scalar::<_, i64>(
            "INSERT INTO users (dealer_id, login, password_hash, activated, verified, legal_type, \
             first_name, last_name, time_zone, created_at, password_changed_at, search_text) \
             VALUES ($1, $2, $3, $4, $4, $5, $6, $7, $8, $9, $9, $10) RETURNING id",
        )
        .bind(new.dealer_id.0)
        .bind(&login)
        .bind(&password_hash)
        .bind(new.activated)
        .bind(new.legal_type.as_str())
        .bind(&new.first_name)
        .bind(&new.last_name)
        .bind(&time_zone)
        .bind(now)
        .bind(crate::listing::search_text(&[
            &login,
            &new.first_name,
            "",
            &new.last_name,
            "",
            "",
        ]))
        .fetch_one(&self.pool)
        .await
        .map_err(|e| unique_login(e, &login))?;
        Ok(UserId(id))
    }

    /// Creates a sub-user with a security group holding `rights`, scoped to `trackers`.
    pub async fn create_subuser(&self, new: NewSubuser) -> Result<UserId> {
        let login = crate::check_login("login", &new.login)?;
        crate::check_printable("password", &new.password, 6, 20)?;
        if new.rights.contains(&Right::Admin) {
            return Err(Error::invalid(
                "rights",
                "admin is available to master users only",
            ));
        }
        let master = sqlx::query("SELECT dealer_id, time_zone, master_user_id FROM users WHERE id = $1 AND deleted = FALSE")
            .bind(new.master_id.0)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| Error::NotFound { entity: "user", id: new.master_id.to_string() })?;
        if master
            .try_get::<Option<i64>, _>("master_user_id")?
            .is_some()
        {
            return Err(Error::invalid(
                "user_id",
                "a sub-user cannot have sub-users",
            ));
        }
        let password_hash = hash_password(&new.password).await?;
        let now = self.clock.now();
        let mut tx = self.write_tx().await?;
        for tracker in &new.trackers {
            let owner: Option<i64> = sqlx::query_scalar(
                "SELECT user_id FROM trackers WHERE id = $1 AND deleted = FALSE",
            )
            .bind(tracker.0)
            .fetch_optional(&mut *tx)
            .await?;
            if owner != Some(new.master_id.0) {
                return Err(Error::invalid(
                    "trackers",
                    format!(
                        "tracker {tracker} is not a tracker of user {}",
                        new.master_id
                    ),
                ));
            }
        }
        let group_id: i64 = sqlx::query_scalar(
            "INSERT INTO security_groups (master_user_id, label, created_at) VALUES ($1, $2, $3) RETURNING id",
        )
        .bind(new.master_id.0)
        .bind(format!("Rights of {login}"))
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        for right in &new.rights {
            sqlx::query("INSERT INTO security_group_rights (security_group_id, right_name) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                .bind(group_id)
                .bind(right.as_str())
                .execute(&mut *tx)
                .await?;
        }
        let id = sqlx::query_scalar::<_, i64>(
            "INSERT INTO users (dealer_id, master_user_id, login, password_hash, first_name, last_name, \
             time_zone, security_group_id, created_at, password_changed_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING id",
        )
        .bind(master.try_get::<i64, _>("dealer_id")?)
        .bind(new.master_id.0)
        .bind(&login)
        .bind(&password_hash)
        .bind(&new.first_name)
        .bind(&new.last_name)
        .bind(master.try_get::<String, _>("time_zone")?)
        .bind(group_id)
        .bind(now)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| unique_login(e, &login))?;
        for tracker in &new.trackers {
            sqlx::query("INSERT INTO subuser_trackers (user_id, tracker_id) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                .bind(id)
                .bind(tracker.0)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(UserId(id))
    }

    /// Whether the caller holds a right: master users hold every right,
    /// sub-users those of their security group (none for the default group).
    pub async fn has_right(&self, caller: &UserAuth, right: Right) -> Result<bool> {
        if !caller.is_subuser() {
            return Ok(true);
        }
        if right == Right::Admin {
            return Ok(false);
        }
        let held: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM users u JOIN security_group_rights r ON r.security_group_id = u.security_group_id \
             WHERE u.id = $1 AND r.right_name = $2",
        )
        .bind(caller.user_id.0)
        .bind(right.as_str())
        .fetch_optional(&self.pool)
        .await?;
        Ok(held.is_some())
    }

    /// Sets whether a user may log in; takes effect on the next call of its credentials.
    pub async fn set_user_activated(&self, user: UserId, activated: bool) -> Result<()> {
        let done = sqlx::query("UPDATE users SET activated = $1 WHERE id = $2")
            .bind(activated)
            .bind(user.0)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(Error::NotFound {
                entity: "user",
                id: user.to_string(),
            });
        }
        Ok(())
    }

    /// Changes a user's password and ends all of the user's sessions (API keys stay).
    pub async fn change_user_password(&self, user: UserId, password: &str) -> Result<()> {
        crate::check_printable("password", password, 1, 40)?;
        let hash = hash_password(password).await?;
        let mut tx = self.write_tx().await?;
        let done = sqlx::query(
            "UPDATE users SET password_hash = $1, password_changed_at = $2 WHERE id = $3",
        )
        .bind(&hash)
        .bind(self.clock.now())
        .bind(user.0)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(Error::NotFound {
                entity: "user",
                id: user.to_string(),
            });
        }
        sqlx::query("DELETE FROM user_sessions WHERE user_id = $1")
            .bind(user.0)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Deletes a sub-user of `master` for good: its sessions and API keys
    /// end at once, its scope goes, and its login is free again (what it
    /// created belongs to the master and stays). 201 when `subuser` is not a
    /// sub-user of `master`.
    pub async fn delete_subuser(&self, master: UserId, subuser: i64) -> Result<()> {
        let mut tx = self.write_tx().await?;
        let found: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM users WHERE id = $1 AND master_user_id = $2 AND deleted = FALSE",
        )
        .bind(subuser)
        .bind(master.0)
        .fetch_optional(&mut *tx)
        .await?;
        crate::records::one_changed(u64::from(found.is_some()), "sub-user", subuser)?;
        for statement in [
            "DELETE FROM user_sessions WHERE user_id = $1",
            "DELETE FROM api_keys WHERE user_id = $1",
            "DELETE FROM subuser_trackers WHERE user_id = $1",
            "DELETE FROM users WHERE id = $1",
        ] {
            sqlx::query(statement)
                .bind(subuser)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// A new session of a sub-user of `master`, as if it had logged in, so
    /// that the master can act as it. 201 when `subuser` is not a sub-user
    /// of `master`; 103 when it is deactivated.
    pub async fn create_subuser_session(&self, master: UserId, subuser: i64) -> Result<Secret> {
        let activated: Option<bool> = sqlx::query_scalar(
            "SELECT activated FROM users WHERE id = $1 AND master_user_id = $2 AND deleted = FALSE",
        )
        .bind(subuser)
        .bind(master.0)
        .fetch_optional(&self.pool)
        .await?;
        match activated {
            None => return Err(crate::records::not_found("sub-user", subuser)),
            Some(false) => return Err(Error::UserNotActivated),
            Some(true) => {}
        }
        let secret = Secret::generate()?;
        sqlx::query("INSERT INTO user_sessions (token_digest, user_id, created_at, last_used_at) VALUES ($1, $2, $3, $3)")
            .bind(secret.digest())
            .bind(subuser)
            .bind(self.clock.now())
            .execute(&self.pool)
            .await?;
        Ok(secret)
    }

    /// The security group of a sub-user, if any.
    pub async fn security_group_of(&self, user: UserId) -> Result<Option<SecurityGroupId>> {
        let group: Option<Option<i64>> =
            sqlx::query_scalar("SELECT security_group_id FROM users WHERE id = $1")
                .bind(user.0)
                .fetch_optional(&self.pool)
                .await?;
        Ok(group.flatten().map(SecurityGroupId))
    }
}

pub(crate) fn unique_login(err: sqlx::Error, login: &str) -> Error {
    match &err {
        sqlx::Error::Database(db) if db.is_unique_violation() => Error::LoginInUse {
            login: login.to_owned(),
        },
        _ => Error::from(err),
    }
}
