//! The operator's changes of plans and of the plan a tracker is on
//! (`trackhouse admin plan features`, `tracker plan`). Nothing is cached:
//! every call reads a tracker's features from its plan, so a change holds
//! from the next call on (236 appears or goes at once).

use schemas::{PlanId, TrackerId};

use crate::{Error, Feature, Result, Store};

impl Store {
    /// Sets the features of a plan (each once; none is a plan without
    /// features) for every tracker on it; the features as stored, in
    /// [`Feature::ALL`]'s order. 201 when there is no such plan.
    pub async fn set_plan_features(
        &self,
        plan: PlanId,
        features: &[Feature],
    ) -> Result<Vec<Feature>> {
        let features: Vec<Feature> = Feature::ALL
            .iter()
            .copied()
            .filter(|f| features.contains(f))
            .collect();
        let names: Vec<&str> = features.iter().map(|f| f.as_str()).collect();
        let done = sqlx::query("UPDATE plans SET features = $1 WHERE id = $2")
            .bind(serde_json::to_string(&names).map_err(|e| Error::corrupt("features", e))?)
            .bind(plan.0)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(Error::NotFound {
                entity: "plan",
                id: plan.to_string(),
            });
        }
        Ok(features)
    }

    /// Moves a tracker (a clone too: its features are its own plan's) to
    /// another tracker plan of its owner's dealer. 201 when there is no such
    /// live tracker, or no such plan of that dealer (as `tracker create`
    /// answers another dealer's plan); 237 for a plan of cameras or sockets.
    pub async fn set_tracker_plan(&self, tracker: TrackerId, plan: PlanId) -> Result<()> {
        let dealer: Option<i64> = sqlx::query_scalar(
            "SELECT u.dealer_id FROM trackers t JOIN users u ON u.id = t.user_id \
             WHERE t.id = $1 AND t.deleted = FALSE",
        )
        .bind(tracker.0)
        .fetch_optional(&self.pool)
        .await?;
        let dealer = dealer.ok_or_else(|| Error::NotFound {
            entity: "tracker",
            id: tracker.to_string(),
        })?;
        let device_type: Option<String> =
            sqlx::query_scalar("SELECT device_type FROM plans WHERE id = $1 AND dealer_id = $2")
                .bind(plan.0)
                .bind(dealer)
                .fetch_optional(&self.pool)
                .await?;
        match device_type.as_deref() {
            None => {
                return Err(Error::NotFound {
                    entity: "plan",
                    id: format!("{plan} of dealer {dealer}"),
                });
            }
            Some("tracker") => {}
            Some(other) => {
                return Err(Error::InvalidPlan {
                    reason: format!("plan {plan} is for devices of type {other}, not trackers"),
                });
            }
        }
        sqlx::query("UPDATE trackers SET plan_id = $1 WHERE id = $2")
            .bind(plan.0)
            .bind(tracker.0)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
