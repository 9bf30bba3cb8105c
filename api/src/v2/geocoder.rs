//! `/v2/geocoder/search_address|search_location`: the offline geocoder
//! (clarification 47) over the places bundled in the binary (`geocoder`
//! crate). Any user of an account may call them; no external service is
//! asked, so the `geocoder` a caller prefers only has to be one of the
//! spec's names.

use geocoder::{Bounds, Place};
use platform::GeoPoint;
use schemas::ErrorCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::Success;
use crate::route::{Params, Route, User};
use crate::{ApiError, ApiResult, AppState};

/// Characters a searched text may have.
const MAX_QUERY_CHARS: usize = 255;

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new("/v2/geocoder/search_address", User::any(), search_address)
            .doc(
                "Find places by name or coordinates",
                "`q` as two decimal numbers separated by a comma (`25.2011,55.3489`), or as a \
                 location object, is a reverse lookup: one result, the nearest place's address at \
                 those coordinates. Otherwise the places whose names match `q`, best first: the \
                 whole name, its start, a later word's start, then one or two typing errors; \
                 text after a comma keeps the places whose province, district or country starts \
                 with it (`London, Ontario`). `bounds` only raises the places inside. Names are \
                 GeoNames' (one name a place): `lang` is checked and does not change them. \
                 Code 210 when nothing matches.",
            )
            .errors(&[ErrorCode::GeocodingFailed]),
        Route::new("/v2/geocoder/search_location", User::any(), search_location).doc(
            "The address of a point",
            "The nearest bundled place's address (place, province, country); `details` only \
             with `with_details`.",
        ),
    ]
}

/// Geocoders a caller may prefer; all are answered by the bundled places.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
enum GeocoderName {
    Google,
    Yandex,
    Progorod,
    Osm,
    Locationiq,
}

/// What the reverse lookup is for (`ui_user_action`: asked by the user).
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
enum GeocoderGoal {
    Ui,
    UiUserAction,
}

/// A box of the map.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
struct GeocoderBounds {
    /// North-west corner.
    nw: GeoPoint,
    /// South-east corner.
    se: GeoPoint,
}

/// Text or a point.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(untagged)]
enum GeocoderQuery {
    Point(GeoPoint),
    Text(String),
}

#[derive(Debug, Deserialize, ToSchema)]
struct SearchAddressParams {
    /// An address, a place or coordinates (`lat,lng` or a location object).
    q: GeocoderQuery,
    /// The geocoder preferred.
    geocoder: Option<GeocoderName>,
    /// Raises the rank of places inside; places outside may still appear.
    bounds: Option<GeocoderBounds>,
    /// ISO 639 language code.
    lang: Option<String>,
    /// Whether to answer `details`.
    with_details: Option<bool>,
}

impl Params for SearchAddressParams {}

#[derive(Debug, Deserialize, ToSchema)]
struct SearchLocationParams {
    /// The point.
    location: GeoPoint,
    /// The geocoder preferred.
    geocoder: Option<GeocoderName>,
    /// ISO 639 language code.
    lang: Option<String>,
    /// Whether to answer `details`.
    with_details: Option<bool>,
    /// `ui_user_action` for a lookup the user asked for, otherwise `ui`.
    goal: GeocoderGoal,
}

impl Params for SearchLocationParams {}

/// The parts of an address.
#[derive(Debug, Serialize, ToSchema)]
struct GeocoderDetails {
    country: String,
    /// First administrative division (state, province, region).
    #[serde(skip_serializing_if = "Option::is_none")]
    province: Option<String>,
    locality: String,
}

impl GeocoderDetails {
    fn of(place: Place<'_>) -> Self {
        Self {
            country: place.country().to_owned(),
            province: (!place.province.is_empty()).then(|| place.province.to_owned()),
            locality: place.name.to_owned(),
        }
    }
}

/// A location found.
#[derive(Debug, Serialize, ToSchema)]
struct GeocoderLocation {
    lat: f64,
    lng: f64,
    address: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<GeocoderDetails>,
}

impl GeocoderLocation {
    fn of(place: Place<'_>, at: GeoPoint, with_details: bool) -> Self {
        Self {
            lat: at.lat,
            lng: at.lng,
            address: place.address(),
            details: with_details.then(|| GeocoderDetails::of(place)),
        }
    }
}

/// The locations, best first.
#[derive(Debug, Serialize, ToSchema)]
struct GeocoderLocations {
    locations: Vec<GeocoderLocation>,
}

/// The address of a point.
#[derive(Debug, Serialize, ToSchema)]
struct GeocoderAddress {
    value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<GeocoderDetails>,
}

/// An ISO 639 code: two or three letters (`en`, `kk`, `fil`).
fn check_lang(lang: Option<&str>) -> ApiResult<()> {
    match lang {
        Some(l) if !(2..=3).contains(&l.len()) || !l.bytes().all(|b| b.is_ascii_alphabetic()) => {
            Err(ApiError::invalid("lang", "is not an ISO 639 code"))
        }
        _ => Ok(()),
    }
}

async fn search_address(
    state: AppState,
    _: platform::UserAuth,
    p: SearchAddressParams,
) -> ApiResult<Success<GeocoderLocations>> {
    check_lang(p.lang.as_deref())?;
    let _ = p.geocoder;
    let with_details = p.with_details.unwrap_or(false);
    let places = geocoder::bundled();
    let point = match &p.q {
        GeocoderQuery::Point(at) => Some(at.checked("q")?),
        GeocoderQuery::Text(text) => {
            geocoder::parse_coordinates(text).map(|(lat, lng)| GeoPoint { lat, lng })
        }
    };
    if let Some(at) = point {
        let place = places.nearest(at.lat, at.lng);
        return Ok(Success(GeocoderLocations {
            locations: vec![GeocoderLocation::of(place, at, with_details)],
        }));
    }
    let GeocoderQuery::Text(text) = &p.q else {
        unreachable!("a location is answered above")
    };
    if text.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::invalid(
            "q",
            format!("is longer than {MAX_QUERY_CHARS} characters"),
        ));
    }
    if geocoder::fold(text).is_empty() {
        return Err(ApiError::invalid("q", "holds no letter or digit"));
    }
    let bounds = match p.bounds {
        Some(b) => {
            let (nw, se) = (b.nw.checked("bounds.nw")?, b.se.checked("bounds.se")?);
            Some(Bounds {
                north: nw.lat,
                west: nw.lng,
                south: se.lat,
                east: se.lng,
            })
        }
        None => None,
    };
    let hits = places.search(text, bounds, state.inner.config.geocoder_results);
    if hits.is_empty() {
        return Err(ApiError::with_description(
            ErrorCode::GeocodingFailed,
            format!(
                "{}: no place matches `{text}`",
                ErrorCode::GeocodingFailed.meaning()
            ),
        ));
    }
    let locations = hits
        .iter()
        .map(|hit| {
            let at = GeoPoint {
                lat: hit.place.lat,
                lng: hit.place.lng,
            };
            GeocoderLocation::of(hit.place, at, with_details)
        })
        .collect();
    Ok(Success(GeocoderLocations { locations }))
}

async fn search_location(
    _: AppState,
    _: platform::UserAuth,
    p: SearchLocationParams,
) -> ApiResult<Success<GeocoderAddress>> {
    check_lang(p.lang.as_deref())?;
    let _ = (p.geocoder, p.goal);
    let at = p.location.checked("location")?;
    let place = geocoder::bundled().nearest(at.lat, at.lng);
    Ok(Success(GeocoderAddress {
        value: place.address(),
        details: p
            .with_details
            .unwrap_or(false)
            .then(|| GeocoderDetails::of(place)),
    }))
}
