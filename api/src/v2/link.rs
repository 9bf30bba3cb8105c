//! `/v2/tracker/location/link/create|update|status/change|read|list|delete`:
//! geo links, public pages showing the live location of some trackers
//! (clarifications 41-44). Creating, updating and switching need the right
//! `weblocator_session_create`, and creating or updating the plan feature
//! `weblocator` on every tracker named; any user of the account reads and
//! lists them (a sub-user only links all of whose trackers it sees).

use platform::{
    Condition, Feature, GeoLink, Lifetime, LinkFields, LinkParams, LinkTracker, ListQuery, Right,
    UserAuth,
};
use schemas::{ErrorCode, TrackerId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::{Done, Success};
use crate::route::{FeatureScope, Params, Route, User};
use crate::{ApiError, ApiResult, AppState, time};

const CHANGE: User = User::needs(Right::WeblocatorSessionCreate);
const WRITE: User = CHANGE.feature(Feature::Weblocator, FeatureScope::NamedTrackers);

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new("/v2/tracker/location/link/create", WRITE, create)
            .doc(
                "Create a geo link",
                "Stores a link showing the live location of 1 to 100 trackers on the public page \
                 `/links/<hash>`; answers its id. It is enabled at once. 217 for a tracker not the \
                 caller's, 204 for a zone or place not the account's, 236 when a tracker's plan \
                 lacks `weblocator`, 268 beyond the account's links (`--geo-link-quota`, 10,000). \
                 Needs the right `weblocator_session_create`.",
            )
            .errors(&[
                ErrorCode::EntityNotFound,
                ErrorCode::NonexistentEntitiesInList,
                ErrorCode::OverQuota,
            ]),
        Route::new("/v2/tracker/location/link/update", WRITE, update)
            .doc(
                "Update a geo link",
                "Replaces the lifetime, description, trackers and params of the link `id`; its \
                 hash and state stay. Needs the right `weblocator_session_create`.",
            )
            .errors(&[
                ErrorCode::NotFoundInDatabase,
                ErrorCode::EntityNotFound,
                ErrorCode::NonexistentEntitiesInList,
            ]),
        Route::new(
            "/v2/tracker/location/link/status/change",
            CHANGE,
            change_status,
        )
        .doc(
            "Switch a geo link on or off",
            "`is_active` false switches the link off: its page answers 403 at once. Needs the \
                 right `weblocator_session_create`.",
        )
        .errors(&[ErrorCode::NotFoundInDatabase]),
        Route::new("/v2/tracker/location/link/read", User::any(), read)
            .doc("Read a geo link", "One link of the account, as stored.")
            .errors(&[ErrorCode::NotFoundInDatabase]),
        Route::new("/v2/tracker/location/link/list", User::any(), list)
            .doc(
                "List the geo links",
                "The account's links: `filter` (a case-insensitive part of the description, a \
                 tracker's label or alias, or, for a master user, the creator's name) and \
                 `conditions` (clarification 43, joined by AND) must both match; `sort` items \
                 `<field>=asc|desc` over id, create_date, expire_date, trackers, aliases, status \
                 (enabled < inactive < expired < disabled), creator, description; by id without \
                 one; `limit` (at most 10,000, the default) and `offset`.",
            )
            .errors(&[ErrorCode::LimitTooBig]),
        Route::new("/v2/tracker/location/link/delete", CHANGE, delete)
            .doc(
                "Delete a geo link",
                "Its page answers 404 at once. Needs the right `weblocator_session_create`.",
            )
            .errors(&[ErrorCode::NotFoundInDatabase]),
    ]
}

/// A geo link as read and listed.
#[derive(Debug, Serialize, ToSchema)]
struct GeoLinkObject {
    /// Id.
    id: i64,
    /// The key of its page `/links/<hash>`.
    hash: String,
    /// When it was created (the account's zone).
    #[schema(example = "2026-11-26 10:00:00")]
    create_date: String,
    /// The user who created it.
    creator_id: i64,
    /// Its description.
    description: String,
    /// False when switched off.
    enabled: bool,
    /// When it shows anything, or null for always.
    lifetime: Option<Lifetime>,
    /// Its parameters, defaults filled.
    params: LinkParams,
    /// Its trackers, in order.
    trackers: Vec<LinkTracker>,
}

impl GeoLinkObject {
    fn new(link: GeoLink, caller: &UserAuth) -> Self {
        Self {
            id: link.id,
            hash: link.hash,
            create_date: time::main_interface(link.created_at, &caller.time_zone),
            creator_id: link.creator_id,
            description: link.fields.description,
            enabled: link.enabled,
            lifetime: link.fields.lifetime,
            params: link.fields.params,
            trackers: link.fields.trackers,
        }
    }
}

/// The new link's id.
#[derive(Debug, Serialize, ToSchema)]
struct CreatedLink {
    /// Its id.
    value: i64,
}

/// What `create` and `update` take (members spelled out rather than a
/// flattened [`LinkFields`], so that a refusal names its path).
#[derive(Debug, Deserialize, ToSchema)]
struct LinkBody {
    /// The link: required by update, ignored by create.
    #[serde(default)]
    id: Option<i64>,
    /// When the link shows anything, or null for always.
    #[serde(default)]
    lifetime: Option<Lifetime>,
    /// Printable, at most 255 characters.
    #[schema(max_length = 255)]
    description: String,
    /// 1 to 100 trackers, each once.
    #[schema(min_items = 1, max_items = 100)]
    trackers: Vec<LinkTracker>,
    /// The link's parameters.
    #[serde(default)]
    params: LinkParams,
}

impl LinkBody {
    /// The link's id and its members.
    fn into_parts(self) -> (Option<i64>, LinkFields) {
        (
            self.id,
            LinkFields {
                lifetime: self.lifetime,
                description: self.description,
                trackers: self.trackers,
                params: self.params,
            },
        )
    }
}

impl Params for LinkBody {
    fn trackers(&self) -> Vec<TrackerId> {
        self.trackers
            .iter()
            .map(|t| TrackerId(t.tracker_id))
            .collect()
    }
}

async fn create(state: AppState, caller: UserAuth, p: LinkBody) -> ApiResult<Success<CreatedLink>> {
    let (_, fields) = p.into_parts();
    let value = state
        .store()
        .create_link(&caller, fields, state.inner.config.geo_link_quota)
        .await?;
    Ok(Success(CreatedLink { value }))
}

async fn update(state: AppState, caller: UserAuth, p: LinkBody) -> ApiResult<Success<Done>> {
    let (id, fields) = p.into_parts();
    let id = id.ok_or_else(|| ApiError::invalid("id", "is required"))?;
    state.store().update_link(&caller, id, fields).await?;
    Ok(Success::done())
}

#[derive(Debug, Deserialize, ToSchema)]
struct StatusParams {
    /// The link.
    id: i64,
    /// False switches it off, true on.
    is_active: bool,
}

impl Params for StatusParams {}

async fn change_status(
    state: AppState,
    caller: UserAuth,
    p: StatusParams,
) -> ApiResult<Success<Done>> {
    state
        .store()
        .set_link_enabled(&caller, p.id, p.is_active)
        .await?;
    Ok(Success::done())
}

#[derive(Debug, Deserialize, ToSchema)]
struct IdParams {
    /// The link.
    id: i64,
}

impl Params for IdParams {}

/// The link.
#[derive(Debug, Serialize, ToSchema)]
struct Read {
    value: GeoLinkObject,
}

async fn read(state: AppState, caller: UserAuth, p: IdParams) -> ApiResult<Success<Read>> {
    let link = state.store().read_link(&caller, p.id).await?;
    Ok(Success(Read {
        value: GeoLinkObject::new(link, &caller),
    }))
}

async fn delete(state: AppState, caller: UserAuth, p: IdParams) -> ApiResult<Success<Done>> {
    state.store().delete_link(&caller, p.id).await?;
    Ok(Success::done())
}

#[derive(Debug, Deserialize, ToSchema)]
struct ListParams {
    /// A case-insensitive part of any member; blank is none.
    #[serde(default)]
    #[schema(max_length = 760)]
    filter: Option<String>,
    /// Search conditions, all of which must match (at most 72 in all).
    #[serde(default)]
    conditions: Vec<Condition>,
    /// Rows to skip.
    #[serde(default)]
    #[schema(minimum = 0)]
    offset: Option<i64>,
    /// Rows to answer, 0 to 10,000 (10,000 when absent).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 10000)]
    limit: Option<i64>,
    /// `<field>=asc|desc` items, most significant first.
    #[serde(default)]
    #[schema(max_items = 8, example = json!(["status=asc", "create_date=desc"]))]
    sort: Vec<String>,
}

impl Params for ListParams {}

/// The links.
#[derive(Debug, Serialize, ToSchema)]
struct Links {
    list: Vec<GeoLinkObject>,
}

async fn list(state: AppState, caller: UserAuth, p: ListParams) -> ApiResult<Success<Links>> {
    let query = ListQuery {
        sort: p.sort,
        filter: p.filter,
        limit: p.limit,
        offset: p.offset,
    };
    let list = state
        .store()
        .list_links(&caller, &query, &p.conditions)
        .await?;
    Ok(Success(Links {
        list: list
            .into_iter()
            .map(|link| GeoLinkObject::new(link, &caller))
            .collect(),
    }))
}
