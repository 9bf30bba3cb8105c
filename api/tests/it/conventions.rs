//! Request forms, credentials in all their places, success and error shapes.

use serde_json::json;

use crate::TestServer;

#[tokio::test]
async fn json_form_and_get_give_identical_answers() {
    let srv = TestServer::start().await;
    let acc = srv.account("forms@example.com").await;
    let by_json = srv
        .post("/v2/api/key/list", json!({"hash": acc.session}))
        .await;
    let by_form = srv
        .post_form("/v2/api/key/list", &[("hash", &acc.session)])
        .await;
    let by_get = srv.get("/v2/api/key/list", &[("hash", &acc.session)]).await;
    by_json.ok();
    assert_eq!(by_json.body, by_form.body);
    assert_eq!(by_json.body, by_get.body);

    // The same validation error, whatever the form.
    let long = "x".repeat(256);
    let errors = [
        srv.post(
            "/v2/api/key/create",
            json!({"hash": acc.session, "title": long}),
        )
        .await,
        srv.post_form(
            "/v2/api/key/create",
            &[("hash", &acc.session), ("title", &long)],
        )
        .await,
        srv.get(
            "/v2/api/key/create",
            &[("hash", &acc.session), ("title", &long)],
        )
        .await,
    ];
    for e in &errors {
        e.error(7, 400);
        assert_eq!(e.body, errors[0].body);
    }
}

#[tokio::test]
async fn form_values_are_json_text_and_scalars_are_lenient() {
    let srv = TestServer::start().await;
    let acc = srv.account("lenient@example.com").await;
    // A password sent as a JSON number is read as a string.
    let (dealer, _) = srv.dealer(None).await;
    srv.store
        .create_user(platform::NewUser {
            dealer_id: dealer,
            login: "digits@example.com".into(),
            password: "12345678".into(),
            time_zone: None,
            activated: true,
            legal_type: platform::LegalType::Individual,
            first_name: String::new(),
            last_name: String::new(),
        })
        .await
        .unwrap();
    srv.post(
        "/v2/user/auth",
        json!({"login": "digits@example.com", "password": 12345678}),
    )
    .await
    .ok();
    // An int parameter sent as numeric text, in JSON and in a form.
    srv.post("/v2/user/auth", json!({"login": acc.login, "password": acc.password, "dealer_id": acc.dealer.0.to_string()}))
        .await
        .ok();
    let dealer_text = acc.dealer.0.to_string();
    srv.post_form(
        "/v2/user/auth",
        &[
            ("login", &acc.login),
            ("password", &acc.password),
            ("dealer_id", &dealer_text),
        ],
    )
    .await
    .ok();
    // A non-numeric int names the parameter.
    let bad = srv
        .post_form(
            "/v2/user/auth",
            &[
                ("login", &acc.login),
                ("password", &acc.password),
                ("dealer_id", "x1"),
            ],
        )
        .await;
    assert!(bad.error(7, 400).contains("dealer_id"));
    assert_eq!(bad.body["errors"][0]["parameter"], "dealer_id");
}

#[tokio::test]
async fn trailing_slashes_and_every_credential_place_work() {
    let srv = TestServer::start().await;
    let acc = srv.account("places@example.com").await;
    srv.post("/v2/api/key/list/", json!({"hash": acc.session}))
        .await
        .ok();
    srv.get("/v2/api/key/list/", &[("hash", &acc.session)])
        .await
        .ok();
    // hash in the query string of a JSON POST
    let url = srv.url(&format!("/v2/api/key/list?hash={}", acc.session));
    srv.send(srv.client().post(url).json(&json!({}))).await.ok();
    // Authorization: NVX <hash>, with a POST and with a GET
    let nvx = format!("NVX {}", acc.session);
    srv.send(
        srv.client()
            .post(srv.url("/v2/api/key/list"))
            .header("Authorization", &nvx)
            .json(&json!({})),
    )
    .await
    .ok();
    srv.send(
        srv.client()
            .get(srv.url("/v2/api/key/list/"))
            .header("Authorization", &nvx),
    )
    .await
    .ok();
    // Upper-case hex is the same credential.
    srv.post(
        "/v2/api/key/list",
        json!({"hash": acc.session.to_uppercase()}),
    )
    .await
    .ok();
    // Another scheme word is not a credential.
    let bearer = format!("Bearer {}", acc.session);
    srv.send(
        srv.client()
            .post(srv.url("/v2/api/key/list"))
            .header("Authorization", bearer)
            .json(&json!({})),
    )
    .await
    .error(3, 400);
}

#[tokio::test]
async fn malformed_requests_get_code_5_in_the_error_object() {
    let srv = TestServer::start().await;
    let url = srv.url("/v2/user/auth");
    let raw = |body: &'static str, content_type: &'static str| {
        srv.client()
            .post(url.clone())
            .header("content-type", content_type)
            .body(body)
    };
    let e = srv.send(raw("{\"login\": ", "application/json")).await;
    assert!(e.error(5, 400).contains("JSON"), "{e:?}");
    srv.send(raw("[1, 2]", "application/json"))
        .await
        .error(5, 400);
    srv.send(raw("\"text\"", "application/json"))
        .await
        .error(5, 400);
    srv.send(raw("login=a", "text/plain")).await.error(5, 400);
    // Well-formed but missing a required parameter: 7 naming it.
    let e = srv.post("/v2/user/auth", json!({"password": "x"})).await;
    assert!(e.error(7, 400).contains("`login`"));
    assert_eq!(
        e.body["errors"],
        json!([{"parameter": "login", "error": "is required"}])
    );
    // No content type: a JSON-looking body is JSON, anything else form pairs.
    let acc = srv.account("sniff@example.com").await;
    let body = format!("{{\"hash\":\"{}\"}}", acc.session);
    srv.send(srv.client().post(srv.url("/v2/api/key/list")).body(body))
        .await
        .ok();
    srv.send(
        srv.client()
            .post(srv.url("/v2/api/key/list"))
            .body(format!("hash={}", acc.session)),
    )
    .await
    .ok();
}

#[tokio::test]
async fn unknown_paths_and_wrong_methods_answer_111_and_112() {
    let srv = TestServer::start().await;
    let e = srv.post("/v2/no/such/call", json!({})).await;
    assert!(e.error(111, 400).contains("/v2/no/such/call"));
    srv.get("/", &[]).await.error(111, 400);
    srv.get("/dwh/v1/tracker/raw_data/nothing", &[])
        .await
        .error(111, 400);
    srv.get("/eco_fleet/v1/nothing", &[]).await.error(111, 400);
    for method in [
        reqwest::Method::PUT,
        reqwest::Method::DELETE,
        reqwest::Method::PATCH,
    ] {
        let e = srv
            .send(
                srv.client()
                    .request(method.clone(), srv.url("/v2/api/key/list")),
            )
            .await;
        assert!(e.error(112, 400).contains(method.as_str()));
        srv.send(srv.client().request(method, srv.url("/v2/api/key/list/")))
            .await
            .error(112, 400);
    }
}

#[tokio::test]
async fn bodies_over_the_limit_are_412_code_9() {
    let srv = TestServer::start_with(api::ApiConfig {
        max_request_bytes: 1024,
        ..api::ApiConfig::default()
    })
    .await;
    let big = json!({"login": "a@b.cd", "password": "x".repeat(2000)});
    srv.post("/v2/user/auth", big).await.error(9, 412);
    // Also when the length is not declared up front: a chunked body, sent by hand.
    let (status, body) = raw_chunked(&srv, "/v2/user/auth", &[&[b' '; 800], &[b' '; 800]]).await;
    assert_eq!(status, 412, "{body}");
    assert!(body.contains(r#""code":9"#), "{body}");
}

/// Sends a POST with `Transfer-Encoding: chunked` over a plain socket; returns status and body.
async fn raw_chunked(srv: &TestServer, path: &str, chunks: &[&[u8]]) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = srv.base.trim_start_matches("http://");
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    for chunk in chunks {
        socket
            .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .await
            .unwrap();
        socket.write_all(chunk).await.unwrap();
        socket.write_all(b"\r\n").await.unwrap();
    }
    // The server may answer and close before the terminating chunk; ignore that write's outcome.
    let _ = socket.write_all(b"0\r\n\r\n").await;
    let mut response = Vec::new();
    let _ = socket.read_to_end(&mut response).await;
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

#[tokio::test]
async fn credentials_missing_malformed_unknown_or_of_the_wrong_kind() {
    let srv = TestServer::start().await;
    let acc = srv.account("kinds@example.com").await;
    srv.post("/v2/api/key/list", json!({})).await.error(3, 400);
    srv.post("/v2/api/key/list", json!({"hash": "abc"}))
        .await
        .error(3, 400);
    srv.post("/v2/api/key/list", json!({"hash": "g".repeat(32)}))
        .await
        .error(3, 400);
    srv.post("/v2/api/key/list", json!({"hash": "0".repeat(32)}))
        .await
        .error(4, 400);
    // A panel hash on the user API, and a user hash on the panel: 4.
    let panel = srv
        .post(
            "/v2/panel/account/auth",
            json!({"login": acc.dealer.0.to_string(), "password": acc.dealer_password}),
        )
        .await
        .hash();
    srv.post("/v2/api/key/list", json!({"hash": panel}))
        .await
        .error(4, 400);
    srv.post("/v2/subuser/list", json!({"hash": panel}))
        .await
        .error(4, 400);
    srv.post(
        "/v2/panel/account/get_permissions",
        json!({"hash": acc.session}),
    )
    .await
    .error(4, 400);
    srv.post(
        "/v2/panel/account/get_permissions",
        json!({"hash": acc.key}),
    )
    .await
    .error(4, 400);
}

#[tokio::test]
async fn answers_are_json_with_a_request_id_and_metrics_count_them() {
    let srv = TestServer::start().await;
    let acc = srv.account("meta@example.com").await;
    let a = srv
        .post("/v2/api/key/list", json!({"hash": acc.session}))
        .await;
    assert!(
        a.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    assert!(!a.headers["x-request-id"].is_empty());
    srv.post("/v2/api/key/list", json!({"hash": "0".repeat(32)}))
        .await
        .error(4, 400);
    srv.get("/healthz", &[]).await.ok();
    let metrics = srv.metrics_text().await;
    assert!(metrics.contains(r#"trackhouse_http_requests_total{route="/v2/api/key/list",method="POST",status="200"} 1"#), "{metrics}");
    assert!(
        metrics.contains(r#"trackhouse_api_errors_total{code="4"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains("trackhouse_http_request_duration_seconds_bucket"),
        "{metrics}"
    );
}
