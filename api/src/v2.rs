//! Account calls of the main interface (`/v2`, spec documents 1 and 3).

mod api_key;
mod bill;
mod department;
mod file;
mod garage;
mod geocoder;
mod link;
mod plugin;
mod records;
mod retranslator;
mod security_group;
mod subuser;
mod user;
mod vehicle;

use crate::route::Route;

/// Every account call.
pub(crate) fn routes() -> Vec<Route> {
    [
        user::routes(),
        api_key::routes(),
        subuser::routes(),
        garage::routes(),
        department::routes(),
        security_group::routes(),
        vehicle::routes(),
        file::routes(),
        retranslator::routes(),
        bill::routes(),
        plugin::routes(),
        geocoder::routes(),
        link::routes(),
    ]
    .into_iter()
    .flatten()
    .collect()
}
