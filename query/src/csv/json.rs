//! CSV quoting, and the JSON text of states: decoded into a cell, or kept
//! as a JSON value inside a map cell.
//!
//! Everything inside a quoted cell has its `"` doubled, so a JSON map's
//! `{"a":"x"}` is written `"{""a"":""x""}"`.

/// Writes `text` quoted, inner quotes doubled, nothing else escaped.
#[inline]
pub(super) fn write_quoted(text: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    // `str::split` on an ASCII char searches with memchr.
    let mut parts = text.split('"');
    if let Some(first) = parts.next() {
        out.extend_from_slice(first.as_bytes());
    }
    for part in parts {
        out.extend_from_slice(b"\"\"");
        out.extend_from_slice(part.as_bytes());
    }
    out.push(b'"');
}

/// A map key as written before its value: `""key"":`, JSON-escaped and CSV-doubled.
pub(super) fn encoded_key(key: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 5);
    out.extend_from_slice(b"\"\"");
    write_json_escaped(key.as_bytes(), &mut out);
    out.extend_from_slice(b"\"\":");
    out
}

/// Writes a state (`"eco"`, `12.5`, `true`) as a CSV cell: a JSON string's
/// text decoded and quoted, a number or flag as written, anything not JSON
/// quoted as text. Returns `false`, writing nothing, for JSON `null`.
pub(super) fn write_state_cell(text: &str, out: &mut Vec<u8>) -> bool {
    let trimmed = text.trim_ascii();
    match Scalar::classify(trimmed) {
        Scalar::String(body) => {
            let mark = out.len();
            out.push(b'"');
            let decoded = decode_string(body, |piece| match piece {
                Piece::Raw(raw) => out.extend_from_slice(raw),
                Piece::Char('"') => out.extend_from_slice(b"\"\""),
                Piece::Char(c) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            });
            if decoded {
                out.push(b'"');
            } else {
                out.truncate(mark);
                write_quoted(text, out);
            }
        }
        Scalar::Literal => out.extend_from_slice(trimmed.as_bytes()),
        Scalar::Null => return false,
        Scalar::Invalid => write_quoted(text, out),
    }
    true
}

/// Writes a state as a JSON value inside a quoted map cell (quotes doubled);
/// text that is not JSON becomes a JSON string. Returns `false`, writing
/// nothing, for JSON `null`.
pub(super) fn write_state_json(text: &str, out: &mut Vec<u8>) -> bool {
    let trimmed = text.trim_ascii();
    match Scalar::classify(trimmed) {
        Scalar::String(body) => {
            // Decoded and escaped again, which validates it and gives one
            // canonical spelling whatever escapes were stored.
            let mark = out.len();
            out.extend_from_slice(b"\"\"");
            let decoded = decode_string(body, |piece| match piece {
                Piece::Raw(raw) => write_json_escaped(raw, out),
                Piece::Char(c) => write_json_escaped(c.encode_utf8(&mut [0; 4]).as_bytes(), out),
            });
            if decoded {
                out.extend_from_slice(b"\"\"");
            } else {
                out.truncate(mark);
                write_json_string(text.as_bytes(), out);
            }
        }
        Scalar::Literal => out.extend_from_slice(trimmed.as_bytes()),
        Scalar::Null => return false,
        Scalar::Invalid => write_json_string(text.as_bytes(), out),
    }
    true
}

fn write_json_string(text: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"\"\"");
    write_json_escaped(text, out);
    out.extend_from_slice(b"\"\"");
}

/// Writes the body of a JSON string holding `text`, its quotes CSV-doubled
/// (`"` becomes `\""`).
fn write_json_escaped(text: &[u8], out: &mut Vec<u8>) {
    for &b in text {
        match b {
            b'"' => out.extend_from_slice(b"\\\"\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.extend(
                    [b >> 4, b & 0xf]
                        .iter()
                        .filter_map(|&n| HEX.get(usize::from(n))),
                );
            }
            _ => out.push(b),
        }
    }
}

/// What a trimmed JSON scalar is.
enum Scalar<'a> {
    /// A string; the text after its opening quote.
    String(&'a [u8]),
    /// A number, `true` or `false`: written as it stands.
    Literal,
    /// `null`.
    Null,
    /// Not a JSON scalar.
    Invalid,
}

impl<'a> Scalar<'a> {
    fn classify(text: &'a str) -> Self {
        let bytes = text.as_bytes();
        match bytes {
            [b'"', body @ ..] => Self::String(body),
            b"true" | b"false" => Self::Literal,
            b"null" => Self::Null,
            _ if is_json_number(bytes) => Self::Literal,
            _ => Self::Invalid,
        }
    }
}

/// Whether `text` is a JSON number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn is_json_number(text: &[u8]) -> bool {
    let rest = text.strip_prefix(b"-").unwrap_or(text);
    let (int, rest) = split_digits(rest);
    if int.is_empty() || (int.len() > 1 && int.first() == Some(&b'0')) {
        return false;
    }
    let rest = match rest.strip_prefix(b".") {
        Some(after) => match split_digits(after) {
            ([], _) => return false,
            (_, rest) => rest,
        },
        None => rest,
    };
    let rest = match rest {
        [b'e' | b'E', after @ ..] => {
            let after = after
                .strip_prefix(b"+")
                .or_else(|| after.strip_prefix(b"-"))
                .unwrap_or(after);
            match split_digits(after) {
                ([], _) => return false,
                (_, rest) => rest,
            }
        }
        _ => rest,
    };
    rest.is_empty()
}

fn split_digits(text: &[u8]) -> (&[u8], &[u8]) {
    let n = text.iter().take_while(|b| b.is_ascii_digit()).count();
    text.split_at_checked(n).unwrap_or((text, &[]))
}

/// A run of a JSON string's text, or one character an escape stood for.
enum Piece<'a> {
    Raw(&'a [u8]),
    Char(char),
}

/// Decodes a JSON string from after its opening quote through its closing
/// quote, which must end `body`, handing each piece to `emit`. Returns
/// `false` (some pieces may have been emitted) when it is not valid JSON.
fn decode_string(body: &[u8], mut emit: impl FnMut(Piece<'_>)) -> bool {
    let mut rest = body;
    loop {
        let Some(special) = rest.iter().position(|&b| b == b'"' || b == b'\\') else {
            return false;
        };
        let Some((raw, tail)) = rest.split_at_checked(special) else {
            return false;
        };
        if !raw.is_empty() {
            emit(Piece::Raw(raw));
        }
        match tail {
            [b'"'] => return true,
            [b'\\', escape, after @ ..] => {
                let (c, after) = match escape {
                    b'"' => ('"', after),
                    b'\\' => ('\\', after),
                    b'/' => ('/', after),
                    b'b' => ('\u{8}', after),
                    b'f' => ('\u{c}', after),
                    b'n' => ('\n', after),
                    b'r' => ('\r', after),
                    b't' => ('\t', after),
                    b'u' => match decode_unicode(after) {
                        Some(decoded) => decoded,
                        None => return false,
                    },
                    _ => return false,
                };
                emit(Piece::Char(c));
                rest = after;
            }
            // A quote before the end, or a backslash ending the text.
            _ => return false,
        }
    }
}

/// Decodes the `XXXX` after `\u`, and the low half after it when it is a
/// high surrogate. Lone surrogates are invalid.
fn decode_unicode(text: &[u8]) -> Option<(char, &[u8])> {
    let (unit, rest) = hex4(text)?;
    match unit {
        0xD800..0xDC00 => {
            let rest = rest.strip_prefix(b"\\u")?;
            let (low, rest) = hex4(rest)?;
            if !(0xDC00..0xE000).contains(&low) {
                return None;
            }
            let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
            Some((char::from_u32(code)?, rest))
        }
        _ => Some((char::from_u32(unit)?, rest)),
    }
}

fn hex4(text: &[u8]) -> Option<(u32, &[u8])> {
    let (digits, rest) = text.split_at_checked(4)?;
    let mut value = 0;
    for &d in digits {
        value = value * 16 + char::from(d).to_digit(16)?;
    }
    Some((value, rest))
}
