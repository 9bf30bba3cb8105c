//! The usual line read without serde: a tokenizer for plain JSON that
//! reads a line's members straight into the [`RawLine`] and [`Lists`] the
//! serde reader would give, and gives up at anything unusual.
//!
//! "Plain" is what devices and gateways send: one object, member names
//! and strings without escapes, numbers in JSON's grammar, complex members
//! whose keys are valid and whose values are not null. At anything else (an
//! escape, an unknown or repeated member, an invalid key or value, a null
//! inner value, more entries than allowed, a syntax error) the reader
//! answers `None` and the line is read again by serde, whose reader then
//! raises the error with its usual text, or reads what this one does not.
//! So this reader only ever accepts what serde's would accept, and reads
//! it into the same values; `tests::props` holds the two to that on random
//! and mutated lines.
//!
//! Why: serde_json's tokenizer and its visitor calls were most of a line's
//! parse (2 µs for 590 bytes), and the intake's cores are what bounds it.

use std::borrow::Cow;

use super::read::{
    Discrete, Inner, Inputs, Lists, Member, RawLine, RawScalar, States, sort_by_key_once,
};

/// Reads `text`, one whole line, as plain JSON, into `line` (a fresh
/// one: its members all null); `None` when it is not plain (see the
/// module docs). `lists` is cleared first; on `None` it and `line` hold
/// whatever was read before the reader gave up.
///
/// `line` is the caller's, written in place: a line of 21 scalars is
/// 672 bytes, and returning it copied them twice more (a tenth of the
/// reader's own time).
pub(super) fn read<'a>(
    text: &'a str,
    max_entries: usize,
    lists: &mut Lists,
    line: &mut RawLine<'a>,
) -> Option<()> {
    lists.begin_plain();
    let mut reader = Reader {
        text,
        bytes: text.as_bytes(),
        at: 0,
    };
    reader.line(max_entries, lists, line)?;
    reader.whitespace();
    (reader.at == reader.bytes.len()).then_some(())
}

/// Whether `a` and `b` are the same bytes, compared in registers when
/// they are 16 bytes or fewer (an inner column's name, usually).
#[inline(always)]
pub(super) fn same_text(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len()
        && if a.len() <= 16 {
            same_short(a, b)
        } else {
            a == b
        }
}

/// Whether `a` and `b`, of the same length up to 16 bytes (a member's
/// name), are the same bytes: two loads of each, overlapping, compared
/// in registers. The slices' `==` called `memcmp` for every member of
/// every line, a fortieth of the request threads' time.
#[inline(always)]
fn same_short(a: &[u8], b: &[u8]) -> bool {
    debug_assert!(a.len() == b.len() && a.len() <= 16);
    let n = a.len();
    let word = |bytes: &[u8], at: usize| -> u64 {
        let mut buffer = [0u8; 8];
        buffer.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(buffer)
    };
    let half = |bytes: &[u8], at: usize| -> u32 {
        let mut buffer = [0u8; 4];
        buffer.copy_from_slice(&bytes[at..at + 4]);
        u32::from_le_bytes(buffer)
    };
    if n >= 8 {
        word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8)
    } else if n >= 4 {
        half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4)
    } else {
        a.iter().zip(b).all(|(x, y)| x == y)
    }
}

/// One in each byte.
const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of each byte.
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit set in each byte of `word` (eight bytes of a line, little
/// endian) that is a quote, a backslash or a control character, or
/// above such a byte (the subtractions borrow upward): its lowest set bit
/// marks the first byte a string stops at or fails on, if any.
#[inline]
fn stops(word: u64) -> u64 {
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    zero(word ^ (ONES * u64::from(b'"')))
        | zero(word ^ (ONES * u64::from(b'\\')))
        | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS)
}

/// Powers of ten that `f64` holds exactly.
const EXACT_POWERS: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// `mantissa` × 10^`power` when both are exact in an `f64` (a mantissa up
/// to 2^53, a power of ten up to 10^22): one multiplication or division of
/// exact operands, which IEEE 754 rounds correctly, so the nearest `f64`,
/// as a full parse gives it (Clinger's fast path; the usual coordinate,
/// speed or input value). `None` otherwise.
#[inline]
fn exact_float(mantissa: u64, power: i64) -> Option<f64> {
    if mantissa > 1 << 53 {
        return None;
    }
    let scale = *EXACT_POWERS.get(usize::try_from(power.unsigned_abs()).ok()?)?;
    let mantissa = mantissa as f64;
    Some(if power < 0 {
        mantissa / scale
    } else {
        mantissa * scale
    })
}

/// A position in a line.
struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Skips JSON whitespace.
    #[inline]
    fn whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Takes `byte` after any whitespace.
    #[inline]
    fn eat(&mut self, byte: u8) -> Option<()> {
        self.whitespace();
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// After an object's `{` or an entry: whether another entry follows
    /// (`,` or, for the first, anything but `}`), or the object ended.
    #[inline]
    fn more(&mut self, first: bool) -> Option<bool> {
        self.whitespace();
        match self.peek()? {
            b'}' => {
                self.at += 1;
                Some(false)
            }
            b',' if !first => {
                self.at += 1;
                Some(true)
            }
            _ if first => Some(true),
            _ => None,
        }
    }

    /// A string without escapes or control characters, after whitespace.
    #[inline]
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        // Eight bytes at a time up to the first that may end the string;
        // the loop below looks at that one.
        while let Some(word) = self.bytes.get(self.at..self.at + 8) {
            let stops = stops(u64::from_le_bytes(word.try_into().ok()?));
            if stops != 0 {
                self.at += (stops.trailing_zeros() / 8) as usize;
                break;
            }
            self.at += 8;
        }
        loop {
            match *self.bytes.get(self.at)? {
                b'"' => break,
                b'\\' | 0..=0x1f => return None,
                _ => self.at += 1,
            }
        }
        // Both ends are ASCII quotes of a `str`, so char boundaries.
        let text = self.text.get(start..self.at)?;
        self.at += 1;
        Some(text)
    }

    /// Whether the next key (after any whitespace) is `name`, a name
    /// without escapes: if so, takes it.
    #[inline]
    fn next_key_is(&mut self, name: &str) -> bool {
        self.whitespace();
        let end = self.at + name.len() + 2;
        let is = self.bytes.get(self.at..end).is_some_and(|quoted| {
            quoted[0] == b'"'
                && quoted[quoted.len() - 1] == b'"'
                && same_text(&quoted[1..quoted.len() - 1], name.as_bytes())
        });
        if is {
            self.at = end;
        }
        is
    }

    /// The member whose name comes next and the colon after it, looked
    /// for first as the `position`th member of the last line (`order`,
    /// updated from this line's members when they differ).
    #[inline]
    fn member(&mut self, order: &mut Vec<Member>, position: usize) -> Option<Member> {
        if let Some(&expected) = order.get(position) {
            if self.next_key_is(expected.name()) {
                self.eat(b':')?;
                return Some(expected);
            }
        }
        let member = Member::from_name(self.key()?)?;
        order.truncate(position);
        order.push(member);
        Some(member)
    }

    /// A member or key name and the colon after it.
    #[inline]
    fn key(&mut self) -> Option<&'a str> {
        let name = self.string()?;
        self.eat(b':')?;
        Some(name)
    }

    /// `literal` (the rest of `true`, `false` or `null` after its first byte).
    #[inline]
    fn literal(&mut self, rest: &[u8]) -> Option<()> {
        let end = self.at.checked_add(rest.len())?;
        (self.bytes.get(self.at..end)? == rest).then(|| self.at = end)
    }

    /// A scalar as serde_json reads it into [`RawScalar`], written into
    /// `slot` where it is kept (a scalar returned and then moved into place
    /// was reloaded whole from the two stores that wrote it, which the
    /// processor cannot forward: a stall of some 15 cycles, a tenth of the
    /// line's read); `None` for an object, an array or anything not plain.
    #[inline(always)]
    fn scalar_into(&mut self, slot: &mut RawScalar<'a>) -> Option<()> {
        self.whitespace();
        *slot = match self.peek()? {
            b'"' => RawScalar::Str(Cow::Borrowed(self.string()?)),
            b'n' => {
                self.at += 1;
                self.literal(b"ull").map(|()| RawScalar::Null)?
            }
            b't' => {
                self.at += 1;
                self.literal(b"rue").map(|()| RawScalar::Bool(true))?
            }
            b'f' => {
                self.at += 1;
                self.literal(b"alse").map(|()| RawScalar::Bool(false))?
            }
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return None,
        };
        Some(())
    }

    /// Digits from here on, folded into `value` (wrapping: the caller
    /// counts them); how many.
    #[inline]
    fn digits(&mut self, value: &mut u64) -> usize {
        let start = self.at;
        while let Some(digit @ b'0'..=b'9') = self.peek() {
            *value = value.wrapping_mul(10).wrapping_add(u64::from(digit - b'0'));
            self.at += 1;
        }
        self.at - start
    }

    /// A number in JSON's grammar, read as serde_json reads it: an integer
    /// as `Int` (negative zero as the float `-0.0`), anything with a
    /// fraction or an exponent as the nearest `f64` (serde_json's
    /// `float_roundtrip` and Rust's parser both round correctly, and so
    /// does [`exact_float`]). Numbers of more than 19 integer digits and
    /// floats beyond `f64` are left to serde.
    #[inline(always)]
    fn number(&mut self) -> Option<RawScalar<'a>> {
        let start = self.at;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.at += 1;
        }
        let int_start = self.at;
        // The digits of the integer and the fraction, as one integer.
        let mut mantissa = 0;
        let int_digits = self.digits(&mut mantissa);
        if int_digits == 0 || int_digits > 19 {
            return None;
        }
        if int_digits > 1 && self.bytes.get(int_start) == Some(&b'0') {
            return None;
        }
        let mut float = false;
        let mut fraction_digits = 0;
        if self.peek() == Some(b'.') {
            self.at += 1;
            fraction_digits = self.digits(&mut mantissa);
            if fraction_digits == 0 {
                return None;
            }
            float = true;
        }
        let mut exponent: Option<i64> = Some(0);
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            let negative_exponent = self.peek() == Some(b'-');
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            let mut written = 0;
            let exponent_digits = self.digits(&mut written);
            if exponent_digits == 0 {
                return None;
            }
            // Beyond 19 digits `written` wrapped: left to the full parse.
            exponent = (exponent_digits <= 18)
                .then(|| i64::try_from(written).ok())
                .flatten()
                .map(|e| if negative_exponent { -e } else { e });
            float = true;
        }
        if float {
            let exact = exponent.and_then(|exponent| {
                let digits = int_digits + fraction_digits;
                let power = exponent.checked_sub(i64::try_from(fraction_digits).ok()?)?;
                (digits <= 19)
                    .then(|| exact_float(mantissa, power))
                    .flatten()
            });
            let value = match exact {
                Some(value) if negative => -value,
                Some(value) => value,
                // The full parse reads the sign too.
                None => self.text.get(start..self.at)?.parse().ok()?,
            };
            return value.is_finite().then_some(RawScalar::Float(value));
        }
        // At most 19 digits: within u64, no wrapping. Signed as serde_json signs it.
        Some(if negative {
            let negated = (mantissa as i64).wrapping_neg();
            if negated >= 0 {
                // Zero, or below i64::MIN.
                RawScalar::Float(-(mantissa as f64))
            } else {
                RawScalar::Int(negated)
            }
        } else {
            i64::try_from(mantissa).map_or(RawScalar::BigInt(mantissa), RawScalar::Int)
        })
    }

    /// A whole line's object, into `line`.
    fn line(
        &mut self,
        max_entries: usize,
        lists: &mut Lists,
        line: &mut RawLine<'a>,
    ) -> Option<()> {
        let mut seen = 0_u32;
        self.eat(b'{')?;
        let mut first = true;
        let mut position = 0;
        while self.more(first)? {
            first = false;
            let member = self.member(&mut lists.order, position)?;
            position += 1;
            if seen & member.bit() != 0 {
                return None;
            }
            seen |= member.bit();
            match (line.slot(member), member) {
                (Some(slot), _) => self.scalar_into(slot)?,
                (None, Member::Inputs) => self.complex::<Inputs>(member, max_entries, lists)?,
                (None, Member::States) => self.complex::<States>(member, max_entries, lists)?,
                (None, _) => self.complex::<Discrete>(member, max_entries, lists)?,
            }
        }
        // A named list the line does not have still holds the last line's.
        if seen & Member::Inputs.bit() == 0 {
            lists.inputs.clear();
        }
        if seen & Member::States.bit() == 0 {
            lists.states.clear();
        }
        Some(())
    }

    /// A complex member's object (or `null`) into its list, checked by
    /// `K`'s rules, sorted, without duplicates.
    ///
    /// A named list may still hold the last line's entries, checked and
    /// sorted ([`Lists::begin_plain`]): while this line's names are the
    /// same, in the same places, only the values are written, and a list
    /// whose every name was such a one is known sorted and free of
    /// duplicates without a comparison. At the first other name the rest
    /// is dropped and the line's entries are checked, pushed and sorted
    /// as on any line. Making and comparing the names was a tenth of the
    /// reader's time on a line with a dozen inputs and states.
    fn complex<K: Inner>(
        &mut self,
        member: Member,
        max_entries: usize,
        lists: &mut Lists,
    ) -> Option<()> {
        self.whitespace();
        let (entries, mut checked) = K::plain_list(lists, member);
        // Unknown until the list is whole again; on `None` serde reads
        // the line after emptying every list.
        let last_checked = checked
            .as_deref_mut()
            .map(|checked| std::mem::replace(checked, false));
        if self.peek()? == b'n' {
            self.at += 1;
            entries.clear();
            return self.literal(b"ull");
        }
        self.eat(b'{')?;
        // Whether every entry so far has the name the last line's had there.
        let mut same = last_checked == Some(true);
        let mut count = 0;
        let mut first = true;
        while self.more(first)? {
            first = false;
            let text = self.key()?;
            // A null value (absent, yet a duplicate if repeated) and one
            // entry beyond the limit are left to serde.
            if count >= max_entries {
                return None;
            }
            // The value read into a place of its own, and the key checked
            // and written where the entry lies (`Inner::push`): each made
            // by a call and moved was reloaded right after the stores
            // that wrote it, which stalls the load (10% of the parse).
            let mut raw = RawScalar::Null;
            self.scalar_into(&mut raw)?;
            let value = K::value(raw).ok()?;
            match entries.get_mut(count) {
                Some(entry) if same && K::spelled(&entry.0, text) => entry.1 = value,
                _ => {
                    same = false;
                    entries.truncate(count);
                    K::push(entries, text, value)?;
                }
            }
            count += 1;
        }
        // A prefix of a sorted list without duplicates is one too.
        entries.truncate(count);
        if !same && sort_by_key_once(entries).is_some() {
            return None;
        }
        if let Some(checked) = checked {
            *checked = true;
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::{RawScalar, Reader, same_short, stops};
    use proptest::prelude::*;

    /// A number as the reader reads it.
    fn number(text: &str) -> Option<RawScalar<'_>> {
        let mut reader = Reader {
            text,
            bytes: text.as_bytes(),
            at: 0,
        };
        let number = reader.number()?;
        (reader.at == text.len()).then_some(number)
    }

    /// Floats read on the exact path are the nearest `f64`, bit for bit
    /// what a full parse gives, at and around its limits (2^53, 10^22, 19
    /// digits) and far beyond them.
    #[test]
    fn floats_are_the_nearest_f64_whichever_path_reads_them() {
        let check = |text: &str| {
            let expected: f64 = text.parse().unwrap_or(f64::NAN);
            match number(text) {
                Some(RawScalar::Float(value)) => {
                    assert_eq!(value.to_bits(), expected.to_bits(), "{text}");
                }
                Some(other) => panic!("{text}: read as {other:?}"),
                None => assert!(!expected.is_finite(), "{text}: not read"),
            }
        };
        for text in [
            "0.0",
            "-0.0",
            "1.5",
            "-1.5",
            "43.2512345",
            "76.9512345",
            "0.1",
            "0.30000000000000004",
            "9007199254740992.0",
            "9007199254740993.0",
            "9007199254740993e0",
            "123456789012345678.9",
            "1234567890123456789.0",
            "0.0000000000000000001",
            "1e22",
            "1e23",
            "1.7976931348623157e308",
            "1e309",
            "-1e309",
            "5e-324",
            "1e-400",
            "2.2250738585072014e-308",
            "1E5",
            "1e+5",
            "1e-5",
            "123e-22",
            "123e-23",
            "0e0",
            "0.5e1",
            "4.35e-1",
            "1e0000000000000000001",
            "1e-0000000000000000000001",
        ] {
            check(text);
        }
        proptest!(|(
            int in 0u64..100_000_000_000,
            fraction in "[0-9]{1,12}",
            exponent in proptest::option::of(-30i32..30),
            negative: bool,
        )| {
            let sign = if negative { "-" } else { "" };
            let text = match exponent {
                Some(e) => format!("{sign}{int}.{fraction}e{e}"),
                None => format!("{sign}{int}.{fraction}"),
            };
            let expected: f64 = text.parse().unwrap_or(f64::NAN);
            prop_assert_eq!(number(&text), Some(RawScalar::Float(expected)), "{}", text);
        });
    }

    /// `same_short` answers as `==` does for every length it takes, and
    /// tells apart names that differ in any one byte, first, last or
    /// between its two loads.
    #[test]
    fn short_names_compare_as_slices_do() {
        for name in super::Member::ALL.iter().map(|m| m.name()) {
            assert!(name.len() <= 16, "{name}: longer than same_short takes");
        }
        proptest!(|(a in proptest::collection::vec(any::<u8>(), 0..=16), at: usize, flip in 1u8..)| {
            prop_assert!(same_short(&a, &a));
            if !a.is_empty() {
                let mut b = a.clone();
                let at = at % b.len();
                b[at] ^= flip;
                prop_assert!(!same_short(&a, &b), "{:?} against {:?}", a, b);
                prop_assert!(!same_short(&b, &a));
            }
        });
    }

    /// The first byte `stops` marks is exactly the first quote, backslash
    /// or control character, wherever it is and whatever follows it;
    /// every other byte (UTF-8's high bytes included) passes.
    #[test]
    fn stops_mark_the_first_byte_a_string_ends_or_fails_at() {
        let first = |bytes: [u8; 8]| {
            let marks = stops(u64::from_le_bytes(bytes));
            (marks != 0).then(|| marks.trailing_zeros() as usize / 8)
        };
        for byte in 0..=255u8 {
            let stop = byte == b'"' || byte == b'\\' || byte < 0x20;
            assert_eq!(first([byte; 8]).is_some(), stop, "byte {byte:#04x}");
            for at in 0..8 {
                let mut bytes = [b'a'; 8];
                bytes[at] = byte;
                assert_eq!(first(bytes), stop.then_some(at), "{byte:#04x} at {at}");
                // Whatever follows, even bytes that borrow.
                for after in [0x00, 0x01, b'"', b'!', 0x21, 0x80, 0xff] {
                    bytes[(at + 1).min(7)..].fill(after);
                    bytes[at] = byte;
                    if stop {
                        assert_eq!(
                            first(bytes),
                            Some(at),
                            "{byte:#04x} at {at}, {after:#04x} after"
                        );
                    }
                }
            }
        }
    }
}
