//! The one way to declare a call: its path, who may make it, its parameters, its handler.
//!
//! ```text
//! Route::new("/v2/api/key/create", Session::master(), create)
//! Route::new("/v2/subuser/list", User::needs(Right::Admin).feature(Feature::MultilevelAccess, AllTrackers), list)
//! Route::new("/v2/panel/dealer/get_info", Panel::needs(Permission::BaseGetDealerInfo), get_info)
//! ```
//!
//! Every call then runs the same steps, each with its own error code:
//! read the parameters from JSON, form or query (5, 9) → credential (3, 4,
//! 11, 103, 276) → rate limit (15) → right or permission (13) → parameters
//! into the call's type (7) → plan features of the trackers involved (236) →
//! the handler. GET and POST are both accepted, with or without a trailing
//! slash; any other method is 112.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::Router;
use axum::extract::{ConnectInfo, FromRequestParts, RawPathParams, Request, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use schemas::ErrorCode;
use serde::de::DeserializeOwned;

use crate::params::{self, Input};
use crate::{ApiError, ApiResult, AppState};

mod access;

pub(crate) use access::{FeatureScope, Panel, Public, Session, User};

/// What a call knows before its credential is checked.
#[derive(Debug)]
pub(crate) struct CallMeta {
    /// The client's address (rate limits of anonymous calls).
    pub(crate) client_ip: IpAddr,
    /// The credential as presented, not yet checked.
    pub(crate) credential: Option<String>,
}

/// A caller let in, and whether the credential it used is deprecated for this call.
#[derive(Debug)]
pub(crate) struct Admitted<C> {
    pub(crate) caller: C,
    pub(crate) deprecated: bool,
}

/// Who may make a call: checks the credential, the rate and the caller's rights.
pub(crate) trait Access: Clone + Send + Sync + 'static {
    /// What the handler learns about the caller.
    type Caller: Send + Sync + 'static;

    /// Lets the caller in or says why not.
    fn admit(
        &self,
        state: &AppState,
        meta: CallMeta,
    ) -> impl Future<Output = ApiResult<Admitted<Self::Caller>>> + Send;

    /// Checks what depends on the parameters (plan features of the trackers they name).
    fn check_params<P: Params>(
        &self,
        _state: &AppState,
        _caller: &Self::Caller,
        _params: &P,
    ) -> impl Future<Output = ApiResult<()>> + Send {
        async { Ok(()) }
    }
}

/// A call's parameters, read leniently from any request form.
///
/// Calls whose plan-feature check depends on the trackers they name will add
/// a method here that names them.
pub(crate) trait Params: DeserializeOwned + Send + Sync + 'static {}

/// Parameters of calls that take none but the credential.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct NoParams {}

impl Params for NoParams {}

/// A declared call, ready to be mounted.
pub(crate) struct Route {
    path: &'static str,
    endpoint: MethodRouter<AppState>,
}

impl Route {
    /// Declares a call at `path`, made by callers `access` admits, answered by `handler`.
    pub(crate) fn new<A, P, F, Fut, R>(path: &'static str, access: A, handler: F) -> Self
    where
        A: Access,
        P: Params,
        F: Fn(AppState, A::Caller, P) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = ApiResult<R>> + Send + 'static,
        R: IntoResponse,
    {
        Self::with_headers(path, access, move |state, caller, params, _: HeaderMap| {
            handler(state, caller, params)
        })
    }

    /// Like [`Route::new`], for a handler that also reads the request's headers
    /// (content negotiation through `Accept`).
    pub(crate) fn with_headers<A, P, F, Fut, R>(path: &'static str, access: A, handler: F) -> Self
    where
        A: Access,
        P: Params,
        F: Fn(AppState, A::Caller, P, HeaderMap) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = ApiResult<R>> + Send + 'static,
        R: IntoResponse,
    {
        let endpoint = move |State(state): State<AppState>, request: Request| {
            let access = access.clone();
            let handler = handler.clone();
            async move { dispatch(state, access, handler, request).await }
        };
        let endpoint = MethodRouter::new()
            .get(endpoint.clone())
            .post(endpoint)
            .fallback(wrong_method);
        Self { path, endpoint }
    }

    /// Adds the call to a router, with and without a trailing slash.
    pub(crate) fn mount(self, router: Router<AppState>) -> Router<AppState> {
        let slashed = format!("{}/", self.path);
        router
            .route(self.path, self.endpoint.clone())
            .route(&slashed, self.endpoint)
    }
}

async fn dispatch<A, P, F, Fut, R>(
    state: AppState,
    access: A,
    handler: F,
    request: Request,
) -> Response
where
    A: Access,
    P: Params,
    F: Fn(AppState, A::Caller, P, HeaderMap) -> Fut,
    Fut: Future<Output = ApiResult<R>>,
    R: IntoResponse,
{
    let (mut parts, body) = request.into_parts();
    // Path parameters (`/trackers/{tracker_id}/…`) join the query and body ones, and win.
    let path_params = RawPathParams::from_request_parts(&mut parts, &state)
        .await
        .map(|params| {
            params
                .iter()
                .map(|(k, v)| (k.to_owned(), serde_json::Value::String(v.to_owned())))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip());
    let client_ip = client_address(&parts.headers, peer, state.inner.config.trusted_proxy_hops);
    let outcome = async {
        let mut input = Input::read(&parts, body, state.inner.config.max_request_bytes).await?;
        input.params.extend(path_params);
        let credential = input.take_credential(&parts.headers);
        let admitted = access
            .admit(
                &state,
                CallMeta {
                    client_ip,
                    credential,
                },
            )
            .await?;
        let params: P = params::from_value(params::object(input.params))?;
        access
            .check_params(&state, &admitted.caller, &params)
            .await?;
        let answer = handler(
            state.clone(),
            admitted.caller,
            params,
            parts.headers.clone(),
        )
        .await?;
        Ok::<_, ApiError>((answer, admitted.deprecated))
    }
    .await;
    match outcome {
        Ok((answer, deprecated)) => {
            let mut response = answer.into_response();
            if deprecated {
                response
                    .headers_mut()
                    .insert("deprecation", HeaderValue::from_static("true"));
            }
            response
        }
        Err(err) => err.into_response(),
    }
}

/// The client's address: the socket peer, or, behind `hops` trusted proxies,
/// the `X-Forwarded-For` entry the outermost trusted proxy appended.
fn client_address(headers: &axum::http::HeaderMap, peer: IpAddr, hops: usize) -> IpAddr {
    if hops == 0 {
        return peer;
    }
    let entries: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    entries
        .len()
        .checked_sub(hops)
        .and_then(|i| entries.get(i))
        .and_then(|e| e.parse().ok())
        .unwrap_or(peer)
}

pub(crate) async fn wrong_method(request: Request) -> ApiError {
    ApiError::with_description(
        ErrorCode::WrongMethod,
        format!(
            "{}: {} is not accepted here; use GET or POST",
            ErrorCode::WrongMethod.meaning(),
            request.method()
        ),
    )
}

/// The answer for a path no call lives at.
pub(crate) async fn unknown_path(request: Request) -> ApiError {
    ApiError::with_description(
        ErrorCode::WrongHandler,
        format!(
            "{}: no call at {}",
            ErrorCode::WrongHandler.meaning(),
            request.uri().path()
        ),
    )
}
