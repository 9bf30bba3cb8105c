//! `trackhouse demo`: on a fresh directory it sends a day of telemetry through
//! the intake (the blocked tracker's line refused with 208) and stores it; the
//! commands it prints work when pasted into a shell as printed, and a second
//! start on the same directory reuses its accounts and generates nothing.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use tempfile::TempDir;

use crate::support::{Proc, is_secret};

/// The last line the demo prints before it only serves.
const LAST_LINE: &str = "Stop with Ctrl-C.";

/// Starts the demo on `dir` with one day of telemetry; returns it and the lines it printed.
fn start_demo(dir: &Path) -> (Proc, Vec<String>) {
    let dir = dir.to_str().expect("UTF-8 temp dir");
    let mut demo = Proc::start(&[
        "demo",
        "--data-dir",
        dir,
        "--listen",
        "127.0.0.1:0",
        "--log-format",
        "json",
        "--days",
        "1",
    ]);
    let printed = demo.stdout_until(LAST_LINE);
    (demo, printed)
}

/// The shell commands among the printed lines: every line but the comments,
/// the blank ones and the two that say where the demo serves and keeps its accounts.
fn printed_commands(printed: &[String]) -> Vec<String> {
    let start = printed
        .iter()
        .position(|l| l.starts_with("Trackhouse demo is serving on"))
        .expect("the serving line");
    printed[start..]
        .iter()
        .filter(|l| {
            !(l.is_empty()
                || l.starts_with('#')
                || l.starts_with("Trackhouse demo is serving")
                || l.starts_with("Accounts, passwords and keys:")
                || l.starts_with("Demo telemetry")
                || l.as_str() == LAST_LINE)
        })
        .cloned()
        .collect()
}

/// Runs every command in one `bash` script with `set -euo pipefail`;
/// returns each command's output, in order, and the final `HASH` and `PANEL`.
fn run_in_bash(commands: &[String]) -> (Vec<String>, String, String) {
    let mut script = String::from("set -euo pipefail\n");
    for (i, command) in commands.iter().enumerate() {
        script.push_str(&format!("{command}\necho\necho '@@end {i}@@'\n"));
    }
    script.push_str("echo \"HASH=$HASH\"\necho \"PANEL=$PANEL\"\n");
    let mut bash = Command::new("bash");
    // The server is local: no proxy of the environment may stand in between.
    for proxy in ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"] {
        bash.env_remove(proxy);
    }
    let out = bash.arg("-c").arg(&script).output().expect("running bash");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the printed commands failed ({}):\nscript:\n{script}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut rest = stdout.as_str();
    let mut outputs = Vec::new();
    for i in 0..commands.len() {
        let marker = format!("\n@@end {i}@@\n");
        let (output, after) = rest
            .split_once(&marker)
            .unwrap_or_else(|| panic!("no output of command {i} in {stdout}"));
        outputs.push(output.trim_end().to_owned());
        rest = after;
    }
    let mut finals = rest.lines();
    let hash = finals.next().and_then(|l| l.strip_prefix("HASH="));
    let panel = finals.next().and_then(|l| l.strip_prefix("PANEL="));
    (
        outputs,
        hash.unwrap_or_default().to_owned(),
        panel.unwrap_or_default().to_owned(),
    )
}

/// Checks the output of each printed command; returns how many were checked by name.
fn check_outputs(commands: &[String], outputs: &[String], accounts: &Value) -> usize {
    let mut named = 0;
    for (command, output) in commands.iter().zip(outputs) {
        let context = format!("command:\n{command}\noutput:\n{output}");
        if ["HASH=", "PANEL=", "FILE="]
            .iter()
            .any(|prefix| command.starts_with(prefix))
        {
            assert!(is_secret(output), "{context}");
            named += 1;
        } else if command.contains(" admin --data-dir ") {
            // Run as the binary itself (the test runs it by path, not under cargo).
            assert!(
                command.starts_with(env!("CARGO_BIN_EXE_trackhouse")),
                "{context}"
            );
            assert!(output.contains("Usage:"), "{context}");
            assert!(output.contains("api-key"), "{context}");
            named += 1;
        } else if command.contains(" import ") {
            let summary: Value = serde_json::from_str(output).expect(&context);
            assert_eq!(summary["lines"], 10, "{context}");
            assert_eq!(summary["rejected"], 0, "{context}");
            named += 1;
        } else if command.contains("/v2/api/key/delete") {
            let answer: Value = serde_json::from_str(output).expect(&context);
            assert_eq!(answer["success"], false, "{context}");
            assert_eq!(answer["status"]["code"], 201, "{context}");
            named += 1;
        } else if command.contains("/ingest/v1/messages") {
            let answer: Value = serde_json::from_str(output).expect(&context);
            assert_eq!(answer["success"], true, "{context}");
            let stored = answer["accepted"].as_i64().unwrap_or(0)
                + answer["duplicates"].as_i64().unwrap_or(0);
            assert_eq!(stored, 1, "{context}");
            assert_eq!(answer["rejected"], serde_json::json!([]), "{context}");
            named += 1;
        } else if command.contains("/raw_data/read") {
            // CSV: the header, then the first rows of the generated day.
            let lines: Vec<&str> = output.lines().collect();
            assert_eq!(lines.len(), 5, "{context}");
            assert!(
                lines[0].starts_with("\"msg_time\",\"lat\",\"lng\",\"speed\",\"inputs."),
                "{context}"
            );
            assert!(lines[0].ends_with(",\"states.ignition\""), "{context}");
            assert!(lines[1].starts_with("\"20"), "{context}");
            named += 1;
        } else if command.contains("/resampling") {
            // CSV: Time, the first tracker's sensor, SPEED, MOVEMENT, LNG, LAT on a 15-minute grid.
            let lines: Vec<&str> = output.lines().collect();
            assert_eq!(lines.len(), 5, "{context}");
            assert_eq!(
                lines[0], "Time,Main tank,SPEED,MOVEMENT,LNG,LAT",
                "{context}"
            );
            let minute = lines[1].get(14..16).unwrap_or("?");
            assert!(["00", "15", "30", "45"].contains(&minute), "{context}");
            assert_eq!(lines[1].split(',').count(), 6, "{context}");
            named += 1;
        } else if command.contains("/links/") {
            // The geo link's feed: live, over the two moving trucks, by label.
            let feed: Value = serde_json::from_str(output).expect(&context);
            assert_eq!(feed["state"], "enabled", "{context}");
            let labels: Vec<&str> = feed["objects"]
                .as_array()
                .map(|o| o.iter().filter_map(|o| o["label"].as_str()).collect())
                .unwrap_or_default();
            assert_eq!(
                labels,
                ["Truck 01 (MAN TGS)", "Truck 02 (Volvo FH)"],
                "{context}"
            );
            assert_eq!(
                feed["places"].as_array().map(Vec::len),
                Some(2),
                "{context}"
            );
            named += 1;
        } else if command.contains("/metrics") {
            let lines = output.lines().count();
            assert!((1..=10).contains(&lines), "{context}");
            assert!(output.starts_with('#'), "{context}");
            named += 1;
        } else {
            // Every other call answers a JSON object with success.
            let answer: Value = serde_json::from_str(output).expect(&context);
            assert_eq!(answer["success"], true, "{context}");
            if command.contains("/v2/api/key/list") {
                let keys = answer["list"].to_string();
                let demo_key = accounts["api_key"].as_str().unwrap_or("?");
                assert!(keys.contains(demo_key), "{context}");
                named += 1;
            } else if command.contains("/v2/subuser/register") {
                assert!(answer["id"].as_i64().is_some(), "{context}");
                named += 1;
            } else if command.contains("/v2/vehicle/batch_convert") && command.contains("file_id") {
                // The demo's CSV: two good lines, and one without a label and with a negative tank.
                let errors: Vec<Vec<&str>> = answer["list"]
                    .as_array()
                    .map(|l| {
                        l.iter()
                            .map(|v| {
                                v["errors"]
                                    .as_array()
                                    .map(|e| {
                                        e.iter().filter_map(|e| e["parameter"].as_str()).collect()
                                    })
                                    .unwrap_or_default()
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                assert_eq!(
                    errors,
                    [vec![], vec![], vec!["label", "fuel_tank_volume"]],
                    "{context}"
                );
                assert_eq!(answer["list"][1]["fuel_tank_volume"], 700, "{context}");
                named += 1;
            } else if command.contains("/v2/vehicle/batch_convert") {
                let labels: Vec<&str> = answer["list"]
                    .as_array()
                    .map(|l| l.iter().filter_map(|v| v["label"].as_str()).collect())
                    .unwrap_or_default();
                assert_eq!(labels, ["Truck 9", "Van 10"], "{context}");
                assert!(!output.contains("\"parameter\""), "{context}");
                named += 1;
            } else if command.contains("/v2/tracker/location/link/list") {
                assert_eq!(
                    answer["list"].as_array().map(Vec::len),
                    Some(1),
                    "{context}"
                );
                assert_eq!(
                    answer["list"][0]["hash"], accounts["link_hash"],
                    "{context}"
                );
                named += 1;
            } else if command.contains("/v2/subuser/list") {
                let login = accounts["subuser"]["login"].to_string();
                assert!(output.contains(&login), "{context}");
                named += 1;
            } else if command.contains("/v2/panel/dealer/get_info") {
                assert_eq!(answer["id"], accounts["dealer"]["dealer_id"], "{context}");
                named += 1;
            } else if command.contains("/v2/garage/create") {
                assert!(answer["id"].as_i64().is_some(), "{context}");
                named += 1;
            } else if command.contains("/v2/garage/list") {
                // The demo's own two, and the one the printed create added.
                for depot in ["North depot", "South depot", "West depot"] {
                    assert!(output.contains(depot), "{depot}: {context}");
                }
                named += 1;
            } else if command.contains("/v2/vehicle/list") && command.contains("label=desc") {
                let labels: Vec<&str> = answer["list"]
                    .as_array()
                    .map(|l| l.iter().filter_map(|v| v["label"].as_str()).collect())
                    .unwrap_or_default();
                assert_eq!(labels, ["Van 7", "Tanker 12"], "{context}");
                named += 1;
            } else if command.contains("/v2/vehicle/list") {
                // Every demo plate ends in 02.
                assert_eq!(
                    answer["list"].as_array().map(Vec::len),
                    Some(3),
                    "{context}"
                );
                assert!(output.contains("\"tracker_label\""), "{context}");
                named += 1;
            } else if command.contains("/v2/security_group/list") {
                assert!(output.contains("\"Dispatchers\""), "{context}");
                named += 1;
            } else if command.contains("/v2/retranslator/list") {
                assert!(output.contains("\"Insurer feed\""), "{context}");
                named += 1;
            } else if command.contains("/v2/plugin/list") {
                let ids: Vec<i64> = answer["list"]
                    .as_array()
                    .map(|l| l.iter().filter_map(|p| p["id"].as_i64()).collect())
                    .unwrap_or_default();
                assert_eq!(ids, [29], "the dealer's plugins: {context}");
                named += 1;
            } else if command.contains("/v2/bill/create") {
                assert!(answer["value"].as_i64().is_some(), "{context}");
                named += 1;
            } else if command.contains("/v2/bill/list") {
                // The demo's own bill, and one per printed create run so far.
                assert!(answer["count"].as_i64().unwrap_or(0) >= 2, "{context}");
                named += 1;
            } else if command.contains("/v2/department/list") {
                let labels: Vec<&str> = answer["list"]
                    .as_array()
                    .map(|l| l.iter().filter_map(|d| d["label"].as_str()).collect())
                    .unwrap_or_default();
                assert_eq!(labels, ["Drivers", "Maintenance"], "{context}");
                named += 1;
            } else if command.contains("/v2/panel/tariff/list") {
                let names: Vec<&str> = answer["list"]
                    .as_array()
                    .map(|l| l.iter().filter_map(|p| p["name"].as_str()).collect())
                    .unwrap_or_default();
                // Every dealer's default plan, and the demo's own.
                assert_eq!(names, ["Standard", "Fleet Standard"], "{context}");
                assert_eq!(answer["count"], 2, "{context}");
                named += 1;
            } else if command.contains("/v2/panel/dealer/activation_code/list") {
                let codes = answer["list"].as_array().cloned().unwrap_or_default();
                assert_eq!(codes.len(), 1, "{context}");
                assert_eq!(codes[0]["free_days"], 30, "{context}");
                assert_eq!(codes[0]["activated"], false, "{context}");
                named += 1;
            } else if command.contains("/v2/panel/subpaas/list") {
                let list = answer["list"].as_array().cloned().unwrap_or_default();
                assert_eq!(list.len(), 1, "{context}");
                assert_eq!(list[0]["title"], "Steppe Telematics", "{context}");
                assert_eq!(list[0]["block_type"], "INITIAL_BLOCK", "{context}");
                named += 1;
            } else if command.contains("/v2/panel/user/list") {
                let logins: Vec<&str> = answer["list"]
                    .as_array()
                    .map(|l| l.iter().filter_map(|u| u["login"].as_str()).collect())
                    .unwrap_or_default();
                assert_eq!(
                    logins,
                    ["dispatch@other-fleet.example", "manager@demo-fleet.example"],
                    "{context}"
                );
                named += 1;
            } else if command.contains("/raw_data/get_inputs") {
                let inputs = answer["inputs"].to_string();
                assert!(inputs.contains("lls_level_1"), "{context}");
                named += 1;
            }
        }
    }
    named
}

/// The number after `word ` in `text`, thousands separators allowed.
fn count_after(text: &str, word: &str) -> Option<u64> {
    let rest = text.split_once(&format!("{word} "))?.1;
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Bytes in the files under `dir`, recursively (0 if it does not exist).
fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => bytes_under(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

fn read_accounts(dir: &Path) -> (String, Value) {
    let text = std::fs::read_to_string(dir.join("demo.json")).expect("demo.json");
    let accounts = serde_json::from_str(&text).expect("demo.json is JSON");
    (text, accounts)
}

#[test]
fn printed_commands_work_as_printed_and_a_restart_reuses_the_accounts() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let (demo, printed) = start_demo(dir);
    let (text, accounts) = read_accounts(dir);

    assert_eq!(
        accounts["users"].as_array().map(Vec::len),
        Some(2),
        "{text}"
    );
    let trackers = accounts["trackers"].as_array().expect("trackers");
    assert_eq!(trackers.len(), 3, "{text}");
    let blocked = trackers.iter().filter(|t| t["blocked"] == true).count();
    assert_eq!(blocked, 1, "{text}");
    let api_key = accounts["api_key"].as_str().unwrap_or_default();
    assert!(is_secret(api_key), "{text}");
    assert!(is_secret(
        accounts["ingest_token"].as_str().unwrap_or_default()
    ));

    // One line sums up the telemetry sent: accepted messages, and the blocked van's 208.
    let summaries: Vec<&String> = printed
        .iter()
        .filter(|l| l.starts_with("Demo telemetry"))
        .collect();
    let [summary] = summaries.as_slice() else {
        panic!("no single telemetry summary in:\n{}", printed.join("\n"));
    };
    let accepted = count_after(summary, "accepted").unwrap_or(0);
    assert!(accepted > 1_000, "{summary}");
    assert_eq!(count_after(summary, "rejected"), Some(1), "{summary}");
    assert!(summary.contains("code 208"), "{summary}");
    assert_eq!(count_after(summary, "duplicates"), Some(0), "{summary}");
    let stored = bytes_under(&dir.join("wal")) + bytes_under(&dir.join("telemetry"));
    assert!(stored > 0, "nothing in {}/wal or /telemetry", dir.display());

    let commands = printed_commands(&printed);
    assert!(
        commands.len() >= 10,
        "too few commands in:\n{}",
        printed.join("\n")
    );
    assert!(
        commands.iter().any(|c| c.contains(api_key)),
        "the demo API key is not used by any command:\n{}",
        commands.join("\n")
    );
    let (outputs, hash, panel) = run_in_bash(&commands);
    assert!(is_secret(&hash), "HASH={hash:?}");
    assert!(is_secret(&panel), "PANEL={panel:?}");
    // HASH, PANEL, admin, two key lists, sub-user register and list, garage
    // create and list, department list, two vehicle lists, two batch
    // conversions and the upload (FILE), security groups, retranslators,
    // plugins, bill create and list, dealer info, key delete, intake, import,
    // raw data read and get_inputs, resampling, metrics.
    assert_eq!(check_outputs(&commands, &outputs, &accounts), 34);

    let (status, log) = demo.terminate();
    assert!(status.success(), "exit status {status}; log:\n{log}");

    // A second start finds demo.json: same accounts, same printed calls (but the address).
    let (_again, printed_again) = start_demo(dir);
    assert!(
        !printed_again
            .iter()
            .any(|l| l.starts_with("Demo telemetry")),
        "telemetry generated again:\n{}",
        printed_again.join("\n")
    );
    let (text_again, _) = read_accounts(dir);
    assert_eq!(text_again, text, "demo.json changed on restart");
    let commands_again = printed_commands(&printed_again);
    assert_eq!(commands_again.len(), commands.len());
    assert!(commands_again.iter().any(|c| c.contains(api_key)));
    let (outputs, _, _) = run_in_bash(&commands_again);
    assert_eq!(check_outputs(&commands_again, &outputs, &accounts), 34);
}
