//! The demo's trucks on the road while the demo runs: every few seconds one
//! message per moving truck through the real intake, driving its loop from
//! its depot, so that the demo's geo link page is alive.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use chrono::Utc;

use super::FLEET;
use super::route::Route;
use crate::demo::DemoAccounts;

/// How often each truck reports.
const PERIOD: Duration = Duration::from_secs(2);

/// Sends, until the process ends, a message per moving truck every
/// [`PERIOD`]: driving its loop at 25 to 55 km/h, heading along it.
/// Failed sends are logged and the next period tries again.
pub(crate) async fn keep_moving(accounts: &DemoAccounts, addr: SocketAddr) {
    let mut trucks: Vec<(String, Route, f64)> = accounts
        .trackers
        .iter()
        .filter(|t| !t.blocked)
        .zip(FLEET.iter())
        .map(|(t, (route, _, _))| (t.device_id.clone(), *route, route.home))
        .collect();
    let client = match reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            tracing::warn!(error = %e, "the demo's trucks cannot move: no HTTP client");
            return;
        }
    };
    let url = format!("http://{addr}/ingest/v1/messages");
    let started = Instant::now();
    let mut ticks = tokio::time::interval(PERIOD);
    loop {
        ticks.tick().await;
        let elapsed = started.elapsed().as_secs_f64();
        let now = Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
        let mut body = String::new();
        for (i, (device, route, theta)) in trucks.iter_mut().enumerate() {
            let speed = 40.0 + 15.0 * (elapsed / 90.0 + i as f64 * 2.0).sin();
            *theta = route.advance(*theta, speed / 3.6 * PERIOD.as_secs_f64(), 1.0);
            let (lat, lng) = route.position(*theta);
            let (_, heading) = route.tangent(*theta, 1.0);
            let _ = writeln!(
                body,
                r#"{{"device_id":"{device}","msg_time":"{now}","gps_fix_type":"HAS_FIX","lat":{lat:.6},"lng":{lng:.6},"speed":{speed:.1},"heading":{heading:.0},"satellites":11,"states":{{"ignition":true}}}}"#
            );
        }
        let sent = client
            .post(&url)
            .bearer_auth(&accounts.ingest_token)
            .header("Content-Type", "application/x-ndjson")
            .body(body)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status);
        if let Err(e) = sent {
            tracing::warn!(error = %e, "a live demo message was not taken");
        }
    }
}
