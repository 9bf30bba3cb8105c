//! The JSON feed of a geo link: what the link shows of its trackers now.
//!
//! Built from the link as the platform describes it ([`LinkPage`]) and the
//! trackers' recent points ([`TrackerTrail`]), with nothing else: a tracker
//! is known only by its index in the link (`key`), and each member appears
//! only when the link allows it.

use platform::{BoundingMode, DisplayOptions, LinkPage, LinkPageTracker, ObjectData, Zone};
use serde::Serialize;

use ingest::{LivePoint, TrackerTrail};

/// A tracker heard of within this long is `active`...
pub(super) const ACTIVE_WITHIN_MS: i64 = 2 * 60 * 1000;
/// ... within this long `idle`, and `offline` beyond.
pub(super) const IDLE_WITHIN_MS: i64 = 30 * 60 * 1000;

/// The message time from which a link's trails are drawn.
pub(super) fn trail_since_ms(display: &DisplayOptions, now_ms: i64) -> i64 {
    let seconds = display
        .trace_duration
        .clamp(0, platform::MAX_TRACE_DURATION_S);
    now_ms.saturating_sub(seconds * 1000)
}

#[derive(Serialize)]
struct Feed<'a> {
    state: &'static str,
    description: &'a str,
    server_time: i64,
    until: Option<i64>,
    display: &'a DisplayOptions,
    objects: Vec<Object<'a>>,
    places: Vec<FeedPlace<'a>>,
}

#[derive(Serialize)]
struct Object<'a> {
    key: usize,
    label: &'a str,
    position: Option<Position>,
    /// `[lat, lng, message time ms]`, oldest first.
    trail: Vec<(f64, f64, i64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    speed: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    movement_status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    connection_status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vehicle: Option<Vehicle<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    driver: Option<Driver>,
}

#[derive(Serialize)]
struct Position {
    lat: f64,
    lng: f64,
    heading: Option<i32>,
    time: i64,
}

/// Each member present when allowed; its value may be null.
#[derive(Serialize)]
struct Vehicle<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reg_number: Option<Option<&'a str>>,
}

/// The platform knows no drivers yet: the members allowed are null.
#[derive(Serialize)]
struct Driver {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    phone: Option<Option<String>>,
}

#[derive(Serialize)]
struct FeedPlace<'a> {
    label: &'a str,
    lat: f64,
    lng: f64,
    radius: Option<i64>,
}

/// The feed of an enabled link at `now_ms`: `trails` are the recent points of
/// its trackers in their order (from [`trail_since_ms`]), `address` names the
/// place nearest a point. With `received_after`, a trail holds only the
/// points whose server time is later (what the previous answer lacked).
pub(super) fn enabled_feed(
    link: &LinkPage,
    trails: &[Option<TrackerTrail>],
    now_ms: i64,
    received_after: Option<i64>,
    address: impl Fn(f64, f64) -> String,
) -> serde_json::Result<Vec<u8>> {
    let bounds = Bounds {
        mode: link.bounding_mode,
        zones: &link.zones,
    };
    let objects = link
        .trackers
        .iter()
        .zip(trails.iter().chain(std::iter::repeat(&None)))
        .enumerate()
        .map(|(key, (tracker, trail))| {
            object(
                key,
                tracker,
                trail.as_ref(),
                link,
                &Window {
                    bounds: &bounds,
                    now_ms,
                    received_after,
                },
                &address,
            )
        })
        .collect();
    let places = link
        .places
        .iter()
        .map(|p| FeedPlace {
            label: &p.label,
            lat: p.location.lat,
            lng: p.location.lng,
            radius: p.location.radius,
        })
        .collect();
    serde_json::to_vec(&Feed {
        state: "enabled",
        description: &link.description,
        server_time: now_ms,
        until: link.lifetime_to_ms,
        display: &link.display,
        objects,
        places,
    })
}

/// Which positions a link's bounding zones let through.
struct Bounds<'a> {
    mode: Option<BoundingMode>,
    zones: &'a [Zone],
}

impl Bounds<'_> {
    /// Inside: within some zone (none with no zones); outside: within none.
    fn shows(&self, point: &LivePoint) -> bool {
        let inside = || self.zones.iter().any(|z| z.contains(point.lat, point.lng));
        match self.mode {
            None => true,
            Some(BoundingMode::Inside) => inside(),
            Some(BoundingMode::Outside) => !inside(),
        }
    }
}

/// What an answer covers: the positions the zones let through, at `now_ms`,
/// and the points received after `received_after` (all without it).
struct Window<'a> {
    bounds: &'a Bounds<'a>,
    now_ms: i64,
    received_after: Option<i64>,
}

fn object<'a>(
    key: usize,
    tracker: &'a LinkPageTracker,
    trail: Option<&TrackerTrail>,
    link: &LinkPage,
    window: &Window<'_>,
    address: &impl Fn(f64, f64) -> String,
) -> Object<'a> {
    let (bounds, now_ms) = (window.bounds, window.now_ms);
    let allows = |what: ObjectData| tracker.object_data.contains(&what);
    let shown = trail.and_then(|t| Some((t, t.newest().filter(|p| bounds.shows(p))?)));
    let vehicle = link.display.show_vehicle_info.then(|| Vehicle {
        label: allows(ObjectData::VehicleLabel).then_some(tracker.vehicle_label.as_deref()),
        reg_number: allows(ObjectData::VehicleRegNumber)
            .then_some(tracker.vehicle_reg_number.as_deref()),
    });
    let driver = link.display.show_driver_info.then(|| Driver {
        name: allows(ObjectData::DriverName).then_some(None),
        phone: allows(ObjectData::DriverPhone).then_some(None),
    });
    let mut object = Object {
        key,
        label: &tracker.label,
        position: None,
        trail: Vec::new(),
        speed: None,
        address: None,
        movement_status: None,
        connection_status: None,
        vehicle: vehicle.filter(|v| v.label.is_some() || v.reg_number.is_some()),
        driver: driver.filter(|d| d.name.is_some() || d.phone.is_some()),
    };
    let Some((trail, newest)) = shown else {
        return object;
    };
    object.position = Some(Position {
        lat: newest.lat,
        lng: newest.lng,
        heading: newest.heading,
        time: newest.message_time_ms,
    });
    object.trail = trail
        .points
        .iter()
        .filter(|p| {
            window
                .received_after
                .is_none_or(|after| p.server_time_ms > after)
        })
        .filter(|p| bounds.shows(p))
        .map(|p| (p.lat, p.lng, p.message_time_ms))
        .collect();
    if allows(ObjectData::Speed) {
        object.speed = Some(newest.speed);
    }
    if allows(ObjectData::Address) {
        object.address = Some(address(newest.lat, newest.lng));
    }
    if allows(ObjectData::MovementStatus) {
        let moving = newest
            .speed
            .is_some_and(|s| s >= tracker.idle_speed_threshold_kmh);
        object.movement_status = Some(if moving { "moving" } else { "stopped" });
    }
    if allows(ObjectData::ConnectionStatus) {
        let silent_ms = now_ms.saturating_sub(trail.last_server_time_ms);
        object.connection_status = Some(if silent_ms <= ACTIVE_WITHIN_MS {
            "active"
        } else if silent_ms <= IDLE_WITHIN_MS {
            "idle"
        } else {
            "offline"
        });
    }
    object
}

#[cfg(test)]
mod tests;
