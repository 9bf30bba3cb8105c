//! Reading a call's parameters from any of the three request forms.
//!
//! POST with a JSON object body, POST form-encoded, and GET with a query
//! string are equivalent (clarification 1); query-string parameters are also
//! read on POST, and a body parameter wins over a query one of the same name.
//! A `multipart/form-data` body (the form of `file/upload`) gives its text
//! parts as parameters and its file parts as [`FilePart`]s.

mod lenient;

use axum::body::Body;
use axum::http::{HeaderMap, header, request::Parts};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use schemas::ErrorCode;
use serde_json::{Map, Value};

use crate::ApiError;
pub(crate) use lenient::{ParamError, from_value, object};

/// A call's raw parameters, before they are read into the call's own type.
#[derive(Debug, Default)]
pub(crate) struct Input {
    pub(crate) params: Map<String, Value>,
    /// The file parts of a multipart body, in order.
    pub(crate) files: Vec<FilePart>,
}

/// A file part of a `multipart/form-data` body.
#[derive(Debug, Clone)]
pub(crate) struct FilePart {
    /// The part's name (`file`).
    pub(crate) name: String,
    /// The file name the client gave.
    pub(crate) file_name: String,
    /// The content.
    pub(crate) content: bytes::Bytes,
}

impl Input {
    /// Reads the query string and the body of a request.
    pub(crate) async fn read(
        parts: &Parts,
        body: Body,
        max_bytes: usize,
    ) -> Result<Self, ApiError> {
        let mut params = Map::new();
        let mut files = Vec::new();
        if let Some(query) = parts.uri.query() {
            add_pairs(&mut params, query.as_bytes(), "query string")?;
        }
        let declared = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|len| len > max_bytes as u64) {
            return Err(too_large(max_bytes));
        }
        let bytes = Limited::new(body, max_bytes)
            .collect()
            .await
            .map_err(|e| body_error(&e, max_bytes))?
            .to_bytes();
        if !bytes.iter().all(u8::is_ascii_whitespace) {
            match body_kind(&parts.headers, &bytes)? {
                BodyKind::Json => match serde_json::from_slice::<Value>(&bytes) {
                    Ok(Value::Object(body)) => params.extend(body),
                    Ok(_) => {
                        return Err(ApiError::with_description(
                            ErrorCode::WrongRequestFormat,
                            "the JSON body must be an object of parameters",
                        ));
                    }
                    Err(e) => {
                        return Err(ApiError::with_description(
                            ErrorCode::WrongRequestFormat,
                            format!("malformed JSON body: {e}"),
                        ));
                    }
                },
                BodyKind::Form => add_pairs(&mut params, &bytes, "form body")?,
                BodyKind::Multipart(boundary) => {
                    read_multipart(boundary, bytes, &mut params, &mut files).await?;
                }
            }
        }
        Ok(Self { params, files })
    }

    /// Takes the credential: `hash` in the body or query, else `Authorization: NVX <hash>`.
    pub(crate) fn take_credential(&mut self, headers: &HeaderMap) -> Option<String> {
        let from_params = self.params.remove("hash").map(|v| match v {
            Value::String(s) => s,
            other => other.to_string(),
        });
        from_params.or_else(|| {
            let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
            let (scheme, hash) = value.split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("NVX")
                .then(|| hash.trim().to_owned())
        })
    }
}

enum BodyKind {
    Json,
    Form,
    /// With its boundary.
    Multipart(String),
}

/// The one file of a call that takes one: the part `file`, at most
/// `max_bytes`; 7 naming `file` for none, two, or a larger one.
pub(crate) fn the_file(files: Vec<FilePart>, max_bytes: usize) -> Result<FilePart, ApiError> {
    let part = crate::route::FILE_PART;
    let mut parts = files.into_iter().filter(|f| f.name == part);
    let (Some(file), None) = (parts.next(), parts.next()) else {
        return Err(ApiError::invalid(
            part,
            "send exactly one file, in the multipart/form-data part `file`",
        ));
    };
    if file.content.len() > max_bytes {
        return Err(ApiError::invalid(
            part,
            format!(
                "is {} bytes; files are at most {max_bytes} bytes (--max-upload-bytes)",
                file.content.len()
            ),
        ));
    }
    Ok(file)
}

/// Text parts become parameters (a later part of the same name wins, like
/// a body parameter over a query one), file parts (those with a file name)
/// files.
async fn read_multipart(
    boundary: String,
    bytes: bytes::Bytes,
    params: &mut Map<String, Value>,
    files: &mut Vec<FilePart>,
) -> Result<(), ApiError> {
    let malformed = |e: multer::Error| {
        ApiError::with_description(
            ErrorCode::WrongRequestFormat,
            format!("malformed multipart body: {e}"),
        )
    };
    let body = futures::stream::once(async move { Ok::<_, std::convert::Infallible>(bytes) });
    let mut multipart = multer::Multipart::new(body, boundary);
    while let Some(field) = multipart.next_field().await.map_err(malformed)? {
        let name = field.name().unwrap_or_default().to_owned();
        match field.file_name().map(str::to_owned) {
            Some(file_name) => {
                let content = field.bytes().await.map_err(malformed)?;
                files.push(FilePart {
                    name,
                    file_name,
                    content,
                });
            }
            None => {
                let text = field.text().await.map_err(malformed)?;
                params.insert(name, Value::String(text));
            }
        }
    }
    Ok(())
}

fn body_kind(headers: &HeaderMap, bytes: &[u8]) -> Result<BodyKind, ApiError> {
    let declared = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let content_type = declared.map(|v| {
        v.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    });
    match content_type.as_deref() {
        Some("application/json") => Ok(BodyKind::Json),
        Some(t) if t.starts_with("application/") && t.ends_with("+json") => Ok(BodyKind::Json),
        Some("application/x-www-form-urlencoded") => Ok(BodyKind::Form),
        Some("multipart/form-data") => declared
            .and_then(|v| multer::parse_boundary(v).ok())
            .map(BodyKind::Multipart)
            .ok_or_else(|| {
                ApiError::with_description(
                    ErrorCode::WrongRequestFormat,
                    "a multipart/form-data body needs its boundary in the Content-Type header",
                )
            }),
        // No declared type: a body that opens like a JSON object is JSON, else form pairs.
        None => {
            let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
            Ok(if first == Some(&b'{') {
                BodyKind::Json
            } else {
                BodyKind::Form
            })
        }
        Some(other) => Err(ApiError::with_description(
            ErrorCode::WrongRequestFormat,
            format!(
                "unsupported content type {other}; send application/json, \
                 application/x-www-form-urlencoded or multipart/form-data"
            ),
        )),
    }
}

fn add_pairs(params: &mut Map<String, Value>, bytes: &[u8], what: &str) -> Result<(), ApiError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(bytes).map_err(|e| {
        ApiError::with_description(
            ErrorCode::WrongRequestFormat,
            format!("malformed {what}: {e}"),
        )
    })?;
    for (key, value) in pairs {
        params.insert(key, Value::String(value));
    }
    Ok(())
}

/// A body that did not arrive in time (a client too slow, or stalling on purpose).
pub(crate) fn too_slow(timeout: std::time::Duration) -> ApiError {
    ApiError::with_description(
        ErrorCode::WrongRequestFormat,
        format!(
            "{}: the request body did not arrive within {} s (--request-body-timeout-ms)",
            ErrorCode::WrongRequestFormat.meaning(),
            timeout.as_secs_f64()
        ),
    )
}

/// A body that could not be read: beyond `max_bytes` (412, code 9), or
/// broken off.
pub(crate) fn body_error(e: &axum::BoxError, max_bytes: usize) -> ApiError {
    if e.downcast_ref::<LengthLimitError>().is_some() {
        too_large(max_bytes)
    } else {
        ApiError::with_description(
            ErrorCode::WrongRequestFormat,
            format!(
                "{}: reading the body failed: {e}",
                ErrorCode::WrongRequestFormat.meaning()
            ),
        )
    }
}

/// A body, or what it decodes to, longer than `max_bytes` (412, code 9).
pub(crate) fn too_large(max_bytes: usize) -> ApiError {
    ApiError::with_description(
        ErrorCode::TooLargeRequest,
        format!(
            "{}: the request body exceeds {max_bytes} bytes",
            ErrorCode::TooLargeRequest.meaning()
        ),
    )
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in
/// any case, the token trimmed); `None` without one.
pub(crate) fn bearer_token(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}
