//! The telemetry message: what a device reported at one instant.
//!
//! Column names are those of the raw data export (spec document 3): the
//! simple columns, and the complex ones (`flags`, `discrete_inputs`,
//! `discrete_outputs`, `inputs`, `states`) whose inner values are addressed
//! as `<column>.<name>`.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::TrackerId;

/// GPS fix type; the number is the Parquet encoding (clarification 17).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum GpsFixType {
    /// Unknown.
    Unknown = 0,
    /// No fix.
    NoFix = 1,
    /// A fix.
    HasFix = 2,
    /// The last known position, repeated.
    LastKnownPosition = 3,
}

/// Mobile network type; the number is the Parquet encoding (clarification 17).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MnType {
    /// Unknown.
    Unknown = 0,
    /// GSM.
    Gsm = 1,
    /// CDMA.
    Cdma = 2,
    /// WCDMA.
    Wcdma = 3,
    /// LTE.
    Lte = 4,
    /// 5G NR.
    Nr = 5,
}

macro_rules! spelled {
    ($ty:ident { $($variant:ident = $text:literal,)* }) => {
        impl $ty {
            /// Every value, by number.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),*];

            /// The spelling of the raw data interface.
            pub const fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $text,)* }
            }

            /// Parses the spelling of the raw data interface.
            pub fn parse(text: &str) -> Option<Self> {
                match text { $($text => Some($ty::$variant),)* _ => None }
            }

            /// The value with this number.
            pub fn from_number(number: u8) -> Option<Self> {
                Self::ALL.get(usize::from(number)).copied()
            }
        }
    };
}

spelled!(GpsFixType { Unknown = "UNKNOWN", NoFix = "NO_FIX", HasFix = "HAS_FIX", LastKnownPosition = "LAST_KNOWN_POSITION", });
spelled!(MnType { Unknown = "UNKNOWN", Gsm = "GSM", Cdma = "CDMA", Wcdma = "WCDMA", Lte = "LTE", Nr = "NR", });

/// An inner value's name (`fuel`, `ignition`) or a state's text: up to 24
/// bytes held inline, with no allocation of its own (a message carries a
/// dozen), serialised as a string: the same postcard, so the same content
/// hash and WAL record, as a `String`.
pub type Name = compact_str::CompactString;

/// The value of a device state: text, a number or a flag, as reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StateValue {
    /// Text.
    Text(Name),
    /// A number.
    Number(f64),
    /// A flag.
    Flag(bool),
}

impl StateValue {
    /// The value as JSON text (`"eco"`, `12.5`, `true`): how states are stored,
    /// so that a state keeps its type whatever other messages report.
    pub fn to_json_text(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = self.write_json_text(&mut out);
        out
    }

    /// [`StateValue::to_json_text`], written into `out` (an Arrow string
    /// builder's value, without a String of its own).
    pub fn write_json_text(&self, out: &mut impl fmt::Write) -> fmt::Result {
        match self {
            Self::Text(text) => write_json_string(out, text),
            Self::Number(n) => write_number(out, *n),
            Self::Flag(b) => out.write_str(if *b { "true" } else { "false" }),
        }
    }
}

/// A number in its shortest exact form (`54.22809`, `0`, `24296.444`).
pub fn format_number(n: f64) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_number(&mut out, n);
    out
}

fn write_number(out: &mut impl fmt::Write, n: f64) -> fmt::Result {
    if n.is_finite() && n == n.trunc() && n.abs() < 1e15 {
        write!(out, "{}", n as i64)
    } else {
        write!(out, "{n}")
    }
}

fn write_json_string(out: &mut impl fmt::Write, text: &str) -> fmt::Result {
    out.write_char('"')?;
    // Unescaped runs are written whole.
    let mut run = 0;
    for (at, c) in text.char_indices() {
        let escaped = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            c if u32::from(c) < 0x20 => "",
            _ => continue,
        };
        out.write_str(&text[run..at])?;
        if escaped.is_empty() {
            write!(out, "\\u{:04x}", u32::from(c))?;
        } else {
            out.write_str(escaped)?;
        }
        run = at + c.len_utf8();
    }
    out.write_str(&text[run..])?;
    out.write_char('"')
}

/// One message of one tracker. Times are milliseconds since the Unix epoch, UTC.
///
/// The complex columns hold their inner values sorted by key, so that two
/// messages with the same content encode identically (deduplication hashes
/// the encoding).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Message {
    /// The tracker.
    pub tracker_id: TrackerId,
    /// When the device registered the message.
    pub message_time_ms: i64,
    /// When the message reached the server.
    pub server_time_ms: i64,
    /// GPS fix type.
    pub gps_fix_type: Option<GpsFixType>,
    /// Latitude, degrees.
    pub lat: Option<f64>,
    /// Longitude, degrees.
    pub lng: Option<f64>,
    /// Speed, km/h.
    pub speed: Option<f64>,
    /// Altitude, metres.
    pub alt: Option<i32>,
    /// Satellites in view; -1 unknown.
    pub satellites: Option<i32>,
    /// Heading, degrees.
    pub heading: Option<i32>,
    /// Position precision, metres.
    pub precision: Option<i32>,
    /// HDOP; -1 unknown.
    pub hdop: Option<f64>,
    /// PDOP; -1 unknown.
    pub pdop: Option<f64>,
    /// Event id.
    pub event_id: Option<i64>,
    /// Mobile network name.
    pub mn_name: Option<String>,
    /// Roaming: 0 no, 1 yes, -1 unknown.
    pub mn_roaming: Option<i32>,
    /// Operator code.
    pub mn_code: Option<i64>,
    /// Signal quality, 0 to 31, 99 unknown.
    pub mn_csq: Option<i32>,
    /// Mobile network type.
    pub mn_type: Option<MnType>,
    /// Flags bitmap: bit 0 location_valid, bit 1 lbs, bit 2 soft_lbs.
    pub flags: Option<i64>,
    /// Discrete inputs by number (from 1), value 0 or 1, sorted by number.
    pub discrete_inputs: Vec<(u16, u8)>,
    /// Discrete outputs by number (from 1), value 0 or 1, sorted by number.
    pub discrete_outputs: Vec<(u16, u8)>,
    /// Metering inputs by name, sorted by name.
    pub inputs: Vec<(Name, f64)>,
    /// Device states by name, sorted by name.
    pub states: Vec<(Name, StateValue)>,
}

/// The bits of `flags` addressable as `flags.<name>`.
pub const FLAG_BITS: &[(&str, u32)] = &[("location_valid", 0), ("lbs", 1), ("soft_lbs", 2)];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_spell_and_number_as_the_spec_says() {
        assert_eq!(
            GpsFixType::parse("LAST_KNOWN_POSITION"),
            Some(GpsFixType::LastKnownPosition)
        );
        assert_eq!(GpsFixType::from_number(2), Some(GpsFixType::HasFix));
        assert_eq!(MnType::Nr as u8, 5);
        assert_eq!(MnType::from_number(6), None);
        assert_eq!(MnType::parse("lte"), None);
    }

    #[test]
    fn state_values_keep_their_type_as_json_text() {
        assert_eq!(
            StateValue::Text("say \"hi\"\n".into()).to_json_text(),
            r#""say \"hi\"\n""#
        );
        assert_eq!(
            StateValue::Text("é\u{1}x\\\t".into()).to_json_text(),
            r#""é\u0001x\\\t""#
        );
        assert_eq!(StateValue::Number(12.5).to_json_text(), "12.5");
        assert_eq!(StateValue::Number(3.0).to_json_text(), "3");
        assert_eq!(StateValue::Flag(true).to_json_text(), "true");
    }

    #[test]
    fn numbers_print_shortest() {
        assert_eq!(format_number(54.22809), "54.22809");
        assert_eq!(format_number(0.0), "0");
        assert_eq!(format_number(24296.444), "24296.444");
        assert_eq!(format_number(-1.0), "-1");
        assert_eq!(format_number(1e20), "100000000000000000000");
    }
}
