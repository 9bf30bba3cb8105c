use schemas::{ErrorCode, HasCode};
use serde_json::json;

use super::geometry::{EARTH_RADIUS_M, distance_m};
use super::*;

/// Metres per degree of latitude on the sphere.
const METRES_PER_DEGREE: f64 = EARTH_RADIUS_M * std::f64::consts::PI / 180.0;

fn point(lat: f64, lng: f64) -> GeoPoint {
    GeoPoint { lat, lng }
}

fn circle(lat: f64, lng: f64, radius: i64) -> Zone {
    Zone {
        id: None,
        label: "Depot".into(),
        address: String::new(),
        color: DEFAULT_ZONE_COLOR.into(),
        shape: ZoneShape::Circle {
            center: point(lat, lng),
            radius,
        },
    }
}

fn polygon(points: &[(f64, f64)]) -> Zone {
    Zone {
        shape: ZoneShape::Polygon {
            points: points.iter().map(|&(lat, lng)| point(lat, lng)).collect(),
        },
        ..circle(0.0, 0.0, 1)
    }
}

/// The code and message of a zone that fails its check.
fn refusal(zone: Zone) -> (ErrorCode, String) {
    let error = zone.checked("zone").expect_err("refused");
    (error.code(), error.to_string())
}

#[test]
fn haversine_distances_match_known_ones() {
    let one_degree = distance_m(point(0.0, 0.0), point(1.0, 0.0));
    assert!((one_degree - 111_195.0).abs() < 1.0, "{one_degree}");
    let along_equator = distance_m(point(0.0, 10.0), point(0.0, 11.0));
    assert!((along_equator - one_degree).abs() < 1e-6, "{along_equator}");
    // A degree of longitude at 60° is half as long.
    let at_sixty = distance_m(point(60.0, 10.0), point(60.0, 11.0));
    assert!((at_sixty - one_degree / 2.0).abs() < 10.0, "{at_sixty}");
    // Paris to London, 343.5 km on the sphere.
    let paris_london = distance_m(point(48.8566, 2.3522), point(51.5074, -0.1278));
    assert!((paris_london - 343_500.0).abs() < 500.0, "{paris_london}");
    assert_eq!(distance_m(point(43.25, 76.95), point(43.25, 76.95)), 0.0);
    // Antipodes: half the circumference, not NaN.
    let half = distance_m(point(0.0, 0.0), point(0.0, 180.0));
    assert!(
        (half - EARTH_RADIUS_M * std::f64::consts::PI).abs() < 1.0,
        "{half}"
    );
}

#[test]
fn a_circle_holds_points_within_its_radius() {
    let zone = circle(43.25, 76.95, 1_000);
    assert!(zone.contains(43.25, 76.95), "the centre");
    let north = |metres: f64| 43.25 + metres / METRES_PER_DEGREE;
    assert!(zone.contains(north(999.0), 76.95));
    assert!(!zone.contains(north(1_001.0), 76.95));
    // East of a centre at 60° a degree of longitude is half as long: a
    // plane test on degrees would get these wrong.
    let zone = circle(60.0, 30.0, 1_000);
    let east = |metres: f64| 30.0 + metres / (METRES_PER_DEGREE * 0.5);
    assert!(zone.contains(60.0, east(995.0)));
    assert!(!zone.contains(60.0, east(1_005.0)));
}

#[test]
fn a_polygon_holds_points_inside_its_ring() {
    // An L of city size: the square 43.20..43.30 × 76.90..77.00 without its
    // north-east quarter.
    let ring = [
        (43.20, 76.90),
        (43.30, 76.90),
        (43.30, 76.95),
        (43.25, 76.95),
        (43.25, 77.00),
        (43.20, 77.00),
    ];
    let zone = polygon(&ring);
    for (lat, lng) in [(43.22, 76.92), (43.28, 76.92), (43.22, 76.98)] {
        assert!(zone.contains(lat, lng), "({lat}, {lng}) is inside");
    }
    for (lat, lng) in [
        (43.28, 76.98), // the missing quarter
        (43.19, 76.95),
        (43.31, 76.92),
        (43.22, 76.89),
        (43.22, 77.01),
        (-43.22, -76.92),
    ] {
        assert!(!zone.contains(lat, lng), "({lat}, {lng}) is outside");
    }
    // Closing the ring with its first point changes nothing.
    let mut closed = ring.to_vec();
    closed.push(ring[0]);
    let closed = polygon(&closed);
    for (lat, lng) in [(43.22, 76.92), (43.28, 76.98), (43.25, 76.97)] {
        assert_eq!(closed.contains(lat, lng), zone.contains(lat, lng));
    }
}

#[test]
fn a_ray_through_a_vertex_is_counted_once() {
    // A diamond whose left and right vertices lie on the test latitude.
    let diamond = polygon(&[(0.0, 1.0), (1.0, 2.0), (2.0, 1.0), (1.0, 0.0)]);
    assert!(diamond.contains(1.0, 1.0));
    assert!(diamond.contains(1.0, 0.5));
    assert!(!diamond.contains(1.0, -1.0));
    assert!(!diamond.contains(1.0, 3.0));
    // The bottom vertex's latitude, beside it.
    assert!(!diamond.contains(0.0, 0.5));
    assert!(!diamond.contains(0.0, 1.5));
}

#[test]
fn zones_are_checked_member_by_member() {
    let trimmed = Zone {
        label: "  Depot  ".into(),
        address: " Abay Ave 52 ".into(),
        color: "ff0000".into(),
        ..circle(43.25, 76.95, 100_000)
    }
    .checked("zone")
    .unwrap();
    assert_eq!(
        (trimmed.label.as_str(), trimmed.address.as_str()),
        ("Depot", "Abay Ave 52")
    );
    assert!(circle(90.0, -180.0, 1).checked("zone").is_ok());

    let invalid = ErrorCode::InvalidParameters;
    let cases = [
        (
            Zone {
                label: " ".into(),
                ..circle(0.0, 0.0, 1)
            },
            invalid,
            "`zone.label`",
        ),
        (
            Zone {
                color: "#27A9E3".into(),
                ..circle(0.0, 0.0, 1)
            },
            invalid,
            "`zone.color`",
        ),
        (
            Zone {
                color: "27A9EG".into(),
                ..circle(0.0, 0.0, 1)
            },
            invalid,
            "`zone.color`",
        ),
        (circle(90.5, 0.0, 1), invalid, "`zone.center.lat`"),
        (circle(0.0, f64::NAN, 1), invalid, "`zone.center.lng`"),
        (circle(0.0, 0.0, 0), invalid, "`zone.radius`"),
        (circle(0.0, 0.0, 100_001), invalid, "`zone.radius`"),
        (
            polygon(&[(0.0, 0.0), (1.0, 1.0)]),
            ErrorCode::NotEnoughPointsForZone,
            "`zone.points`",
        ),
        (
            polygon(&[(0.0, 0.0); MAX_ZONE_POINTS + 1]),
            ErrorCode::TooManyPointsInZone,
            "`zone.points`",
        ),
        (
            polygon(&[(0.0, 0.0), (1.0, 1.0), (-91.0, 1.0)]),
            invalid,
            "`zone.points[2].lat`",
        ),
        (
            polygon(&[(0.0, 179.0), (1.0, -179.0), (1.0, 179.5)]),
            invalid,
            "`zone.points[1]`",
        ),
    ];
    for (zone, code, names) in cases {
        let (got, message) = refusal(zone);
        assert_eq!(got, code, "{message}");
        assert!(message.contains(names), "{message:?} should name {names}");
    }
    assert!(
        polygon(&[(0.0, 0.0); MAX_ZONE_POINTS])
            .checked("zone")
            .is_ok()
    );
}

#[test]
fn zones_read_as_the_platform_writes_them() {
    let circle = Zone {
        id: Some(ZoneId(3)),
        ..circle(43.25, 76.95, 150)
    };
    assert_eq!(
        serde_json::to_value(&circle).unwrap(),
        json!({"id": 3, "label": "Depot", "address": "", "color": "27A9E3",
               "type": "circle", "center": {"lat": 43.25, "lng": 76.95}, "radius": 150})
    );
    let polygon = polygon(&[(0.0, 0.0), (0.0, 1.0), (1.0, 0.0)]);
    let text = json!({"label": "Depot", "type": "polygon",
                      "points": [{"lat": 0.0, "lng": 0.0}, {"lat": 0.0, "lng": 1.0}, {"lat": 1.0, "lng": 0.0}]});
    assert_eq!(serde_json::from_value::<Zone>(text).unwrap(), polygon);
}

/// A store in a temporary directory with two master users of one dealer.
pub(crate) async fn store_with_two_users() -> (tempfile::TempDir, Store, UserId, UserId) {
    store_with_two_users_on(crate::StoreConfig::new(".").max_connections).await
}

/// [`store_with_two_users`] with a pool of `connections`.
pub(crate) async fn store_with_two_users_on(
    connections: u32,
) -> (tempfile::TempDir, Store, UserId, UserId) {
    let dir = tempfile::tempdir().unwrap();
    let clock = std::sync::Arc::new(schemas::SystemClock);
    let config = crate::StoreConfig {
        max_connections: connections,
        ..crate::StoreConfig::new(dir.path())
    };
    let store = Store::open(config, clock).await.unwrap();
    let dealer = store
        .create_dealer(crate::NewDealer {
            id: None,
            title: "D".into(),
            panel_password: "secret123".into(),
            contract_type: crate::ContractType::Paas,
            permissions: None,
            default_user_time_zone: "UTC".into(),
        })
        .await
        .unwrap();
    let mut users = Vec::new();
    for login in ["ann@example.com", "bob@example.com"] {
        let user = store
            .create_user(crate::NewUser {
                dealer_id: dealer,
                login: login.into(),
                password: "pw".into(),
                time_zone: None,
                activated: true,
                legal_type: crate::LegalType::Individual,
                first_name: String::new(),
                last_name: String::new(),
            })
            .await
            .unwrap();
        users.push(user);
    }
    (dir, store, users[0], users[1])
}

#[tokio::test]
async fn zones_named_by_another_call_are_the_accounts_or_204() {
    let (_dir, store, ann, bob) = store_with_two_users().await;
    let depot = store
        .create_zone(ann, circle(43.25, 76.95, 500))
        .await
        .unwrap();
    let town = store
        .create_zone(ann, polygon(&[(0.0, 0.0), (0.0, 1.0), (1.0, 0.0)]))
        .await
        .unwrap();
    let bobs = store.create_zone(bob, circle(1.0, 1.0, 10)).await.unwrap();

    let found = store.zones_of(ann, &[town, depot, town]).await.unwrap();
    let ids: Vec<_> = found.iter().map(|z| z.id).collect();
    assert_eq!(
        ids,
        [Some(town), Some(depot)],
        "in the order asked, once each"
    );
    assert!(found[1].contains(43.25, 76.95));
    assert!(store.zones_of(ann, &[]).await.unwrap().is_empty());
    for (asked, named) in [
        (vec![depot, bobs], bobs),
        (vec![ZoneId(999), bobs], ZoneId(999)),
    ] {
        let error = store.zones_of(ann, &asked).await.unwrap_err();
        assert_eq!(error.code(), ErrorCode::EntityNotFound, "{error}");
        assert!(
            error.to_string().contains(&format!("zone {named}")),
            "{error}"
        );
    }
    store.delete_zone(depot).await.unwrap();
    let gone = store.zones_of(ann, &[depot]).await.unwrap_err();
    assert_eq!(gone.code(), ErrorCode::EntityNotFound);
    assert_eq!(
        store.delete_zone(depot).await.unwrap_err().code(),
        ErrorCode::NotFoundInDatabase
    );
    assert_eq!(store.zones(ann).await.unwrap().len(), 1);
}
