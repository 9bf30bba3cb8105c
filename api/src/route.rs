//! The one way to declare a call: its path, who may make it, its parameters,
//! its answer, its own error codes, its handler; the OpenAPI document is made
//! from the same declarations (see `openapi`).
//!
//! ```text
//! Route::new("/v2/api/key/create", Session::master(), create)
//!     .doc("Create an API key", "…")
//!     .errors(&[ErrorCode::OverQuota])
//! Route::new("/v2/subuser/list", User::needs(Right::Admin).feature(Feature::MultilevelAccess, AllTrackers), list)
//! Route::new("/v2/panel/dealer/get_info", Panel::needs(Permission::BaseGetDealerInfo), get_info)
//! ```
//!
//! The parameter type (`ToSchema`) gives the parameters of the three request
//! forms, the handler's [`Answer`] the success, the access its security scheme
//! and codes, and `errors` the codes only the call itself can answer.
//!
//! Every call then runs the same steps, each with its own error code:
//! read the parameters from JSON, form or query (5, 9) → credential (3, 4,
//! 11, 103, 276) → rate limit (15) → right or permission (13) → parameters
//! into the call's type (7) → plan features of the trackers involved (236) →
//! the handler. GET and POST are both accepted (POST only for a call that
//! takes files), with or without a trailing slash; any other method is 112.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::Router;
use axum::extract::{ConnectInfo, FromRequestParts, RawPathParams, Request, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use schemas::ErrorCode;
use serde::de::DeserializeOwned;

use crate::answer::Answer;
use crate::params::{self, FilePart, Input};
use crate::{ApiError, ApiResult, AppState};

mod access;
mod doc;

pub(crate) use access::{FeatureScope, Panel, Public, Session, User};
pub(crate) use doc::{AccessDoc, CallDoc, Credential, Refusal, RequestDoc};

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

    /// The credential it takes and the codes it can refuse with, for the document.
    fn doc(&self) -> AccessDoc;

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

/// A call's parameters, read leniently from any request form; their
/// `ToSchema` derive documents them (types, limits, enums).
///
/// Calls whose plan-feature check depends on the trackers they name will add
/// a method here that names them.
pub(crate) trait Params:
    DeserializeOwned + utoipa::ToSchema + Send + Sync + 'static
{
    /// The trackers the call names, for a plan feature needed on them
    /// ([`access::FeatureScope::NamedTrackers`]); none by default.
    fn trackers(&self) -> Vec<schemas::TrackerId> {
        Vec::new()
    }
}

/// Parameters of calls that take none but the credential.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
pub(crate) struct NoParams {}

impl Params for NoParams {}

/// The part of a multipart body holding the file of a call that takes one.
pub(crate) const FILE_PART: &str = "file";

/// What a handler may need beyond its parameters.
struct Extras {
    headers: HeaderMap,
    files: Vec<FilePart>,
}

/// A declared call, ready to be mounted and documented.
pub(crate) struct Route {
    pub(crate) path: &'static str,
    endpoint: MethodRouter<AppState>,
    pub(crate) doc: CallDoc,
}

impl Route {
    /// Declares a call at `path`, made by callers `access` admits, answered by `handler`.
    pub(crate) fn new<A, P, F, Fut, R>(path: &'static str, access: A, handler: F) -> Self
    where
        A: Access,
        P: Params,
        F: Fn(AppState, A::Caller, P) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = ApiResult<R>> + Send + 'static,
        R: Answer,
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
        R: Answer,
    {
        Self::build(
            path,
            access,
            &["get", "post"],
            RequestDoc::Params(|schemas| schemas.inline::<P>()),
            move |state, caller, params, extras: Extras| {
                handler(state, caller, params, extras.headers)
            },
        )
    }

    /// Like [`Route::new`], for a call that takes files: POST with a
    /// `multipart/form-data` body whose text parts are the parameters (the
    /// credential `hash` among them, or the `Authorization` header) and whose
    /// file parts the handler receives.
    pub(crate) fn with_files<A, P, F, Fut, R>(path: &'static str, access: A, handler: F) -> Self
    where
        A: Access,
        P: Params,
        F: Fn(AppState, A::Caller, P, Vec<FilePart>) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = ApiResult<R>> + Send + 'static,
        R: Answer,
    {
        Self::build(
            path,
            access,
            &["post"],
            RequestDoc::Multipart(|schemas| schemas.inline::<P>()),
            move |state, caller, params, extras: Extras| {
                handler(state, caller, params, extras.files)
            },
        )
    }

    fn build<A, P, F, Fut, R>(
        path: &'static str,
        access: A,
        methods: &'static [&'static str],
        request: RequestDoc,
        handler: F,
    ) -> Self
    where
        A: Access,
        P: Params,
        F: Fn(AppState, A::Caller, P, Extras) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = ApiResult<R>> + Send + 'static,
        R: Answer,
    {
        let doc = CallDoc {
            summary: "",
            description: "",
            methods,
            request,
            access: access.doc(),
            errors: Vec::new(),
            answer: R::describe,
            refusals: &[],
        };
        let endpoint = move |State(state): State<AppState>, request: Request| {
            let access = access.clone();
            let handler = handler.clone();
            async move { dispatch(state, access, handler, request).await }
        };
        let mut router = MethodRouter::new().post(endpoint.clone());
        if methods.contains(&"get") {
            router = router.get(endpoint);
        }
        Self {
            path,
            endpoint: router.fallback(wrong_method),
            doc,
        }
    }

    /// A call with an endpoint of its own (not the lenient parameters), fully
    /// described by `doc`; other methods than the ones it routes answer 112.
    pub(crate) fn custom(
        path: &'static str,
        endpoint: MethodRouter<AppState>,
        doc: CallDoc,
    ) -> Self {
        Self {
            path,
            endpoint: endpoint.fallback(wrong_method),
            doc,
        }
    }

    /// The call's summary (a line) and description (Markdown).
    pub(crate) fn doc(mut self, summary: &'static str, description: &'static str) -> Self {
        self.doc.summary = summary;
        self.doc.description = description;
        self
    }

    /// The error codes only this call answers (its access and input add theirs).
    pub(crate) fn errors(mut self, codes: &[ErrorCode]) -> Self {
        self.doc.errors.extend_from_slice(codes);
        self
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
    F: Fn(AppState, A::Caller, P, Extras) -> Fut,
    Fut: Future<Output = ApiResult<R>>,
    R: Answer,
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
    let client_ip =
        crate::limits::client_address(&parts.headers, peer, state.inner.config.trusted_proxy_hops);
    let outcome = async {
        let config = &state.inner.config;
        let read = Input::read(&parts, body, config.max_request_bytes);
        let mut input = tokio::time::timeout(config.request_body_timeout, read)
            .await
            .map_err(|_| params::too_slow(config.request_body_timeout))??;
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
        let extras = Extras {
            headers: parts.headers.clone(),
            files: std::mem::take(&mut input.files),
        };
        let answer = handler(state.clone(), admitted.caller, params, extras).await?;
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
