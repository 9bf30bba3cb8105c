//! What the OpenAPI document says of a call, as its declaration states it.

use schemas::ErrorCode;
use serde_json::Value;

use crate::answer::Schemas;

/// The credential a call takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Credential {
    /// None (logins, health, the document itself).
    None,
    /// An API key, or a user session (deprecated there).
    ApiKey,
    /// A user session from `/v2/user/auth`.
    UserSession,
    /// A panel session from `/v2/panel/account/auth`.
    PanelSession,
    /// An ingest token, as `Authorization: Bearer`.
    IngestToken,
}

impl Credential {
    /// Its name in the document (`x-trackhouse-credential`).
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::ApiKey => "api_key",
            Self::UserSession => "user_session",
            Self::PanelSession => "panel_session",
            Self::IngestToken => "ingest_token",
        }
    }
}

/// What an access tells the document.
#[derive(Debug, Clone)]
pub(crate) struct AccessDoc {
    pub(crate) credential: Credential,
    /// Codes it refuses with (bad credential, rate, rights, plan).
    pub(crate) codes: Vec<ErrorCode>,
}

/// How a call takes its input.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RequestDoc {
    /// Parameters in any of the three forms (JSON body, form body, query), read leniently.
    Params(fn(&mut Schemas) -> Value),
    /// A `multipart/form-data` body: the parameters as text parts, and files.
    Multipart(fn(&mut Schemas) -> Value),
    /// A body of one media type, with header parameters.
    Body {
        media_type: &'static str,
        schema: fn(&mut Schemas) -> Value,
        headers: fn() -> Vec<Value>,
    },
    /// Nothing.
    Nothing,
}

/// Everything the OpenAPI document says of a call.
#[derive(Debug, Clone)]
pub(crate) struct CallDoc {
    pub(crate) summary: &'static str,
    pub(crate) description: &'static str,
    /// The methods it answers (the lenient calls: GET and POST alike).
    pub(crate) methods: &'static [&'static str],
    pub(crate) request: RequestDoc,
    pub(crate) access: AccessDoc,
    /// Codes of the call itself, beyond those of its access and its input.
    pub(crate) errors: Vec<ErrorCode>,
    pub(crate) answer: fn(&mut Schemas) -> Value,
    /// Answers beyond the success and the error object (the public pages'
    /// 404, 403, 410): status and its OpenAPI response object.
    pub(crate) refusals: &'static [Refusal],
}

/// An answer outside the success and the error object: its HTTP status and
/// its OpenAPI response object.
pub(crate) type Refusal = (u16, fn() -> Value);

impl CallDoc {
    /// A GET with no parameters and no credential (health, metrics, the document).
    pub(crate) fn plain_get(
        summary: &'static str,
        description: &'static str,
        errors: Vec<ErrorCode>,
        answer: fn(&mut Schemas) -> Value,
    ) -> Self {
        Self {
            summary,
            description,
            methods: &["get"],
            request: RequestDoc::Nothing,
            access: AccessDoc {
                credential: Credential::None,
                codes: Vec::new(),
            },
            errors,
            answer,
            refusals: &[],
        }
    }

    /// Every code the call can answer: the access's, the input's, its own, and
    /// the server faults any call can meet.
    pub(crate) fn codes(&self) -> Vec<ErrorCode> {
        let input: &[ErrorCode] = match self.request {
            RequestDoc::Params(_) | RequestDoc::Multipart(_) => &[
                ErrorCode::WrongRequestFormat,
                ErrorCode::InvalidParameters,
                ErrorCode::TooLargeRequest,
                ErrorCode::Database,
                ErrorCode::DatabaseUnavailable,
            ],
            RequestDoc::Body { .. } | RequestDoc::Nothing => &[],
        };
        let mut codes: Vec<ErrorCode> = self
            .access
            .codes
            .iter()
            .chain(input)
            .chain(&self.errors)
            .chain(&[ErrorCode::Unexpected])
            .copied()
            .collect();
        codes.sort_by_key(|c| c.number());
        codes.dedup();
        codes
    }
}
