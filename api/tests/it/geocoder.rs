//! `/v2/geocoder/search_address|search_location` (clarification 47): the
//! bundled places, through the real server: coordinates as text or as an
//! object, names with bounds, 210 when nothing matches, 7 naming the field,
//! the three request forms, sub-users, and the result limit.

use api::ApiConfig;
use serde_json::{Value, json};

use crate::TestServer;
use crate::server::generous_limits;

async fn search(srv: &TestServer, body: Value) -> Vec<Value> {
    srv.post("/v2/geocoder/search_address", body).await.ok()["locations"]
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn coordinates_give_the_nearest_place_at_those_coordinates() {
    let srv = TestServer::start().await;
    let acc = srv.account("geo-reverse@example.com").await;
    // Text of two decimal numbers, as the clarification's example.
    let found = search(&srv, json!({"hash": acc.key, "q": "43.2567,76.9286"})).await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["lat"], 43.2567);
    assert_eq!(found[0]["lng"], 76.9286);
    assert_eq!(found[0]["address"], "Almaty, Almaty Qalasy, Kazakhstan");
    assert!(found[0].get("details").is_none(), "only with with_details");
    // A location object, with details.
    let found = search(
        &srv,
        json!({"hash": acc.key, "q": {"lat": 52.5244, "lng": 13.4105}, "with_details": true}),
    )
    .await;
    assert_eq!(
        found[0]["details"],
        json!({"country": "Germany", "province": "Berlin", "locality": "Berlin"})
    );
    let value = srv
        .post(
            "/v2/geocoder/search_location",
            json!({"hash": acc.key, "location": {"lat": 40.7831, "lng": -73.9712}, "goal": "ui"}),
        )
        .await;
    let body = value.ok();
    assert_eq!(
        body["value"],
        "Manhattan, New York, United States of America"
    );
    assert!(body.get("details").is_none());
    let detailed = srv
        .post(
            "/v2/geocoder/search_location",
            json!({"hash": acc.key, "location": {"lat": 40.7831, "lng": -73.9712},
                   "goal": "ui_user_action", "with_details": true, "lang": "en", "geocoder": "osm"}),
        )
        .await;
    assert_eq!(detailed.ok()["details"]["locality"], "Manhattan");
}

#[tokio::test]
async fn names_are_ranked_and_bounds_only_raise_the_places_inside() {
    let srv = TestServer::start().await;
    let acc = srv.account("geo-names@example.com").await;
    let london = search(&srv, json!({"hash": acc.key, "q": "london"})).await;
    assert!(london.len() > 3, "{london:?}");
    assert_eq!(
        london[0]["address"],
        "London, England, United Kingdom of Great Britain and Northern Ireland"
    );
    let ontario = json!({"nw": {"lat": 45.0, "lng": -83.0}, "se": {"lat": 41.0, "lng": -79.0}});
    let biased = search(
        &srv,
        json!({"hash": acc.key, "q": "London", "bounds": ontario}),
    )
    .await;
    assert_eq!(biased[0]["address"], "London, Ontario, Canada");
    assert!(
        biased.iter().any(|l| l["address"] == london[0]["address"]),
        "places outside still appear: {biased:?}"
    );
    let qualified = search(&srv, json!({"hash": acc.key, "q": "Berlin, New Hampshire"})).await;
    assert_eq!(qualified.len(), 1);
    assert_eq!(
        qualified[0]["address"],
        "Berlin, New Hampshire, United States of America"
    );
    // A typing error still finds the place.
    let typo = search(&srv, json!({"hash": acc.key, "q": "Almatyy"})).await;
    assert!(
        typo.iter()
            .any(|l| l["address"] == "Almaty, Almaty Qalasy, Kazakhstan"),
        "{typo:?}"
    );
}

#[tokio::test]
async fn nothing_matched_is_210_and_bad_parameters_are_7_naming_them() {
    let srv = TestServer::start().await;
    let acc = srv.account("geo-errors@example.com").await;
    let none = srv
        .post(
            "/v2/geocoder/search_address",
            json!({"hash": acc.key, "q": "Qwxzqwxz Qwxz"}),
        )
        .await;
    none.error(210, 400);
    let refused = |body: Value, path: &'static str, field: &'static str| {
        let srv = &srv;
        async move {
            let answer = srv.post(path, body).await;
            answer.error(7, 400);
            assert_eq!(answer.body["errors"][0]["parameter"], field, "{answer:?}");
        }
    };
    let address = "/v2/geocoder/search_address";
    let location = "/v2/geocoder/search_location";
    refused(json!({"hash": acc.key, "q": " ,- "}), address, "q").await;
    refused(json!({"hash": acc.key, "q": "x".repeat(256)}), address, "q").await;
    refused(
        json!({"hash": acc.key, "q": "Paris", "geocoder": "bing"}),
        address,
        "geocoder",
    )
    .await;
    refused(
        json!({"hash": acc.key, "q": "Paris", "lang": "english"}),
        address,
        "lang",
    )
    .await;
    refused(
        json!({"hash": acc.key, "q": {"lat": 91.0, "lng": 0.0}}),
        address,
        "q.lat",
    )
    .await;
    refused(
        json!({"hash": acc.key, "q": "Paris", "bounds": {"nw": {"lat": 1, "lng": 181}, "se": {"lat": 0, "lng": 0}}}),
        address,
        "bounds.nw.lng",
    )
    .await;
    refused(
        json!({"hash": acc.key, "location": {"lat": 0, "lng": -180.5}, "goal": "ui"}),
        location,
        "location.lng",
    )
    .await;
    refused(
        json!({"hash": acc.key, "location": {"lat": 0, "lng": 0}, "goal": "map"}),
        location,
        "goal",
    )
    .await;
    // 255 characters are taken (and match nothing).
    srv.post(address, json!({"hash": acc.key, "q": "x".repeat(255)}))
        .await
        .error(210, 400);
    // Without a session: 3 (wrong hash), as every account call.
    srv.post(address, json!({"q": "Paris"})).await.error(3, 400);
}

#[tokio::test]
async fn the_three_request_forms_and_sub_users_get_the_same_answer() {
    let srv = TestServer::start().await;
    let acc = srv.account("geo-forms@example.com").await;
    let sub = srv.subuser(&acc, "geo-sub@example.com", vec![]).await;
    let by_json = search(
        &srv,
        json!({"hash": sub, "q": "Almaty", "with_details": true}),
    )
    .await;
    let by_form = srv
        .post_form(
            "/v2/geocoder/search_address",
            &[
                ("hash", acc.key.as_str()),
                ("q", "Almaty"),
                ("with_details", "true"),
            ],
        )
        .await;
    let by_get = srv
        .get(
            "/v2/geocoder/search_address",
            &[
                ("hash", acc.key.as_str()),
                ("q", "Almaty"),
                ("with_details", "true"),
            ],
        )
        .await;
    assert_eq!(by_form.ok()["locations"].as_array().unwrap(), &by_json);
    assert_eq!(by_get.ok()["locations"].as_array().unwrap(), &by_json);
    let point = srv
        .get(
            "/v2/geocoder/search_location",
            &[
                ("hash", acc.key.as_str()),
                ("location", r#"{"lat":43.2567,"lng":76.9286}"#),
                ("goal", "ui"),
            ],
        )
        .await;
    assert_eq!(point.ok()["value"], "Almaty, Almaty Qalasy, Kazakhstan");
}

#[tokio::test]
async fn a_name_answers_at_most_the_configured_number_of_places() {
    let srv = TestServer::start_with(ApiConfig {
        rate_limits: generous_limits(),
        geocoder_results: 3,
        ..ApiConfig::default()
    })
    .await;
    let acc = srv.account("geo-limit@example.com").await;
    assert_eq!(
        search(&srv, json!({"hash": acc.key, "q": "san"}))
            .await
            .len(),
        3
    );
    let default = TestServer::start().await;
    let other = default.account("geo-limit2@example.com").await;
    assert_eq!(
        search(&default, json!({"hash": other.key, "q": "san"}))
            .await
            .len(),
        10
    );
}
