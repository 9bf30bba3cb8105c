use super::*;

fn day_of_vehicle(seed: u64) -> Vec<Message> {
    Vehicle::new(TrackerId(7), DEFAULT_START_MS, seed)
        .take(MESSAGES_PER_DAY as usize)
        .collect()
}

fn input(message: &Message, name: &str) -> Option<f64> {
    message
        .inputs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| *v)
}

#[test]
fn the_same_seed_gives_the_same_messages() {
    let a = day_of_vehicle(1);
    assert_eq!(a, day_of_vehicle(1));
    assert_ne!(a, day_of_vehicle(2));
}

#[test]
fn messages_come_once_a_second_with_sorted_inner_values() {
    let messages = day_of_vehicle(3);
    for (i, m) in messages.iter().enumerate() {
        assert_eq!(m.message_time_ms, DEFAULT_START_MS + i as i64 * 1000);
        assert!(m.server_time_ms > m.message_time_ms);
        assert!(
            m.inputs.windows(2).all(|w| w[0].0 < w[1].0),
            "{:?}",
            m.inputs
        );
        assert!(m.states.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(m.discrete_inputs.windows(2).all(|w| w[0].0 < w[1].0));
    }
}

#[test]
fn a_day_has_trips_and_parking_with_physical_values() {
    let messages = day_of_vehicle(4);
    let moving = messages.iter().filter(|m| m.speed > Some(5.0)).count();
    let parked = messages
        .iter()
        .filter(|m| m.discrete_inputs.first() == Some(&(1, 0)))
        .count();
    assert!(moving > 3_600, "moving {moving} s");
    assert!(parked > 6 * 3_600, "parked {parked} s");
    let mut odometer = 0.0;
    for m in &messages {
        let fuel = input(m, "lls_level_1").unwrap();
        assert!((0.0..=4095.0).contains(&fuel) && fuel == fuel.trunc());
        assert!((0.0..=130.0).contains(&m.speed.unwrap()));
        assert!((42.5..44.0).contains(&m.lat.unwrap()), "{:?}", m.lat);
        let board = input(m, "board_voltage").unwrap();
        assert!((11.5..15.0).contains(&board));
        // CAN values only while the ignition is on, the odometer never goes back.
        match input(m, "can_odometer") {
            Some(km) => {
                assert!(km >= odometer);
                odometer = km;
            }
            None => assert_eq!(m.discrete_inputs[0], (1, 0)),
        }
    }
}

#[test]
fn the_fuel_level_changes_slowly() {
    let messages = day_of_vehicle(5);
    let levels: Vec<f64> = messages
        .iter()
        .map(|m| input(m, "lls_level_1").unwrap())
        .collect();
    let distinct: std::collections::BTreeSet<i64> = levels.iter().map(|v| *v as i64).collect();
    assert!(distinct.len() < 4096);
    let mean_step =
        levels.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f64>() / levels.len() as f64;
    assert!(mean_step < 10.0, "mean step {mean_step}");
}

#[test]
fn fleets_step_vehicles_together() {
    let mut fleet = Fleet::new(&FleetConfig {
        trackers: 3,
        first_tracker_id: 10,
        ..FleetConfig::default()
    });
    assert_eq!(
        fleet.trackers().collect::<Vec<_>>(),
        [TrackerId(10), TrackerId(11), TrackerId(12)]
    );
    let messages = fleet.next_seconds(2);
    let keys: Vec<(i64, i64)> = messages
        .iter()
        .map(|m| (m.message_time_ms - DEFAULT_START_MS, m.tracker_id.0))
        .collect();
    assert_eq!(
        keys,
        [
            (0, 10),
            (0, 11),
            (0, 12),
            (1000, 10),
            (1000, 11),
            (1000, 12)
        ]
    );
}

#[test]
fn splitmix_is_uniform_enough() {
    let mut rng = SplitMix64::new(42);
    let mean = (0..100_000).map(|_| rng.unit()).sum::<f64>() / 100_000.0;
    assert!((mean - 0.5).abs() < 0.01);
    assert!((0..1000).all(|_| rng.between(3, 7) < 7));
    assert_eq!(rng.between(5, 5), 5);
}

#[test]
fn every_message_passes_the_real_intake() {
    // Two vehicles for a day: fixes lost, parking, trips. Benchmarks that
    // store them with `Ingest::write` must store only what intake accepts.
    let rules = ingest::intake::LineRules {
        server_time_ms: DEFAULT_START_MS,
        allow_server_time: true,
        ..ingest::intake::LineRules::at(DEFAULT_START_MS + 2 * 86_400_000)
    };
    let mut lost_fix = 0;
    for seed in 1..=2 {
        let messages = day_of_vehicle(seed);
        lost_fix += messages
            .iter()
            .filter(|m| m.gps_fix_type != Some(schemas::GpsFixType::HasFix))
            .count();
        let body: String = messages
            .iter()
            .map(|m| format!("{}\n", crate::backends::intake_line(m)))
            .collect();
        let (parsed, rejected) = ingest::intake::parse_body(body.as_bytes(), &rules);
        assert_eq!(
            rejected.first().map(|r| &r.description),
            None,
            "seed {seed}"
        );
        assert_eq!(parsed.rows.len(), messages.len());
    }
    assert!(lost_fix > 0, "the day has messages without a fix");
}
