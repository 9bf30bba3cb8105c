//! The members the panel user object (document 2) and the sub-user object
//! (document 3) share: login, names, legal type, phone, addresses and
//! registration numbers. They are checked, read and bound here once; each
//! object keeps its own serde declaration (so that the lenient parameter
//! reader names a failing member by its path) and converts with
//! [`profile_members!`].

use sqlx::Row;
use sqlx::sqlite::{SqliteArguments, SqliteRow};

use crate::{Error, LegalType, Result, check_login, trimmed_text};

type Query<'q> = sqlx::query::Query<'q, sqlx::Sqlite, SqliteArguments<'q>>;

/// The shared members, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Profile {
    pub(crate) login: String,
    pub(crate) first_name: String,
    pub(crate) middle_name: String,
    pub(crate) last_name: String,
    pub(crate) legal_type: LegalType,
    pub(crate) phone: String,
    pub(crate) post_country: String,
    pub(crate) post_index: String,
    pub(crate) post_region: String,
    pub(crate) post_city: String,
    pub(crate) post_street_address: String,
    pub(crate) registered_country: String,
    pub(crate) registered_index: String,
    pub(crate) registered_region: String,
    pub(crate) registered_city: String,
    pub(crate) registered_street_address: String,
    pub(crate) state_reg_num: String,
    pub(crate) tin: String,
    pub(crate) legal_name: String,
    pub(crate) iec: Option<String>,
}

/// The columns of `users` holding a [`Profile`], in the order [`Profile::bind`] binds them.
pub(crate) const PROFILE_COLUMNS: &str = "login, first_name, middle_name, last_name, legal_type, \
    phone, post_country, post_index, post_region, post_city, post_street_address, \
    registered_country, registered_index, registered_region, registered_city, \
    registered_street_address, state_reg_num, tin, legal_name, iec";

impl Profile {
    /// The members as stored, or the first that is not valid, named by its
    /// path under `user.` (`user.phone`).
    pub(crate) fn checked(self) -> Result<Self> {
        let text =
            |field: &'static str, value: &str, max: usize| trimmed_text(field, value, 0, max);
        let legal_entity = self.legal_type == LegalType::LegalEntity;
        let phone = text("user.phone", &self.phone, 15)?;
        if !phone.is_empty() && (phone.len() < 10 || !phone.bytes().all(|b| b.is_ascii_digit())) {
            return Err(Error::invalid(
                "user.phone",
                "must be 10 to 15 digits without a plus sign",
            ));
        }
        // Document 2's upload asks sole traders for a legal name too.
        let legal_name = text("user.legal_name", &self.legal_name, 255)?;
        if self.legal_type == LegalType::Individual && !legal_name.is_empty() {
            return Err(Error::invalid(
                "user.legal_name",
                "is for legal_type legal_entity or sole_trader only",
            ));
        }
        let iec = self
            .iec
            .as_deref()
            .map(|iec| text("user.iec", iec, 32))
            .transpose()?;
        if !legal_entity && iec.is_some() {
            return Err(Error::invalid(
                "user.iec",
                "is for legal_type legal_entity only",
            ));
        }
        Ok(Self {
            login: check_login("user.login", &self.login)?,
            first_name: text("user.first_name", &self.first_name, 100)?,
            middle_name: text("user.middle_name", &self.middle_name, 100)?,
            last_name: text("user.last_name", &self.last_name, 100)?,
            legal_type: self.legal_type,
            phone,
            post_country: text("user.post_country", &self.post_country, 255)?,
            post_index: text("user.post_index", &self.post_index, 255)?,
            post_region: text("user.post_region", &self.post_region, 255)?,
            post_city: text("user.post_city", &self.post_city, 255)?,
            post_street_address: text("user.post_street_address", &self.post_street_address, 255)?,
            registered_country: text("user.registered_country", &self.registered_country, 255)?,
            registered_index: text("user.registered_index", &self.registered_index, 255)?,
            registered_region: text("user.registered_region", &self.registered_region, 255)?,
            registered_city: text("user.registered_city", &self.registered_city, 255)?,
            registered_street_address: text(
                "user.registered_street_address",
                &self.registered_street_address,
                255,
            )?,
            state_reg_num: text("user.state_reg_num", &self.state_reg_num, 15)?,
            tin: text("user.tin", &self.tin, 32)?,
            legal_name,
            iec,
        })
    }

    pub(crate) fn from_row(row: &SqliteRow) -> Result<Self> {
        let legal_type: String = row.try_get("legal_type")?;
        Ok(Self {
            login: row.try_get("login")?,
            first_name: row.try_get("first_name")?,
            middle_name: row.try_get("middle_name")?,
            last_name: row.try_get("last_name")?,
            legal_type: LegalType::parse("legal_type", &legal_type)
                .map_err(|e| Error::corrupt("users.legal_type", e))?,
            phone: row.try_get("phone")?,
            post_country: row.try_get("post_country")?,
            post_index: row.try_get("post_index")?,
            post_region: row.try_get("post_region")?,
            post_city: row.try_get("post_city")?,
            post_street_address: row.try_get("post_street_address")?,
            registered_country: row.try_get("registered_country")?,
            registered_index: row.try_get("registered_index")?,
            registered_region: row.try_get("registered_region")?,
            registered_city: row.try_get("registered_city")?,
            registered_street_address: row.try_get("registered_street_address")?,
            state_reg_num: row.try_get("state_reg_num")?,
            tin: row.try_get("tin")?,
            legal_name: row.try_get("legal_name")?,
            iec: row.try_get("iec")?,
        })
    }

    /// The values of the [`PROFILE_COLUMNS`], in order.
    pub(crate) fn values(&self) -> [Option<&str>; 20] {
        [
            Some(&self.login),
            Some(&self.first_name),
            Some(&self.middle_name),
            Some(&self.last_name),
            Some(self.legal_type.as_str()),
            Some(&self.phone),
            Some(&self.post_country),
            Some(&self.post_index),
            Some(&self.post_region),
            Some(&self.post_city),
            Some(&self.post_street_address),
            Some(&self.registered_country),
            Some(&self.registered_index),
            Some(&self.registered_region),
            Some(&self.registered_city),
            Some(&self.registered_street_address),
            Some(&self.state_reg_num),
            Some(&self.tin),
            Some(&self.legal_name),
            self.iec.as_deref(),
        ]
    }

    /// Binds the [`PROFILE_COLUMNS`], in order.
    pub(crate) fn bind<'q>(&'q self, query: Query<'q>) -> Query<'q> {
        self.values()
            .into_iter()
            .fold(query, |query, value| query.bind(value))
    }
}

/// `$from, $from+1, …`, one per column of `columns` (comma-separated).
pub(crate) fn placeholders(columns: &str, from: usize) -> String {
    (from..from + columns.split(',').count())
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `column = $from, …` for the columns of `columns`.
pub(crate) fn assignments(columns: &str, from: usize) -> String {
    columns
        .split(',')
        .map(str::trim)
        .zip(from..)
        .map(|(column, n)| format!("{column} = ${n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `profile()` and `set_profile()` for an object that declares the
/// [`Profile`] members under the same names.
macro_rules! profile_members {
    ($object:ty) => {
        impl $object {
            /// Its profile members.
            pub(crate) fn profile(&self) -> crate::profile::Profile {
                crate::profile::Profile {
                    login: self.login.clone(),
                    first_name: self.first_name.clone(),
                    middle_name: self.middle_name.clone(),
                    last_name: self.last_name.clone(),
                    legal_type: self.legal_type,
                    phone: self.phone.clone(),
                    post_country: self.post_country.clone(),
                    post_index: self.post_index.clone(),
                    post_region: self.post_region.clone(),
                    post_city: self.post_city.clone(),
                    post_street_address: self.post_street_address.clone(),
                    registered_country: self.registered_country.clone(),
                    registered_index: self.registered_index.clone(),
                    registered_region: self.registered_region.clone(),
                    registered_city: self.registered_city.clone(),
                    registered_street_address: self.registered_street_address.clone(),
                    state_reg_num: self.state_reg_num.clone(),
                    tin: self.tin.clone(),
                    legal_name: self.legal_name.clone(),
                    iec: self.iec.clone(),
                }
            }

            /// Sets its profile members.
            pub(crate) fn set_profile(&mut self, p: crate::profile::Profile) {
                self.login = p.login;
                self.first_name = p.first_name;
                self.middle_name = p.middle_name;
                self.last_name = p.last_name;
                self.legal_type = p.legal_type;
                self.phone = p.phone;
                self.post_country = p.post_country;
                self.post_index = p.post_index;
                self.post_region = p.post_region;
                self.post_city = p.post_city;
                self.post_street_address = p.post_street_address;
                self.registered_country = p.registered_country;
                self.registered_index = p.registered_index;
                self.registered_region = p.registered_region;
                self.registered_city = p.registered_city;
                self.registered_street_address = p.registered_street_address;
                self.state_reg_num = p.state_reg_num;
                self.tin = p.tin;
                self.legal_name = p.legal_name;
                self.iec = p.iec;
            }
        }
    };
}
pub(crate) use profile_members;
