//! `POST /v2/file/upload` (clarification 35): a file kept for the calls that
//! take a `file_id` (`vehicle/batch_convert`). The body is
//! `multipart/form-data` with the file in the part `file`.

use platform::{UploadedFile, UserAuth};
use schemas::ErrorCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::Success;
use crate::params::{self, FilePart};
use crate::route::{Params, Route, User};
use crate::{ApiResult, AppState};

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::with_files("/v2/file/upload", User::any(), upload)
            .doc(
                "Upload a file",
                "Keeps the file of the multipart part `file` for the account and answers its \
                 `file_id`, which `vehicle/batch_convert` reads (TSV, CSV, XLS or XLSX). A file is \
                 at most `--max-upload-bytes` (10 MiB) and is kept for `--upload-ttl-hours` (24); \
                 an account holds at most `--max-uploads-per-account` (100) files at a time (268).",
            )
            .errors(&[ErrorCode::OverQuota]),
    ]
}

/// No parameter but the credential; the file is the part `file`.
#[derive(Debug, Deserialize, ToSchema)]
struct UploadParams {}

impl Params for UploadParams {}

/// The file kept.
#[derive(Debug, Serialize, ToSchema)]
struct Uploaded {
    /// Its id for the calls that take a `file_id`.
    file_id: String,
}

async fn upload(
    state: AppState,
    caller: UserAuth,
    _: UploadParams,
    files: Vec<FilePart>,
) -> ApiResult<Success<Uploaded>> {
    let rules = &state.inner.config.uploads;
    let part = params::the_file(files, rules.max_bytes)?;
    let file = UploadedFile {
        name: part.file_name,
        content: part.content.to_vec(),
    };
    let file_id = state.store().store_upload(&caller, rules, &file).await?;
    Ok(Success(Uploaded { file_id }))
}
