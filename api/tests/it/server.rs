use std::net::SocketAddr;
use std::sync::Arc;

use api::{ApiConfig, AppState, Rate, RateLimitConfig, Server};
use chrono::{TimeZone, Utc};
use ingest::{Ingest, IngestConfig};
use platform::{
    Calibration, ContractType, Feature, NewDealer, NewPlan, NewSubuser, NewTracker, NewUser,
    Permission, Right, Store, StoreConfig, StorePeriod,
};
use schemas::{DealerId, ManualClock, TrackerId, UserId, ZoneId};
use serde_json::Value;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

/// An answer: status, headers and the JSON body (Null when the body is not JSON).
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) body: Value,
}

impl Answer {
    /// Asserts a success and returns the body.
    #[track_caller]
    pub(crate) fn ok(&self) -> &Value {
        assert_eq!(self.status, 200, "expected success, got {self:?}");
        assert_eq!(self.body["success"], true, "{self:?}");
        &self.body
    }

    /// Asserts the spec's error object with `code` and `http` status.
    #[track_caller]
    pub(crate) fn error(&self, code: u16, http: u16) -> &str {
        assert_eq!(
            self.status, http,
            "expected HTTP {http} with code {code}, got {self:?}"
        );
        assert_eq!(self.body["success"], false, "{self:?}");
        assert_eq!(self.body["status"]["code"], code, "{self:?}");
        let content_type = self
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        assert!(
            content_type.starts_with("application/json"),
            "errors are JSON: {content_type}"
        );
        self.body["status"]["description"]
            .as_str()
            .expect("description is a string")
    }

    /// The `hash` member of a login answer.
    #[track_caller]
    pub(crate) fn hash(&self) -> String {
        self.ok()["hash"].as_str().expect("hash").to_owned()
    }
}

/// A master user with a session, an API key and two trackers.
#[derive(Debug, Clone)]
pub(crate) struct Account {
    pub(crate) dealer: DealerId,
    pub(crate) dealer_password: String,
    pub(crate) user: UserId,
    pub(crate) login: String,
    pub(crate) password: String,
    pub(crate) session: String,
    pub(crate) key: String,
    pub(crate) trackers: Vec<TrackerId>,
}

/// The real server, in process, on 127.0.0.1 with an ephemeral port.
pub(crate) struct TestServer {
    pub(crate) base: String,
    pub(crate) store: Store,
    pub(crate) clock: Arc<ManualClock>,
    pub(crate) ingest: Arc<Ingest>,
    pub(crate) client: reqwest::Client,
    shutdown: CancellationToken,
    _dir: TempDir,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// The tests' HTTP client, with a deadline on every exchange: a server that
/// stops answering fails the test with the call named, instead of hanging the run.
pub(crate) fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(120))
        .build()
        .expect("an HTTP client")
}

pub(crate) fn generous_limits() -> RateLimitConfig {
    let many = Rate::per_second(std::num::NonZeroU32::new(100_000).unwrap());
    RateLimitConfig {
        user_session: many,
        api_key: many,
        panel_dealer: many,
        anonymous_ip: many,
    }
}

impl TestServer {
    /// A server with limits high enough never to interfere.
    pub(crate) async fn start() -> Self {
        Self::start_with(ApiConfig {
            rate_limits: generous_limits(),
            ..ApiConfig::default()
        })
        .await
    }

    pub(crate) async fn start_with(config: ApiConfig) -> Self {
        Self::start_full(config, |c| c).await
    }

    /// A server whose ingest settings `tune` adjusts.
    pub(crate) async fn start_full(
        config: ApiConfig,
        tune: impl FnOnce(IngestConfig) -> IngestConfig,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(
            Utc.with_ymd_and_hms(2024, 6, 1, 8, 0, 0).unwrap(),
        ));
        let store = Store::open(StoreConfig::new(dir.path()), clock.clone())
            .await
            .unwrap();
        let mut registry = prometheus_client::registry::Registry::default();
        let ingest_config = tune(IngestConfig {
            flush_interval: std::time::Duration::from_millis(200),
            clickhouse: test_clickhouse(),
            ..IngestConfig::new(dir.path())
        });
        let ingest = Arc::new(Ingest::open(ingest_config, &mut registry).unwrap());
        let state = AppState::new(store.clone(), ingest.clone(), config, registry);
        let server = Server::bind(SocketAddr::from(([127, 0, 0, 1], 0)), state)
            .await
            .unwrap();
        let base = format!("http://{}", server.local_addr().unwrap());
        let shutdown = CancellationToken::new();
        tokio::spawn(server.run(shutdown.clone()));
        Self {
            base,
            store,
            clock,
            ingest,
            client: http_client(),
            shutdown,
            _dir: dir,
        }
    }

    async fn answer(response: reqwest::Response) -> Answer {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.unwrap();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            body,
        }
    }

    /// POST with a JSON body.
    pub(crate) async fn post(&self, path: &str, body: Value) -> Answer {
        Self::answer(
            self.client
                .post(format!("{}{path}", self.base))
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// POST form-encoded.
    pub(crate) async fn post_form(&self, path: &str, pairs: &[(&str, &str)]) -> Answer {
        Self::answer(
            self.client
                .post(format!("{}{path}", self.base))
                .form(pairs)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// GET with a query string.
    pub(crate) async fn get(&self, path: &str, pairs: &[(&str, &str)]) -> Answer {
        Self::answer(
            self.client
                .get(format!("{}{path}", self.base))
                .query(pairs)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// Any request, built by the caller.
    pub(crate) async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        Self::answer(request.send().await.unwrap()).await
    }

    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// The `list` of an account call that takes only the credential
    /// (`/v2/garage/list`), asserting success.
    pub(crate) async fn list(&self, path: &str, hash: &str) -> Vec<Value> {
        self.post(path, serde_json::json!({ "hash": hash }))
            .await
            .ok()["list"]
            .as_array()
            .expect("a list")
            .clone()
    }

    /// `/metrics` as text.
    pub(crate) async fn metrics_text(&self) -> String {
        self.client
            .get(self.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// A new ingest token; a `backfill` one may set `server_time`.
    pub(crate) async fn ingest_token(&self, backfill: bool) -> String {
        self.store
            .create_ingest_token("test", backfill)
            .await
            .unwrap()
            .1
            .expose()
            .to_owned()
    }

    /// `POST /ingest/v1/messages` of `lines`, one JSON object per line.
    pub(crate) async fn intake(&self, token: &str, lines: &[Value]) -> Answer {
        let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
        self.send(
            self.client
                .post(self.url("/ingest/v1/messages"))
                .header("authorization", format!("Bearer {token}"))
                .body(body),
        )
        .await
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A dealer with all panel permissions, or only `permissions`.
    pub(crate) async fn dealer(&self, permissions: Option<Vec<Permission>>) -> (DealerId, String) {
        let password = "panel-pass-1".to_owned();
        let id = self
            .store
            .create_dealer(NewDealer {
                id: None,
                title: "Test dealer".into(),
                panel_password: password.clone(),
                contract_type: ContractType::Paas,
                permissions,
                default_user_time_zone: "UTC".into(),
            })
            .await
            .unwrap();
        (id, password)
    }

    /// A panel session of `dealer`.
    pub(crate) async fn panel_session(&self, dealer: DealerId, password: &str) -> String {
        self.post(
            "/v2/panel/account/auth",
            serde_json::json!({"login": dealer.0.to_string(), "password": password}),
        )
        .await
        .hash()
    }

    /// A user of `dealer` (zone Asia/Tokyo), not logged in.
    pub(crate) async fn user(&self, dealer: DealerId, login: &str) -> UserId {
        self.store
            .create_user(NewUser {
                dealer_id: dealer,
                login: login.into(),
                password: "user-pass-1".into(),
                time_zone: Some("Asia/Tokyo".into()),
                activated: true,
                legal_type: platform::LegalType::Individual,
                first_name: "Ann".into(),
                last_name: "Lee".into(),
            })
            .await
            .unwrap()
    }

    pub(crate) async fn login(&self, login: &str, password: &str) -> String {
        self.post(
            "/v2/user/auth",
            serde_json::json!({"login": login, "password": password}),
        )
        .await
        .hash()
    }

    /// A complete account: dealer, master user with a session and an API key, two trackers.
    pub(crate) async fn account(&self, login: &str) -> Account {
        let (dealer, dealer_password) = self.dealer(None).await;
        let user = self.user(dealer, login).await;
        let session = self.login(login, "user-pass-1").await;
        let key = self
            .store
            .create_api_key(user, "fixture")
            .await
            .unwrap()
            .hash
            .expose()
            .to_owned();
        let mut trackers = Vec::new();
        for n in 0..2 {
            let tracker = self
                .store
                .create_tracker(NewTracker {
                    user_id: user,
                    label: format!("Truck {n}"),
                    device_id: format!("35630704244{:04}", user.0 * 10 + n),
                    model: "fmb920".into(),
                    plan_id: None,
                    store_period: None,
                    time_zone: None,
                })
                .await
                .unwrap();
            self.store
                .create_fuel_sensor(
                    tracker,
                    "Tank",
                    "lls_level_1",
                    Some(Calibration::parse("c", "0:0,4095:400").unwrap()),
                )
                .await
                .unwrap();
            trackers.push(tracker);
        }
        Account {
            dealer,
            dealer_password,
            user,
            login: login.into(),
            password: "user-pass-1".into(),
            session,
            key,
            trackers,
        }
    }

    /// A sub-user of `account` with `rights`, seeing the first tracker; returns its session.
    pub(crate) async fn subuser(
        &self,
        account: &Account,
        login: &str,
        rights: Vec<Right>,
    ) -> String {
        self.store
            .create_subuser(NewSubuser {
                master_id: account.user,
                login: login.into(),
                password: "sub-pass-1".into(),
                rights,
                trackers: vec![account.trackers[0]],
                first_name: String::new(),
                last_name: String::new(),
            })
            .await
            .unwrap();
        self.login(login, "sub-pass-1").await
    }

    /// A circle zone of `user`'s account, `radius` metres around `lat`, `lng`.
    pub(crate) async fn circle_zone(
        &self,
        user: UserId,
        lat: f64,
        lng: f64,
        radius: i64,
    ) -> ZoneId {
        self.store
            .create_zone(
                user,
                platform::Zone {
                    id: None,
                    label: "Depot".into(),
                    address: String::new(),
                    color: "27A9E3".into(),
                    shape: platform::ZoneShape::Circle {
                        center: platform::GeoPoint { lat, lng },
                        radius,
                    },
                },
            )
            .await
            .unwrap()
    }

    /// Moves a tracker of `account` to a plan without any feature.
    pub(crate) async fn tracker_without_features(&self, account: &Account) -> TrackerId {
        let plan = self
            .store
            .create_plan(NewPlan {
                dealer_id: account.dealer,
                name: "Bare".into(),
                store_period: StorePeriod::Months(1),
                features: Vec::<Feature>::new(),
            })
            .await
            .unwrap();
        self.store
            .create_tracker(NewTracker {
                user_id: account.user,
                label: "Bare tracker".into(),
                device_id: format!("99{}", account.user.0),
                model: String::new(),
                plan_id: Some(plan),
                store_period: None,
                time_zone: None,
            })
            .await
            .unwrap()
    }
}

/// The storage the tests run on: Parquet files, or with
/// `TRACKHOUSE_TEST_STORAGE=clickhouse` (the README's test command runs the
/// suite both ways) a fresh database of a ClickHouse server this test
/// process starts once (`ingest::clickhouse::LocalServer`), or with
/// `TRACKHOUSE_TEST_STORAGE=clickhouse-cluster` of a cluster of two shards
/// of two replicas (`ingest::clickhouse::LocalCluster`, the tables of
/// `deploy/clickhouse/cluster.sql`); stopped when the process ends.
pub(crate) fn test_clickhouse() -> Option<ingest::ClickHouseConfig> {
    use ingest::clickhouse::{LocalCluster, LocalServer};
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU32, Ordering};
    static SERVER: OnceLock<(LocalServer, TempDir)> = OnceLock::new();
    static CLUSTER: OnceLock<(LocalCluster, TempDir)> = OnceLock::new();
    static DATABASES: AtomicU32 = AtomicU32::new(0);
    let watch = Some(std::process::id());
    let (url, cluster) = match std::env::var("TRACKHOUSE_TEST_STORAGE").as_deref() {
        Ok("parquet") | Err(_) => return None,
        Ok("clickhouse") => {
            let (server, _) = SERVER.get_or_init(|| {
                let dir = tempfile::tempdir().unwrap();
                (LocalServer::start_watching(dir.path(), watch).unwrap(), dir)
            });
            (server.url(), None)
        }
        Ok("clickhouse-cluster") => {
            let (cluster, _) = CLUSTER.get_or_init(|| {
                let dir = tempfile::tempdir().unwrap();
                (LocalCluster::start(dir.path(), 2, 2, watch).unwrap(), dir)
            });
            (cluster.url(), Some(LocalCluster::NAME.to_owned()))
        }
        Ok(other) => panic!(
            "TRACKHOUSE_TEST_STORAGE is `parquet`, `clickhouse` or `clickhouse-cluster`, not `{other}`"
        ),
    };
    Some(ingest::ClickHouseConfig::new(schemas::ClickHouseTable {
        url: url.to_owned(),
        database: format!(
            "it_{}_{}",
            std::process::id(),
            DATABASES.fetch_add(1, Ordering::Relaxed)
        ),
        user: None,
        password: None,
        cluster,
    }))
}
