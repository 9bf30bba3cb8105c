//! `/v2/panel/user/…` (spec document 2, clarification 48): the dealer's
//! users. The panel reaches its dealer's master users, and with
//! `users: global` those of its sub-dealers; any other id is 201.

use platform::{
    Discount, NewPanelUser, OrderedQuery, PanelAuth, PanelScope, PanelUser, PanelUserTerms,
    Permission, Secret, UserUploadRules,
};
use schemas::ErrorCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::{Done, Success};
use crate::params::{self, FilePart};
use crate::route::{Panel, Params, Route};
use crate::{ApiResult, AppState};

type Caller = (PanelAuth, Secret);

fn scope(auth: &PanelAuth) -> PanelScope {
    PanelScope {
        dealer: auth.dealer_id,
        global: auth.has(Permission::UsersGlobal),
    }
}

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new(
            "/v2/panel/user/create",
            Panel::needs(Permission::UsersCorrupt),
            create,
        )
        .doc(
            "Create a user",
            "A master user of the dealer, or with `users: global` of one of its sub-dealers \
             (`user.dealer_id`); answers its id. `verified` is `activated` when not given; the \
             time zone and locale default to the dealer's. 206 for a login in use. Needs \
             `users: corrupt` (document 2).",
        )
        .errors(&[ErrorCode::LoginAlreadyInUse, ErrorCode::NotFoundInDatabase]),
        Route::new(
            "/v2/panel/user/read",
            Panel::needs(Permission::UsersRead),
            read,
        )
        .doc(
            "Read a user",
            "The user with its read-only members, its discount and default plan. Needs \
             `users: read`.",
        )
        .errors(&[ErrorCode::NotFoundInDatabase]),
        Route::new(
            "/v2/panel/user/update",
            Panel::needs(Permission::UsersUpdate),
            update,
        )
        .doc(
            "Update a user",
            "Replaces the profile of the user `user.id` (its `legal_type` never changes), and \
             the discount, default plan and comment when given. 206 for a login in use. Needs \
             `users: update`.",
        )
        .errors(&[ErrorCode::NotFoundInDatabase, ErrorCode::LoginAlreadyInUse]),
        Route::new(
            "/v2/panel/user/list",
            Panel::needs(Permission::UsersRead),
            list,
        )
        .doc(
            "List the users",
            "The users the panel reaches, filtered (a part of the login, names, legal name or \
             phone), ordered by `order_by` (`id` default, `login`, `first_name`, `last_name`, \
             `legal_name`, `creation_date`, `activated`, `balance`; `ascending` unless false), \
             paged; `count` of all that match. Needs `users: read`.",
        )
        .errors(&[ErrorCode::LimitTooBig]),
        Route::new(
            "/v2/panel/user/change_password",
            Panel::needs(Permission::UsersUpdate),
            change_password,
        )
        .doc(
            "Change a user's password",
            "6 to 20 printable characters; every session of the user ends (its API keys stay). \
             Needs `users: update`.",
        )
        .errors(&[ErrorCode::NotFoundInDatabase]),
        Route::new(
            "/v2/panel/user/corrupt",
            Panel::needs(Permission::UsersCorrupt),
            corrupt,
        )
        .doc(
            "Remove a user",
            "Removes the user (`login` must be its login), its sub-users and trackers, and ends \
             their sessions and keys; clones of its trackers held by others go too unless \
             `corrupt_clones` is false (then 253 if there are any). 252 when a tracker of the \
             user is already corrupted. Needs `users: corrupt`.",
        )
        .errors(&[
            ErrorCode::NotFoundInDatabase,
            ErrorCode::DeviceAlreadyCorrupted,
            ErrorCode::DeviceHasClones,
        ]),
        Route::new(
            "/v2/panel/user/session/create",
            Panel::needs(Permission::UserSessionsCreate),
            create_session,
        )
        .doc(
            "Open a session of a user",
            "A user session hash, as if the user had logged in, so that the dealer's support can \
             act as its customer. 103 for a deactivated user. Needs `user_sessions: create`.",
        )
        .errors(&[ErrorCode::NotFoundInDatabase, ErrorCode::UserNotActivated]),
        Route::with_files(
            "/v2/panel/user/upload",
            Panel::needs(Permission::UsersCreate),
            upload,
        )
        .doc(
            "Upload users",
            "Creates a user of the dealer for every row of the file in the multipart part `file`: \
             CSV (`;`, UTF-8) or XLS/XLSX (first sheet), a header row naming the columns of \
             document 2 in any order (`Email address`, `Password`, `Status` 1/0, `Legal status` \
             1/2/3, `Surname`, `Name` required). All or nothing: bad rows are 7, a login twice in \
             the file 273, a login registered already 206, each listed in `errors` with its \
             `row_number`; no data rows is 274. New users get the dealer's default user time \
             zone. At most `--max-upload-users` (10,000) rows. Needs `users: create`.",
        )
        .errors(&[
            ErrorCode::DuplicateLogin,
            ErrorCode::EmptyDataFile,
            ErrorCode::LoginAlreadyInUse,
        ]),
    ]
}

#[derive(Debug, Deserialize, ToSchema)]
struct CreateParams {
    /// The user (no `id`; `dealer_id` only with `users: global`).
    user: PanelUser,
    /// Password, 6 to 20 printable characters.
    #[schema(min_length = 6, max_length = 20)]
    password: String,
    /// IANA time zone (default: the dealer's default user time zone).
    #[serde(default)]
    time_zone: Option<String>,
    /// Locale (default: the dealer's).
    #[serde(default)]
    locale: Option<String>,
    /// Discount (default: none).
    #[serde(default)]
    discount: Option<Discount>,
    /// The plan of the user's new trackers: a tracker plan of its dealer.
    #[serde(default)]
    default_tariff_id: Option<i64>,
    /// The dealer's comment, at most 255 characters.
    #[serde(default)]
    #[schema(max_length = 255)]
    comment: Option<String>,
}

impl Params for CreateParams {}

/// The user created.
#[derive(Debug, Serialize, ToSchema)]
struct Created {
    /// Its id.
    id: i64,
}

async fn create(
    state: AppState,
    (auth, _): Caller,
    p: CreateParams,
) -> ApiResult<Success<Created>> {
    let new = NewPanelUser {
        user: p.user,
        password: p.password,
        time_zone: p.time_zone,
        locale: p.locale,
        terms: PanelUserTerms {
            discount: p.discount,
            default_tariff_id: p.default_tariff_id,
            comment: p.comment,
        },
    };
    let id = state.store().create_panel_user(scope(&auth), new).await?;
    Ok(Success(Created { id: id.0 }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct UserParams {
    /// The user.
    user_id: i64,
}

impl Params for UserParams {}

/// The user, its discount and default plan.
#[derive(Debug, Serialize, ToSchema)]
struct Read {
    value: PanelUser,
    discount: Discount,
    /// The plan applied to its new trackers, or null.
    default_tariff_id: Option<i64>,
}

async fn read(state: AppState, (auth, _): Caller, p: UserParams) -> ApiResult<Success<Read>> {
    let record = state
        .store()
        .read_panel_user(scope(&auth), p.user_id)
        .await?;
    Ok(Success(Read {
        value: record.user,
        discount: record.discount,
        default_tariff_id: record.default_tariff_id,
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct UpdateParams {
    /// The user (`id` required; `legal_type` and `dealer_id` are not changed).
    user: PanelUser,
    /// A new discount.
    #[serde(default)]
    discount: Option<Discount>,
    /// A new default plan.
    #[serde(default)]
    default_tariff_id: Option<i64>,
    /// A new comment, at most 255 characters.
    #[serde(default)]
    #[schema(max_length = 255)]
    comment: Option<String>,
}

impl Params for UpdateParams {}

async fn update(state: AppState, (auth, _): Caller, p: UpdateParams) -> ApiResult<Success<Done>> {
    let terms = PanelUserTerms {
        discount: p.discount,
        default_tariff_id: p.default_tariff_id,
        comment: p.comment,
    };
    state
        .store()
        .update_panel_user(scope(&auth), p.user, terms)
        .await?;
    Ok(Success::done())
}

#[derive(Debug, Deserialize, ToSchema)]
struct ListParams {
    /// A part of the login, names, legal name or phone.
    #[serde(default)]
    #[schema(max_length = 255)]
    filter: Option<String>,
    /// `id` (default), `login`, `first_name`, `last_name`, `legal_name`, `creation_date`, `activated` or `balance`.
    #[serde(default)]
    order_by: Option<String>,
    /// Ascending unless false.
    #[serde(default)]
    ascending: Option<bool>,
    /// Rows to skip.
    #[serde(default)]
    #[schema(minimum = 0)]
    offset: Option<i64>,
    /// Rows to answer, 0 to 10,000 (10,000 when absent).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 10000)]
    limit: Option<i64>,
}

impl Params for ListParams {}

/// A page of users.
#[derive(Debug, Serialize, ToSchema)]
struct Users {
    list: Vec<PanelUser>,
    /// Users that match, ignoring `offset` and `limit`.
    count: i64,
}

async fn list(state: AppState, (auth, _): Caller, p: ListParams) -> ApiResult<Success<Users>> {
    let query = OrderedQuery::new(p.order_by, p.ascending, p.filter, p.limit, p.offset);
    let (list, count) = state.store().list_panel_users(scope(&auth), &query).await?;
    Ok(Success(Users { list, count }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct PasswordParams {
    /// The user.
    user_id: i64,
    /// The new password, 6 to 20 printable characters.
    #[schema(min_length = 6, max_length = 20)]
    password: String,
}

impl Params for PasswordParams {}

async fn change_password(
    state: AppState,
    (auth, _): Caller,
    p: PasswordParams,
) -> ApiResult<Success<Done>> {
    state
        .store()
        .change_panel_user_password(scope(&auth), p.user_id, &p.password)
        .await?;
    Ok(Success::done())
}

#[derive(Debug, Deserialize, ToSchema)]
struct CorruptParams {
    /// The user.
    user_id: i64,
    /// The user's login, as confirmation.
    login: String,
    /// Also remove clones of its trackers held by other users (default true).
    #[serde(default = "yes")]
    corrupt_clones: bool,
}

fn yes() -> bool {
    true
}

impl Params for CorruptParams {}

async fn corrupt(state: AppState, (auth, _): Caller, p: CorruptParams) -> ApiResult<Success<Done>> {
    state
        .store()
        .corrupt_panel_user(scope(&auth), p.user_id, &p.login, p.corrupt_clones)
        .await?;
    Ok(Success::done())
}

/// No parameter but the credential; the file is the part `file`.
#[derive(Debug, Deserialize, ToSchema)]
struct UploadParams {}

impl Params for UploadParams {}

/// Every row created.
#[derive(Debug, Serialize, ToSchema)]
struct Uploaded {
    /// Users created.
    total: usize,
    /// Rows refused: 0 (any refusal is an error answer, and nothing is created).
    errors: usize,
}

async fn upload(
    state: AppState,
    (auth, _): Caller,
    _: UploadParams,
    files: Vec<FilePart>,
) -> ApiResult<Success<Uploaded>> {
    let config = &state.inner.config;
    let part = params::the_file(files, config.uploads.max_bytes)?;
    let rules = UserUploadRules {
        max_rows: config.max_upload_users,
        max_inflated_bytes: config.uploads.max_inflated_bytes,
    };
    let total = state
        .store()
        .upload_panel_users(scope(&auth), &rules, &part.content)
        .await?;
    Ok(Success(Uploaded { total, errors: 0 }))
}

/// The session.
#[derive(Debug, Serialize, ToSchema)]
struct Session {
    /// A user session hash: 32 hexadecimal characters.
    #[schema(pattern = "^[0-9a-f]{32}$")]
    hash: String,
}

async fn create_session(
    state: AppState,
    (auth, _): Caller,
    p: UserParams,
) -> ApiResult<Success<Session>> {
    let secret = state
        .store()
        .create_panel_user_session(scope(&auth), p.user_id)
        .await?;
    Ok(Success(Session {
        hash: secret.expose().to_owned(),
    }))
}
