//! The feed's rules, on hand-made links and trails.

use platform::{GeoPoint, Location, Place, ZoneShape};
use schemas::TrackerId;
use serde_json::{Value, json};

use super::*;

const NOW: i64 = 1_717_228_800_000;

fn tracker(label: &str, object_data: Vec<ObjectData>) -> LinkPageTracker {
    LinkPageTracker {
        telemetry_id: TrackerId(1),
        label: label.into(),
        object_data,
        vehicle_label: Some("Van".into()),
        vehicle_reg_number: None,
        idle_speed_threshold_kmh: 5.0,
    }
}

fn link(trackers: Vec<LinkPageTracker>) -> LinkPage {
    LinkPage {
        link_id: 1,
        description: "Deliveries".into(),
        enabled: true,
        lifetime_from_ms: None,
        lifetime_to_ms: Some(NOW + 3_600_000),
        display: DisplayOptions::default(),
        bounding_mode: None,
        zones: Vec::new(),
        places: Vec::new(),
        trackers,
    }
}

fn point(message_time_ms: i64, lat: f64, speed: f64) -> LivePoint {
    LivePoint {
        message_time_ms,
        server_time_ms: message_time_ms,
        lat,
        lng: 10.0,
        speed: Some(speed),
        heading: Some(45),
    }
}

fn trail(points: Vec<LivePoint>, last_server_time_ms: i64) -> Option<TrackerTrail> {
    Some(TrackerTrail {
        points,
        last_server_time_ms,
    })
}

fn feed(link: &LinkPage, trails: &[Option<TrackerTrail>]) -> Value {
    feed_after(link, trails, None)
}

fn feed_after(link: &LinkPage, trails: &[Option<TrackerTrail>], after: Option<i64>) -> Value {
    let bytes = enabled_feed(link, trails, NOW, after, |lat, _| format!("near {lat}")).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn circle(lat: f64) -> Zone {
    Zone {
        id: None,
        label: "Depot".into(),
        address: String::new(),
        color: "ff0000".into(),
        shape: ZoneShape::Circle {
            center: GeoPoint { lat, lng: 10.0 },
            radius: 1_000,
        },
    }
}

#[test]
fn nothing_but_position_label_and_trail_unless_allowed() {
    let link = link(vec![tracker("Truck", Vec::new())]);
    let feed = feed(&link, &[trail(vec![point(NOW - 1_000, 1.0, 30.0)], NOW)]);
    assert_eq!(feed["state"], "enabled");
    assert_eq!(feed["description"], "Deliveries");
    assert_eq!(feed["server_time"], NOW);
    assert_eq!(feed["until"], NOW + 3_600_000);
    assert_eq!(feed["display"]["trace_duration"], 5);
    assert_eq!(
        feed["objects"],
        json!([{"key": 0, "label": "Truck",
                "position": {"lat": 1.0, "lng": 10.0, "heading": 45, "time": NOW - 1_000},
                "trail": [[1.0, 10.0, NOW - 1_000]]}])
    );
    assert_eq!(feed["places"], json!([]));
}

#[test]
fn allowed_members_are_shown() {
    let mut link = link(vec![tracker(
        "Truck",
        vec![
            ObjectData::Speed,
            ObjectData::Address,
            ObjectData::MovementStatus,
            ObjectData::ConnectionStatus,
            ObjectData::VehicleLabel,
            ObjectData::VehicleRegNumber,
            ObjectData::DriverPhone,
        ],
    )]);
    link.places.push(Place {
        id: None,
        label: "Shop".into(),
        location: Location {
            lat: 2.0,
            lng: 3.0,
            address: String::new(),
            radius: Some(50),
        },
        description: None,
    });
    let trails = [trail(vec![point(NOW - 1_000, 1.0, 30.0)], NOW - 5 * 60_000)];
    let object = &feed(&link, &trails)["objects"][0];
    assert_eq!(object["speed"], 30.0);
    assert_eq!(object["address"], "near 1");
    assert_eq!(object["movement_status"], "moving");
    assert_eq!(object["connection_status"], "idle");
    // Vehicle and driver members also need the link's display options.
    assert!(object.get("vehicle").is_none() && object.get("driver").is_none());

    link.display.show_vehicle_info = true;
    link.display.show_driver_info = true;
    let feed = feed(&link, &trails);
    let object = &feed["objects"][0];
    assert_eq!(
        object["vehicle"],
        json!({"label": "Van", "reg_number": null})
    );
    assert_eq!(object["driver"], json!({"phone": null}));
    assert_eq!(
        feed["places"],
        json!([{"label": "Shop", "lat": 2.0, "lng": 3.0, "radius": 50}])
    );
}

#[test]
fn statuses_follow_speed_threshold_and_silence() {
    let link = link(vec![tracker(
        "Truck",
        vec![ObjectData::MovementStatus, ObjectData::ConnectionStatus],
    )]);
    let status = |speed: f64, heard_ms_ago: i64| {
        let trails = [trail(vec![point(NOW, 1.0, speed)], NOW - heard_ms_ago)];
        let object = feed(&link, &trails)["objects"][0].clone();
        (
            object["movement_status"].clone(),
            object["connection_status"].clone(),
        )
    };
    assert_eq!(
        status(5.0, ACTIVE_WITHIN_MS),
        (json!("moving"), json!("active"))
    );
    assert_eq!(
        status(4.9, ACTIVE_WITHIN_MS + 1),
        (json!("stopped"), json!("idle"))
    );
    assert_eq!(
        status(0.0, IDLE_WITHIN_MS + 1),
        (json!("stopped"), json!("offline"))
    );
}

#[test]
fn bounding_zones_hide_points_and_trackers() {
    let mut link = link(vec![
        tracker("In", vec![ObjectData::Speed]),
        tracker("Out", vec![ObjectData::Speed]),
    ]);
    link.zones.push(circle(1.0));
    // The first tracker ends inside the zone, coming from outside; the second leaves it.
    let trails = [
        trail(
            vec![point(NOW - 2_000, 1.5, 1.0), point(NOW - 1_000, 1.0, 1.0)],
            NOW,
        ),
        trail(
            vec![point(NOW - 2_000, 1.0, 1.0), point(NOW - 1_000, 1.5, 1.0)],
            NOW,
        ),
    ];
    link.bounding_mode = Some(BoundingMode::Inside);
    let inside = feed(&link, &trails);
    assert_eq!(
        inside["objects"][0]["trail"],
        json!([[1.0, 10.0, NOW - 1_000]])
    );
    assert_eq!(inside["objects"][0]["speed"], 1.0);
    assert_eq!(
        inside["objects"][1],
        json!({"key": 1, "label": "Out", "position": null, "trail": []})
    );

    link.bounding_mode = Some(BoundingMode::Outside);
    let outside = feed(&link, &trails);
    assert_eq!(outside["objects"][0]["position"], Value::Null);
    assert_eq!(
        outside["objects"][1]["trail"],
        json!([[1.5, 10.0, NOW - 1_000]])
    );
    assert_eq!(outside["objects"][1]["position"]["lat"], 1.5);

    // Inside no zone at all is nowhere: a link whose zones are gone shows nothing.
    link.zones.clear();
    link.bounding_mode = Some(BoundingMode::Inside);
    assert_eq!(feed(&link, &trails)["objects"][0]["position"], Value::Null);
}

#[test]
fn trackers_without_points_have_no_position() {
    let link = link(vec![
        tracker("Quiet", vec![ObjectData::ConnectionStatus]),
        tracker("Missing", Vec::new()),
    ]);
    let feed = feed(&link, &[None]);
    assert_eq!(
        feed["objects"],
        json!([{"key": 0, "label": "Quiet", "position": null, "trail": []},
               {"key": 1, "label": "Missing", "position": null, "trail": []}])
    );
}

#[test]
fn trails_start_trace_duration_before_now() {
    let mut display = DisplayOptions::default();
    assert_eq!(trail_since_ms(&display, NOW), NOW - 5_000);
    display.trace_duration = -3;
    assert_eq!(trail_since_ms(&display, NOW), NOW);
    display.trace_duration = i64::MAX;
    assert_eq!(trail_since_ms(&display, NOW), NOW - 86_400_000);
}

#[test]
fn after_a_previous_answer_trails_hold_only_what_arrived_since() {
    let link = link(vec![tracker("Truck", Vec::new())]);
    // Three points; the oldest arrived late, after the second.
    let mut late = point(NOW - 3_000, 1.0, 1.0);
    late.server_time_ms = NOW - 500;
    let trails = [trail(
        vec![
            late,
            point(NOW - 2_000, 2.0, 1.0),
            point(NOW - 1_000, 3.0, 1.0),
        ],
        NOW,
    )];
    let lats = |feed: &Value| -> Vec<f64> {
        feed["objects"][0]["trail"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[0].as_f64().unwrap())
            .collect()
    };
    assert_eq!(lats(&feed(&link, &trails)), [1.0, 2.0, 3.0]);
    assert_eq!(
        lats(&feed_after(&link, &trails, Some(NOW - 1_500))),
        [1.0, 3.0]
    );
    let nothing_new = feed_after(&link, &trails, Some(NOW));
    assert_eq!(lats(&nothing_new), Vec::<f64>::new());
    // The position is always the newest, whatever arrived.
    assert_eq!(nothing_new["objects"][0]["position"]["lat"], 3.0);
}
