//! Bytes eight at a time in a `u64` (SIMD within a register): the byte tests the reader's
//! scans and the JSON writer share. Each gives the high bit of every byte that passes; the
//! borrows and carries only ever add false marks above a true one, so the lowest mark, and
//! whether there is any, are exact.

/// `0x01` in every byte.
pub(crate) const ONES: u64 = 0x0101_0101_0101_0101;
/// `0x80` in every byte.
pub(crate) const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The zero bytes of `word`.
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGHS
}

/// The bytes of `word` equal to `byte`.
pub(crate) fn bytes_equal(word: u64, byte: u8) -> u64 {
    zero_bytes(word ^ (u64::from(byte) * ONES))
}

/// The control bytes of `word` (under `0x20`; bytes from `0x80` are not marked).
pub(crate) fn control_bytes(word: u64) -> u64 {
    word.wrapping_sub(0x20 * ONES) & !word & HIGHS
}

/// The bytes of `word` that are not printable ASCII (under `0x20`, or `0x7f` and up).
pub(crate) fn unprintable_bytes(word: u64) -> u64 {
    // `0x7f` becomes `0x80`; from `0x80` the byte's own high bit is set.
    let high = word.wrapping_add(ONES) | word;
    control_bytes(word) | (high & HIGHS)
}
