//! `/v2/department/list|create|update|delete`: an account's departments.
//! Any user of the account lists them; changes need the right
//! `employee_update`. Codes 217 and 221, which documents 2/3 copy from
//! another call, are never produced (clarification 36).

use platform::{Department, Right, UserAuth};
use schemas::ErrorCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::answer::{Done, Success};
use crate::route::{NoParams, Params, Route, User};
use crate::v2::records::Created;
use crate::{ApiResult, AppState};

const CHANGE: User = User::needs(Right::EmployeeUpdate);

pub(super) fn routes() -> Vec<Route> {
    vec![
        Route::new("/v2/department/list", User::any(), list).doc(
            "List the departments",
            "Every department of the account, by id.",
        ),
        Route::new("/v2/department/create", CHANGE, create).doc(
            "Create a department",
            "Stores a department of the account (a sub-user's belongs to its master); answers its id. \
             Needs the right `employee_update`.",
        ),
        Route::new("/v2/department/update", CHANGE, update)
            .doc(
                "Update a department",
                "Replaces every member of the department `department.id`. Needs the right `employee_update`.",
            )
            .errors(&[ErrorCode::NotFoundInDatabase]),
        Route::new("/v2/department/delete", CHANGE, delete)
            .doc(
                "Delete a department",
                "Deletes the department. Needs the right `employee_update`.",
            )
            .errors(&[ErrorCode::NotFoundInDatabase]),
    ]
}

/// The departments.
#[derive(Debug, Serialize, ToSchema)]
struct Departments {
    list: Vec<Department>,
}

async fn list(state: AppState, caller: UserAuth, _: NoParams) -> ApiResult<Success<Departments>> {
    let list = state.store().list_departments(caller.master_id).await?;
    Ok(Success(Departments { list }))
}

#[derive(Debug, Deserialize, ToSchema)]
struct DepartmentParams {
    /// The department (`id` required by update, ignored by create).
    department: Department,
}

impl Params for DepartmentParams {}

async fn create(
    state: AppState,
    caller: UserAuth,
    p: DepartmentParams,
) -> ApiResult<Success<Created>> {
    let id = state
        .store()
        .create_department(caller.master_id, p.department)
        .await?;
    Ok(Success(Created { id }))
}

async fn update(
    state: AppState,
    caller: UserAuth,
    p: DepartmentParams,
) -> ApiResult<Success<Done>> {
    state
        .store()
        .update_department(caller.master_id, p.department)
        .await?;
    Ok(Success::done())
}

#[derive(Debug, Deserialize, ToSchema)]
struct DeleteParams {
    /// The department to delete.
    department_id: i64,
}

impl Params for DeleteParams {}

async fn delete(state: AppState, caller: UserAuth, p: DeleteParams) -> ApiResult<Success<Done>> {
    state
        .store()
        .delete_department(caller.master_id, p.department_id)
        .await?;
    Ok(Success::done())
}
