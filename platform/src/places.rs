//! Places of an account: named points of interest, which geo links draw on
//! their map (`place_ids`, clarification 44). Made, listed and deleted with
//! `trackhouse admin place`.
//!
//! A place is the object the production platform answers: `id`, `label`,
//! `location` (`lat`, `lng`, `address`, `radius`) and `description`.

use schemas::{PlaceId, UserId};
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::location::Location;
use crate::{Error, Result, Store, optional_text, records, trimmed_text};

/// Longest place label, in characters.
pub const MAX_PLACE_LABEL_CHARS: usize = 255;
/// Longest place description, in characters.
pub const MAX_PLACE_DESCRIPTION_CHARS: usize = 1_024;

/// A place of a master user's account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Place {
    /// Its id: answered by lists, ignored on create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<PlaceId>,
    /// Label: printable, trimmed, 1 to 255 characters.
    pub label: String,
    /// Where it is (clarification 30); the radius, in metres, may be null.
    pub location: Location,
    /// Description: printable, trimmed, at most 1,024 characters, or null.
    #[serde(default)]
    pub description: Option<String>,
}

impl Place {
    /// The place as stored, or the first member that is not valid, named
    /// by its path (`place.location.lat`).
    fn checked(self) -> Result<Self> {
        Ok(Self {
            id: self.id,
            label: trimmed_text("place.label", &self.label, 1, MAX_PLACE_LABEL_CHARS)?,
            location: self.location.checked("place.location")?,
            description: optional_text(
                "place.description",
                self.description.as_deref(),
                MAX_PLACE_DESCRIPTION_CHARS,
            )?,
        })
    }

    fn from_row(row: &sqlx::sqlite::SqliteRow) -> Result<Self> {
        Ok(Self {
            id: Some(PlaceId(row.try_get("id")?)),
            label: row.try_get("label")?,
            location: Location::from_row(row)?
                .ok_or_else(|| Error::corrupt("place location", "lat or lng is null"))?,
            description: row.try_get("description")?,
        })
    }
}

impl Store {
    /// Stores a place of the master user `master` (its `id`, if any, is
    /// ignored); 201 when there is no such live user, 7 for a sub-user or
    /// a member that is not valid.
    pub async fn create_place(&self, master: UserId, place: Place) -> Result<PlaceId> {
        let place = place.checked()?;
        records::require_master(&self.pool, master).await?;
        let id = sqlx::query_scalar(
            "INSERT INTO places (master_user_id, label, lat, lng, address, radius, description, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
        )
        .bind(master.0)
        .bind(&place.label)
        .bind(place.location.lat)
        .bind(place.location.lng)
        .bind(&place.location.address)
        .bind(place.location.radius)
        .bind(&place.description)
        .bind(self.clock.now())
        .fetch_one(&self.pool)
        .await?;
        Ok(PlaceId(id))
    }

    /// The places of the master user `master`, by id; 201 when there is no
    /// such live user.
    pub async fn places(&self, master: UserId) -> Result<Vec<Place>> {
        records::require_master(&self.pool, master).await?;
        let rows = sqlx::query("SELECT * FROM places WHERE master_user_id = $1 ORDER BY id")
            .bind(master.0)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(Place::from_row).collect()
    }

    /// The places `ids` of the master user `master`, in the order asked
    /// (an id asked twice is answered once); 204 naming the first id that
    /// is not a place of the account (clarification 44).
    pub async fn places_of(&self, master: UserId, ids: &[PlaceId]) -> Result<Vec<Place>> {
        let ids: Vec<i64> = ids.iter().map(|id| id.0).collect();
        let rows = records::owned_rows(&self.pool, "places", "place", master, &ids).await?;
        rows.iter().map(Place::from_row).collect()
    }

    /// Deletes a place, whoever owns it (the operator's command); 201 when
    /// there is none with this id.
    pub async fn delete_place(&self, place: PlaceId) -> Result<()> {
        let done = sqlx::query("DELETE FROM places WHERE id = $1")
            .bind(place.0)
            .execute(&self.pool)
            .await?;
        records::one_changed(done.rows_affected(), "place", place.0)
    }
}

#[cfg(test)]
mod tests {
    use schemas::{ErrorCode, HasCode};

    use super::*;
    use crate::zones::tests::store_with_two_users;

    fn place(label: &str, lat: f64, lng: f64) -> Place {
        Place {
            id: None,
            label: label.into(),
            location: Location {
                lat,
                lng,
                address: String::new(),
                radius: None,
            },
            description: None,
        }
    }

    #[tokio::test]
    async fn places_named_by_another_call_are_the_accounts_or_204() {
        let (_dir, store, ann, bob) = store_with_two_users().await;
        let office = store
            .create_place(ann, place("Office", 1.0, 2.0))
            .await
            .unwrap();
        let pin = store
            .create_place(ann, place("Pin", -1.0, -2.0))
            .await
            .unwrap();
        let bobs = store
            .create_place(bob, place("Bob's", 0.0, 0.0))
            .await
            .unwrap();

        let found = store.places_of(ann, &[pin, office, pin]).await.unwrap();
        let labels: Vec<_> = found.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(labels, ["Pin", "Office"], "in the order asked, once each");
        for asked in [vec![office, bobs], vec![PlaceId(999)]] {
            let error = store.places_of(ann, &asked).await.unwrap_err();
            assert_eq!(error.code(), ErrorCode::EntityNotFound, "{error}");
        }
        let checked = store
            .create_place(
                ann,
                Place {
                    description: Some("  by the gate ".into()),
                    ..place(" Gate ", 0.5, 0.5)
                },
            )
            .await
            .unwrap();
        let stored = store.places_of(ann, &[checked]).await.unwrap();
        assert_eq!(
            (stored[0].label.as_str(), stored[0].description.as_deref()),
            ("Gate", Some("by the gate")),
            "texts are trimmed"
        );
        store.delete_place(office).await.unwrap();
        assert_eq!(store.places(ann).await.unwrap().len(), 2);
    }
}
