//! Bytes eight at a time in a `u64` (SIMD within a register): the byte tests the reader's
//! scans and the JSON writer share. Each gives the high bit of every byte that passes; the
//! borrows and carries only ever add false marks above a true one, so the lowest mark, and
//! whether there is any, are exact.

/// `0x01` in every byte.
pub(crate) const ONES: u64 = 0x0101_0101_0101_0101;
/// `0x80` in every byte.
pub(crate) const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Fewer than eight bytes in one word, read in place: two overlapping halves, or the first,
/// middle and last byte with spaces above them. Every byte is in the word (some twice), and
/// bytes of equal length that differ give words that differ. Copied into a padded word
/// instead, a call to `memcpy` and a load its stores could not forward to were over half of
/// writing the signature's strings (its `kwargs` is nearly always `{}`), and a cost of
/// hashing every name whose length is not a multiple of eight.
pub(crate) fn short_word(bytes: &[u8]) -> u64 {
    const SPACES: u64 = u64::from_le_bytes(*b"        ");
    let n = bytes.len();
    debug_assert!(n < 8);
    let half = |at: usize| {
        let four: [u8; 4] = bytes[at..at + 4].try_into().expect("four bytes");
        u64::from(u32::from_le_bytes(four))
    };
    match n {
        0 => SPACES,
        1..=3 => {
            u64::from(bytes[0])
                | u64::from(bytes[n / 2]) << 8
                | u64::from(bytes[n - 1]) << 16
                | SPACES << 24
        }
        _ => half(0) | half(n - 4) << 32,
    }
}

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

#[cfg(test)]
mod tests {
    use super::short_word;

    #[test]
    fn a_short_word_holds_every_byte_and_tells_equal_lengths_apart() {
        // Every length under eight, every byte value at every position: the word marks the
        // byte where it is plain elsewhere, and changing one byte changes the word.
        for n in 0..8 {
            let base = vec![b'a'; n];
            let plain = short_word(&base);
            assert_eq!(
                plain
                    .to_le_bytes()
                    .iter()
                    .filter(|&&b| b != b'a' && b != b' ')
                    .count(),
                0
            );
            for at in 0..n {
                for byte in (0..=255u8).filter(|&b| b != b'a') {
                    let mut bytes = base.clone();
                    bytes[at] = byte;
                    let word = short_word(&bytes);
                    assert_ne!(word, plain, "{bytes:?}");
                    assert!(word.to_le_bytes().contains(&byte), "{bytes:?}");
                }
            }
        }
    }
}
