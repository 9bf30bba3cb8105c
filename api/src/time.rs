//! Date/time values of the main interface: `YYYY-MM-DD HH:MM:SS` in the account's zone.

use chrono::{DateTime, Utc};

/// Writes an instant in the main interface's form, in `zone` (UTC if the zone is unknown).
pub(crate) fn main_interface(instant: DateTime<Utc>, zone: &str) -> String {
    match zone.parse::<chrono_tz::Tz>() {
        Ok(tz) => instant
            .with_timezone(&tz)
            .format("%Y-%m-%d %H:%M:%S")
            .to_string(),
        Err(_) => instant.format("%Y-%m-%d %H:%M:%S").to_string(),
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn written_in_the_account_zone() {
        let t = Utc.with_ymd_and_hms(2024, 3, 31, 0, 30, 5).unwrap();
        assert_eq!(main_interface(t, "UTC"), "2024-03-31 00:30:05");
        assert_eq!(main_interface(t, "Europe/Berlin"), "2024-03-31 01:30:05");
        assert_eq!(main_interface(t, "Asia/Tokyo"), "2024-03-31 09:30:05");
    }
}
