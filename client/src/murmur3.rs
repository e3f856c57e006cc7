//! `murmur3_32`: MurmurHash3 x86 32-bit, the key hash Pulsar's clients agree on.

/// MurmurHash3 x86 32-bit of `data` with `seed` (Austin Appleby's `MurmurHash3_x86_32`).
///
/// With seed 0 and the result masked to 31 bits this is Pulsar's `Murmur3_32Hash.makeHash`,
/// the hash every Pulsar client uses to route a key (Key_Shared listener executors, key-based
/// partition routing), so clients in different languages pick the same index for the same
/// key bytes.
///
/// # Examples
///
/// ```
/// use pulsar_client::murmur3_32;
///
/// assert_eq!(murmur3_32(b"abc", 0), 0xB3DD_93FA);
/// assert_eq!(murmur3_32(b"", 0), 0);
/// ```
pub fn murmur3_32(data: &[u8], seed: u32) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;

    fn mix_k1(k1: u32) -> u32 {
        k1.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
    }

    let mut h1 = seed;
    let mut blocks = data.chunks_exact(4);
    for block in &mut blocks {
        let k1 = u32::from_le_bytes([block[0], block[1], block[2], block[3]]);
        h1 ^= mix_k1(k1);
        h1 = h1.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = blocks.remainder();
    let mut k1 = 0u32;
    for (i, byte) in tail.iter().enumerate() {
        k1 ^= u32::from(*byte) << (8 * i);
    }
    if !tail.is_empty() {
        h1 ^= mix_k1(k1);
    }
    // The length is mixed in modulo 2^32, as in the reference (a `uint32_t` there, an `int` in
    // Java).
    h1 ^= data.len() as u32;
    fmix32(h1)
}

/// The final avalanche of MurmurHash3.
fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

#[cfg(test)]
mod tests {
    use super::murmur3_32;

    /// Values produced by Pulsar's `Murmur3_32Hash.makeHash0` algorithm run on Java 17
    /// (UTF-8 key bytes), before the 31-bit mask.
    const JAVA_REFERENCE: &[(&str, u32)] = &[
        ("", 0),
        ("a", 1_009_084_850),
        ("ab", 2_613_040_991),
        ("abc", 3_017_643_002),
        ("abcd", 1_139_631_978),
        ("abcde", 3_902_511_862),
        ("NONE_KEY", 2_652_225_187),
        ("key-1", 2_561_742_240),
        ("key-42", 81_749_783),
        ("order-12345", 1_785_094_598),
        ("Hello, world!", 3_224_780_355),
        ("\u{e9}t\u{e9}", 865_297_935),
        ("\u{6d88}\u{606f}", 656_612_040),
    ];

    #[test]
    fn matches_pulsars_java_implementation_for_every_tail_length() {
        for (key, expected) in JAVA_REFERENCE {
            assert_eq!(murmur3_32(key.as_bytes(), 0), *expected, "key {key:?}");
        }
    }

    #[test]
    fn bytes_above_0x7f_are_mixed_as_unsigned() {
        // Java's bytes are signed; Pulsar masks each tail byte with 0xff.
        assert_eq!(
            murmur3_32(&[0xff, 0x80, 0x00, 0x01, 0xfe], 0),
            1_809_878_464
        );
    }

    #[test]
    fn the_seed_changes_the_hash() {
        assert_ne!(murmur3_32(b"abc", 0), murmur3_32(b"abc", 1));
    }
}
