//! Tracker clones (`Store::clone_tracker`, what `trackhouse admin tracker
//! clone` calls) through the real server: a clone reads its source's
//! telemetry, inputs and fuel sensors under its own id, access is checked on
//! the id named, and data cannot be sent to a clone.

use platform::Right;
use schemas::{DealerId, TrackerId, UserId};
use serde_json::{Value, json};

use crate::raw_data::csv;
use crate::resampling::{TEN_MINUTES, account_with_readings, props, resample};
use crate::{Account, TestServer};

/// A master user of `dealer` (zone Asia/Tokyo, like the source's owner)
/// with an API key: (user, key).
async fn viewer(srv: &TestServer, dealer: DealerId, login: &str) -> (UserId, String) {
    let user = srv.user(dealer, login).await;
    let key = srv.store.create_api_key(user, "viewer").await.unwrap();
    (user, key.hash.expose().to_owned())
}

/// Two messages of the account's first tracker, sent by its device id.
async fn ingest_two(srv: &TestServer, account: &Account) {
    let device = srv
        .store
        .tracker(account.trackers[0])
        .await
        .unwrap()
        .unwrap()
        .device_id;
    let token = srv.ingest_token(false).await;
    let answer = srv
        .intake(
            &token,
            &[
                json!({"device_id": device, "msg_time": "2024-06-01T06:00:00Z", "lat": 43.25, "lng": 76.95,
                       "inputs": {"lls_level_1": 512}, "states": {"ignition": true}}),
                json!({"device_id": device, "msg_time": "2024-06-01T06:00:10Z", "lat": 43.2501, "speed": 12.5}),
            ],
        )
        .await;
    assert_eq!(answer.ok()["accepted"], 2, "{answer:?}");
}

fn read(hash: &str, tracker: TrackerId) -> Value {
    json!({"hash": hash, "tracker_id": tracker.0, "interval": "2024-06-01T00:00:00Z/P1D",
           "columns": ["lat", "lng", "speed", "inputs.*", "states.ignition"]})
}

#[tokio::test]
async fn a_clone_reads_its_sources_data_under_its_own_id() {
    let srv = TestServer::start().await;
    let owner = srv.account("source-owner@example.com").await;
    let (viewer, key) = viewer(&srv, owner.dealer, "viewer@example.com").await;
    let source = owner.trackers[0];
    let clone = srv
        .store
        .clone_tracker(source, viewer, Some("Leased truck"))
        .await
        .unwrap();
    assert_ne!(clone, source);
    let stored = srv.store.tracker(clone).await.unwrap().unwrap();
    assert_eq!(
        (stored.clone_of, stored.user_id, stored.label.as_str()),
        (Some(source), viewer, "Leased truck")
    );
    assert_eq!(
        stored.plan_id,
        srv.store.tracker(source).await.unwrap().unwrap().plan_id,
        "a clone for a user of the same dealer is on the source's plan"
    );
    // Data sent for the device after the clone was made, still in memory.
    ingest_two(&srv, &owner).await;

    let (status, through_source) = csv(&srv, read(&owner.key, source)).await;
    assert_eq!(status, 200, "{through_source}");
    assert_eq!(through_source.lines().count(), 3, "{through_source}");
    let (status, through_clone) = csv(&srv, read(&key, clone)).await;
    assert_eq!(
        (status, through_clone.as_str()),
        (200, through_source.as_str())
    );
    srv.ingest.flush().unwrap();
    let (_, from_parquet) = csv(&srv, read(&key, clone)).await;
    assert_eq!(from_parquet, through_source, "the same from Parquet");

    let inputs = |hash: &str, tracker: TrackerId| {
        srv.post(
            "/dwh/v1/tracker/raw_data/get_inputs",
            json!({"hash": hash, "tracker_id": tracker.0}),
        )
    };
    let of_source = inputs(&owner.key, source).await.ok().clone();
    assert_eq!(of_source["inputs"], json!(["lls_level_1"]), "{of_source}");
    assert_eq!(inputs(&key, clone).await.ok(), &of_source);
}

#[tokio::test]
async fn access_is_checked_on_the_id_named() {
    let srv = TestServer::start().await;
    let owner = srv.account("owner@example.com").await;
    let (viewer, key) = viewer(&srv, owner.dealer, "viewer@example.com").await;
    let source = owner.trackers[0];
    let clone = srv.store.clone_tracker(source, viewer, None).await.unwrap();
    ingest_two(&srv, &owner).await;
    let refused = |hash: &str, tracker: TrackerId, code: u16, http: u16| {
        let srv = &srv;
        let body = read(hash, tracker);
        async move {
            srv.post("/dwh/v1/tracker/raw_data/read", body)
                .await
                .error(code, http)
                .to_owned()
        }
    };
    // Neither user reads the other's tracker through its own.
    refused(&key, source, 204, 404).await;
    refused(&owner.key, clone, 204, 404).await;
    refused(&key, owner.trackers[1], 204, 404).await;

    // A sub-user of the viewer reads the clone once it is in its scope.
    let viewer_account = Account {
        user: viewer,
        trackers: vec![clone],
        ..owner.clone()
    };
    let sub = srv
        .subuser(
            &viewer_account,
            "viewer-sub@example.com",
            vec![Right::VehicleUpdate],
        )
        .await;
    let (status, body) = csv(&srv, read(&sub, clone)).await;
    assert_eq!((status, body.lines().count()), (200, 3), "{body}");

    // Blocking the clone shuts out its viewer only; blocking the source
    // shuts out both.
    srv.store.set_tracker_blocked(clone, true).await.unwrap();
    refused(&key, clone, 208, 403).await;
    assert_eq!(csv(&srv, read(&owner.key, source)).await.0, 200);
    srv.store.set_tracker_blocked(clone, false).await.unwrap();
    srv.store.set_tracker_blocked(source, true).await.unwrap();
    let description = refused(&key, clone, 208, 403).await;
    assert!(
        description.contains(&clone.to_string()),
        "names the id the caller named: {description}"
    );
    refused(&owner.key, source, 208, 403).await;
}

#[tokio::test]
async fn data_sent_for_a_clone_is_refused_with_219() {
    let srv = TestServer::start().await;
    let owner = srv.account("owner@example.com").await;
    let (viewer, _) = viewer(&srv, owner.dealer, "viewer@example.com").await;
    let clone = srv
        .store
        .clone_tracker(owner.trackers[0], viewer, None)
        .await
        .unwrap();
    let token = srv.ingest_token(false).await;
    let answer = srv
        .intake(
            &token,
            &[
                json!({"tracker_id": clone.0, "msg_time": "2024-06-01T06:00:00Z", "lat": 1.0}),
                json!({"tracker_id": owner.trackers[0].0, "msg_time": "2024-06-01T06:00:00Z", "lat": 1.0}),
            ],
        )
        .await;
    let body = answer.ok();
    assert_eq!(body["accepted"], 1, "{body}");
    assert_eq!(body["rejected"][0]["line"], 1, "{body}");
    assert_eq!(body["rejected"][0]["code"], 219, "{body}");
}

#[tokio::test]
async fn resampling_through_a_clone_uses_the_sources_sensors_in_the_clones_zone() {
    let srv = TestServer::start().await;
    // A UTC owner whose tracker has the sensor "Tank" and readings.
    let (owner_key, source) = account_with_readings(&srv).await;
    let source = TrackerId(source);
    // A viewer of another dealer, in Asia/Tokyo.
    let (dealer, _) = srv.dealer(None).await;
    let (viewer, key) = viewer(&srv, dealer, "tokyo@example.com").await;
    let clone = srv.store.clone_tracker(source, viewer, None).await.unwrap();
    assert_eq!(
        srv.store.tracker(clone).await.unwrap().unwrap().plan_id,
        srv.store.default_tracker_plan(dealer).await.unwrap(),
        "a clone for another dealer's user is on that dealer's default plan"
    );
    let body = json!({
        "step_size": 2,
        "resampling_props": props(&[("FUEL", "PREVIOUS", None, None), ("SPEED", "PREVIOUS", None, None)]),
    });
    let (status, of_source) = resample(&srv, &owner_key, source.0, Some(TEN_MINUTES), &body).await;
    assert_eq!(status, 200, "{of_source}");
    let (status, of_clone) = resample(&srv, &key, clone.0, Some(TEN_MINUTES), &body).await;
    assert_eq!(status, 200, "{of_clone}");
    assert!(of_source.starts_with("Time,Tank,SPEED\n"), "{of_source}");
    // The same rows, nine hours later on the clock.
    let in_tokyo = of_source.replace("2024-06-01T00:", "2024-06-01T09:");
    assert_eq!(of_clone, in_tokyo);
    assert_eq!(of_clone.lines().count(), 6, "{of_clone}");
}
