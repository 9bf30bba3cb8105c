//! The serde side of a line: one pass over the JSON, no `serde_json::Value`.
//!
//! Scalars are captured as [`RawScalar`]s for `build` to check; complex
//! members are checked, sorted and deduplicated as they are read. A check
//! that fails inside serde records its [`LineError`] in [`Ctx`] and unwinds
//! with a serde error, which [`Ctx::into_error`] then replaces; a failure
//! raised by serde itself is named after the member [`Ctx`] was at.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use schemas::{Name, StateValue};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::error::Category;

use super::{CLIP_CHARS, CLIP_SERDE_CHARS, Limit, LineError, clip, quote};

macro_rules! members {
    ($($variant:ident = $name:literal, $expected:literal;)*) => {
        /// A top-level member of a line.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(super) enum Member {
            $($variant,)*
        }

        impl Member {
            #[cfg(test)]
            pub(super) const ALL: &'static [Member] = &[$(Member::$variant),*];

            pub(super) const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }

            /// What a valid value looks like, completing "expected ...".
            pub(super) const fn expected(self) -> &'static str {
                match self {
                    $(Self::$variant => $expected,)*
                }
            }

            pub(super) fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($name => Some(Self::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

members! {
    TrackerId = "tracker_id", "a tracker id (an integer >= 1)";
    DeviceId = "device_id", "a device id (1 to 64 printable ASCII characters)";
    MsgTime = "msg_time", "an ISO 8601 time with a zone (2020-12-31T23:59:59.5Z, 2020-12-31T00:00+03:00)";
    ServerTime = "server_time", "an ISO 8601 time with a zone (2020-12-31T23:59:59.5Z, 2020-12-31T00:00+03:00)";
    GpsFixType = "gps_fix_type", "UNKNOWN, NO_FIX, HAS_FIX, LAST_KNOWN_POSITION or 0 to 3";
    Lat = "lat", "a number from -90 to 90";
    Lng = "lng", "a number from -180 to 180";
    Speed = "speed", "a number >= 0 (km/h)";
    Alt = "alt", "an integer from -2147483648 to 2147483647 (metres)";
    Satellites = "satellites", "an integer from -1 (unknown) to 2147483647";
    Heading = "heading", "an integer from 0 to 360";
    Precision = "precision", "an integer from 0 to 2147483647 (metres)";
    Hdop = "hdop", "a number >= 0, or -1 (unknown)";
    Pdop = "pdop", "a number >= 0, or -1 (unknown)";
    EventId = "event_id", "a 64-bit integer";
    MnName = "mn_name", "a string";
    MnRoaming = "mn_roaming", "-1 (unknown), 0 or 1";
    MnCode = "mn_code", "a 64-bit integer";
    MnCsq = "mn_csq", "an integer from 0 to 31, or 99 (unknown)";
    MnType = "mn_type", "UNKNOWN, GSM, CDMA, WCDMA, LTE, NR or 0 to 5";
    Flags = "flags", "a 64-bit integer bitmap >= 0";
    DiscreteInputs = "discrete_inputs", "an object of input numbers (\"1\" to \"65535\") to 0, 1, true or false";
    DiscreteOutputs = "discrete_outputs", "an object of output numbers (\"1\" to \"65535\") to 0, 1, true or false";
    Inputs = "inputs", "an object of input names to numbers";
    States = "states", "an object of state names to strings, numbers or booleans";
}

impl Member {
    /// The member's bit in the set of members seen (there are fewer than 32).
    pub(super) const fn bit(self) -> u32 {
        1 << self as u32
    }
}

/// A JSON scalar as read, before its member's rules are applied. `Null`
/// stands for both JSON `null` and an absent member.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) enum RawScalar<'de> {
    #[default]
    Null,
    Bool(bool),
    Int(i64),
    /// An integer above `i64::MAX`: too large for every integer column.
    BigInt(u64),
    Float(f64),
    Str(Cow<'de, str>),
}

impl RawScalar<'_> {
    /// The value in a few characters, for "got ..." (strings quoted and clipped).
    pub(super) fn describe(&self) -> String {
        match self {
            Self::Null => "null".to_owned(),
            Self::Bool(flag) => flag.to_string(),
            Self::Int(n) => n.to_string(),
            Self::BigInt(n) => n.to_string(),
            Self::Float(n) => format!("{n:?}"),
            Self::Str(text) => quote(text),
        }
    }

    pub(super) fn as_f64(&self) -> Option<f64> {
        // A JSON number is read as the nearest f64.
        match self {
            Self::Int(n) => Some(*n as f64),
            Self::BigInt(n) => Some(*n as f64),
            Self::Float(n) => Some(*n),
            Self::Null | Self::Bool(_) | Self::Str(_) => None,
        }
    }
}

/// The scalar members of a line as read, checked by [`super::build`]; its
/// complex members are read into the body's [`Lists`], already checked,
/// sorted and free of duplicates.
#[derive(Debug, Default)]
pub(super) struct RawLine<'de> {
    pub(super) tracker_id: RawScalar<'de>,
    pub(super) device_id: RawScalar<'de>,
    pub(super) msg_time: RawScalar<'de>,
    pub(super) server_time: RawScalar<'de>,
    pub(super) gps_fix_type: RawScalar<'de>,
    pub(super) lat: RawScalar<'de>,
    pub(super) lng: RawScalar<'de>,
    pub(super) speed: RawScalar<'de>,
    pub(super) alt: RawScalar<'de>,
    pub(super) satellites: RawScalar<'de>,
    pub(super) heading: RawScalar<'de>,
    pub(super) precision: RawScalar<'de>,
    pub(super) hdop: RawScalar<'de>,
    pub(super) pdop: RawScalar<'de>,
    pub(super) event_id: RawScalar<'de>,
    pub(super) mn_name: RawScalar<'de>,
    pub(super) mn_roaming: RawScalar<'de>,
    pub(super) mn_code: RawScalar<'de>,
    pub(super) mn_csq: RawScalar<'de>,
    pub(super) mn_type: RawScalar<'de>,
    pub(super) flags: RawScalar<'de>,
}

impl<'de> RawLine<'de> {
    /// Where a scalar member's value goes; `None` for a complex member
    /// (read into the lists instead).
    pub(super) fn slot(&mut self, member: Member) -> Option<&mut RawScalar<'de>> {
        Some(match member {
            Member::TrackerId => &mut self.tracker_id,
            Member::DeviceId => &mut self.device_id,
            Member::MsgTime => &mut self.msg_time,
            Member::ServerTime => &mut self.server_time,
            Member::GpsFixType => &mut self.gps_fix_type,
            Member::Lat => &mut self.lat,
            Member::Lng => &mut self.lng,
            Member::Speed => &mut self.speed,
            Member::Alt => &mut self.alt,
            Member::Satellites => &mut self.satellites,
            Member::Heading => &mut self.heading,
            Member::Precision => &mut self.precision,
            Member::Hdop => &mut self.hdop,
            Member::Pdop => &mut self.pdop,
            Member::EventId => &mut self.event_id,
            Member::MnName => &mut self.mn_name,
            Member::MnRoaming => &mut self.mn_roaming,
            Member::MnCode => &mut self.mn_code,
            Member::MnCsq => &mut self.mn_csq,
            Member::MnType => &mut self.mn_type,
            Member::Flags => &mut self.flags,
            Member::DiscreteInputs | Member::DiscreteOutputs | Member::Inputs | Member::States => {
                return None;
            }
        })
    }
}

/// Where the reader is, and the error a check raised inside serde.
#[derive(Debug)]
pub(super) struct Ctx {
    /// Set by a check that refused a value; serde's error then only unwinds.
    error: Option<LineError>,
    /// The member whose value is being read.
    member: Option<Member>,
    /// The inner key whose value is being read, set only when reading it failed.
    inner: Option<String>,
    /// Most entries of one complex member.
    max_entries: usize,
    /// The line's complex members, read into lists the body's lines reuse.
    pub(super) lists: Lists,
}

/// A line's complex members as read. One set serves every line of a body
/// (each line clears it first): a list per member per line, grown by
/// doubling from empty, reallocated two or three times a line, and the
/// lists' memory was a tenth of the parse in a profile.
#[derive(Debug, Default)]
pub(crate) struct Lists {
    pub(super) discrete_inputs: Vec<(u16, u8)>,
    pub(super) discrete_outputs: Vec<(u16, u8)>,
    pub(super) inputs: Vec<(Name, f64)>,
    pub(super) states: Vec<(Name, StateValue)>,
    /// The members of the last line the plain reader read, in its order:
    /// the next line's are most likely the same (a producer writes its
    /// lines alike), so each is first looked for where it is expected.
    /// Kept by [`Lists::clear`].
    pub(super) order: Vec<Member>,
    /// Whether `inputs` and `states` hold what the plain reader read of
    /// the last line, whole, checked, sorted and without duplicates: the
    /// next line's names, if the same in the same order, then need no
    /// check and no copy of their own (see [`Lists::begin_plain`]).
    pub(super) named_checked: [bool; 2],
}

impl Lists {
    /// Empties every list, keeping its memory.
    pub(super) fn clear(&mut self) {
        self.discrete_inputs.clear();
        self.discrete_outputs.clear();
        self.inputs.clear();
        self.states.clear();
        self.named_checked = [false; 2];
    }

    /// Readies the lists for a line the plain reader reads: the discrete
    /// ones emptied, `inputs` and `states` left as the last line left
    /// them, for the reader to compare that line's names with as it reads
    /// (most lines of a body name the same inputs and states). The reader
    /// then empties or replaces them: a line without one leaves it empty.
    pub(super) fn begin_plain(&mut self) {
        self.discrete_inputs.clear();
        self.discrete_outputs.clear();
    }
}

impl Ctx {
    pub(super) const fn new(max_entries: usize, lists: Lists) -> Self {
        Self {
            error: None,
            member: None,
            inner: None,
            max_entries,
            lists,
        }
    }

    /// Records `error` and returns the serde error that unwinds the reader.
    fn fail<E: de::Error>(&mut self, error: LineError) -> E {
        let unwind = E::custom(&error.description);
        self.error = Some(error);
        unwind
    }

    pub(super) fn into_error(self, err: &serde_json::Error) -> LineError {
        if let Some(error) = self.error {
            return error;
        }
        let message = err.to_string();
        let message = clip(&message, CLIP_SERDE_CHARS);
        match (err.classify(), self.member) {
            (Category::Data, Some(member)) => {
                let field = match self.inner {
                    Some(inner) => format!("{}.{inner}", member.name()),
                    None => member.name().to_owned(),
                };
                let description = format!("{field}: {message}");
                LineError::new(field, description)
            }
            (Category::Data, None) => {
                LineError::whole_line(format!("the line must be a JSON object: {message}"))
            }
            (Category::Syntax | Category::Eof | Category::Io, _) => {
                LineError::whole_line(format!("malformed JSON: {message}"))
            }
        }
    }
}

/// Reads a whole line.
#[derive(Debug)]
pub(super) struct LineSeed<'c> {
    pub(super) ctx: &'c mut Ctx,
}

impl<'de> DeserializeSeed<'de> for LineSeed<'_> {
    type Value = RawLine<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LineSeed<'_> {
    type Value = RawLine<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object whose members are message columns")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let ctx = self.ctx;
        let mut line = RawLine::default();
        let mut seen = 0_u32;
        while let Some(member) = map.next_key_seed(MemberSeed { ctx: &mut *ctx })? {
            let name = member.name();
            if seen & member.bit() != 0 {
                return Err(ctx.fail(LineError::new(name, format!("{name}: duplicate member"))));
            }
            seen |= member.bit();
            ctx.member = Some(member);
            if let Some(slot) = line.slot(member) {
                *slot = map.next_value_seed(ScalarSeed {
                    expected: member.expected(),
                })?;
            } else {
                match member {
                    Member::Inputs => {
                        map.next_value_seed(ComplexSeed::<Inputs>::new(ctx, member))?;
                    }
                    Member::States => {
                        map.next_value_seed(ComplexSeed::<States>::new(ctx, member))?;
                    }
                    _ => map.next_value_seed(ComplexSeed::<Discrete>::new(ctx, member))?,
                }
            }
            ctx.member = None;
        }
        Ok(line)
    }
}

/// Reads a top-level member name; an unknown one is refused, naming it.
#[derive(Debug)]
struct MemberSeed<'c> {
    ctx: &'c mut Ctx,
}

impl<'de> DeserializeSeed<'de> for MemberSeed<'_> {
    type Value = Member;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for MemberSeed<'_> {
    type Value = Member;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Self::Value, E> {
        Member::from_name(name).ok_or_else(|| {
            let field = clip(name, CLIP_CHARS).into_owned();
            let description = format!("{field}: unknown member (not a raw data column)");
            self.ctx.fail(LineError::new(field, description))
        })
    }
}

/// Reads one scalar; `expected` completes serde's "expected ..." when the
/// value is an array or object.
#[derive(Debug, Clone, Copy)]
struct ScalarSeed {
    expected: &'static str,
}

impl<'de> DeserializeSeed<'de> for ScalarSeed {
    type Value = RawScalar<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ScalarSeed {
    type Value = RawScalar<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expected)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(RawScalar::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(RawScalar::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(i64::try_from(v).map_or(RawScalar::BigInt(v), RawScalar::Int))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(RawScalar::Float(v))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(RawScalar::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(RawScalar::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(RawScalar::Str(Cow::Owned(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(RawScalar::Null)
    }
}

/// A kind's list as the plain reader takes it ([`Inner::plain_list`]).
pub(super) type PlainList<'l, K> = (
    &'l mut Vec<(<K as Inner>::Key, <K as Inner>::Value)>,
    Option<&'l mut bool>,
);

/// The rules of one kind of complex member: its keys and its values.
pub(super) trait Inner {
    type Key: Ord;
    type Value;
    /// What a valid key looks like, completing "expected ...".
    const EXPECTED_KEY: &'static str;
    /// What a valid value looks like, completing "expected ...".
    const EXPECTED_VALUE: &'static str;
    fn key(text: &str) -> Option<Self::Key>;
    /// Pushes the entry of `text` (checked as [`key`](Self::key) checks
    /// it) and `value`; `None`, and nothing pushed, for an invalid key.
    #[inline]
    fn push(
        entries: &mut Vec<(Self::Key, Self::Value)>,
        text: &str,
        value: Self::Value,
    ) -> Option<()> {
        entries.push((Self::key(text)?, value));
        Some(())
    }
    fn key_text(key: &Self::Key) -> String;
    /// The value of a non-null scalar, or the scalar back when it is not valid.
    fn value(raw: RawScalar<'_>) -> Result<Self::Value, RawScalar<'_>>;
    /// The list of `lists` that `member` (of this kind) is read into.
    fn list(lists: &mut Lists, member: Member) -> &mut Vec<(Self::Key, Self::Value)>;
    /// [`list`](Self::list), and for a named kind whether it holds the
    /// last line's checked names ([`Lists::named_checked`]); `None` for a
    /// kind whose list [`Lists::begin_plain`] empties.
    fn plain_list(lists: &mut Lists, member: Member) -> PlainList<'_, Self>;
    /// Whether `key` is spelled `text` (only named kinds answer true).
    #[inline]
    fn spelled(_key: &Self::Key, _text: &str) -> bool {
        false
    }
}

/// `discrete_inputs` and `discrete_outputs`.
#[derive(Debug)]
pub(super) struct Discrete;

impl Inner for Discrete {
    type Key = u16;
    type Value = u8;
    const EXPECTED_KEY: &'static str = "a number from 1 to 65535 without leading zeros";
    const EXPECTED_VALUE: &'static str = "0, 1, true or false";

    fn key(text: &str) -> Option<u16> {
        let digits_only = text.bytes().all(|byte| byte.is_ascii_digit());
        if !digits_only || text.starts_with('0') {
            return None;
        }
        text.parse().ok()
    }

    fn key_text(key: &u16) -> String {
        key.to_string()
    }

    fn value(raw: RawScalar<'_>) -> Result<u8, RawScalar<'_>> {
        match raw {
            RawScalar::Int(0) | RawScalar::Bool(false) => Ok(0),
            RawScalar::Int(1) | RawScalar::Bool(true) => Ok(1),
            other => Err(other),
        }
    }

    fn list(lists: &mut Lists, member: Member) -> &mut Vec<(u16, u8)> {
        if member == Member::DiscreteInputs {
            &mut lists.discrete_inputs
        } else {
            &mut lists.discrete_outputs
        }
    }

    fn plain_list(lists: &mut Lists, member: Member) -> (&mut Vec<(u16, u8)>, Option<&mut bool>) {
        (Self::list(lists, member), None)
    }
}

/// Whether `text` may name an input or a state: 1-64 of `[A-Za-z0-9_]`.
fn is_inner_name(text: &str) -> bool {
    (1..=64).contains(&text.len())
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
}

/// Pushes (`text`, `value`) if `text` may name an input or a state, the
/// name written in place ([`Inputs::push`]).
#[inline]
fn push_named<V>(entries: &mut Vec<(Name, V)>, text: &str, value: V) -> Option<()> {
    if !is_inner_name(text) {
        return None;
    }
    entries.push((Name::default(), value));
    if let Some((name, _)) = entries.last_mut() {
        name.push_str(text);
    }
    Some(())
}

/// `inputs`.
#[derive(Debug)]
pub(super) struct Inputs;

impl Inner for Inputs {
    type Key = Name;
    type Value = f64;
    const EXPECTED_KEY: &'static str = "a name of 1 to 64 letters, digits or underscores";
    const EXPECTED_VALUE: &'static str = "a number";

    fn key(text: &str) -> Option<Name> {
        is_inner_name(text).then(|| Name::from(text))
    }

    /// The name is written where the entry lies: one made apart and moved
    /// in was reloaded whole right after the stores that wrote it, a
    /// stall the processor cannot forward (a tenth of a line's read).
    #[inline]
    fn push(entries: &mut Vec<(Name, f64)>, text: &str, value: f64) -> Option<()> {
        push_named(entries, text, value)
    }

    fn key_text(key: &Name) -> String {
        key.to_string()
    }

    fn value(raw: RawScalar<'_>) -> Result<f64, RawScalar<'_>> {
        match raw.as_f64() {
            Some(n) if n.is_finite() => Ok(n),
            _ => Err(raw),
        }
    }

    fn list(lists: &mut Lists, _: Member) -> &mut Vec<(Name, f64)> {
        &mut lists.inputs
    }

    fn plain_list(lists: &mut Lists, _: Member) -> (&mut Vec<(Name, f64)>, Option<&mut bool>) {
        (&mut lists.inputs, Some(&mut lists.named_checked[0]))
    }

    #[inline]
    fn spelled(key: &Name, text: &str) -> bool {
        super::plain::same_text(key.as_bytes(), text.as_bytes())
    }
}

/// `states`.
#[derive(Debug)]
pub(super) struct States;

impl Inner for States {
    type Key = Name;
    type Value = StateValue;
    const EXPECTED_KEY: &'static str = Inputs::EXPECTED_KEY;
    const EXPECTED_VALUE: &'static str = "a string, number or boolean";

    fn key(text: &str) -> Option<Name> {
        Inputs::key(text)
    }

    #[inline]
    fn push(entries: &mut Vec<(Name, StateValue)>, text: &str, value: StateValue) -> Option<()> {
        push_named(entries, text, value)
    }

    fn key_text(key: &Name) -> String {
        key.to_string()
    }

    fn value(raw: RawScalar<'_>) -> Result<StateValue, RawScalar<'_>> {
        match raw {
            RawScalar::Str(text) => Ok(StateValue::Text(Name::from(text))),
            RawScalar::Bool(flag) => Ok(StateValue::Flag(flag)),
            other => match other.as_f64() {
                Some(n) if n.is_finite() => Ok(StateValue::Number(n)),
                _ => Err(other),
            },
        }
    }

    fn list(lists: &mut Lists, _: Member) -> &mut Vec<(Name, StateValue)> {
        &mut lists.states
    }

    fn plain_list(
        lists: &mut Lists,
        _: Member,
    ) -> (&mut Vec<(Name, StateValue)>, Option<&mut bool>) {
        (&mut lists.states, Some(&mut lists.named_checked[1]))
    }

    #[inline]
    fn spelled(key: &Name, text: &str) -> bool {
        super::plain::same_text(key.as_bytes(), text.as_bytes())
    }
}

/// Reads a complex member (or null) into its list of [`Lists`], sorted by key.
#[derive(Debug)]
struct ComplexSeed<'c, K> {
    ctx: &'c mut Ctx,
    member: Member,
    kind: PhantomData<K>,
}

impl<'c, K> ComplexSeed<'c, K> {
    fn new(ctx: &'c mut Ctx, member: Member) -> Self {
        Self {
            ctx,
            member,
            kind: PhantomData,
        }
    }

    /// The error for `key` of this member: `field` is `<member>.<key>`.
    fn inner_error(&self, key: &str, what: impl fmt::Display) -> LineError {
        let field = format!("{}.{}", self.member.name(), clip(key, CLIP_CHARS));
        let description = format!("{field}: {what}");
        LineError::new(field, description)
    }
}

impl<'de, K: Inner> DeserializeSeed<'de> for ComplexSeed<'_, K> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, K: Inner> Visitor<'de> for ComplexSeed<'_, K> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.member.expected())
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        // The list was emptied when the line began.
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // Taken out while the entries are read (the key and value seeds
        // borrow the context), and put back once they are checked.
        let mut entries = std::mem::take(K::list(&mut self.ctx.lists, self.member));
        // Keys given `null`: absent, but still counted for duplicates.
        let mut nulls: Vec<K::Key> = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed::<K> {
            ctx: &mut *self.ctx,
            member: self.member,
            kind: PhantomData,
        })? {
            let raw = match map.next_value_seed(ScalarSeed {
                expected: K::EXPECTED_VALUE,
            }) {
                Ok(raw) => raw,
                Err(err) => {
                    self.ctx.inner = Some(clip(&K::key_text(&key), CLIP_CHARS).into_owned());
                    return Err(err);
                }
            };
            // Refused as soon as one entry too many is read: the rest of the
            // member is never held.
            if entries.len() + nulls.len() >= self.ctx.max_entries {
                let name = self.member.name();
                let error = LineError::beyond(
                    Limit::InnerEntries,
                    name,
                    format!(
                        "{name}: more than {} entries (the most one message may have; --max-inner-entries)",
                        self.ctx.max_entries
                    ),
                );
                return Err(self.ctx.fail(error));
            }
            if raw == RawScalar::Null {
                nulls.push(key);
                continue;
            }
            match K::value(raw) {
                Ok(value) => entries.push((key, value)),
                Err(raw) => {
                    let what =
                        format_args!("expected {}, got {}", K::EXPECTED_VALUE, raw.describe());
                    let error = self.inner_error(&K::key_text(&key), what);
                    return Err(self.ctx.fail(error));
                }
            }
        }
        nulls.sort_unstable();
        let repeated = sort_by_key_once(&mut entries);
        let duplicate = repeated
            .and_then(|at| entries.get(at).map(|(key, _)| key))
            .or_else(|| first_duplicate(nulls.iter()))
            .or_else(|| {
                nulls.iter().find(|key| {
                    entries
                        .binary_search_by(|(entry, _)| entry.cmp(key))
                        .is_ok()
                })
            });
        if let Some(key) = duplicate {
            let error = self.inner_error(&K::key_text(key), "duplicate key");
            return Err(self.ctx.fail(error));
        }
        *K::list(&mut self.ctx.lists, self.member) = entries;
        Ok(())
    }
}

/// Sorts a complex member's entries by key and answers where the first
/// key given twice is, once sorted. Devices send keys sorted: one pass
/// finds them strictly increasing (so free of duplicates) and nothing is
/// sorted.
pub(super) fn sort_by_key_once<K: Ord, V>(entries: &mut [(K, V)]) -> Option<usize> {
    if entries.is_sorted_by(|a, b| a.0 < b.0) {
        return None;
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    entries
        .windows(2)
        .position(|pair| pair[0].0 == pair[1].0)
        .map(|at| at + 1)
}

/// The first key equal to its predecessor in a sorted sequence.
fn first_duplicate<'k, T: Eq + 'k>(sorted: impl Iterator<Item = &'k T> + Clone) -> Option<&'k T> {
    sorted
        .clone()
        .zip(sorted.skip(1))
        .find(|(previous, key)| previous == key)
        .map(|(_, key)| key)
}

/// Reads one key of a complex member; an invalid one is refused, naming it.
#[derive(Debug)]
struct KeySeed<'c, K> {
    ctx: &'c mut Ctx,
    member: Member,
    kind: PhantomData<K>,
}

impl<'de, K: Inner> DeserializeSeed<'de> for KeySeed<'_, K> {
    type Value = K::Key;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<K: Inner> Visitor<'_> for KeySeed<'_, K> {
    type Value = K::Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(K::EXPECTED_KEY)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        K::key(text).ok_or_else(|| {
            let field = format!("{}.{}", self.member.name(), clip(text, CLIP_CHARS));
            let description = format!("{field}: invalid key, expected {}", K::EXPECTED_KEY);
            self.ctx.fail(LineError::new(field, description))
        })
    }
}
