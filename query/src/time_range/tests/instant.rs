use schemas::{ErrorCode, HasCode};

use super::super::instant::{InstantError, parse_ms};
use super::super::parse_instant;
use super::{iso_in, ms, wall_in};

/// 2020-12-31T00:00:00Z.
const NEW_YEARS_EVE_MS: i64 = 1_609_372_800_000;

#[test]
fn every_offset_form_and_fraction_reads_the_same_instant() {
    let ctx = iso_in("Asia/Almaty");
    let cases: &[(&str, i64)] = &[
        ("2020-12-31T00:00Z", NEW_YEARS_EVE_MS),
        ("2020-12-31T00:00:00Z", NEW_YEARS_EVE_MS),
        ("2020-12-31T06:00+06:00", NEW_YEARS_EVE_MS),
        ("2020-12-31T06:00+0600", NEW_YEARS_EVE_MS),
        ("2020-12-31T06:00+06", NEW_YEARS_EVE_MS),
        ("2020-12-31T06:00:00+06", NEW_YEARS_EVE_MS),
        ("2020-12-30T21:00-03:00", NEW_YEARS_EVE_MS),
        ("2020-12-30T21:00:00-0300", NEW_YEARS_EVE_MS),
        ("2020-12-30T21:00:00-03", NEW_YEARS_EVE_MS),
        ("2020-12-30T18:30-0530", NEW_YEARS_EVE_MS),
        ("2020-12-31T05:45:00+05:45", NEW_YEARS_EVE_MS),
        ("2020-12-31T00:00:00+00:00", NEW_YEARS_EVE_MS),
        ("2020-12-31T00:00:00-00:00", NEW_YEARS_EVE_MS),
        ("2020-12-31T23:59+23:59", NEW_YEARS_EVE_MS),
        ("2020-12-30T00:01-23:59", NEW_YEARS_EVE_MS),
        ("2020-12-31T00:00:00.5Z", NEW_YEARS_EVE_MS + 500),
        ("2020-12-31T00:00:00.05Z", NEW_YEARS_EVE_MS + 50),
        ("2020-12-31T00:00:00.250Z", NEW_YEARS_EVE_MS + 250),
        ("2020-12-31T00:00:00.1239Z", NEW_YEARS_EVE_MS + 123),
        ("2020-12-31T00:00:00.123999999999Z", NEW_YEARS_EVE_MS + 123),
        ("2020-12-31T06:00:00.999+06:00", NEW_YEARS_EVE_MS + 999),
        ("1970-01-01T00:00Z", 0),
        ("1969-12-31T23:59:59.999Z", -1),
        ("2024-02-29T23:59:59Z", ms("2024-02-29T23:59:59Z")),
        ("2024-10-10T13:13:14+0600", ms("2024-10-10T13:13:14+06:00")),
        ("0000-01-01T00:00Z", -62_167_219_200_000),
        ("9999-12-31T23:59:59.999Z", 253_402_300_799_999),
    ];
    for &(text, expected) in cases {
        assert_eq!(parse_ms(text, &ctx), Ok(expected), "{text}");
        // iso_datetime=false reads a written offset the same way.
        assert_eq!(
            parse_ms(text, &wall_in("Europe/Berlin")),
            Ok(expected),
            "{text}"
        );
    }
}

#[test]
fn malformed_instants_are_refused_with_their_reason() {
    use InstantError::{Date, NoZone, Offset, PlusAsSpace, Shape, SpaceSeparator, TimeOfDay};
    let ctx = iso_in("UTC");
    let cases: &[(&str, InstantError)] = &[
        ("2020-12-31T00:00", NoZone),
        ("2020-12-31T00:00:00", NoZone),
        ("2020-12-31T00:00:00.5", NoZone),
        ("2020-12-31 00:00:00Z", SpaceSeparator),
        ("2020-12-31 00:00:00", SpaceSeparator),
        ("2020-12-31T10:00:00 06:00", PlusAsSpace),
        ("2020-12-31T10:00 0600", PlusAsSpace),
        ("", Shape),
        ("garbage", Shape),
        ("now", Shape),
        ("2020-12-31", Shape),
        ("2020-12-31T", Shape),
        ("2020-12-31T00Z", Shape),
        ("2020-12-31T00:0Z", Shape),
        ("2020-12-31T00:00:0Z", Shape),
        ("2020-12-31t00:00Z", Shape),
        ("2020-12-31T00:00z", Shape),
        ("20201231T0000Z", Shape),
        ("2020-1-31T00:00Z", Shape),
        ("02020-12-31T00:00Z", Shape),
        ("+2020-12-31T00:00Z", Shape),
        ("2020-12-31T00:00ZZ", Shape),
        ("2020-12-31T00:00:00.Z", Shape),
        ("2020-12-31T00:00:00,5Z", Shape),
        ("2020-12-31T00:00.5Z", Shape),
        ("2020-12-31T00:00:00.5x", Shape),
        ("2020-12-31T00:00+03:00:00", Shape),
        ("2020-12-31T00:00+03:00Z", Shape),
        ("2020-12-31T00:00UTC", Shape),
        ("2020-12-31T00:00 Z", Shape),
        ("1608336000000", Shape),
        ("２０２０-12-31T00:00Z", Shape),
        ("2021-02-29T00:00Z", Date),
        ("2024-02-30T00:00Z", Date),
        ("2100-02-29T00:00Z", Date),
        ("2020-13-01T00:00Z", Date),
        ("2020-00-01T00:00Z", Date),
        ("2020-04-31T00:00Z", Date),
        ("2020-12-00T00:00Z", Date),
        ("2020-12-31T24:00Z", TimeOfDay),
        ("2020-12-31T24:00:00Z", TimeOfDay),
        ("2020-12-31T23:60Z", TimeOfDay),
        ("2020-12-31T23:59:60Z", TimeOfDay),
        ("2020-12-31T00:00+24:00", Offset),
        ("2020-12-31T00:00+05:60", Offset),
        ("2020-12-31T00:00+5", Offset),
        ("2020-12-31T00:00+05:", Offset),
        ("2020-12-31T00:00+05:3", Offset),
        ("2020-12-31T00:00+", Offset),
    ];
    for &(text, expected) in cases {
        assert_eq!(parse_ms(text, &ctx), Err(expected), "{text}");
    }
}

#[test]
fn without_iso_a_wall_clock_time_is_read_in_the_accounts_zone() {
    // Almaty moved from +06:00 to +05:00 on 2024-03-01.
    let almaty = wall_in("Asia/Almaty");
    let cases: &[(&str, &str)] = &[
        ("2024-10-10 13:13:14", "2024-10-10T13:13:14+05:00"),
        ("2024-10-10T13:13:14", "2024-10-10T13:13:14+05:00"),
        ("2024-10-10 13:13", "2024-10-10T13:13:00+05:00"),
        ("2024-10-10T13:13", "2024-10-10T13:13:00+05:00"),
        ("2024-10-10 13:13:14.25", "2024-10-10T13:13:14.250+05:00"),
        ("2023-10-10 13:13:14", "2023-10-10T13:13:14+06:00"),
        // A written offset wins over the account's zone, with either separator.
        ("2024-10-10 13:13:14+03:00", "2024-10-10T13:13:14+03:00"),
        ("2024-10-10 13:13:14Z", "2024-10-10T13:13:14Z"),
    ];
    for &(text, expected) in cases {
        assert_eq!(parse_ms(text, &almaty), Ok(ms(expected)), "{text}");
    }
    // Still strict about everything else.
    assert_eq!(parse_ms("2024-10-10", &almaty), Err(InstantError::Shape));
    assert_eq!(
        parse_ms("2024-10-10  13:13", &almaty),
        Err(InstantError::Shape)
    );
    assert_eq!(
        parse_ms("2024-02-30 13:13", &almaty),
        Err(InstantError::Date)
    );
    assert_eq!(
        parse_ms("2024-10-10 24:00", &almaty),
        Err(InstantError::TimeOfDay)
    );
}

#[test]
fn a_wall_time_in_a_dst_gap_is_the_instant_the_clocks_resume() {
    // Berlin skipped 02:00-03:00 on 2024-03-31: the clocks resumed at 03:00+02:00.
    let berlin = wall_in("Europe/Berlin");
    let resumed = ms("2024-03-31T03:00:00+02:00");
    let cases: &[(&str, i64)] = &[
        (
            "2024-03-31 01:59:59.999",
            ms("2024-03-31T01:59:59.999+01:00"),
        ),
        ("2024-03-31 02:00:00", resumed),
        ("2024-03-31 02:30:00", resumed),
        ("2024-03-31 02:59:59.999", resumed),
        ("2024-03-31 03:00:00", resumed),
        ("2024-03-31 03:00:00.001", resumed + 1),
    ];
    for &(text, expected) in cases {
        assert_eq!(parse_ms(text, &berlin), Ok(expected), "{text}");
    }
    // Samoa skipped the whole of 2011-12-30, moving from -10:00 to +14:00.
    let apia = wall_in("Pacific/Apia");
    assert_eq!(
        parse_ms("2011-12-30 12:00:00", &apia),
        Ok(ms("2011-12-31T00:00:00+14:00"))
    );
}

#[test]
fn a_wall_time_in_a_dst_overlap_is_the_earlier_instant() {
    // Berlin went through 02:00-03:00 twice on 2024-10-27.
    let berlin = wall_in("Europe/Berlin");
    let cases: &[(&str, &str)] = &[
        ("2024-10-27 01:59:59", "2024-10-27T01:59:59+02:00"),
        ("2024-10-27 02:00:00", "2024-10-27T02:00:00+02:00"),
        ("2024-10-27 02:30:00", "2024-10-27T02:30:00+02:00"),
        ("2024-10-27 02:59:59.999", "2024-10-27T02:59:59.999+02:00"),
        ("2024-10-27 03:00:00", "2024-10-27T03:00:00+01:00"),
    ];
    for &(text, expected) in cases {
        assert_eq!(parse_ms(text, &berlin), Ok(ms(expected)), "{text}");
    }
    // The later one is reached by writing its offset.
    assert_eq!(
        parse_ms("2024-10-27T02:30:00+01:00", &berlin),
        Ok(ms("2024-10-27T01:30:00Z"))
    );
}

#[test]
fn errors_are_code_7_naming_the_field_and_quoting_the_value() {
    let err = parse_instant("2024-10-10T13:13:14", "from", &iso_in("UTC")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidParameters);
    assert_eq!(err.parameter, "from");
    assert_eq!(
        err.message,
        "has no time zone: add Z or an offset such as +06:00 (or send \
         iso_datetime=false to use the account's zone), got \"2024-10-10T13:13:14\""
    );
    assert_eq!(err.to_string(), format!("`from` {}", err.message));

    let err = parse_instant("2024-02-30T00:00Z", "to", &iso_in("UTC")).unwrap_err();
    assert_eq!(
        (err.parameter.as_str(), err.message.as_str()),
        (
            "to",
            "names a day that does not exist, got \"2024-02-30T00:00Z\""
        )
    );
    let err = parse_instant("2024-01-01T10:00 06:00", "to", &iso_in("UTC")).unwrap_err();
    assert!(err.message.contains("%2B"), "{}", err.message);

    // A long value is cut in the message.
    let long = "x".repeat(500);
    let err = parse_instant(&long, "from", &iso_in("UTC")).unwrap_err();
    assert!(err.message.len() < 300, "{}", err.message);
}

#[test]
fn surrounding_whitespace_is_ignored() {
    let ctx = iso_in("UTC");
    assert_eq!(
        parse_instant(" 2020-12-31T00:00Z\n", "from", &ctx),
        Ok(NEW_YEARS_EVE_MS)
    );
}
