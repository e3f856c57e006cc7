//! Netty's allocation size table: 16..=496 in steps of 16, then powers of two 512..=2^30.

/// Entries below 512: 16, 32, ..., 496.
const SMALL_STEPS: usize = 31;
/// Powers of two 2^9 ..= 2^30.
const POWERS: usize = 22;

/// Number of sizes in [`SIZE_TABLE`].
pub const SIZE_TABLE_LEN: usize = SMALL_STEPS + POWERS;

/// The sizes an [`AdaptiveBufAllocator`](super::AdaptiveBufAllocator) moves between, ascending:
/// `16, 32, ..., 496` (steps of 16), then `512, 1024, ..., 1_073_741_824` (powers of two). The
/// same 53 sizes as Netty's `AdaptiveRecvByteBufAllocator` and SOFAJRaft's port of it.
///
/// # Examples
///
/// ```
/// use pulsar_common::pool::SIZE_TABLE;
///
/// assert_eq!(SIZE_TABLE.len(), 53);
/// assert_eq!(&SIZE_TABLE[..3], &[16, 32, 48]);
/// assert_eq!(SIZE_TABLE[30], 496);
/// assert_eq!(SIZE_TABLE[31], 512);
/// assert_eq!(SIZE_TABLE[52], 1 << 30);
/// ```
pub const SIZE_TABLE: [usize; SIZE_TABLE_LEN] = build();

const fn build() -> [usize; SIZE_TABLE_LEN] {
    let mut table = [0; SIZE_TABLE_LEN];
    let mut i = 0;
    while i < SMALL_STEPS {
        table[i] = 16 * (i + 1);
        i += 1;
    }
    let mut p = 0;
    while p < POWERS {
        table[SMALL_STEPS + p] = 512 << p;
        p += 1;
    }
    table
}

/// The index of the smallest table size `>= size`, or the last index when `size` exceeds the
/// largest (Netty's `getSizeTableIndex`).
pub(crate) fn ceil_index(size: usize) -> usize {
    SIZE_TABLE
        .partition_point(|&entry| entry < size)
        .min(SIZE_TABLE_LEN - 1)
}

/// The index of the largest table size `<= size`, or 0 when `size` is below the smallest.
pub(crate) fn floor_index(size: usize) -> usize {
    SIZE_TABLE
        .partition_point(|&entry| entry <= size)
        .saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_strictly_ascending() {
        assert!(SIZE_TABLE.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn ceil_and_floor_bracket_every_size() {
        for size in [
            1,
            15,
            16,
            17,
            496,
            497,
            511,
            512,
            513,
            1 << 20,
            (1 << 30) + 1,
        ] {
            let ceil = SIZE_TABLE[ceil_index(size)];
            let floor = SIZE_TABLE[floor_index(size)];
            assert!(ceil >= size || ceil == 1 << 30, "ceil of {size}");
            assert!(floor <= size || floor == 16, "floor of {size}");
        }
        assert_eq!(ceil_index(16), 0);
        assert_eq!(ceil_index(17), 1);
        assert_eq!(floor_index(17), 0);
        assert_eq!(floor_index(511), 30);
        assert_eq!(ceil_index(511), 31);
    }
}
