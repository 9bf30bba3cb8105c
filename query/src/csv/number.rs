//! Numbers in their shortest exact form, written straight into the output.
//!
//! A float with at most 7 decimals is written by integer arithmetic (see
//! `write_short_decimal`); any other goes through `ryu` (shortest digits
//! that read back as the same value), whose layout is then changed to the export's: `1.0` → `1`,
//! `1e21` → `1000000000000000000000`, `5e-7` → `0.0000005`. Where two
//! shortest forms are equally close (`1612360.25f32`: `…0.2` or `…0.3`)
//! ryu rounds to even and Rust away from zero; the Rust choice is taken, so
//! the result is exactly what Rust's `Display` prints (and
//! [`schemas::format_number`] stores for states), except that `-0.0` is `0`.

use arrow::array::{Array, ArrowPrimitiveType, AsArray, PrimitiveArray};
use arrow::datatypes::{
    DataType, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};

/// A numeric batch column, downcast once per batch.
#[derive(Debug, Clone, Copy)]
pub(super) enum Numbers<'a> {
    I8(&'a PrimitiveArray<Int8Type>),
    I16(&'a PrimitiveArray<Int16Type>),
    I32(&'a PrimitiveArray<Int32Type>),
    I64(&'a PrimitiveArray<Int64Type>),
    U8(&'a PrimitiveArray<UInt8Type>),
    U16(&'a PrimitiveArray<UInt16Type>),
    U32(&'a PrimitiveArray<UInt32Type>),
    U64(&'a PrimitiveArray<UInt64Type>),
    F32(&'a PrimitiveArray<Float32Type>),
    F64(&'a PrimitiveArray<Float64Type>),
}

impl<'a> Numbers<'a> {
    /// The column as numbers, if it holds numbers.
    pub(super) fn try_new(array: &'a dyn Array) -> Option<Self> {
        Some(match array.data_type() {
            DataType::Int8 => Self::I8(array.as_primitive_opt()?),
            DataType::Int16 => Self::I16(array.as_primitive_opt()?),
            DataType::Int32 => Self::I32(array.as_primitive_opt()?),
            DataType::Int64 => Self::I64(array.as_primitive_opt()?),
            DataType::UInt8 => Self::U8(array.as_primitive_opt()?),
            DataType::UInt16 => Self::U16(array.as_primitive_opt()?),
            DataType::UInt32 => Self::U32(array.as_primitive_opt()?),
            DataType::UInt64 => Self::U64(array.as_primitive_opt()?),
            DataType::Float32 => Self::F32(array.as_primitive_opt()?),
            DataType::Float64 => Self::F64(array.as_primitive_opt()?),
            _ => return None,
        })
    }

    /// Writes the value at `row`; writes nothing and returns `false` when it
    /// is null, NaN or infinite.
    #[inline]
    pub(super) fn write(&self, row: usize, out: &mut Vec<u8>) -> bool {
        match self {
            Self::I8(a) => write_int_at(a, row, out),
            Self::I16(a) => write_int_at(a, row, out),
            Self::I32(a) => write_int_at(a, row, out),
            Self::I64(a) => write_int_at(a, row, out),
            Self::U8(a) => write_int_at(a, row, out),
            Self::U16(a) => write_int_at(a, row, out),
            Self::U32(a) => write_int_at(a, row, out),
            Self::U64(a) => write_int_at(a, row, out),
            Self::F32(a) => value_at(a, row).is_some_and(|v| write_f32(v, out)),
            Self::F64(a) => value_at(a, row).is_some_and(|v| write_f64(v, out)),
        }
    }
}

/// The non-null value at `row`.
#[inline]
pub(super) fn value_at<T: ArrowPrimitiveType>(
    array: &PrimitiveArray<T>,
    row: usize,
) -> Option<T::Native> {
    if array.is_null(row) {
        return None;
    }
    array.values().get(row).copied()
}

#[inline]
fn write_int_at<T>(array: &PrimitiveArray<T>, row: usize, out: &mut Vec<u8>) -> bool
where
    T: ArrowPrimitiveType,
    T::Native: itoa::Integer,
{
    match value_at(array, row) {
        Some(v) => {
            write_int(v, out);
            true
        }
        None => false,
    }
}

/// Writes an integer in decimal.
#[inline]
pub(super) fn write_int<I: itoa::Integer>(v: I, out: &mut Vec<u8>) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Writes `v` in its shortest exact form (what Rust prints, `-0` as `0`);
/// `false` (nothing written) when not finite.
#[inline]
pub fn write_f64(v: f64, out: &mut Vec<u8>) -> bool {
    if !v.is_finite() {
        return false;
    }
    if v == 0.0 {
        // Both zeros: `-0` would read as a different number to no one's benefit.
        out.push(b'0');
        return true;
    }
    if write_short_decimal(v, out) {
        return true;
    }
    let bits = v.to_bits();
    let (mantissa, exponent) = match (bits >> 52) & 0x7ff {
        0 => (bits & ((1 << 52) - 1), -1074),
        biased => ((bits & ((1 << 52) - 1)) | (1 << 52), biased as i32 - 1075),
    };
    write_shortest(
        ryu::Buffer::new().format_finite(v).as_bytes(),
        mantissa,
        exponent,
        MIN_TIE_F64,
        out,
    );
    true
}

/// `10^k` as a float and an integer, for the decimals `k` the fast path tries.
const DECIMAL_SCALES: [(f64, u64); 8] = [
    (1.0, 1),
    (10.0, 10),
    (100.0, 100),
    (1e3, 1_000),
    (1e4, 10_000),
    (1e5, 100_000),
    (1e6, 1_000_000),
    (1e7, 10_000_000),
];

/// Writes `v` if it has at most 7 decimals and `|v| × 10^k < 2^50`, the
/// common case of sensor values (`12`, `3.5`, `54.22809`), several times
/// faster than ryu, whose cost does not shrink with the digits.
///
/// For the first `k` with `round(v × 10^k) = r` and `r / 10^k == v`, the
/// decimal `r × 10^-k` is what Rust prints:
/// - it reads back as `v`: `r` and `10^k` are exact, and IEEE division is
///   correctly rounded, as is parsing;
/// - it is the only one with `k` decimals that does: `|v| < 2^50 / 10^k`
///   makes an ulp of `v` under `10^-k / 4`, so at most one multiple of
///   `10^-k` lies within half an ulp of `v`;
/// - none with fewer decimals does: if one, `g`, did at `j < k`, then
///   `v × 10^j` would be within `1/8` of the integer `g × 10^j`, and the
///   product's rounding error (under `2^50 × 2^-53 = 1/8`) could not have
///   moved it past a half, so `g` would have been found at `j`.
///
/// Fewest decimals means fewest significant digits, so this is the shortest
/// form, and the only one: no tie to break.
///
/// The same argument run at `k = 7` finds the answer in one step: if some
/// `g × 10^-j` (`j <= 7`) names `v`, `round(v × 10^7)` is exactly
/// `g × 10^(7-j)` and passes the check, and stripping its trailing zeros
/// gives back `j`; if the check fails, no `j <= 7` works. So a value with
/// more decimals (any mean or median) costs one multiply and one divide
/// before ryu, not eight. Only when `|v| × 10^7` reaches `2^50` are the
/// scales tried one by one.
#[inline]
fn write_short_decimal(v: f64, out: &mut Vec<u8>) -> bool {
    const LIMIT: f64 = (1u64 << 50) as f64;
    let Some(&(scale, divisor)) = DECIMAL_SCALES.last() else {
        return false;
    };
    let scaled = (v * scale).round();
    if scaled.abs() >= LIMIT {
        return write_short_decimal_by_scale(v, out);
    }
    if scaled / scale != v {
        return false;
    }
    // Exact: an integer below 2^50.
    let mut magnitude = scaled.abs() as u64;
    let mut divisor = divisor;
    while divisor > 1 && magnitude % 10 == 0 {
        magnitude /= 10;
        divisor /= 10;
    }
    write_decimal(scaled < 0.0, magnitude, divisor, out);
    true
}

/// [`write_short_decimal`] for large values: each scale in turn, up to the
/// first whose product reaches `2^50`.
#[cold]
fn write_short_decimal_by_scale(v: f64, out: &mut Vec<u8>) -> bool {
    const LIMIT: f64 = (1u64 << 50) as f64;
    for (scale, divisor) in DECIMAL_SCALES {
        let scaled = (v * scale).round();
        if scaled.abs() >= LIMIT {
            return false;
        }
        if scaled / scale == v {
            // Exact: an integer below 2^50.
            write_decimal(scaled < 0.0, scaled.abs() as u64, divisor, out);
            return true;
        }
    }
    false
}

/// Writes `±magnitude / divisor` (`divisor` a power of ten) with as many
/// decimals as `divisor` has zeros.
#[inline]
fn write_decimal(negative: bool, magnitude: u64, divisor: u64, out: &mut Vec<u8>) {
    if negative {
        out.push(b'-');
    }
    write_int(magnitude / divisor, out);
    if divisor > 1 {
        out.push(b'.');
        let fraction = magnitude % divisor;
        let mut place = divisor / 10;
        while place > fraction && place > 1 {
            out.push(b'0');
            place /= 10;
        }
        write_int(fraction, out);
    }
}

/// Writes `v` in the shortest form that reads back as the same `f32`.
#[inline]
pub(super) fn write_f32(v: f32, out: &mut Vec<u8>) -> bool {
    if !v.is_finite() {
        return false;
    }
    if v == 0.0 {
        out.push(b'0');
        return true;
    }
    let bits = v.to_bits();
    let (mantissa, exponent) = match (bits >> 23) & 0xff {
        0 => (bits & ((1 << 23) - 1), -149),
        biased => ((bits & ((1 << 23) - 1)) | (1 << 23), biased as i32 - 150),
    };
    let mut buffer = ryu::Buffer::new();
    let text = buffer.format_finite(v).as_bytes();
    write_shortest(text, u64::from(mantissa), exponent, MIN_TIE_F32, out);
    true
}

/// The least exact decimal digits (`odd × 5^q`) of a possible tie: 16 digits for `f64`.
const MIN_TIE_F64: u128 = 10u128.pow(15);
/// The same for `f32`: 7 digits.
const MIN_TIE_F32: u128 = 10u128.pow(6);

/// Writes ryu's `text` for the value `mantissa × 2^exponent` in the export's layout.
#[inline]
fn write_shortest(text: &[u8], mantissa: u64, exponent: i32, min_exact: u128, out: &mut Vec<u8>) {
    if tie_possible(mantissa, exponent, min_exact) || text.contains(&b'e') {
        Decimal::parse(text)
            .round_tie_up(mantissa, exponent)
            .write(out);
    } else {
        // The common case: already plain; integral values end in `.0`.
        out.extend_from_slice(text.strip_suffix(b".0").unwrap_or(text));
    }
}

/// Whether two shortest forms of `mantissa × 2^exponent` can tie (see
/// [`Decimal::round_tie_up`]).
///
/// Its exact decimal form is `odd × 5^q` digits at `10^-q`; a tie needs a
/// shortest form one digit shorter. A decimal of up to 15 significant digits
/// (6 for `f32`) is the only one of that length naming its float, so the
/// exact form must have at least 16 digits (7): `odd × 5^q >= 10^15`
/// (`min_exact`). And a shortest form has at most 17 digits (9), so
/// `5^q < 10^18` and `q <= 25`.
#[inline]
fn tie_possible(mantissa: u64, exponent: i32, min_exact: u128) -> bool {
    let zeros = mantissa.trailing_zeros();
    let q = -(exponent + zeros as i32);
    let Some(&power) = usize::try_from(q)
        .ok()
        .filter(|q| *q > 0)
        .and_then(|q| POWERS_OF_5.get(q))
    else {
        return false;
    };
    u128::from(mantissa >> zeros) * u128::from(power) >= min_exact
}

/// `5^q` for `q` up to 27.
const POWERS_OF_5: [u64; 28] = {
    let mut powers = [1u64; 28];
    let mut q = 1;
    while q < powers.len() {
        powers[q] = powers[q - 1] * 5;
        q += 1;
    }
    powers
};

/// A nonzero decimal `±digits × 10^exponent`, `digits` without trailing zeros.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    digits: u64,
    exponent: i32,
}

impl Decimal {
    /// Reads ryu's output (`-12.5`, `3.0`, `0.001`, `1e21`, `1.5e-7`): at
    /// most 17 significant digits, so `digits` cannot overflow.
    fn parse(ryu: &[u8]) -> Self {
        let (negative, text) = match ryu.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, ryu),
        };
        let mut digits = 0u64;
        let mut fraction_digits = 0i32;
        let mut in_fraction = false;
        let mut exponent = 0;
        for (i, &b) in text.iter().enumerate() {
            match b {
                b'0'..=b'9' => {
                    digits = digits
                        .saturating_mul(10)
                        .saturating_add(u64::from(b - b'0'));
                    fraction_digits += i32::from(in_fraction);
                }
                b'.' => in_fraction = true,
                _ => {
                    // `e`: the exponent follows.
                    exponent = parse_exponent(text.get(i + 1..).unwrap_or_default());
                    break;
                }
            }
        }
        Self {
            negative,
            digits,
            exponent: exponent - fraction_digits,
        }
        .trimmed()
    }

    fn trimmed(mut self) -> Self {
        while self.digits != 0 && self.digits % 10 == 0 {
            self.digits /= 10;
            self.exponent += 1;
        }
        self
    }

    /// Rounds a tie away from zero, as Rust's `Display` does, where ryu
    /// rounds it to even.
    ///
    /// `mantissa × 2^binary_exponent` is the exact value. A tie (the value
    /// exactly halfway between two shortest candidates) is only possible when
    /// that value has a fraction: with `mantissa` odd it is
    /// `mantissa × 5^q / 10^q` (`q = -binary_exponent`), whose last digit,
    /// a 5, stands at `10^-q`, and the two candidates end one place before
    /// it. Then ryu wrote the lower candidate exactly when
    /// `mantissa × 5^q = candidate × 10 + 5`.
    fn round_tie_up(self, mantissa: u64, binary_exponent: i32) -> Self {
        if mantissa == 0 {
            return self;
        }
        let zeros = mantissa.trailing_zeros();
        let odd = mantissa >> zeros;
        let Some(q) = binary_exponent
            .checked_add(zeros as i32)
            .and_then(|e| u32::try_from(-e).ok())
            .filter(|q| *q > 0)
        else {
            return self;
        };
        let candidate_exponent = 1 - q as i32;
        // How far `digits` must be scaled to end at the candidates' place; a
        // shortest form never has more than 20 digits there.
        let Ok(shift @ 0..=20) = u32::try_from(self.exponent - candidate_exponent) else {
            return self;
        };
        let tie = (|| {
            let candidate = u128::from(self.digits).checked_mul(10u128.checked_pow(shift)?)?;
            let exact = u128::from(odd).checked_mul(5u128.checked_pow(q)?)?;
            (exact == candidate.checked_mul(10)?.checked_add(5)?)
                .then(|| u64::try_from(candidate + 1).ok())
                .flatten()
        })();
        match tie {
            Some(digits) => Self {
                negative: self.negative,
                digits,
                exponent: candidate_exponent,
            }
            .trimmed(),
            None => self,
        }
    }

    /// Writes the number without exponent: `1230`, `12.3`, `0.00123`.
    fn write(self, out: &mut Vec<u8>) {
        if self.negative {
            out.push(b'-');
        }
        let mut buffer = itoa::Buffer::new();
        let digits = buffer.format(self.digits).as_bytes();
        match u32::try_from(-self.exponent) {
            // An integer.
            Err(_) | Ok(0) => {
                out.extend_from_slice(digits);
                push_zeros(out, self.exponent.unsigned_abs());
            }
            Ok(fraction) => match digits.len().checked_sub(fraction as usize) {
                Some(integer @ 1..) => {
                    let (integer, fraction) = digits.split_at(integer);
                    out.extend_from_slice(integer);
                    out.push(b'.');
                    out.extend_from_slice(fraction);
                }
                _ => {
                    out.extend_from_slice(b"0.");
                    push_zeros(out, fraction.saturating_sub(digits.len() as u32));
                    out.extend_from_slice(digits);
                }
            },
        }
    }
}

fn push_zeros(out: &mut Vec<u8>, count: u32) {
    out.resize(out.len() + count as usize, b'0');
}

/// Parses ryu's exponent: an optional `-` and at most three digits.
fn parse_exponent(text: &[u8]) -> i32 {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let magnitude = digits.iter().fold(0i32, |acc, d| {
        acc.saturating_mul(10)
            .saturating_add(i32::from(d.wrapping_sub(b'0')))
    });
    if negative { -magnitude } else { magnitude }
}
