//! Tracker clones: another user's view of a device (clarification 50),
//! made by the operator (`trackhouse admin tracker clone`).
//!
//! A clone is a tracker row of its own — owner, label, plan (its features),
//! block, sub-user scope — whose `clone_of` names its source. It holds no
//! telemetry, fuel sensors or movement settings of its own: a read through
//! it ([`Store::tracker_for`]) is a read of its source, so the device's one
//! stream of data is stored once, under the source, whoever looks at it.

use schemas::{DealerId, TrackerId, UserId};

use crate::{Error, Result, Store, Tracker, records, trimmed_text};

impl Store {
    /// Clones `source` for the master user `user`, labelled `label` (default:
    /// the source's label); the clone's id. The clone is on the source's
    /// plan when `user` is of the same dealer, else on the default tracker
    /// plan of `user`'s dealer. 201 when the source or the user does not
    /// exist (or is deleted); 219 when the source is itself a clone; 7 when
    /// `user` owns the source or is a sub-user; 247 when `user` holds a
    /// clone of the source already.
    pub async fn clone_tracker(
        &self,
        source: TrackerId,
        user: UserId,
        label: Option<&str>,
    ) -> Result<TrackerId> {
        let label = label
            .map(|label| trimmed_text("label", label, 1, 255))
            .transpose()?;
        let found = self
            .tracker(source)
            .await?
            .filter(|t| !t.deleted)
            .ok_or_else(|| Error::NotFound {
                entity: "tracker",
                id: source.to_string(),
            })?;
        if let Some(of) = found.clone_of {
            return Err(Error::NotForClones {
                tracker_id: source.0,
                source_id: of.0,
            });
        }
        records::require_master(&self.pool, user).await?;
        if user == found.user_id {
            return Err(Error::invalid(
                "user_id",
                format!("user {user} owns tracker {source}: a clone is another user's view of it"),
            ));
        }
        let (dealer, source_dealer): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT dealer_id FROM users WHERE id = $1), \
                    (SELECT dealer_id FROM users WHERE id = $2)",
        )
        .bind(user.0)
        .bind(found.user_id.0)
        .fetch_one(&self.pool)
        .await?;
        let plan = if dealer == source_dealer {
            found.plan_id
        } else {
            self.default_tracker_plan(DealerId(dealer)).await?
        };
        // One statement, so that two operators cloning at once make one clone.
        let id: Option<i64> = sqlx::query_scalar(
            "INSERT INTO trackers (user_id, label, device_id, model, plan_id, clone_of, created_at) \
             SELECT $1, $2, s.device_id, s.model, $3, s.id, $4 FROM trackers s WHERE s.id = $5 \
             AND NOT EXISTS (SELECT 1 FROM trackers c \
                             WHERE c.clone_of = s.id AND c.user_id = $1 AND c.deleted = FALSE) \
             RETURNING id",
        )
        .bind(user.0)
        .bind(label.as_deref().unwrap_or(&found.label))
        .bind(plan.0)
        .bind(self.clock.now())
        .bind(source.0)
        .fetch_optional(&self.pool)
        .await?;
        match id {
            Some(id) => Ok(TrackerId(id)),
            None => {
                let existing: i64 = sqlx::query_scalar(
                    "SELECT id FROM trackers WHERE clone_of = $1 AND user_id = $2 AND deleted = FALSE",
                )
                .bind(source.0)
                .bind(user.0)
                .fetch_one(&self.pool)
                .await?;
                Err(Error::AlreadyExists {
                    entity: "clone",
                    id: existing,
                })
            }
        }
    }

    /// What a read through `clone` (checked for the caller already) sees:
    /// its source, with the clone's time zone (times are written for the
    /// clone's owner). 204 when the source is gone, 208 when it is blocked.
    pub(super) async fn read_through_clone(
        &self,
        clone: Tracker,
        source: TrackerId,
    ) -> Result<Tracker> {
        match self.tracker(source).await? {
            Some(found) if !found.deleted => {
                if found.blocked {
                    return Err(Error::TrackerBlocked {
                        tracker_id: clone.id.0,
                    });
                }
                Ok(Tracker {
                    time_zone: clone.time_zone,
                    ..found
                })
            }
            _ => Err(Error::NotCallers {
                entity: "tracker",
                id: clone.id.0,
            }),
        }
    }
}
