//! The public side of geo links over real HTTP: `/links/{hash}` (the page),
//! `/links/{hash}/positions` (the feed) and `/links/static/*`. States and
//! their statuses, members shown only when allowed, bounding zones, trail
//! length, intake visible at once, isolation and the per-address limit.

use std::num::NonZeroU32;

use api::{ApiConfig, Rate};
use serde_json::{Value, json};

use crate::{Account, Answer, TestServer};

/// Creates a link of `acc` and answers its hash.
async fn link_hash(srv: &TestServer, acc: &Account, body: Value) -> String {
    let mut body = body;
    body["hash"] = json!(acc.key);
    let id = srv
        .post("/v2/tracker/location/link/create", body)
        .await
        .ok()["value"]
        .as_i64()
        .unwrap();
    let read = srv
        .post(
            "/v2/tracker/location/link/read",
            json!({"hash": acc.key, "id": id}),
        )
        .await;
    read.ok()["value"]["hash"].as_str().unwrap().to_owned()
}

fn entry(tracker: i64, object_data: &[&str]) -> Value {
    json!({"tracker_id": tracker, "params": {"object_data": object_data}})
}

async fn feed(srv: &TestServer, hash: &str) -> Answer {
    srv.get(&format!("/links/{hash}/positions"), &[]).await
}

/// Status, content type and text of `GET path`.
async fn fetch(srv: &TestServer, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let response = srv.client().get(srv.url(path)).send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

fn header<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// One message a second of `tracker` ending at now (08:00:00), at `lat`.
fn track(tracker: i64, seconds: u32, lat: f64) -> Vec<Value> {
    (0..seconds.min(60))
        .rev()
        .map(|ago| {
            let time = match ago {
                0 => "2024-06-01T08:00:00Z".to_owned(),
                ago => format!("2024-06-01T07:59:{:02}Z", 60 - ago),
            };
            json!({"tracker_id": tracker, "msg_time": time,
                   "lat": lat, "lng": 13.4, "speed": 42.5, "heading": 90})
        })
        .collect()
}

#[tokio::test]
async fn each_state_has_its_status_on_page_and_feed() {
    let srv = TestServer::start().await;
    let acc = srv.account("page-states@example.com").await;
    let t = acc.trackers[0].0;
    let body = |lifetime: Value| {
        json!({"description": "Shift <1> & \"2\"", "lifetime": lifetime,
               "trackers": [entry(t, &[])]})
    };
    let enabled = link_hash(&srv, &acc, body(Value::Null)).await;
    // Now is 2024-06-01 08:00 UTC, 17:00 in the account's zone (Asia/Tokyo).
    let inactive = link_hash(&srv, &acc, body(json!({"from": "2024-06-02 09:00:00"}))).await;
    let expired = link_hash(&srv, &acc, body(json!({"to": "2024-06-01 16:59:59"}))).await;
    let disabled = link_hash(&srv, &acc, body(Value::Null)).await;
    let list = srv
        .post("/v2/tracker/location/link/list", json!({"hash": acc.key}))
        .await;
    let disabled_id = list.ok()["list"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["hash"] == disabled.as_str())
        .unwrap()["id"]
        .clone();
    srv.post(
        "/v2/tracker/location/link/status/change",
        json!({"hash": acc.key, "id": disabled_id, "is_active": false}),
    )
    .await
    .ok();

    let unknown = "0123456789abcdef0123456789abcdef".to_owned();
    let cases = [
        (unknown, 404, "not_found"),
        ("not-a-hash".to_owned(), 404, "not_found"),
        (enabled.to_uppercase(), 404, "not_found"),
        (disabled, 403, "disabled"),
        (inactive.clone(), 403, "inactive"),
        (expired, 410, "expired"),
    ];
    for (hash, status, state) in &cases {
        let answer = feed(&srv, hash).await;
        assert_eq!(
            (answer.status, answer.body["state"].as_str()),
            (*status, Some(*state)),
            "{hash}"
        );
        assert!(
            answer.body["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
        let (page_status, headers, text) = fetch(&srv, &format!("/links/{hash}")).await;
        assert_eq!(page_status, *status, "{hash}");
        assert!(header(&headers, "content-type").starts_with("text/html"));
        assert!(
            header(&headers, "content-security-policy").starts_with("default-src 'none';"),
            "a notice page loads nothing"
        );
        assert!(text.contains("<h1>"), "{text}");
    }
    // An inactive link says when it opens (09:00 in Tokyo is 00:00 UTC).
    let answer = feed(&srv, &inactive).await;
    assert!(
        answer.body["message"]
            .as_str()
            .unwrap()
            .contains("2024-06-02 00:00")
    );
    assert_eq!(answer.body["from"], 1_717_286_400_000_i64);

    let answer = feed(&srv, &enabled).await;
    assert_eq!(answer.status, 200);
    assert_eq!(header(&answer.headers, "cache-control"), "no-store");
    assert_eq!(answer.body["state"], "enabled");
    assert_eq!(answer.body["description"], "Shift <1> & \"2\"");
    assert_eq!(answer.body["until"], Value::Null);
    assert_eq!(answer.body["server_time"], 1_717_228_800_000_i64);

    let (status, headers, text) = fetch(&srv, &format!("/links/{enabled}")).await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "cache-control"), "no-store");
    assert_eq!(
        header(&headers, "content-security-policy"),
        "default-src 'none'; script-src 'self'; style-src 'self'; \
         img-src 'self' data: https://tile.openstreetmap.org; connect-src 'self'; \
         base-uri 'none'; form-action 'none'"
    );
    assert!(
        text.contains("<title>Shift &lt;1&gt; &amp; &quot;2&quot;</title>"),
        "{text}"
    );
    let config = format!(
        r#"{{"feed":"/links/{enabled}/positions","tiles":"https://tile.openstreetmap.org/{{z}}/{{x}}/{{y}}.png","poll_ms":2000}}"#
    );
    assert!(text.contains(&config), "{text}");
    assert!(!text.contains("{{"), "every placeholder is filled: {text}");
}

#[tokio::test]
async fn the_feed_shows_the_links_trackers_with_allowed_members_only() {
    let srv = TestServer::start().await;
    let acc = srv.account("page-feed@example.com").await;
    let other = srv.account("page-other@example.com").await;
    let (t0, t1) = (acc.trackers[0].0, acc.trackers[1].0);
    let hash = link_hash(
        &srv,
        &acc,
        json!({"description": "", "trackers": [
                   {"tracker_id": t1, "alias": "Van 7", "params": {"object_data":
                       ["speed", "address", "movement_status", "connection_status",
                        "vehicle_label", "driver_name"]}},
                   entry(t0, &[])],
               "params": {"display_options": {"trace_duration": 5, "show_vehicle_info": true}}}),
    )
    .await;
    // Nothing heard yet: labels only.
    let answer = feed(&srv, &hash).await;
    assert_eq!(
        answer.body["objects"],
        json!([{"key": 0, "label": "Van 7", "position": null, "trail": [],
                "vehicle": {"label": null}},
               {"key": 1, "label": "Truck 0", "position": null, "trail": []}])
    );

    let token = srv.ingest_token(false).await;
    let mut lines = track(t1, 10, 52.52);
    lines.extend(track(t0, 2, 52.0));
    lines.extend(track(other.trackers[0].0, 3, 40.0));
    srv.intake(&token, &lines).await.ok();

    // Visible at once, before any flush; 5 s of trail: 07:59:55 to 08:00:00.
    let answer = feed(&srv, &hash).await;
    let objects = answer.body["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 2);
    let van = &objects[0];
    assert_eq!(
        van["position"],
        json!({"lat": 52.52, "lng": 13.4, "heading": 90, "time": 1_717_228_800_000_i64})
    );
    assert_eq!(van["trail"].as_array().unwrap().len(), 6);
    assert_eq!(van["trail"][0], json!([52.52, 13.4, 1_717_228_795_000_i64]));
    assert_eq!(van["speed"], 42.5);
    assert_eq!(van["movement_status"], "moving");
    assert_eq!(van["connection_status"], "active");
    assert!(
        van["address"]
            .as_str()
            .is_some_and(|a| a.contains("Germany")),
        "{van}"
    );
    assert_eq!(van["vehicle"], json!({"label": null}));
    assert!(
        van.get("driver").is_none(),
        "show_driver_info is off: {van}"
    );
    let truck = &objects[1];
    assert_eq!(truck["trail"].as_array().unwrap().len(), 2);
    let members: Vec<&str> = truck
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(members, ["key", "label", "position", "trail"]);
    // Neither tracker ids nor the other account's positions appear.
    let text = answer.body.to_string();
    assert!(
        !text.contains("tracker_id") && !text.contains("\"id\""),
        "{text}"
    );
    assert!(!text.contains("40.0") && !text.contains(":40,"), "{text}");

    // A newer message shows at the next poll; after the previous answer
    // (`since` its server time), a trail holds only what arrived since.
    let since = answer.body["server_time"].as_i64().unwrap().to_string();
    srv.clock.advance(chrono::TimeDelta::seconds(1));
    let newer =
        json!({"tracker_id": t0, "msg_time": "2024-06-01T08:00:01Z", "lat": 52.1, "lng": 13.4});
    srv.intake(&token, &[newer]).await.ok();
    let answer = feed(&srv, &hash).await;
    assert_eq!(answer.body["objects"][1]["position"]["lat"], 52.1);
    let delta = srv
        .get(
            &format!("/links/{hash}/positions"),
            &[("since", since.as_str())],
        )
        .await;
    let objects = delta.body["objects"].as_array().unwrap();
    assert_eq!(objects[0]["trail"], json!([]), "{delta:?}");
    assert_eq!(objects[0]["position"]["lat"], 52.52);
    assert_eq!(
        objects[1]["trail"],
        json!([[52.1, 13.4, 1_717_228_801_000_i64]])
    );
    srv.get(&format!("/links/{hash}/positions"), &[("since", "soon")])
        .await
        .error(7, 400);
}

#[tokio::test]
async fn bounding_zones_show_positions_inside_or_outside_only() {
    let srv = TestServer::start().await;
    let acc = srv.account("page-zones@example.com").await;
    let (t0, t1) = (acc.trackers[0].0, acc.trackers[1].0);
    let zone = srv.circle_zone(acc.user, 52.52, 13.4, 500).await;
    let token = srv.ingest_token(false).await;
    let mut lines = track(t0, 3, 52.52); // in the depot
    lines.extend(track(t1, 3, 52.0)); // far from it
    srv.intake(&token, &lines).await.ok();
    let bounded = |mode: &str| {
        json!({"description": "Zones", "trackers": [entry(t0, &["speed"]), entry(t1, &["speed"])],
               "params": {"bounding_zone_ids": [zone.0], "bounding_mode": mode}})
    };
    let inside = link_hash(&srv, &acc, bounded("inside")).await;
    let outside = link_hash(&srv, &acc, bounded("outside")).await;

    let objects = feed(&srv, &inside).await.body["objects"].clone();
    assert_eq!(objects[0]["position"]["lat"], 52.52);
    assert_eq!(objects[0]["trail"].as_array().unwrap().len(), 3);
    assert_eq!(
        objects[1],
        json!({"key": 1, "label": "Truck 1", "position": null, "trail": []})
    );
    let objects = feed(&srv, &outside).await.body["objects"].clone();
    assert_eq!(
        objects[0],
        json!({"key": 0, "label": "Truck 0", "position": null, "trail": []})
    );
    assert_eq!(objects[1]["position"]["lat"], 52.0);
    assert_eq!(objects[1]["speed"], 42.5);
}

#[tokio::test]
async fn static_files_are_served_from_the_binary() {
    let srv = TestServer::start().await;
    for (file, content_type) in [
        ("leaflet.js", "text/javascript"),
        ("leaflet.css", "text/css"),
        ("page.js", "text/javascript"),
        ("page.css", "text/css"),
        ("images/marker-icon.png", "image/png"),
        ("images/layers-2x.png", "image/png"),
    ] {
        let (status, headers, _) = fetch(&srv, &format!("/links/static/{file}")).await;
        assert_eq!(status, 200, "{file}");
        assert!(
            header(&headers, "content-type").starts_with(content_type),
            "{file}"
        );
        assert!(
            header(&headers, "cache-control").contains("max-age="),
            "{file}"
        );
    }
    let (status, _, _) = fetch(&srv, "/links/static/../Cargo.toml").await;
    assert_eq!(status, 404);
    let (status, _, _) = fetch(&srv, "/links/static/secret.js").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn each_address_is_limited_and_counted() {
    let srv = TestServer::start_with(ApiConfig {
        link_rate: Rate::per_minute(NonZeroU32::new(3).unwrap()),
        ..ApiConfig::default()
    })
    .await;
    let hash = "0123456789abcdef0123456789abcdef";
    for _ in 0..2 {
        assert_eq!(feed(&srv, hash).await.status, 404);
    }
    let (status, _, _) = fetch(&srv, "/links/static/page.css").await;
    assert_eq!(status, 200);
    let answer = feed(&srv, hash).await;
    answer.error(15, 429);
    assert!(
        header(&answer.headers, "retry-after")
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    let (status, headers, text) = fetch(&srv, &format!("/links/{hash}")).await;
    assert_eq!(status, 429);
    assert!(
        header(&headers, "content-type").starts_with("text/html"),
        "{text}"
    );
    let metrics = srv.metrics_text().await;
    assert!(
        metrics.contains("trackhouse_api_errors_total{code=\"15\"} 2"),
        "{metrics}"
    );
    // The API's own calls are not counted against the pages' limit.
    srv.get("/healthz", &[]).await.ok();
}
