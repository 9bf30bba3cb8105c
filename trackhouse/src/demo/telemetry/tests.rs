use std::collections::BTreeMap;

use chrono::{TimeZone, Timelike};
use ingest::intake::{LineRules, parse_body};
use serde::Deserialize;

use super::*;

/// Every line generated, with where it came from and whether it was held back.
#[derive(Debug, Default)]
struct Collected(Vec<(Origin, String, bool)>);

impl LineSink for Collected {
    fn line(&mut self, origin: Origin, line: &[u8], late: bool) -> bool {
        self.0
            .push((origin, String::from_utf8_lossy(line).into_owned(), late));
        true
    }
}

/// A Saturday morning in Almaty.
fn end() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 6, 8, 5, 0, 0).unwrap()
}

fn generate(days: u32) -> (Fleet, Counts, Collected) {
    let specs: Vec<&TrackerSpec> = TRACKERS.iter().collect();
    let fleet = Fleet::new(&specs, chrono_tz::Asia::Almaty, days, end());
    let mut lines = Collected::default();
    let counts = fleet.generate(&mut lines).unwrap();
    (fleet, counts, lines)
}

/// The members of a generated message that the tests look at.
#[derive(Debug, Deserialize)]
struct Sample {
    msg_time: String,
    server_time: String,
    gps_fix_type: String,
    flags: i64,
    satellites: i64,
    alt: i64,
    discrete_inputs: BTreeMap<String, u8>,
    inputs: BTreeMap<String, f64>,
    states: States,
}

#[derive(Debug, Deserialize)]
struct States {
    ignition: bool,
}

impl Sample {
    fn input(&self, name: &str) -> f64 {
        self.inputs.get(name).copied().unwrap()
    }
}

/// The messages of one source, parsed, with whether each was held back.
fn messages(lines: &Collected, source: u32) -> Vec<(Sample, bool)> {
    lines
        .0
        .iter()
        .filter(|(origin, _, _)| origin.source == source)
        .map(|(_, line, late)| (serde_json::from_str(line).unwrap(), *late))
        .collect()
}

fn ms(text: &str) -> i64 {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .timestamp_millis()
}

#[test]
fn the_same_seed_and_span_give_the_same_lines() {
    let (_, counts, first) = generate(2);
    let (_, again, second) = generate(2);
    assert_eq!(counts, again);
    assert_eq!(first.0.len(), second.0.len());
    assert!(first.0.iter().zip(&second.0).all(|(a, b)| a.1 == b.1));
}

#[test]
fn every_line_passes_the_intake_parser() {
    let (fleet, counts, lines) = generate(2);
    let body = lines
        .0
        .iter()
        .map(|(_, line, _)| line.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let now = fleet.span.end_ms;
    let rules = LineRules {
        allow_server_time: true,
        ..LineRules::at(now)
    };
    let (parsed, rejected) = parse_body(body.as_bytes(), &rules);
    assert!(
        rejected.is_empty(),
        "{:?}",
        &rejected[..rejected.len().min(3)]
    );
    assert_eq!(parsed.rows.len() as u64, counts.iter().sum::<u64>());
    // Two moving trucks: a message every 10 s while driving, 60 s parked.
    assert!((3_000..12_000).contains(&counts[0]), "{counts:?}");
    assert!((3_000..12_000).contains(&counts[1]), "{counts:?}");
    assert_eq!(counts[2], 1, "the blocked van sends one line");
}

#[test]
fn a_week_looks_like_trucks_at_work() {
    let (fleet, counts, lines) = generate(7);
    let zone = chrono_tz::Asia::Almaty;
    let trucks = [messages(&lines, 0), messages(&lines, 1)];
    for (source, tanks) in [(0u32, 1), (1, 2)] {
        let all = &trucks[source as usize];
        assert_eq!(all.len() as u64, counts[source as usize]);
        let mut previous: Option<(&Sample, i64)> = None;
        let (mut driving, mut parked, mut fast, mut no_fix) = (0, 0, 0, 0);
        let (mut refuels, mut drains) = (0, 0);
        for (message, _) in all {
            let time = ms(&message.msg_time);
            assert!(time >= fleet.span.start_ms && time <= fleet.span.end_ms);
            let ignition = message.states.ignition;
            assert_eq!(message.discrete_inputs.get("1"), Some(&u8::from(ignition)));
            let fix = message.gps_fix_type == "HAS_FIX";
            assert_eq!(message.flags == 1, fix, "{message:?}");
            no_fix += usize::from(message.gps_fix_type == "NO_FIX");
            let speed = message.input("can_speed");
            assert!((0.0..=90.0).contains(&speed), "{message:?}");
            fast += usize::from(speed > 60.0);
            assert!(!fix || (6..=14).contains(&message.satellites));
            assert!((690..=910).contains(&message.alt), "{message:?}");
            assert!(message.inputs.len() >= 12 + tanks);
            if let Some((before, before_time)) = previous {
                let gap = time - before_time;
                assert!(gap > 0, "times must increase: {before:?} then {message:?}");
                let moving = before.states.ignition && before.input("can_speed") > 0.0;
                driving += usize::from(moving && gap == 10_000);
                parked += usize::from(!ignition && gap == 60_000);
                assert!(message.input("can_odometer") >= before.input("can_odometer"));
                let change = message.input("lls_level_1") - before.input("lls_level_1");
                refuels += usize::from(change > 1000.0);
                if change < -150.0 && !ignition {
                    let hour = zone.timestamp_millis_opt(time).unwrap().hour();
                    assert!((1..4).contains(&hour), "a drain at {hour}h: {message:?}");
                    drains += 1;
                }
            }
            previous = Some((message, time));
        }
        assert!(
            driving > 5_000,
            "truck {source}: {driving} driving intervals"
        );
        assert!(parked > 3_000, "truck {source}: {parked} parked intervals");
        assert!(fast > 100, "truck {source}: {fast} messages above 60 km/h");
        assert!(no_fix > 0, "truck {source}: no NO_FIX at all");
        assert_eq!((refuels, drains), (1, 1), "truck {source}");
    }
    // The second truck's last 24 hours arrive late, stamped with "now".
    let late: Vec<_> = trucks[1].iter().filter(|(_, late)| *late).collect();
    assert!(late.len() > 1_000, "{} late lines", late.len());
    for (message, _) in &late {
        assert_eq!(ms(&message.server_time), fleet.span.end_ms);
        assert!(ms(&message.msg_time) >= fleet.span.late_from_ms);
    }
    assert!(trucks[0].iter().all(|(_, late)| !late));
}
