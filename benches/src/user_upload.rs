//! The `panel/user/upload` load generator (issue 15): a dealer's 10,000
//! users as a `;` CSV and as an XLSX, each uploaded over HTTP to a fresh
//! dealer, timed end to end, with the server's own split of the call
//! (reading, checking, hashing, storing) and the users it created checked.
//!
//! - [`people`] makes the users, deterministic and realistic.
//! - [`csv`] and [`xlsx`] write them as document 2's upload file.
//! - [`PanelClient`] logs in to a dealer's panel and uploads and lists.
//! - [`StageLog`] collects the stage timings `platform` reports for each
//!   upload (a `tracing` event of target `platform::user_upload`).

pub mod people;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use reqwest::multipart::{Form, Part};
use rust_xlsxwriter::Workbook;
use serde_json::{Value, json};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context as LayerContext;

use people::{HEADER, Person};

use crate::vehicle_list::list_of;

/// The upload file as a spreadsheet program saves a CSV where `;`
/// separates cells (clarification 49): UTF-8 with a byte order mark, CRLF,
/// cells quoted only when they hold a `;`, a quote or a line break.
pub fn csv(people: &[Person]) -> Vec<u8> {
    fn cell(out: &mut String, text: &str) {
        if text.contains([';', '"', '\n', '\r']) {
            out.push('"');
            out.push_str(&text.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(text);
        }
    }
    let mut out = String::from("\u{feff}");
    out.push_str(&HEADER.join(";"));
    out.push_str("\r\n");
    for person in people {
        for (i, text) in person.cells().iter().enumerate() {
            if i > 0 {
                out.push(';');
            }
            cell(&mut out, text);
        }
        out.push_str("\r\n");
    }
    out.into_bytes()
}

/// The upload file as an XLSX of one sheet: the header, then a row per
/// user; numbers a user types as numbers (status, legal status, discount,
/// device limit) are number cells, everything else text, empty cells left
/// out, as a spreadsheet program saves them.
pub fn xlsx(people: &[Person]) -> anyhow::Result<Vec<u8>> {
    const NUMBERS: [usize; 4] = [2, 3, 22, 24];
    let mut book = Workbook::new();
    let sheet = book.add_worksheet();
    sheet.set_name("Users")?;
    for (c, name) in HEADER.iter().enumerate() {
        sheet.write_string(0, u16::try_from(c)?, *name)?;
    }
    for (r, person) in people.iter().enumerate() {
        let r = u32::try_from(r + 1)?;
        for (c, text) in person.cells().iter().enumerate() {
            if text.is_empty() {
                continue;
            }
            let col = u16::try_from(c)?;
            match text.replace(',', ".").parse::<f64>() {
                Ok(n) if NUMBERS.contains(&c) => sheet.write_number(r, col, n)?,
                _ => sheet.write_string(r, col, *text)?,
            };
        }
    }
    Ok(book.save_to_buffer()?)
}

/// A client of one dealer's panel.
#[derive(Debug, Clone)]
pub struct PanelClient {
    http: reqwest::Client,
    base: String,
    /// The panel session.
    pub hash: String,
}

impl PanelClient {
    /// Logs in to the panel of `dealer` (`/v2/panel/account/auth`, the
    /// dealer's id as the login).
    pub async fn login(base: &str, dealer: i64, password: &str) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(3600))
            .build()?;
        let answer: Value = http
            .post(format!("{base}/v2/panel/account/auth"))
            .json(&json!({"login": dealer.to_string(), "password": password}))
            .send()
            .await?
            .json()
            .await?;
        let hash = answer["hash"]
            .as_str()
            .with_context(|| format!("panel login answered {answer}"))?
            .to_owned();
        Ok(Self {
            http,
            base: base.to_owned(),
            hash,
        })
    }

    /// Uploads `file` as `name` to `panel/user/upload`; the time from
    /// sending to the last byte of the answer, and the users created.
    pub async fn upload(&self, name: &str, file: Vec<u8>) -> anyhow::Result<(Duration, u64)> {
        let form = Form::new().part("file", Part::bytes(file).file_name(name.to_owned()));
        let started = Instant::now();
        let response = self
            .http
            .post(format!("{}/v2/panel/user/upload", self.base))
            .header("Authorization", format!("NVX {}", self.hash))
            .multipart(form)
            .send()
            .await?;
        let status = response.status();
        let bytes = response.bytes().await?;
        let elapsed = started.elapsed();
        let answer: Value =
            serde_json::from_slice(&bytes).with_context(|| format!("upload answered {status}"))?;
        ensure!(
            status.is_success() && answer["success"] == true,
            "upload answered {status}: {answer}"
        );
        Ok((elapsed, answer["total"].as_u64().context("`total`")?))
    }

    /// Calls `panel/user/list` with `body` (the session added); the time
    /// from sending to the last byte, and the body.
    pub async fn list(&self, mut body: Value) -> anyhow::Result<(Duration, bytes::Bytes)> {
        if let Some(map) = body.as_object_mut() {
            map.insert("hash".into(), json!(self.hash));
        }
        let started = Instant::now();
        let response = self
            .http
            .post(format!("{}/v2/panel/user/list", self.base))
            .json(&body)
            .send()
            .await?;
        let status = response.status();
        let bytes = response.bytes().await?;
        let elapsed = started.elapsed();
        ensure!(
            status.is_success(),
            "panel/user/list answered {status}: {}",
            String::from_utf8_lossy(&bytes)
        );
        Ok((elapsed, bytes))
    }

    /// Every user the panel lists, by id, 10,000 a call.
    pub async fn everyone(&self) -> anyhow::Result<Vec<Value>> {
        let mut users = Vec::new();
        loop {
            let (_, bytes) = self
                .list(json!({"order_by": "id", "limit": 10_000, "offset": users.len()}))
                .await?;
            let page = list_of(&bytes)?;
            let more = page.len() == 10_000;
            users.extend(page);
            if !more {
                return Ok(users);
            }
        }
    }
}

/// Checks that `listed` (a panel's users) are exactly `people`: the same
/// logins, names, status and legal type.
pub fn check_created(listed: &[Value], people: &[Person]) -> anyhow::Result<()> {
    ensure!(
        listed.len() == people.len(),
        "the panel lists {} users, the file held {}",
        listed.len(),
        people.len()
    );
    let mut got: Vec<(String, String, String, bool, String)> = listed
        .iter()
        .map(|u| {
            Ok((
                u["login"].as_str().context("`login`")?.to_owned(),
                u["first_name"].as_str().context("`first_name`")?.to_owned(),
                u["last_name"].as_str().context("`last_name`")?.to_owned(),
                u["activated"].as_bool().context("`activated`")?,
                u["legal_type"].as_str().context("`legal_type`")?.to_owned(),
            ))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut expected: Vec<(String, String, String, bool, String)> = people
        .iter()
        .map(|p| {
            let legal_type = match p.legal_status {
                2 => "legal_entity",
                3 => "sole_trader",
                _ => "individual",
            };
            (
                p.login.clone(),
                p.name.clone(),
                p.surname.clone(),
                p.active,
                legal_type.to_owned(),
            )
        })
        .collect();
    got.sort();
    expected.sort();
    if let Some((g, e)) = got.iter().zip(&expected).find(|(g, e)| g != e) {
        bail!("the panel lists {g:?} where the file held {e:?}");
    }
    Ok(())
}

/// The stages of one upload as `platform` timed them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Stages {
    /// Data rows stored.
    pub rows: u64,
    /// Reading the file into rows of text.
    pub read_ms: f64,
    /// Checking the rows, the logins in the file and in the store.
    pub check_ms: f64,
    /// Hashing the passwords (wall time, over every core).
    pub hash_ms: f64,
    /// Storing the users in one transaction.
    pub store_ms: f64,
}

impl Stages {
    /// Reading, checking and storing: the upload without the hashing.
    pub fn without_hashing_ms(&self) -> f64 {
        self.read_ms + self.check_ms + self.store_ms
    }
}

impl Visit for Stages {
    fn record_f64(&mut self, field: &Field, value: f64) {
        match field.name() {
            "read_ms" => self.read_ms = value,
            "check_ms" => self.check_ms = value,
            "hash_ms" => self.hash_ms = value,
            "store_ms" => self.store_ms = value,
            _ => {}
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "rows" {
            self.rows = value;
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.record_u64(field, value.max(0) as u64);
    }

    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

/// A `tracing` layer keeping the stage timings of every upload `platform`
/// reports (events of target `platform::user_upload` with `rows`,
/// `read_ms`, `check_ms`, `hash_ms` and `store_ms`).
#[derive(Debug, Clone, Default)]
pub struct StageLog {
    seen: Arc<Mutex<Vec<Stages>>>,
}

impl StageLog {
    /// The timings reported since the last call.
    pub fn take(&self) -> Vec<Stages> {
        std::mem::take(&mut *self.seen.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for StageLog {
    fn on_event(&self, event: &tracing::Event<'_>, _: LayerContext<'_, S>) {
        if event.metadata().target() != "platform::user_upload" {
            return;
        }
        let mut stages = Stages::default();
        event.record(&mut stages);
        if stages.rows > 0 {
            self.seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(stages);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::people::People;
    use super::*;

    #[test]
    fn files_hold_the_header_and_every_person_and_read_back_as_written() {
        let people = People::new(7, 0).take(300);
        let logins: std::collections::HashSet<&str> =
            people.iter().map(|p| p.login.as_str()).collect();
        assert_eq!(logins.len(), people.len(), "logins are unique");
        assert!(people.iter().any(|p| p.legal_status == 2));
        assert!(people.iter().any(|p| !p.name.is_ascii()));
        assert!(people.iter().all(|p| (8..=16).contains(&p.password.len())));
        for file in [csv(&people), xlsx(&people).unwrap()] {
            let table = platform::read_file("file", &file, 1_000, 1 << 30).unwrap();
            assert_eq!(table.rows.len(), people.len() + 1);
            assert_eq!(table.rows[0], HEADER);
            for (row, person) in table.rows[1..].iter().zip(&people) {
                let mut cells: Vec<String> = person.cells().iter().map(|c| c.to_string()).collect();
                cells[22] = cells[22].replace(',', ".");
                let mut row = row.clone();
                row.resize(25, String::new());
                row[22] = row[22].replace(',', ".");
                assert_eq!(row, cells);
            }
        }
    }
}
