//! `trackhouse admin zone|place`: the zones and places of a master user,
//! which geo links refer to (no call of the spec creates them).

use clap::Subcommand;
use platform::{GeoPoint, Location, Place, Zone, ZoneShape};
use schemas::{PlaceId, UserId, ZoneId};
use serde_json::{Value, json};

#[derive(Debug, Subcommand)]
pub(super) enum ZoneCommand {
    /// Create a zone, a circle or a polygon → `{"zone_id":N}`.
    Create {
        /// The owner (a master user).
        #[arg(long)]
        user_id: i64,
        /// Label (1 to 255 characters).
        #[arg(long)]
        label: String,
        /// A circle: `LAT,LNG,RADIUS` (degrees, degrees, 1 to 100000 metres).
        #[arg(
            long,
            conflicts_with = "polygon",
            required_unless_present = "polygon",
            allow_hyphen_values = true
        )]
        circle: Option<String>,
        /// A polygon: `"LAT LNG,LAT LNG,..."`, 3 to 1000 points in order.
        #[arg(long, allow_hyphen_values = true)]
        polygon: Option<String>,
        /// Colour: six hex digits without `#`.
        #[arg(long, default_value = platform::DEFAULT_ZONE_COLOR)]
        color: String,
        /// Address (at most 512 characters).
        #[arg(long, default_value = "")]
        address: String,
    },
    /// List a master user's zones → `{"zones":[..]}`.
    List {
        /// The master user.
        #[arg(long)]
        user_id: i64,
    },
    /// Delete a zone → `{"zone_id":N,"deleted":true}`.
    Delete {
        /// The zone.
        #[arg(long)]
        zone_id: i64,
    },
}

#[derive(Debug, Subcommand)]
pub(super) enum PlaceCommand {
    /// Create a place → `{"place_id":N}`.
    Create {
        /// The owner (a master user).
        #[arg(long)]
        user_id: i64,
        /// Label (1 to 255 characters).
        #[arg(long)]
        label: String,
        /// Where: `LAT,LNG` or `LAT,LNG,RADIUS` (degrees, degrees, 1 to 100000 metres).
        #[arg(long, allow_hyphen_values = true)]
        location: String,
        /// Address (at most 512 characters).
        #[arg(long, default_value = "")]
        address: String,
        /// Description (at most 1024 characters).
        #[arg(long)]
        description: Option<String>,
    },
    /// List a master user's places → `{"places":[..]}`.
    List {
        /// The master user.
        #[arg(long)]
        user_id: i64,
    },
    /// Delete a place → `{"place_id":N,"deleted":true}`.
    Delete {
        /// The place.
        #[arg(long)]
        place_id: i64,
    },
}

pub(super) async fn zone(store: &platform::Store, command: ZoneCommand) -> platform::Result<Value> {
    Ok(match command {
        ZoneCommand::Create {
            user_id,
            label,
            circle,
            polygon,
            color,
            address,
        } => {
            let shape = match (circle, polygon) {
                (Some(circle), _) => parse_circle(&circle)?,
                (None, Some(polygon)) => parse_polygon(&polygon)?,
                (None, None) => return Err(invalid("circle", "or --polygon is required")),
            };
            let zone = Zone {
                id: None,
                label,
                address,
                color,
                shape,
            };
            json!({"zone_id": store.create_zone(UserId(user_id), zone).await?})
        }
        ZoneCommand::List { user_id } => json!({"zones": store.zones(UserId(user_id)).await?}),
        ZoneCommand::Delete { zone_id } => {
            store.delete_zone(ZoneId(zone_id)).await?;
            json!({"zone_id": zone_id, "deleted": true})
        }
    })
}

pub(super) async fn place(
    store: &platform::Store,
    command: PlaceCommand,
) -> platform::Result<Value> {
    Ok(match command {
        PlaceCommand::Create {
            user_id,
            label,
            location,
            address,
            description,
        } => {
            let place = Place {
                id: None,
                label,
                location: parse_location(&location, address)?,
                description,
            };
            json!({"place_id": store.create_place(UserId(user_id), place).await?})
        }
        PlaceCommand::List { user_id } => json!({"places": store.places(UserId(user_id)).await?}),
        PlaceCommand::Delete { place_id } => {
            store.delete_place(PlaceId(place_id)).await?;
            json!({"place_id": place_id, "deleted": true})
        }
    })
}

fn invalid(field: &'static str, reason: impl Into<String>) -> platform::Error {
    platform::Error::InvalidArgument {
        field: field.into(),
        reason: reason.into(),
    }
}

/// The numbers of `parts`, or code 7 naming `field` and saying what
/// `text` should look like.
fn numbers<'a>(
    field: &'static str,
    text: &str,
    parts: impl Iterator<Item = &'a str>,
    shape: &str,
) -> platform::Result<Vec<f64>> {
    parts
        .map(|n| n.trim().parse::<f64>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| invalid(field, format!("must be {shape}, got {text:?}")))
}

/// `LAT,LNG,RADIUS`; the values are checked when the zone is stored.
fn parse_circle(text: &str) -> platform::Result<ZoneShape> {
    let shape = "LAT,LNG,RADIUS (degrees, degrees, whole metres)";
    match *numbers("circle", text, text.split(','), shape)? {
        [lat, lng, radius] if radius.fract() == 0.0 && radius.abs() < 1e15 => {
            Ok(ZoneShape::Circle {
                center: GeoPoint { lat, lng },
                // Whole and well within i64: exact.
                radius: radius as i64,
            })
        }
        _ => Err(invalid("circle", format!("must be {shape}, got {text:?}"))),
    }
}

/// `LAT LNG,LAT LNG,...`; the count and values are checked when the zone is stored.
fn parse_polygon(text: &str) -> platform::Result<ZoneShape> {
    let points = text
        .split(',')
        .map(|pair| {
            let shape = "points LAT LNG separated by commas";
            match *numbers("polygon", pair, pair.split_whitespace(), shape)? {
                [lat, lng] => Ok(GeoPoint { lat, lng }),
                _ => Err(invalid("polygon", format!("must be {shape}, got {pair:?}"))),
            }
        })
        .collect::<platform::Result<Vec<_>>>()?;
    Ok(ZoneShape::Polygon { points })
}

/// `LAT,LNG` or `LAT,LNG,RADIUS`; the values are checked when the place is stored.
fn parse_location(text: &str, address: String) -> platform::Result<Location> {
    let shape = "LAT,LNG or LAT,LNG,RADIUS (degrees, degrees, whole metres)";
    let (lat, lng, radius) = match *numbers("location", text, text.split(','), shape)? {
        [lat, lng] => (lat, lng, None),
        [lat, lng, radius] if radius.fract() == 0.0 && radius.abs() < 1e15 => {
            (lat, lng, Some(radius as i64))
        }
        _ => {
            return Err(invalid(
                "location",
                format!("must be {shape}, got {text:?}"),
            ));
        }
    };
    Ok(Location {
        lat,
        lng,
        address,
        radius,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_from_their_flags() {
        assert_eq!(
            parse_circle("43.25, 76.95,500").unwrap(),
            ZoneShape::Circle {
                center: GeoPoint {
                    lat: 43.25,
                    lng: 76.95
                },
                radius: 500
            }
        );
        let ZoneShape::Polygon { points } = parse_polygon("1 2, 3 4,5  -6").unwrap() else {
            panic!("a polygon")
        };
        assert_eq!(
            points,
            [(1.0, 2.0), (3.0, 4.0), (5.0, -6.0)].map(|(lat, lng)| GeoPoint { lat, lng })
        );
        let location = parse_location("-33.9,18.4", String::new()).unwrap();
        assert_eq!(
            (location.lat, location.lng, location.radius),
            (-33.9, 18.4, None)
        );
        assert_eq!(
            parse_location("1,2,30", String::new()).unwrap().radius,
            Some(30)
        );
        for bad in ["1,2", "1,2,3,4", "1,2,3.5", "a,2,3", "1,2,1e300"] {
            assert!(parse_circle(bad).is_err(), "{bad:?}");
        }
        for bad in ["1 2,3", "1,2,3", "1 2 3,4 5,6 7", "", "1 2,,3 4"] {
            assert!(parse_polygon(bad).is_err(), "{bad:?}");
        }
        for bad in ["1", "1,2,3,4", "1,2,0.5", "x,y"] {
            assert!(parse_location(bad, String::new()).is_err(), "{bad:?}");
        }
    }
}
