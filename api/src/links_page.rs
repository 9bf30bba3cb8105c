//! The public side of geo links: `GET /links/{hash}` (the map page),
//! `GET /links/{hash}/positions` (its JSON feed, polled by the page) and
//! `GET /links/static/{file}` (Leaflet and the page's script and style,
//! embedded in the binary). No login: the hash is the key.
//!
//! ```text
//! hash ──► LinkViews (platform::Store::link_page, kept 1 s) ──► state at the store's clock
//!      ──► Ingest::live (each tracker's recent points, in memory) ──► feed::enabled_feed ──► bytes
//! ```
//!
//! The feed reveals only the link's trackers (by their index in the link),
//! only the members the link allows, only within its lifetime. Every
//! request under `/links/` counts against the client address's own limiter
//! (`--rate-link-ip`); beyond it, 429 code 15 with `Retry-After`.
//!
//! They are declared as the other custom calls are (`Route::custom`), so the
//! OpenAPI document lists them; their refusals (`404`, `403`, `410` with
//! `{"state","message"}` or a small HTML page) are described in words there,
//! not as the error object.

mod feed;

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use platform::{LinkPage, LinkState};
use schemas::{ErrorCode, TrackerId};

use crate::answer::{Answer, Media, MediaKind};
use crate::limits::{RateKey, client_address};
use crate::metrics::AnsweredCode;
use crate::route::{AccessDoc, CallDoc, Credential, RequestDoc, Route};
use crate::{ApiError, AppState};

/// How long the platform's view of a link is reused.
const VIEW_TTL: Duration = Duration::from_secs(1);
/// Links whose view is kept at once (unknown hashes included).
const MAX_VIEWS: usize = 10_000;
/// How often the page polls the feed.
const POLL_MS: u64 = 2_000;
/// The page's title when the link has no description.
const DEFAULT_TITLE: &str = "Live location";

const PAGE_TEMPLATE: &str = include_str!("../assets/links/page.html");

/// `/links/{hash}`, `/links/{hash}/positions` and `/links/static/{file}`.
pub(crate) fn routes() -> Vec<Route> {
    vec![
        Route::custom(
            "/links/{hash}",
            get(page),
            public_get(
                "A geo link's map page",
                "The HTML page showing the live position of a geo link's trackers to anyone \
                 holding its address; no credential. A link that is unknown (404), switched off \
                 (403), not open yet (403) or over (410) gets a small HTML page saying so.",
                Media::<HtmlPage>::describe,
                &[
                    (404, page_refusal),
                    (403, page_refusal),
                    (410, page_refusal),
                ],
            ),
        ),
        Route::custom(
            "/links/{hash}/positions",
            get(positions),
            CallDoc {
                request: RequestDoc::Params(|schemas| schemas.inline::<FeedParams>()),
                access: AccessDoc {
                    credential: Credential::None,
                    codes: vec![ErrorCode::TooManyRequests, ErrorCode::InvalidParameters],
                },
                ..public_get(
                    "A geo link's feed",
                    "What the map page polls: the link's trackers (each by its index in the link, \
                 `key`), their newest position and recent trail (`[lat, lng, message time \
                 ms]`, oldest first), and the members the link allows; `Cache-Control: \
                 no-store`. With `since` (the `server_time` of the previous answer) a trail \
                 holds only the points that reached the server after it, for the page to add \
                 to those it has: what a poll carries stays small however long the trail. \
                 A `since` that is not a whole number is 7. Refusals answer \
                 `{\"state\":\"not_found\"|\"disabled\"|\"inactive\"|\"expired\",\"message\":…}` \
                 with 404, 403, 403 (with `from`, when it opens) and 410.",
                    Media::<FeedJson>::describe,
                    &[
                        (404, feed_refusal),
                        (403, feed_refusal),
                        (410, feed_refusal),
                    ],
                )
            },
        ),
        Route::custom(
            "/links/static/{file}",
            get(asset),
            public_get(
                "A file of the geo link page",
                "Leaflet (`leaflet.js`, `leaflet.css`) and the page's `page.js` and \
                 `page.css`, embedded in the binary; 404 for any other name.",
                Media::<StaticFile>::describe,
                &[(404, no_such_file)],
            ),
        ),
        Route::custom(
            "/links/static/images/{image}",
            get(image),
            public_get(
                "An image of the geo link page",
                "Leaflet's images (`layers.png`, `layers-2x.png`, `marker-icon.png`, \
                 `marker-icon-2x.png`, `marker-shadow.png`), embedded in the binary; 404 for any other name.",
                Media::<StaticFile>::describe,
                &[(404, no_such_file)],
            ),
        ),
    ]
}

/// A GET without credential whose path names its parameter, limited per address.
fn public_get(
    summary: &'static str,
    description: &'static str,
    answer: fn(&mut crate::answer::Schemas) -> serde_json::Value,
    refusals: &'static [crate::route::Refusal],
) -> CallDoc {
    CallDoc {
        refusals,
        methods: &["get"],
        request: RequestDoc::Params(|schemas| schemas.inline::<PathParams>()),
        access: AccessDoc {
            credential: Credential::None,
            codes: vec![ErrorCode::TooManyRequests],
        },
        ..CallDoc::plain_get(summary, description, Vec::new(), answer)
    }
}

/// The page's answer to an unknown (404), switched off or not yet open (403)
/// or ended (410) link.
fn page_refusal() -> serde_json::Value {
    serde_json::json!({
        "description": "The link is unknown (404), switched off or not open yet (403), or over \
            (410): a small HTML page saying so.",
        "content": { "text/html": { "schema": { "type": "string" } } }
    })
}

/// The feed's answer to an unknown (404), switched off or not yet open (403)
/// or ended (410) link.
fn feed_refusal() -> serde_json::Value {
    serde_json::json!({
        "description": "The link is unknown (404), switched off or not open yet (403), or over (410).",
        "content": { "application/json": { "schema": {
            "type": "object",
            "required": ["state", "message"],
            "properties": {
                "state": { "type": "string", "enum": ["not_found", "disabled", "inactive", "expired"] },
                "message": { "type": "string" },
                "from": { "type": "integer", "description": "When a link not open yet opens (ms since the epoch)." }
            }
        } } }
    })
}

/// A file the page does not have.
fn no_such_file() -> serde_json::Value {
    serde_json::json!({
        "description": "No such file.",
        "content": { "text/plain": { "schema": { "type": "string" } } }
    })
}

/// The feed's parameters (documented only: the handler reads the path and query).
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code, reason = "read by the OpenAPI document only")]
struct FeedParams {
    /// The link's hash: 32 lowercase hex digits.
    hash: Option<String>,
    /// The `server_time` of the previous answer (ms since the epoch): trails
    /// then hold only the points that reached the server after it.
    since: Option<i64>,
}

/// The path's parameter (documented only: the handlers take it from the path).
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code, reason = "read by the OpenAPI document only")]
struct PathParams {
    /// The link's hash: 32 lowercase hex digits (`/links/{hash}…`).
    hash: Option<String>,
    /// A file name (`/links/static/{file}`).
    file: Option<String>,
    /// An image's file name (`/links/static/images/{image}`).
    image: Option<String>,
}

#[derive(Debug)]
struct HtmlPage;

impl MediaKind for HtmlPage {
    const DESCRIPTION: &'static str = "The page.";
    fn content() -> serde_json::Value {
        serde_json::json!({ "text/html": { "schema": { "type": "string" } } })
    }
}

#[derive(Debug)]
struct FeedJson;

impl MediaKind for FeedJson {
    const DESCRIPTION: &'static str = "The link's trackers now.";
    fn content() -> serde_json::Value {
        serde_json::json!({ "application/json": { "schema": {
            "type": "object",
            "required": ["state", "description", "server_time", "until", "display", "objects", "places"],
        } } })
    }
}

#[derive(Debug)]
struct StaticFile;

impl MediaKind for StaticFile {
    const DESCRIPTION: &'static str = "The file.";
    fn content() -> serde_json::Value {
        let any = serde_json::json!({ "schema": { "type": "string" } });
        serde_json::json!({ JS: any, CSS: any, PNG: { "schema": { "type": "string", "format": "binary" } } })
    }
}

/// A link's view by its hash (`None`: no such link), and when it was read.
type Views = HashMap<String, (Instant, Option<Arc<LinkPage>>)>;

/// The platform's views of links, each reused for [`VIEW_TTL`], at most [`MAX_VIEWS`].
#[derive(Debug, Default)]
pub(crate) struct LinkViews {
    views: Mutex<Views>,
}

impl LinkViews {
    /// The link with this hash (`None`: no such link), from the store at most once a second.
    async fn get(&self, state: &AppState, hash: &str) -> Result<Option<Arc<LinkPage>>, ApiError> {
        if let Some((at, view)) = self.lock().get(hash) {
            if at.elapsed() < VIEW_TTL {
                return Ok(view.clone());
            }
        }
        let view = state.inner.store.link_page(hash).await?.map(Arc::new);
        let mut views = self.lock();
        if views.len() >= MAX_VIEWS {
            views.retain(|_, (at, _)| at.elapsed() < VIEW_TTL);
        }
        if views.len() < MAX_VIEWS {
            views.insert(hash.to_owned(), (Instant::now(), view.clone()));
        }
        Ok(view)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Views> {
        self.views.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether `hash` can be a link's hash: 32 lowercase hex digits.
fn is_hash(hash: &str) -> bool {
    hash.len() == 32 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Counts the request against its client address; the 429 answer when over.
fn over_limit(state: &AppState, request: &Request) -> Option<ApiError> {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip());
    let ip = client_address(
        request.headers(),
        peer,
        state.inner.config.trusted_proxy_hops,
    );
    state.inner.limits.check(&RateKey::LinkIp(ip)).err()
}

/// What a link shows now, or why it shows nothing.
enum Found {
    Shown(Arc<LinkPage>),
    Refused(Refusal),
}

/// Why a link shows nothing: its state, HTTP status and message.
struct Refusal {
    state: &'static str,
    status: StatusCode,
    title: &'static str,
    message: String,
    /// When an inactive link opens (ms since the epoch).
    opens_ms: Option<i64>,
}

async fn find(state: &AppState, hash: &str, now_ms: i64) -> Result<Found, ApiError> {
    let view = if is_hash(hash) {
        state.inner.link_views.get(state, hash).await?
    } else {
        None
    };
    let Some(link) = view else {
        return Ok(Found::Refused(Refusal {
            state: "not_found",
            status: StatusCode::NOT_FOUND,
            title: "Link not found",
            message: "There is no such link. Check the address you were given.".into(),
            opens_ms: None,
        }));
    };
    let refusal = match link.state(now_ms) {
        LinkState::Enabled => return Ok(Found::Shown(link)),
        LinkState::Disabled => Refusal {
            state: "disabled",
            status: StatusCode::FORBIDDEN,
            title: "Link switched off",
            message: "Its owner has switched this link off.".into(),
            opens_ms: None,
        },
        LinkState::Inactive => Refusal {
            state: "inactive",
            status: StatusCode::FORBIDDEN,
            title: "Link not active yet",
            message: format!(
                "This link shows locations from {} (UTC).",
                utc_text(link.lifetime_from_ms.unwrap_or(now_ms))
            ),
            opens_ms: link.lifetime_from_ms,
        },
        LinkState::Expired => Refusal {
            state: "expired",
            status: StatusCode::GONE,
            title: "Link expired",
            message: format!(
                "This link showed locations until {} (UTC).",
                utc_text(link.lifetime_to_ms.unwrap_or(now_ms))
            ),
            opens_ms: None,
        },
    };
    Ok(Found::Refused(refusal))
}

fn utc_text(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || ms.to_string(),
        |t| t.format("%Y-%m-%d %H:%M").to_string(),
    )
}

fn now_ms(state: &AppState) -> i64 {
    state.inner.store.clock().now().timestamp_millis()
}

/// `GET /links/{hash}`: the page, or a small page saying why there is none.
async fn page(
    State(state): State<AppState>,
    Path(hash): Path<String>,
    request: Request,
) -> Response {
    if let Some(limited) = over_limit(&state, &request) {
        return html_limited(limited);
    }
    let link = match find(&state, &hash, now_ms(&state)).await {
        Ok(Found::Shown(link)) => link,
        Ok(Found::Refused(r)) => return html(r.status, &notice_page(r.title, &r.message)),
        Err(e) => return e.into_response(),
    };
    let title = match link.description.trim() {
        "" => DEFAULT_TITLE,
        text => text,
    };
    let config = serde_json::json!({
        "feed": format!("/links/{hash}/positions"),
        "tiles": state.inner.config.map_tiles_url,
        "poll_ms": POLL_MS,
    });
    let config = config.to_string().replace('<', "\\u003c");
    let body = fill(
        PAGE_TEMPLATE,
        &[
            ("{{TITLE}}", &escape_html(title)),
            ("{{CONFIG_JSON}}", &config),
        ],
    );
    let policy = page_policy(&state.inner.config.map_tiles_url);
    html_with(StatusCode::OK, &body, &policy)
}

/// What a notice page may load: nothing but its own inline style.
const NOTICE_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; \
     form-action 'none'";

/// What the live page may load (its `Content-Security-Policy`): its own
/// scripts, styles and feed, and images from itself and the tile server.
/// An injected script could neither run nor send anything elsewhere.
fn page_policy(tiles_url: &str) -> String {
    format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: {}; \
         connect-src 'self'; base-uri 'none'; form-action 'none'",
        tile_source(tiles_url)
    )
}

/// Where the map tiles come from, as a CSP source: the tile URL
/// template's scheme and host (a templated first label, Leaflet's `{s}`,
/// becomes `*.`); only the scheme when the host is templated otherwise or
/// holds anything but host characters; the page's own server for a
/// template without a scheme.
fn tile_source(template: &str) -> String {
    let Some((scheme, rest)) = template.split_once("://") else {
        return "'self'".to_owned();
    };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'));
    if !scheme_ok {
        return "'self'".to_owned();
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    let host_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']');
    let wildcard = host.split_once('.').and_then(|(first, tail)| {
        let templated = first.starts_with('{') && first.ends_with('}');
        (templated && !tail.is_empty() && tail.chars().all(host_char)).then_some(tail)
    });
    match wildcard {
        Some(tail) => format!("{scheme}://*.{tail}"),
        None if !host.is_empty() && host.chars().all(host_char) => format!("{scheme}://{host}"),
        None => format!("{scheme}:"),
    }
}

/// `GET /links/{hash}/positions`: the feed, or `{"state","message"}` with the refusal's status.
async fn positions(
    State(state): State<AppState>,
    Path(hash): Path<String>,
    request: Request,
) -> Response {
    if let Some(limited) = over_limit(&state, &request) {
        return limited.into_response();
    }
    let now_ms = now_ms(&state);
    let link = match find(&state, &hash, now_ms).await {
        Ok(Found::Shown(link)) => link,
        Ok(Found::Refused(r)) => {
            let mut body = serde_json::json!({ "state": r.state, "message": r.message });
            if let Some(from) = r.opens_ms {
                body["from"] = from.into();
            }
            return json(r.status, body.to_string().into_bytes());
        }
        Err(e) => return e.into_response(),
    };
    let received_after = match received_after(&request) {
        Ok(since) => since,
        Err(e) => return e.into_response(),
    };
    let trackers: Vec<TrackerId> = link.trackers.iter().map(|t| t.telemetry_id).collect();
    let since_ms = feed::trail_since_ms(&link.display, now_ms);
    let trails = state.inner.ingest.live().recent_many(&trackers, since_ms);
    let places = geocoder::bundled();
    match feed::enabled_feed(&link, &trails, now_ms, received_after, |lat, lng| {
        places.nearest(lat, lng).address()
    }) {
        Ok(bytes) => json(StatusCode::OK, bytes),
        Err(e) => {
            tracing::error!(error = %e, "encoding a link feed failed");
            ApiError::new(ErrorCode::Unexpected).into_response()
        }
    }
}

/// The feed's `since` (ms since the epoch), if the query names one; 7 when
/// it is not a whole number.
fn received_after(request: &Request) -> Result<Option<i64>, ApiError> {
    let Some(query) = request.uri().query() else {
        return Ok(None);
    };
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
        .map_err(|_| ApiError::invalid("since", "the query does not parse"))?;
    let Some((_, value)) = pairs.into_iter().find(|(k, _)| k == "since") else {
        return Ok(None);
    };
    value
        .parse()
        .map(Some)
        .map_err(|_| ApiError::invalid("since", "must be a whole number of ms since the epoch"))
}

/// The files the page loads, embedded at build time.
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "leaflet.js",
        JS,
        include_bytes!("../assets/leaflet/leaflet.js"),
    ),
    (
        "leaflet.css",
        CSS,
        include_bytes!("../assets/leaflet/leaflet.css"),
    ),
    (
        "images/layers.png",
        PNG,
        include_bytes!("../assets/leaflet/images/layers.png"),
    ),
    (
        "images/layers-2x.png",
        PNG,
        include_bytes!("../assets/leaflet/images/layers-2x.png"),
    ),
    (
        "images/marker-icon.png",
        PNG,
        include_bytes!("../assets/leaflet/images/marker-icon.png"),
    ),
    (
        "images/marker-icon-2x.png",
        PNG,
        include_bytes!("../assets/leaflet/images/marker-icon-2x.png"),
    ),
    (
        "images/marker-shadow.png",
        PNG,
        include_bytes!("../assets/leaflet/images/marker-shadow.png"),
    ),
    ("page.js", JS, include_bytes!("../assets/links/page.js")),
    ("page.css", CSS, include_bytes!("../assets/links/page.css")),
];
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const PNG: &str = "image/png";
/// A day: the files change only with the binary, and their names carry no version.
const ASSET_CACHE: &str = "public, max-age=86400";

/// `GET /links/static/images/{image}`.
async fn image(state: State<AppState>, Path(image): Path<String>, request: Request) -> Response {
    asset(state, Path(format!("images/{image}")), request).await
}

/// `GET /links/static/{file}`.
async fn asset(
    State(state): State<AppState>,
    Path(file): Path<String>,
    request: Request,
) -> Response {
    if let Some(limited) = over_limit(&state, &request) {
        return limited.into_response();
    }
    let Some((_, content_type, bytes)) = ASSETS.iter().find(|(name, _, _)| *name == file) else {
        return (StatusCode::NOT_FOUND, headers(&[]), "no such file").into_response();
    };
    let headers = headers(&[
        (header::CONTENT_TYPE, content_type),
        (header::CACHE_CONTROL, ASSET_CACHE),
    ]);
    (StatusCode::OK, headers, *bytes).into_response()
}

fn headers(pairs: &[(header::HeaderName, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    map.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    for (name, value) in pairs {
        map.insert(name.clone(), HeaderValue::from_static(value));
    }
    map
}

/// A notice page.
fn html(status: StatusCode, body: &str) -> Response {
    html_with(status, body, NOTICE_POLICY)
}

/// A page that may load what `policy` allows.
fn html_with(status: StatusCode, body: &str, policy: &str) -> Response {
    let mut headers = headers(&[
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
    ]);
    // Only an operator's tile URL goes into a policy, checked to host
    // characters; were it ever not a valid header, the notice's would do.
    let policy =
        HeaderValue::from_str(policy).unwrap_or_else(|_| HeaderValue::from_static(NOTICE_POLICY));
    headers.insert(header::CONTENT_SECURITY_POLICY, policy);
    (status, headers, body.to_owned()).into_response()
}

fn json(status: StatusCode, body: Vec<u8>) -> Response {
    let headers = headers(&[
        (header::CONTENT_TYPE, "application/json"),
        (header::CACHE_CONTROL, "no-store"),
    ]);
    (status, headers, body).into_response()
}

/// The page's 429: a page for the reader, counted and timed as the API's.
fn html_limited(limited: ApiError) -> Response {
    let mut response = html(
        StatusCode::TOO_MANY_REQUESTS,
        &notice_page(
            "Too many requests",
            "Please wait a moment, then reload the page.",
        ),
    );
    let json = limited.into_response();
    if let Some(retry) = json.headers().get(header::RETRY_AFTER) {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, retry.clone());
    }
    if let Some(code) = json.extensions().get::<AnsweredCode>().copied() {
        response.extensions_mut().insert(code);
    }
    response
}

/// A small page saying why there is nothing to show.
fn notice_page(title: &str, message: &str) -> String {
    let (title, message) = (escape_html(title), escape_html(message));
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"robots\" content=\"noindex, nofollow\">\n<title>{title}</title>\n\
         <style>body{{font-family:system-ui,sans-serif;margin:0;display:flex;min-height:100vh;\
         align-items:center;justify-content:center;background:#f3f4f6;color:#1f2937}}\
         main{{max-width:28rem;padding:2rem;text-align:center}}h1{{font-size:1.4rem}}</style>\n\
         </head>\n<body>\n<main>\n<h1>{title}</h1>\n<p>{message}</p>\n</main>\n</body>\n</html>\n"
    )
}

/// `template` with each placeholder replaced, in one pass (a value holding
/// another placeholder's text stays as it is).
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + 1024);
    let mut rest = template;
    loop {
        let next = values
            .iter()
            .filter_map(|(name, value)| rest.find(name).map(|at| (at, *name, *value)))
            .min_by_key(|(at, _, _)| *at);
        let Some((at, name, value)) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at]);
        out.push_str(value);
        rest = &rest[at + name.len()..];
    }
}

fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_once_each() {
        let page = fill(
            "<t>{{TITLE}}</t><s>{{CONFIG_JSON}}</s>",
            &[("{{TITLE}}", "{{CONFIG_JSON}}"), ("{{CONFIG_JSON}}", "{}")],
        );
        assert_eq!(page, "<t>{{CONFIG_JSON}}</t><s>{}</s>");
    }

    #[test]
    fn html_is_escaped() {
        assert_eq!(
            escape_html(r#"<b>"Tom" & 'Jerry'</b>"#),
            "&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;"
        );
    }

    #[test]
    fn only_lowercase_hex_of_32_digits_is_a_hash() {
        assert!(is_hash("0123456789abcdef0123456789abcdef"));
        assert!(!is_hash("0123456789ABCDEF0123456789abcdef"));
        assert!(!is_hash("0123456789abcdef0123456789abcde"));
        assert!(!is_hash("0123456789abcdef0123456789abcdeg"));
    }

    #[test]
    fn tiles_are_allowed_from_their_server_only() {
        for (template, source) in [
            (
                "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
                "https://tile.openstreetmap.org",
            ),
            (
                "https://{s}.tile.example.com/{z}/{x}/{y}.png?key=1",
                "https://*.tile.example.com",
            ),
            ("http://127.0.0.1:9/{z}/{x}/{y}.png", "http://127.0.0.1:9"),
            (
                "https://user@tiles.example.com:8443/{z}",
                "https://tiles.example.com:8443",
            ),
            ("https://{s}.a.{t}.example.com/{z}", "https:"),
            ("https://a.example.com;script-src *", "https:"),
            ("/tiles/{z}/{x}/{y}.png", "'self'"),
            ("java script://x/", "'self'"),
        ] {
            assert_eq!(tile_source(template), source, "{template}");
        }
        let policy = page_policy("https://tile.openstreetmap.org/{z}/{x}/{y}.png");
        assert!(policy.contains("script-src 'self';"), "{policy}");
        assert!(
            policy.contains("img-src 'self' data: https://tile.openstreetmap.org;"),
            "{policy}"
        );
        assert!(HeaderValue::from_str(&policy).is_ok());
    }

    #[test]
    fn the_template_has_both_placeholders() {
        assert!(PAGE_TEMPLATE.contains("{{TITLE}}"));
        assert!(PAGE_TEMPLATE.contains("{{CONFIG_JSON}}"));
    }
}
