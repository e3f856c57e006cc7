//! The index math of the executor providers: which of N executors a call picks.
//!
//! Round robin and `Hash` keys are `ExecutorGroup`'s; what is Pulsar-specific lives here: the
//! index Java's client picks for key bytes.

use crate::murmur3::murmur3_32;

/// Java's `(hash & Integer.MAX_VALUE) % n`: the index Pulsar's `ExecutorProvider` picks for a
/// hash, so that the same hash picks the same index in every Pulsar client.
///
/// # Panics
///
/// If `len` is 0 (providers never have 0 executors).
#[inline]
pub(crate) fn index_for_hash(hash: u32, len: usize) -> usize {
    (hash & 0x7fff_ffff) as usize % len
}

/// The index for key bytes: Murmur3 x86 32-bit, seed 0, masked to 31 bits, modulo `len` —
/// Pulsar's `ExecutorProvider.getExecutor(byte[])`.
#[inline]
pub(crate) fn index_for_bytes(key: &[u8], len: usize) -> usize {
    index_for_hash(murmur3_32(key, 0), len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Indexes Pulsar's Java client picks (`getExecutor(byte[])`) for these UTF-8 keys with
    /// 1, 2, 3, 7, 8 and 16 executors, computed on Java 17 with Pulsar's algorithm.
    const JAVA_INDEXES: &[(&str, [usize; 6])] = &[
        ("", [0, 0, 0, 0, 0, 0]),
        ("a", [0, 0, 2, 4, 2, 2]),
        ("ab", [0, 1, 0, 6, 7, 15]),
        ("abc", [0, 0, 0, 1, 2, 10]),
        ("abcd", [0, 0, 0, 2, 2, 10]),
        ("abcde", [0, 0, 2, 2, 6, 6]),
        ("NONE_KEY", [0, 1, 2, 1, 3, 3]),
        ("key-1", [0, 0, 1, 6, 0, 0]),
        ("key-42", [0, 1, 2, 3, 7, 7]),
        ("order-12345", [0, 0, 2, 0, 6, 6]),
        ("Hello, world!", [0, 1, 1, 4, 3, 3]),
        ("\u{e9}t\u{e9}", [0, 1, 0, 5, 7, 15]),
        ("\u{6d88}\u{606f}", [0, 0, 0, 0, 0, 8]),
    ];

    #[test]
    fn key_bytes_pick_the_same_index_as_pulsars_java_client() {
        for (key, expected) in JAVA_INDEXES {
            for (n, index) in [1, 2, 3, 7, 8, 16].into_iter().zip(expected) {
                assert_eq!(
                    index_for_bytes(key.as_bytes(), n),
                    *index,
                    "key {key:?}, n {n}"
                );
            }
        }
        assert_eq!(index_for_bytes(&[0xff, 0x80, 0x00, 0x01, 0xfe], 7), 2);
    }

    #[test]
    fn the_hash_is_masked_to_31_bits_before_the_modulo() {
        // "ab" hashes to 2,613,040,991 (above i32::MAX): Java masks it to 465,557,343.
        assert_eq!(index_for_hash(2_613_040_991, 1_000_000_000), 465_557_343);
    }
}
