//! `/v2/panel/subpaas/…` (spec document 2, clarification 51): a PaaS
//! dealer's sub-dealers. Every call answers 13 unless the caller is a PaaS
//! dealer, not blocked, whose PaaS plan allows sub-dealers.

use platform::{
    ListedSubdealer, NewSubdealer, OrderedQuery, PanelAuth, Permission, Secret, Subdealer,
    SubdealerChange,
};
use schemas::ErrorCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::{Done, Success};
use crate::route::{Panel, Params, Route};
use crate::{ApiResult, AppState};

type Caller = (PanelAuth, Secret);

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new(
            "/v2/panel/subpaas/create",
            Panel::needs(Permission::SubpaasCreate),
            create,
        )
        .doc(
            "Create a sub-dealer",
            "A dealer under the caller, in `INITIAL_BLOCK` (no panel login until the platform \
             operator lifts it), on the caller's PaaS plan; answers its id, which is its panel \
             login. `title` 1 to 50 characters, `jur_name` at most 100, `email` an e-mail, \
             `link_monitoring` a domain name, `password` 6 to 20 printable characters. Needs \
             `subpaas: create`.",
        ),
        Route::new(
            "/v2/panel/subpaas/list",
            Panel::needs(Permission::SubpaasRead),
            list,
        )
        .doc(
            "List the sub-dealers",
            "The caller's sub-dealers with their users' and trackers' counts, ordered by \
             `order_by` (`subpaas_id` default, `title`, `jur_name`, `login`, `block_type`, \
             `creation_date`; `ascending` unless false), paged; `count` of all. Needs \
             `subpaas: read`.",
        )
        .errors(&[ErrorCode::LimitTooBig]),
        Route::new(
            "/v2/panel/subpaas/read",
            Panel::needs(Permission::SubpaasRead),
            read,
        )
        .doc(
            "Read a sub-dealer",
            "One sub-dealer of the caller. Needs `subpaas: read`.",
        )
        .errors(&[ErrorCode::NotFoundInDatabase]),
        Route::new(
            "/v2/panel/subpaas/update",
            Panel::needs(Permission::SubpaasUpdate),
            update,
        )
        .doc(
            "Update a sub-dealer",
            "Changes the members given. `block_type`: `NOT_BLOCKED`, `BLOCK_LOGIN` and \
             `CLIENTS_BLOCKED` move among themselves; `INITIAL_BLOCK` cannot be set on an account \
             not in it, an account in it cannot be moved out of it here, and `DELETED` (or a \
             deleted account) is refused: all 13. A new password ends the sub-dealer's panel \
             sessions. Needs `subpaas: update`.",
        )
        .errors(&[ErrorCode::NotFoundInDatabase]),
    ]
}

#[derive(Debug, Deserialize, ToSchema)]
struct CreateParams {
    /// Panel password, 6 to 20 printable characters.
    #[schema(min_length = 6, max_length = 20)]
    password: String,
    /// Name, 1 to 50 characters.
    #[schema(min_length = 1, max_length = 50)]
    title: String,
    /// Company e-mail.
    #[schema(example = "office@subdealer.example")]
    email: String,
    /// Legal company name, at most 100 characters.
    #[serde(default)]
    #[schema(max_length = 100)]
    jur_name: String,
    /// Country of the company.
    #[serde(default)]
    #[schema(max_length = 100)]
    jur_country: String,
    /// Monitoring domain name.
    #[schema(example = "track.subdealer.example")]
    link_monitoring: String,
}

impl Params for CreateParams {}

/// The sub-dealer created.
#[derive(Debug, Serialize, ToSchema)]
struct Created {
    /// Its id (and panel login).
    id: i64,
}

async fn create(
    state: AppState,
    (auth, _): Caller,
    p: CreateParams,
) -> ApiResult<Success<Created>> {
    let new = NewSubdealer {
        password: p.password,
        title: p.title,
        email: p.email,
        jur_name: p.jur_name,
        jur_country: p.jur_country,
        link_monitoring: p.link_monitoring,
    };
    let id = state.store().create_subdealer(auth.dealer_id, new).await?;
    Ok(Success(Created { id: id.0 }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct ListParams {
    /// `subpaas_id` (default), `title`, `jur_name`, `login`, `block_type` or `creation_date`.
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

/// A page of sub-dealers.
#[derive(Debug, Serialize, ToSchema)]
struct Subdealers {
    list: Vec<ListedSubdealer>,
    /// All the caller's sub-dealers.
    count: i64,
}

async fn list(state: AppState, (auth, _): Caller, p: ListParams) -> ApiResult<Success<Subdealers>> {
    let query = OrderedQuery::new(p.order_by, p.ascending, None, p.limit, p.offset);
    let (list, count) = state
        .store()
        .list_subdealers(auth.dealer_id, &query)
        .await?;
    Ok(Success(Subdealers { list, count }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct ReadParams {
    /// The sub-dealer.
    subpaas_id: i64,
}

impl Params for ReadParams {}

/// The sub-dealer.
#[derive(Debug, Serialize, ToSchema)]
struct Read {
    value: Subdealer,
}

async fn read(state: AppState, (auth, _): Caller, p: ReadParams) -> ApiResult<Success<Read>> {
    let value = state
        .store()
        .read_subdealer(auth.dealer_id, p.subpaas_id)
        .await?;
    Ok(Success(Read { value }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct UpdateParams {
    /// The sub-dealer.
    subpaas_id: i64,
    /// A new panel password, 6 to 20 printable characters.
    #[serde(default)]
    #[schema(min_length = 6, max_length = 20)]
    password: Option<String>,
    /// Name, 1 to 50 characters.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 50)]
    title: Option<String>,
    /// Company e-mail.
    #[serde(default)]
    email: Option<String>,
    /// Legal company name, at most 100 characters.
    #[serde(default)]
    #[schema(max_length = 100)]
    jur_name: Option<String>,
    /// Country.
    #[serde(default)]
    #[schema(max_length = 100)]
    jur_country: Option<String>,
    /// Monitoring domain name.
    #[serde(default)]
    link_monitoring: Option<String>,
    /// Contact person, at most 100 characters.
    #[serde(default)]
    #[schema(max_length = 100)]
    contact_fio: Option<String>,
    /// Contact position, at most 50 characters.
    #[serde(default)]
    #[schema(max_length = 50)]
    contact_post: Option<String>,
    /// Contact phone, at most 50 characters.
    #[serde(default)]
    #[schema(max_length = 50)]
    contact_phone: Option<String>,
    /// `NOT_BLOCKED`, `INITIAL_BLOCK`, `BLOCK_LOGIN` or `CLIENTS_BLOCKED` (see the description).
    #[serde(default)]
    #[schema(example = "NOT_BLOCKED")]
    block_type: Option<String>,
}

impl Params for UpdateParams {}

async fn update(state: AppState, (auth, _): Caller, p: UpdateParams) -> ApiResult<Success<Done>> {
    let change = SubdealerChange {
        password: p.password,
        title: p.title,
        email: p.email,
        jur_name: p.jur_name,
        jur_country: p.jur_country,
        link_monitoring: p.link_monitoring,
        contact_fio: p.contact_fio,
        contact_post: p.contact_post,
        contact_phone: p.contact_phone,
        block_type: p.block_type,
    };
    state
        .store()
        .update_subdealer(auth.dealer_id, p.subpaas_id, change)
        .await?;
    Ok(Success::done())
}
