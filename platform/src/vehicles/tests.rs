//! `vehicle_list_keys` and `vehicle_search` (migration 0008) stay equal to
//! what they copy, whatever statement changes it; lists through the index
//! and through the scan agree.

use schemas::{DealerId, UserId};

use super::*;
use crate::{CredentialKind, Garage, ListQuery, NewTracker, StorePeriod};

fn master(user: UserId) -> UserAuth {
    UserAuth {
        user_id: user,
        master_id: user,
        dealer_id: DealerId(1),
        kind: CredentialKind::Session,
        time_zone: "UTC".into(),
    }
}

/// Rows of `vehicle_list_keys` that differ from a fresh copy of the
/// vehicles, their trackers' labels and garages' names, both ways; and
/// 1 when the search index does not hold the copies' texts as they are.
async fn stale_copies(store: &Store) -> (i64, i64) {
    let fresh = "SELECT v.id, v.master_user_id, v.tracker_id, v.garage_id, v.label, \
                 v.reg_number, v.model, v.type, v.subtype, v.vin, v.fuel_type, v.fuel_grade, \
                 v.norm_avg_fuel_consumption, v.fuel_tank_volume, v.payload_weight, \
                 v.chassis_number, v.wheel_arrangement, v.tyres_number, v.tyre_size, \
                 v.max_speed, v.passengers, t.label, g.organization_name, v.search_text \
                 FROM vehicles v LEFT JOIN trackers t ON t.id = v.tracker_id \
                 LEFT JOIN garages g ON g.id = v.garage_id";
    let keys: i64 = sqlx::query_scalar(&format!(
        "SELECT (SELECT count(*) FROM (SELECT * FROM ({fresh}) EXCEPT SELECT * FROM vehicle_list_keys)) \
         + (SELECT count(*) FROM (SELECT * FROM vehicle_list_keys EXCEPT SELECT * FROM ({fresh})))"
    ))
    .fetch_one(&store.pool)
    .await
    .unwrap();
    // The index against its content table, `vehicle_list_keys` (migration
    // 0019): with rank 1 FTS5 re-reads every row and compares.
    let search = sqlx::query(
        "INSERT INTO vehicle_search (vehicle_search, rank) VALUES ('integrity-check', 1)",
    )
    .execute(&store.pool)
    .await
    .map_or(1, |_| 0);
    (keys, search)
}

fn labels(list: &[ListedVehicle]) -> Vec<&str> {
    list.iter().map(|v| v.vehicle.label.as_str()).collect()
}

#[tokio::test]
async fn the_list_copies_follow_every_change_of_what_they_copy() {
    let (_dir, store, ann, bob) = crate::zones::tests::store_with_two_users().await;
    let (ann_auth, bob_auth) = (master(ann), master(bob));
    let tracker = |user: UserId, label: &str, device: &str| NewTracker {
        user_id: user,
        label: label.into(),
        device_id: device.into(),
        model: "fmb920".into(),
        plan_id: None,
        store_period: Some(StorePeriod::Years(1)),
        time_zone: None,
    };
    let t1 = store
        .create_tracker(tracker(ann, "Alpha unit", "100"))
        .await
        .unwrap();
    let t2 = store
        .create_tracker(tracker(ann, "Beta unit", "200"))
        .await
        .unwrap();
    let depot = Garage {
        id: None,
        location: None,
        mechanic_name: None,
        dispatcher_name: None,
        organization_name: Some("North depot".into()),
    };
    let garage = store.create_garage(ann, depot.clone()).await.unwrap();
    let mut truck = Vehicle::new("Volvo FH #1", VehicleType::Truck);
    truck.reg_number = "AB 1234 CE".into();
    truck.tracker_id = Some(t1.0);
    truck.garage_id = Some(garage);
    let first = store
        .create_vehicle(&ann_auth, truck.clone(), false)
        .await
        .unwrap();
    let mut van = Vehicle::new("Ford Transit #2", VehicleType::Car);
    van.vin = "WF0YXXTTGYLA12345".into();
    van.tracker_id = Some(t2.0);
    let second = store.create_vehicle(&ann_auth, van, false).await.unwrap();
    store
        .create_vehicle(
            &bob_auth,
            Vehicle::new("Bob's volvo", VehicleType::Car),
            false,
        )
        .await
        .unwrap();
    assert_eq!(stale_copies(&store).await, (0, 0), "created");

    truck.id = Some(first);
    truck.label = "Scania R #1".into();
    truck.tracker_id = Some(t2.0);
    store.update_vehicle(&ann_auth, truck, true).await.unwrap();
    assert_eq!(stale_copies(&store).await, (0, 0), "updated, tracker moved");

    sqlx::query("UPDATE trackers SET label = 'Gamma unit' WHERE id = $1")
        .bind(t2.0)
        .execute(&store.pool)
        .await
        .unwrap();
    store
        .update_garage(
            ann,
            Garage {
                id: Some(garage),
                organization_name: Some("South depot".into()),
                ..depot
            },
        )
        .await
        .unwrap();
    assert_eq!(stale_copies(&store).await, (0, 0), "renamed");
    let by_tracker = store
        .list_vehicles(
            &ann_auth,
            &ListQuery {
                sort: vec!["tracker_label=desc".into()],
                ..ListQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(by_tracker[0].tracker_label.as_deref(), Some("Gamma unit"));
    assert_eq!(
        by_tracker[0].garage_organization_name.as_deref(),
        Some("South depot")
    );

    store.delete_garage(ann, garage).await.unwrap();
    assert_eq!(stale_copies(&store).await, (0, 0), "garage deleted");
    store
        .delete_vehicles(&ann_auth, &[second], true)
        .await
        .unwrap();
    assert_eq!(stale_copies(&store).await, (0, 0), "deleted");

    // The comparison sees an index that no longer follows its content.
    sqlx::query("UPDATE vehicle_list_keys SET search_text = 'changed behind the index'")
        .execute(&store.pool)
        .await
        .unwrap();
    assert_eq!(stale_copies(&store).await.1, 1, "changed behind the index");
}

#[tokio::test]
async fn filters_find_the_same_vehicles_through_the_index_and_the_scan() {
    let (_dir, store, ann, _) = crate::zones::tests::store_with_two_users().await;
    let auth = master(ann);
    for (label, reg) in [
        ("Volvo FH \"Ice\" #1", "AB 1234 CE"),
        ("volvo fm #2", "KX 4821 AB"),
        ("Straße 3", "K 48-1"),
        ("ſpecial", "MM 0001 MM"),
    ] {
        let mut v = Vehicle::new(label, VehicleType::Truck);
        v.reg_number = reg.into();
        store.create_vehicle(&auth, v, false).await.unwrap();
    }
    let find = |filter: &str| {
        let store = store.clone();
        let auth = auth.clone();
        let query = ListQuery {
            sort: vec!["label=asc".into()],
            filter: Some(filter.into()),
            ..ListQuery::default()
        };
        async move { store.list_vehicles(&auth, &query).await.unwrap() }
    };
    assert_eq!(
        labels(&find("VOLVO").await),
        ["Volvo FH \"Ice\" #1", "volvo fm #2"]
    );
    assert_eq!(labels(&find("\"ice\"").await), ["Volvo FH \"Ice\" #1"]);
    assert_eq!(labels(&find("k 48").await), ["Straße 3"]);
    assert_eq!(labels(&find("4821 a").await), ["volvo fm #2"]);
    assert_eq!(labels(&find("STRASSE").await), Vec::<&str>::new());
    assert_eq!(labels(&find("straße").await), ["Straße 3"]);
    assert_eq!(labels(&find("spe").await), Vec::<&str>::new(), "ſ is not s");
    assert_eq!(labels(&find("ſpe").await), ["ſpecial"]);
    assert_eq!(labels(&find("m 0").await), ["ſpecial"]);
    assert_eq!(
        labels(&find("vo").await).len(),
        2,
        "two characters: the scan"
    );
    assert_eq!(labels(&find("o f").await).len(), 2);
    assert_eq!(labels(&find("#_").await).len(), 0, "wildcards are literal");
    assert_eq!(labels(&find("48-1").await), ["Straße 3"]);
    // Both trigrams of "lvol" are in "volvo", apart: the index finds
    // the two Volvos, the check keeps neither.
    assert_eq!(labels(&find("lvol").await), Vec::<&str>::new());
}

#[tokio::test]
async fn every_page_is_the_slice_of_the_whole_list_whatever_the_sort() {
    let (_dir, store, ann, _) = crate::zones::tests::store_with_two_users().await;
    let auth = master(ann);
    let mut garages = Vec::new();
    for name in [Some("north"), Some("North"), None, Some("Ёлки")] {
        let garage = Garage {
            id: None,
            location: None,
            mechanic_name: None,
            dispatcher_name: None,
            organization_name: name.map(str::to_owned),
        };
        garages.push(store.create_garage(ann, garage).await.unwrap());
    }
    // Labels, models and tracker labels that tie (in any case), nulls.
    let mut trackers = Vec::new();
    for n in 0..40_usize {
        let mut v = Vehicle::new(
            ["alpha", "Alpha", "beta", "Гамма", "delta"][n % 5],
            VehicleType::Truck,
        );
        v.model = ["MAN", "man", "Volvo", ""][n % 4].into();
        v.reg_number = format!("AB {:04}", (n * 7) % 13);
        v.max_speed = (n % 3) as i64 * 10;
        // Reals that do not survive a trip through 15 digits of text, and nulls.
        v.norm_avg_fuel_consumption = [0.1 + 0.2, 0.3, 7.0][n % 3];
        v.fuel_type = [None, Some(FuelType::Diesel), Some(FuelType::Gas)][n % 3];
        v.tyres_number = (n % 2) as i64 * 6;
        v.garage_id = (n % 5 != 0).then(|| garages[n % garages.len()]);
        if n % 3 == 0 {
            let tracker = store
                .create_tracker(NewTracker {
                    user_id: ann,
                    label: ["Unit", "unit", "Zed"][n / 3 % 3].into(),
                    device_id: format!("dev-{n}"),
                    model: "fmb920".into(),
                    plan_id: None,
                    store_period: Some(StorePeriod::Years(1)),
                    time_zone: None,
                })
                .await
                .unwrap();
            v.tracker_id = Some(tracker.0);
            trackers.push(tracker);
        }
        store.create_vehicle(&auth, v, false).await.unwrap();
    }
    // A sub-user sees the vehicles without a tracker and those of half the trackers.
    let sub = store
        .create_subuser(crate::NewSubuser {
            master_id: ann,
            login: "sub@example.com".into(),
            password: "secret1".into(),
            rights: Vec::new(),
            trackers: trackers.iter().step_by(2).copied().collect(),
            first_name: String::new(),
            last_name: String::new(),
        })
        .await
        .unwrap();
    let sub = UserAuth {
        user_id: sub,
        ..master(ann)
    };
    let ids = |list: Vec<ListedVehicle>| {
        list.into_iter()
            .map(|v| v.vehicle.id.unwrap())
            .collect::<Vec<_>>()
    };
    for (auth, count) in [(&auth, 40), (&sub, 33)] {
        for first in [
            "label",
            "reg_number",
            "model",
            "tracker_label",
            "garage_organization_name",
            "max_speed",
            "norm_avg_fuel_consumption",
            "fuel_type",
            "tyres_number",
            "id",
        ] {
            for direction in ["asc", "desc"] {
                for second in [None, Some("max_speed=desc"), Some("label=asc")] {
                    let sort: Vec<String> = std::iter::once(format!("{first}={direction}"))
                        .chain(second.map(str::to_owned))
                        .collect();
                    let page = |offset: i64, limit: i64| {
                        let query = ListQuery {
                            sort: sort.clone(),
                            filter: None,
                            limit: Some(limit),
                            offset: Some(offset),
                        };
                        let (store, auth) = (store.clone(), auth.clone());
                        async move { ids(store.list_vehicles(&auth, &query).await.unwrap()) }
                    };
                    let whole = page(0, 1000).await;
                    assert_eq!(whole.len(), count);
                    // SQLite's own sort of every row, without pivots or groups.
                    let checked = ListQuery {
                        sort: sort.clone(),
                        ..ListQuery::default()
                    }
                    .checked(&super::list::LIST_RULES)
                    .unwrap();
                    let sorted: Vec<i64> = sqlx::query_scalar(&format!(
                        "SELECT v.id FROM vehicle_list_keys v WHERE v.master_user_id = $1{} \
                         ORDER BY {}",
                        super::scope(auth),
                        checked.order_by
                    ))
                    .bind(auth.master_id.0)
                    .bind(auth.user_id.0)
                    .fetch_all(&store.pool)
                    .await
                    .unwrap();
                    assert_eq!(whole, sorted, "{sort:?}");
                    for limit in [1, 7] {
                        for offset in (1..42).step_by(limit as usize) {
                            let want: Vec<i64> = whole
                                .iter()
                                .skip(offset as usize)
                                .take(limit as usize)
                                .copied()
                                .collect();
                            assert_eq!(page(offset, limit).await, want, "{sort:?} at {offset}");
                        }
                    }
                }
            }
        }
    }
}

#[tokio::test]
async fn every_sortable_property_is_walked_in_an_index_of_its_own() {
    let (_dir, store, _, _) = crate::zones::tests::store_with_two_users().await;
    for (property, _) in super::list::LIST_RULES.properties {
        let index =
            super::list::index_of(property).unwrap_or_else(|| panic!("{property} has no index"));
        let sql: String = sqlx::query_scalar(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = $1 \
             AND tbl_name = 'vehicle_list_keys'",
        )
        .bind(index)
        .fetch_one(&store.pool)
        .await
        .unwrap_or_else(|e| panic!("{property}: {index}: {e}"));
        let column = match *property {
            "id" => "master_user_id",
            "tyres_size" => "tyre_size",
            "garage_organization_name" => "garage_organization_name",
            other => other,
        };
        assert!(sql.contains(column), "{property}: {sql}");
    }
}
