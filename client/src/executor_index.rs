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

/// [`index_for_bytes`] for a fixed number of executors, with the division replaced by a
/// multiplication (Lemire's "faster remainder by direct computation", exact for every 32-bit
/// dividend): Key_Shared dispatch computes one index per message, and the `div` instruction was
/// a visible part of the routing pass.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyIndexer {
    len: u32,
    /// `ceil(2^64 / len)`, wrapping to 0 for `len == 1` (where every index is 0 anyway).
    magic: u64,
}

impl KeyIndexer {
    /// An indexer over `len` executors.
    ///
    /// # Panics
    ///
    /// If `len` is 0 or does not fit in 31 bits (providers never have that many executors).
    pub(crate) fn new(len: usize) -> Self {
        assert!(
            len > 0 && len <= 0x7fff_ffff,
            "an index over {len} executors"
        );
        let len = len as u32;
        Self {
            len,
            magic: (u64::MAX / u64::from(len)).wrapping_add(1),
        }
    }

    /// Java's `(hash & Integer.MAX_VALUE) % len`, as [`index_for_hash`].
    #[inline]
    pub(crate) fn index_for_hash(&self, hash: u32) -> usize {
        let low_bits = self.magic.wrapping_mul(u64::from(hash & 0x7fff_ffff));
        ((u128::from(low_bits) * u128::from(self.len)) >> 64) as usize
    }

    /// As [`index_for_bytes`].
    #[inline]
    pub(crate) fn index_for_bytes(&self, key: &[u8]) -> usize {
        self.index_for_hash(murmur3_32(key, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        // Under Miri: fewer cases, and no failure file (Miri's isolation has no `getcwd`).
        #![proptest_config(if cfg!(miri) {
            ProptestConfig { cases: 8, failure_persistence: None, ..ProptestConfig::default() }
        } else {
            ProptestConfig::default()
        })]

        #[test]
        fn the_key_indexer_agrees_with_the_modulo(hash in any::<u32>(), len in 1usize..=4096) {
            prop_assert_eq!(KeyIndexer::new(len).index_for_hash(hash), index_for_hash(hash, len));
        }
    }

    #[test]
    fn the_key_indexer_agrees_with_the_modulo_at_the_edges() {
        let lens = [1, 2, 3, 7, 8, 16, 255, 1 << 20, 0x7fff_fffe, 0x7fff_ffff];
        let hashes = [
            0,
            1,
            2,
            0x7fff_fffe,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_ffff,
            0xdead_beef,
        ];
        for len in lens {
            let indexer = KeyIndexer::new(len);
            for hash in hashes {
                assert_eq!(
                    indexer.index_for_hash(hash),
                    index_for_hash(hash, len),
                    "{hash} % {len}"
                );
            }
        }
    }

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
                assert_eq!(
                    KeyIndexer::new(n).index_for_bytes(key.as_bytes()),
                    *index,
                    "key {key:?}, n {n}, by the key indexer"
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
