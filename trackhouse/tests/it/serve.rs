//! `trackhouse serve` as a child process: `admin` changes made while it runs
//! take effect on the next call, and SIGTERM stops it with status 0.

use std::net::SocketAddr;

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::{Proc, admin_async, is_secret};

/// A JSON client of one running server.
#[derive(Debug)]
pub(crate) struct Api {
    pub(crate) client: reqwest::Client,
    pub(crate) base: String,
}

impl Api {
    pub(crate) fn new(addr: SocketAddr) -> Self {
        Self {
            // The server is local: no proxy of the environment may stand in between.
            client: crate::support::http_client(),
            base: format!("http://{addr}"),
        }
    }

    /// POSTs a JSON body; returns the HTTP status and the JSON answer.
    pub(crate) async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {path}: {e}"));
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let answer = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("POST {path} answered {status} {text:?}: {e}"));
        (status, answer)
    }

    /// POSTs and expects `200 {"success":true,...}`.
    pub(crate) async fn ok(&self, path: &str, body: Value) -> Value {
        let (status, answer) = self.post(path, body).await;
        assert_eq!(status, 200, "POST {path}: {answer}");
        assert_eq!(answer["success"], true, "POST {path}: {answer}");
        answer
    }

    /// POSTs and expects the error object with `code` and HTTP `status`.
    pub(crate) async fn fails(&self, path: &str, body: Value, status: u16, code: i64) -> Value {
        let (got, answer) = self.post(path, body).await;
        assert_eq!(
            (got, &answer["success"], answer["status"]["code"].as_i64()),
            (status, &json!(false), Some(code)),
            "POST {path}: {answer}"
        );
        answer
    }
}

#[tokio::test]
async fn admin_changes_take_effect_while_serve_runs() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let (_server, addr) = Proc::serve(dir);
    let api = Api::new(addr);
    let health = api.client.get(format!("{}/healthz", api.base)).send();
    assert_eq!(health.await.unwrap().status().as_u16(), 200);

    // Accounts made by `admin` after the server opened the store.
    let panel_password = "panel-secret";
    let dealer = admin_async(
        dir,
        &[
            "dealer",
            "create",
            "--title",
            "Live",
            "--panel-password",
            panel_password,
        ],
    )
    .await;
    let dealer = dealer["dealer_id"].as_i64().unwrap().to_string();
    let user = admin_async(
        dir,
        &[
            "user",
            "create",
            "--dealer-id",
            &dealer,
            "--login",
            "ann@example.com",
            "--password",
            "ann-password",
        ],
    )
    .await;
    let user = user["user_id"].as_i64().unwrap().to_string();
    let key = admin_async(
        dir,
        &["api-key", "create", "--user-id", &user, "--title", "t"],
    )
    .await;
    let key = key["hash"].as_str().unwrap().to_owned();

    let login = json!({"login": "ann@example.com", "password": "ann-password"});
    let session = api.ok("/v2/user/auth", login.clone()).await;
    assert!(
        is_secret(session["hash"].as_str().unwrap_or_default()),
        "{session}"
    );
    let with_key = json!({"hash": key});
    let subusers = api.ok("/v2/subuser/list", with_key.clone()).await;
    assert_eq!(subusers["list"], json!([]), "{subusers}");

    // CLIENTS_BLOCKED (the default) shuts out the dealer's users at once…
    let block = ["dealer", "block", "--dealer-id", &dealer];
    admin_async(dir, &block).await;
    api.fails("/v2/subuser/list", with_key.clone(), 403, 11)
        .await;
    api.fails("/v2/user/auth", login.clone(), 403, 11).await;
    // …and unblocking lets them back in.
    admin_async(dir, &["dealer", "unblock", "--dealer-id", &dealer]).await;
    api.ok("/v2/subuser/list", with_key.clone()).await;
    api.ok("/v2/user/auth", login.clone()).await;

    // The panel login is the dealer id.
    let panel_login = json!({"login": dealer, "password": panel_password});
    let panel = api.ok("/v2/panel/account/auth", panel_login.clone()).await;
    let panel_hash = panel["hash"].as_str().unwrap_or_default().to_owned();
    assert!(is_secret(&panel_hash), "{panel}");
    let with_panel = json!({"hash": panel_hash});
    let info = api
        .ok("/v2/panel/dealer/get_info", with_panel.clone())
        .await;
    assert_eq!(info["block_status"], "NOT_BLOCKED", "{info}");

    // BLOCK_LOGIN closes the panel only: logins and open sessions get 11,
    // while the dealer's users and their API keys go on working.
    admin_async(dir, &[&block[..], &["--status", "BLOCK_LOGIN"]].concat()).await;
    api.fails("/v2/panel/account/auth", panel_login.clone(), 403, 11)
        .await;
    api.fails("/v2/panel/dealer/get_info", with_panel.clone(), 403, 11)
        .await;
    api.ok("/v2/subuser/list", with_key.clone()).await;
    api.ok("/v2/user/auth", login).await;

    admin_async(dir, &["dealer", "unblock", "--dealer-id", &dealer]).await;
    api.ok("/v2/panel/account/auth", panel_login).await;
    let info = api.ok("/v2/panel/dealer/get_info", with_panel).await;
    assert_eq!(info["block_status"], "NOT_BLOCKED", "{info}");
}

#[test]
fn sigterm_stops_serve_with_status_zero() {
    let dir = TempDir::new().unwrap();
    let (server, _addr) = Proc::serve(dir.path());
    // Signalled at once after `serving`: the handlers are installed before it is logged.
    let (status, log) = server.terminate();
    assert!(status.success(), "exit status {status}; log:\n{log}");
    assert!(log.contains("SIGTERM: shutting down"), "log:\n{log}");
    assert!(log.contains("\"stopped\""), "log:\n{log}");
}

/// `--request-nice 4`: the runtime's threads (requests) run four nice steps
/// below the ingest engine's writer, flusher and loader, which keep the
/// process's value (read from `/proc`, as `top` shows them).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_engine_threads_run_above_the_request_threads() {
    let dir = TempDir::new().unwrap();
    let (mut server, addr) = Proc::serve_with(dir.path(), &["--request-nice", "4"]);
    // A request, so the runtime has served one.
    let api = Api::new(addr);
    let health = api.client.get(format!("{}/healthz", api.base)).send();
    assert_eq!(health.await.unwrap().status().as_u16(), 200);

    let pid = server.pid();
    let nice_of = |task: &str| -> (String, i32) {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{task}/stat")).unwrap();
        // `pid (comm) state ...`: the comm may hold spaces; the nice value
        // is the 19th field, the 17th after the comm.
        let (head, rest) = stat.rsplit_once(')').unwrap();
        let comm = head.split_once('(').unwrap().1.to_string();
        let nice = rest.split_whitespace().nth(16).unwrap().parse().unwrap();
        (comm, nice)
    };
    let base = nice_of(&pid.to_string()).1;
    let mut engine = Vec::new();
    let mut runtime = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let (comm, nice) = nice_of(&task.unwrap().file_name().to_string_lossy());
        if comm.starts_with("ingest-") {
            engine.push((comm, nice));
        } else if comm.starts_with("tokio-") {
            runtime.push(nice);
        }
    }
    engine.sort();
    let names: Vec<&str> = engine.iter().map(|(comm, _)| comm.as_str()).collect();
    assert_eq!(
        names,
        [
            "ingest-flusher",
            "ingest-loader",
            "ingest-wal-prep",
            "ingest-wal-sync",
            "ingest-writer"
        ]
    );
    assert!(
        engine.iter().all(|(_, nice)| *nice == base),
        "{engine:?}, base {base}"
    );
    let lowered = (base + 4).min(19);
    assert!(!runtime.is_empty());
    assert!(
        runtime.iter().all(|nice| *nice == lowered),
        "{runtime:?}, base {base}"
    );
    let log = server.log_text();
    assert!(log.contains("\"request_nice_steps\":4"), "log:\n{log}");
}
