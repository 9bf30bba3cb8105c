use chrono::{DateTime, FixedOffset, NaiveDate};
use proptest::prelude::*;

use super::{TimeError, parse_time_ms};

/// 2020-12-31T00:00:00Z.
const NEW_YEARS_EVE_MS: i64 = 1_609_372_800_000;

#[test]
fn every_accepted_form_reads_the_same_instant() {
    let cases: &[(&str, i64)] = &[
        ("2020-12-31T00:00Z", NEW_YEARS_EVE_MS),
        ("2020-12-31T00:00:00Z", NEW_YEARS_EVE_MS),
        ("2020-12-31T03:00+03:00", NEW_YEARS_EVE_MS),
        ("2020-12-31T03:00+0300", NEW_YEARS_EVE_MS),
        ("2020-12-31T03:00+03", NEW_YEARS_EVE_MS),
        ("2020-12-31T03:00:00+03", NEW_YEARS_EVE_MS),
        ("2020-12-30T21:00-03:00", NEW_YEARS_EVE_MS),
        ("2020-12-30T18:30-0530", NEW_YEARS_EVE_MS),
        ("2020-12-31T00:00:00+00:00", NEW_YEARS_EVE_MS),
        ("2020-12-31T00:00:00-00:00", NEW_YEARS_EVE_MS),
        ("2020-12-31T05:45:00+05:45", NEW_YEARS_EVE_MS),
        ("2020-12-31T23:59+23:59", NEW_YEARS_EVE_MS),
        ("2020-12-30T00:01-23:59", NEW_YEARS_EVE_MS),
        ("2020-12-31T00:00:00.5Z", NEW_YEARS_EVE_MS + 500),
        ("2020-12-31T00:00:00.05Z", NEW_YEARS_EVE_MS + 50),
        ("2020-12-31T00:00:00.250Z", NEW_YEARS_EVE_MS + 250),
        ("2020-12-31T00:00:00.1239Z", NEW_YEARS_EVE_MS + 123),
        ("2020-12-31T00:00:00.123999999999Z", NEW_YEARS_EVE_MS + 123),
        ("2020-12-31T00:00:00.0009Z", NEW_YEARS_EVE_MS),
        ("2020-12-31T01:00:00.999+01:00", NEW_YEARS_EVE_MS + 999),
        ("1970-01-01T00:00Z", 0),
        ("1969-12-31T23:59:59.999Z", -1),
        // Sub-millisecond digits are cut, which for instants before 1970 rounds down.
        ("1969-12-31T23:59:59.9999Z", -1),
        ("2000-02-29T12:00Z", 951_825_600_000),
        ("2024-02-29T23:59:59Z", 1_709_251_199_000),
        ("0000-01-01T00:00Z", -62_167_219_200_000),
        ("9999-12-31T23:59:59.999Z", 253_402_300_799_999),
    ];
    for &(text, expected) in cases {
        assert_eq!(parse_time_ms(text), Ok(expected), "{text}");
    }
}

#[test]
fn malformed_times_are_refused_with_their_reason() {
    use TimeError::{Date, NoZone, Offset, Shape, TimeOfDay};
    let cases: &[(&str, TimeError)] = &[
        ("2020-12-31T00:00", NoZone),
        ("2020-12-31T00:00:00", NoZone),
        ("2020-12-31T00:00:00.5", NoZone),
        ("", Shape),
        ("2020-12-31", Shape),
        ("2020-12-31T", Shape),
        ("2020-12-31T00Z", Shape),
        ("2020-12-31T00:0Z", Shape),
        ("2020-12-31T00:00:0Z", Shape),
        ("2020-12-31 00:00Z", Shape),
        ("2020-12-31t00:00Z", Shape),
        ("2020-12-31T00:00z", Shape),
        ("20201231T0000Z", Shape),
        ("2020-1-31T00:00Z", Shape),
        ("02020-12-31T00:00Z", Shape),
        ("+2020-12-31T00:00Z", Shape),
        (" 2020-12-31T00:00Z", Shape),
        ("2020-12-31T00:00Z ", Shape),
        ("2020-12-31T00:00ZZ", Shape),
        ("2020-12-31T00:00:00.Z", Shape),
        ("2020-12-31T00:00:00,5Z", Shape),
        ("2020-12-31T00:00.5Z", Shape),
        ("2020-12-31T00:00:00.5x", Shape),
        ("2020-12-31T00:00+03:00:00", Shape),
        ("2020-12-31T00:00+03:00Z", Shape),
        ("2020-12-31T00:00UTC", Shape),
        ("２０２０-12-31T00:00Z", Shape),
        ("2021-02-29T00:00Z", Date),
        ("2100-02-29T00:00Z", Date),
        ("2020-13-01T00:00Z", Date),
        ("2020-00-01T00:00Z", Date),
        ("2020-04-31T00:00Z", Date),
        ("2020-01-00T00:00Z", Date),
        ("2020-01-32T00:00Z", Date),
        ("2020-12-31T24:00Z", TimeOfDay),
        ("2020-12-31T23:60Z", TimeOfDay),
        ("2020-12-31T23:59:60Z", TimeOfDay),
        ("2020-12-31T00:00+3", Offset),
        ("2020-12-31T00:00+", Offset),
        ("2020-12-31T00:00+03:", Offset),
        ("2020-12-31T00:00+03:0", Offset),
        ("2020-12-31T00:00+030", Offset),
        ("2020-12-31T00:00+24:00", Offset),
        ("2020-12-31T00:00+03:60", Offset),
        ("2020-12-31T00:00+ab", Offset),
    ];
    for &(text, expected) in cases {
        assert_eq!(parse_time_ms(text), Err(expected), "{text}");
    }
}

#[test]
fn every_reason_reads_as_a_phrase() {
    use TimeError::{Date, NoZone, Offset, Shape, TimeOfDay};
    for err in [Shape, NoZone, Date, TimeOfDay, Offset] {
        assert!(!err.reason().is_empty() && !err.reason().ends_with('.'));
    }
}

/// A zone in one of the accepted spellings, for an offset in minutes east.
fn zone(offset_minutes: i32, spelling: u8) -> String {
    let sign = if offset_minutes < 0 { '-' } else { '+' };
    let (hours, minutes) = (
        offset_minutes.unsigned_abs() / 60,
        offset_minutes.unsigned_abs() % 60,
    );
    match spelling {
        0 if offset_minutes == 0 => "Z".to_owned(),
        1 => format!("{sign}{hours:02}{minutes:02}"),
        2 if minutes == 0 => format!("{sign}{hours:02}"),
        _ => format!("{sign}{hours:02}:{minutes:02}"),
    }
}

proptest! {
    /// The hand parser agrees with chrono on every instant, in every spelling.
    #[test]
    fn agrees_with_chrono(
        (year, month, day) in (0_i32..=9999, 1_u32..=12, 1_u32..=31)
            .prop_filter("a real date", |&(y, m, d)| NaiveDate::from_ymd_opt(y, m, d).is_some()),
        (hour, minute, second) in (0_u32..24, 0_u32..60, 0_u32..60),
        (nanos, fraction_digits) in (0_u32..1_000_000_000, 0_usize..=9),
        offset_minutes in -1439_i32..=1439,
        spelling in 0_u8..3,
        drop_seconds in any::<bool>(),
    ) {
        let drop_seconds = drop_seconds && second == 0 && fraction_digits == 0;
        let fraction = format!("{nanos:09}");
        let fraction = fraction.get(..fraction_digits).unwrap_or_default();
        let kept_nanos: u32 = if fraction_digits == 0 {
            0
        } else {
            format!("{fraction:0<9}").parse().unwrap()
        };
        let mut text = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}");
        if !drop_seconds {
            text.push_str(&format!(":{second:02}"));
            if fraction_digits > 0 {
                text.push_str(&format!(".{fraction}"));
            }
        }
        let zone = zone(offset_minutes, spelling);
        text.push_str(&zone);

        let offset = FixedOffset::east_opt(offset_minutes * 60).unwrap();
        let expected = NaiveDate::from_ymd_opt(year, month, day)
            .unwrap()
            .and_hms_nano_opt(hour, minute, second, kept_nanos)
            .unwrap()
            .and_local_timezone(offset)
            .unwrap()
            .timestamp_millis();
        prop_assert_eq!(parse_time_ms(&text), Ok(expected), "{}", text);

        // chrono's RFC 3339 reader agrees where the spelling is RFC 3339.
        if !drop_seconds && (zone == "Z" || zone.contains(':')) {
            let chrono_ms = DateTime::parse_from_rfc3339(&text).map(|t| t.timestamp_millis());
            prop_assert_eq!(chrono_ms, Ok(expected), "{}", text);
        }
    }

    #[test]
    fn never_panics_on_any_text(text in "\\PC{0,40}") {
        let _ = parse_time_ms(&text);
    }

    #[test]
    fn never_panics_on_time_like_text(text in "[0-9T:+\\-Z.]{0,32}") {
        let _ = parse_time_ms(&text);
    }
}
