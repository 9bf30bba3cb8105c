//! Validation rules shared by the admin CLI and the API.

use std::borrow::Cow;

use crate::{Error, Result};

/// A text of a record as stored: trimmed of surrounding spaces, then
/// checked to be `min..=max` characters with no control characters
/// (clarification 30).
pub fn trimmed_text(
    field: impl Into<Cow<'static, str>>,
    value: &str,
    min: usize,
    max: usize,
) -> Result<String> {
    let value = value.trim();
    check_printable(field, value, min, max)?;
    Ok(value.to_owned())
}

/// [`trimmed_text`] of a text that may be null (a null stays null).
pub fn optional_text(
    field: impl Into<Cow<'static, str>>,
    value: Option<&str>,
    max: usize,
) -> Result<Option<String>> {
    value.map(|v| trimmed_text(field, v, 0, max)).transpose()
}

/// Checks a text of `min..=max` characters with no control characters.
pub fn check_printable(
    field: impl Into<Cow<'static, str>>,
    value: &str,
    min: usize,
    max: usize,
) -> Result<()> {
    let field = field.into();
    let len = value.chars().count();
    if len < min || len > max {
        return Err(Error::invalid(
            field,
            format!("must be {min} to {max} characters long, got {len}"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(Error::invalid(
            field,
            "must contain printable characters only",
        ));
    }
    Ok(())
}

/// Checks an e-mail login and returns it lower-cased (logins are case-insensitive).
pub fn check_login(field: &'static str, login: &str) -> Result<String> {
    let login = login.trim();
    let invalid = || Error::invalid(field, "must be a valid e-mail address");
    if login.is_empty()
        || login.len() > 254
        || login.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(invalid());
    }
    let (local, domain) = login.split_once('@').ok_or_else(invalid)?;
    if local.is_empty()
        || domain.contains('@')
        || !domain.contains('.')
        || domain.starts_with('.')
        || domain.ends_with('.')
    {
        return Err(invalid());
    }
    Ok(login.to_lowercase())
}

/// Checks an IANA time zone id (`Europe/Berlin`, `UTC`).
pub fn check_time_zone(field: &'static str, zone: &str) -> Result<chrono_tz::Tz> {
    zone.parse::<chrono_tz::Tz>()
        .map_err(|_| Error::invalid(field, format!("unknown time zone {zone:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_bounds_count_characters_not_bytes() {
        assert!(check_printable("title", &"é".repeat(255), 1, 255).is_ok());
        assert!(check_printable("title", &"é".repeat(256), 1, 255).is_err());
        assert!(check_printable("title", "", 1, 255).is_err());
        assert!(check_printable("title", "a\tb", 1, 255).is_err());
        assert!(check_printable("title", "a\u{7f}", 1, 255).is_err());
    }

    #[test]
    fn logins_are_lower_cased_e_mails() {
        assert_eq!(
            check_login("login", " Ann@Example.COM ").unwrap(),
            "ann@example.com"
        );
        for bad in [
            "",
            "ann",
            "@example.com",
            "ann@",
            "ann@example",
            "a b@example.com",
            "a@b@c.com",
            "ann@.com",
        ] {
            assert!(check_login("login", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn time_zones_are_iana_ids() {
        assert!(check_time_zone("time_zone", "Asia/Almaty").is_ok());
        assert!(check_time_zone("time_zone", "Mars/Olympus").is_err());
    }
}
