use std::borrow::Cow;

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use schemas::{ErrorCode, HasCode};
use serde::Serialize;

use crate::params::ParamError;

/// Result of an API call.
pub type ApiResult<T, E = ApiError> = std::result::Result<T, E>;

/// A parameter that failed validation, as listed in `errors`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ParamIssue {
    /// The row of an uploaded file (1-based, the header not counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row_number: Option<usize>,
    /// The parameter (`title`, `user.login`, `codes[1]`), or a file's column.
    pub parameter: String,
    /// What is wrong with it.
    pub error: String,
}

/// An error answer: `{"success":false,"status":{"code","description"}}`.
///
/// This is the only error type that becomes an HTTP response; every crate's
/// error converts into it through its [`HasCode`].
#[derive(Debug)]
pub struct ApiError {
    code: ErrorCode,
    description: Cow<'static, str>,
    errors: Vec<ParamIssue>,
    retry_after_s: Option<u64>,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl ApiError {
    /// An error with the spec's meaning of the code as its description.
    pub fn new(code: ErrorCode) -> Self {
        Self {
            code,
            description: Cow::Borrowed(code.meaning()),
            errors: Vec::new(),
            retry_after_s: None,
            source: None,
        }
    }

    /// An error with a description of its own.
    pub fn with_description(code: ErrorCode, description: impl Into<Cow<'static, str>>) -> Self {
        Self {
            description: description.into(),
            ..Self::new(code)
        }
    }

    /// Code 7 naming the failing parameter.
    pub fn invalid(parameter: impl Into<String>, error: impl Into<String>) -> Self {
        let issue = ParamIssue {
            row_number: None,
            parameter: parameter.into(),
            error: error.into(),
        };
        Self {
            description: Cow::Owned(format!(
                "{}: `{}` {}",
                ErrorCode::InvalidParameters.meaning(),
                issue.parameter,
                issue.error
            )),
            errors: vec![issue],
            ..Self::new(ErrorCode::InvalidParameters)
        }
    }

    /// Code 15 telling the caller when to retry.
    pub fn rate_limited(retry_after_s: u64) -> Self {
        Self {
            retry_after_s: Some(retry_after_s.max(1)),
            ..Self::with_description(
                ErrorCode::TooManyRequests,
                format!(
                    "{}; retry after {} s",
                    ErrorCode::TooManyRequests.meaning(),
                    retry_after_s.max(1)
                ),
            )
        }
    }

    /// Asks the caller to retry after `seconds` (`Retry-After`).
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after_s = Some(seconds.max(1));
        self
    }

    /// Any crate's error: its code; the caller sees its message unless it is a server fault.
    pub fn from_error<E: HasCode + std::error::Error + Send + Sync + 'static>(err: E) -> Self {
        let code = err.code();
        if code.is_server_fault() {
            return Self {
                source: Some(Box::new(err)),
                ..Self::new(code)
            };
        }
        let detail = err.to_string();
        if detail.eq_ignore_ascii_case(code.meaning()) {
            Self::new(code)
        } else {
            Self::with_description(code, format!("{}: {detail}", code.meaning()))
        }
    }

    /// The error code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The description sent to the caller.
    pub fn description(&self) -> &str {
        &self.description
    }
}

impl From<ParamError> for ApiError {
    fn from(err: ParamError) -> Self {
        Self::invalid(err.parameter(), err.message())
    }
}

impl From<platform::Error> for ApiError {
    fn from(err: platform::Error) -> Self {
        match err {
            platform::Error::InvalidArgument { field, reason } => Self::invalid(field, reason),
            platform::Error::Rows { ref rows, .. } if rows.is_empty() => Self::from_error(err),
            err @ platform::Error::Rows { .. } => {
                let code = err.code();
                let description = format!("{}: {err}", code.meaning());
                let platform::Error::Rows { rows, .. } = err else {
                    return Self::new(code);
                };
                Self {
                    errors: rows
                        .into_iter()
                        .map(|r| ParamIssue {
                            row_number: Some(r.row_number),
                            parameter: r.parameter,
                            error: r.error,
                        })
                        .collect(),
                    ..Self::with_description(code, description)
                }
            }
            err => Self::from_error(err),
        }
    }
}

impl From<ingest::Error> for ApiError {
    fn from(err: ingest::Error) -> Self {
        let transient = err.code().is_transient();
        let answer = Self::from_error(err);
        if transient {
            answer.retry_after(1)
        } else {
            answer
        }
    }
}

#[derive(Serialize)]
struct Body<'a> {
    success: bool,
    status: Status<'a>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    errors: &'a [ParamIssue],
}

#[derive(Serialize)]
struct Status<'a> {
    code: u16,
    description: &'a str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Some(source) = &self.source {
            // Ours to fix: log the whole chain (inside the request's span, which
            // carries the request id); the caller gets the generic meaning only.
            let mut chain = source.to_string();
            let mut cause = source.source();
            while let Some(c) = cause {
                chain.push_str(": ");
                chain.push_str(&c.to_string());
                cause = c.source();
            }
            tracing::error!(code = self.code.number(), error = %chain, "request failed");
        }
        let status = StatusCode::from_u16(self.code.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = Body {
            success: false,
            status: Status {
                code: self.code.number(),
                description: &self.description,
            },
            errors: &self.errors,
        };
        let mut response = (status, axum::Json(body)).into_response();
        response
            .extensions_mut()
            .insert(crate::metrics::AnsweredCode(self.code.number()));
        if let Some(seconds) = self.retry_after_s {
            response
                .headers_mut()
                .insert("retry-after", HeaderValue::from(seconds));
        }
        response
    }
}
