//! Eight bytes tested at once ("SIMD within a register"): the writers skip long runs of
//! ordinary bytes (base64 of bundle objects is most of a catalog's text) a word at a time.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The eight bytes of `s` from `i`, as one little-endian word; `None` near the end.
pub(crate) fn word(s: &[u8], i: usize) -> Option<u64> {
    s.get(i..i + 8)
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
        .map(u64::from_le_bytes)
}

/// Whether any byte of `v` is zero (exact for "any": borrows only start at a zero byte).
fn has_zero(v: u64) -> bool {
    v.wrapping_sub(ONES) & !v & HIGHS != 0
}

/// Whether any byte of `w` equals `b`.
pub(crate) fn has(w: u64, b: u8) -> bool {
    has_zero(w ^ (ONES * u64::from(b)))
}

/// Whether any byte of `w` is below `n` (`n` at most 0x80; exact for "any").
pub(crate) fn has_below(w: u64, n: u8) -> bool {
    w.wrapping_sub(ONES * u64::from(n)) & !w & HIGHS != 0
}

/// Whether any byte of `w` is not ASCII.
pub(crate) fn has_high(w: u64) -> bool {
    w & HIGHS != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte value in every position, against the byte-at-a-time answer.
    #[test]
    fn agrees_with_bytewise() {
        for pos in 0..8 {
            for b in 0..=255u8 {
                let mut bytes = [b'a'; 8];
                bytes[pos] = b;
                let w = u64::from_le_bytes(bytes);
                assert_eq!(has(w, b':'), bytes.contains(&b':'), "{pos} {b}");
                assert_eq!(
                    has_below(w, 0x21),
                    bytes.iter().any(|&x| x < 0x21),
                    "{pos} {b}"
                );
                assert_eq!(has_high(w), bytes.iter().any(|&x| x >= 0x80), "{pos} {b}");
            }
        }
    }
}
