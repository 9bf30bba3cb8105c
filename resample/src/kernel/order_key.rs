//! Finite `f64`s as `u64`s with the same order, so kernels compare integers.

const SIGN: u64 = 1 << 63;

/// Maps `value` to a `u64` ordered like `f64::total_cmp` (so -0.0 < 0.0).
#[inline]
pub(super) fn key(value: f64) -> u64 {
    let bits = value.to_bits();
    if bits & SIGN == 0 { bits | SIGN } else { !bits }
}

/// The inverse of [`key`].
#[inline]
pub(super) fn value(key: u64) -> f64 {
    f64::from_bits(if key & SIGN == 0 { !key } else { key & !SIGN })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preserves_order_and_round_trips() {
        let values = [
            f64::MIN,
            -1e300,
            -2.5,
            -f64::MIN_POSITIVE,
            -0.0,
            0.0,
            f64::MIN_POSITIVE,
            1.0,
            2.5,
            f64::MAX,
        ];
        for pair in values.windows(2) {
            assert!(key(pair[0]) < key(pair[1]), "{pair:?}");
        }
        for v in values {
            assert_eq!(value(key(v)).to_bits(), v.to_bits());
        }
    }
}
