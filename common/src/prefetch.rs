//! `prefetch::for_write`: asks the core to fetch a cache line in the exclusive state ahead of a
//! store to it, so that the store does not wait for another core's copy to be invalidated.
//!
//! # Why
//!
//! A producer of a queue shared with another thread writes slots that the consumer read last:
//! the lines sit in the consumer's cache, and each store to a new line needs it back (a
//! read-for-ownership, one core-to-core round trip, 120-134 ns on the Intel Xeon host of
//! runs BR/BS). A store alone would retire into the store buffer and wait there, but the
//! producer's next locked instruction (the unlock of the executor's queue lock, the next
//! `put`'s compare-and-swap) drains the store buffer first: every other `execute` waited out a
//! whole round trip inside the lock. `PREFETCHW` starts that round trip a few slots early,
//! outside any locked instruction's wait. The same holds for a timer entry written into the
//! memory of one the worker fired last (`executors/scheduled/entry_blocks.rs`).
//!
//! It must be `PREFETCHW`: a read prefetch (`PREFETCHT0`) fetches the line *shared*, which
//! takes it from the consumer early and still leaves the store an upgrade to wait for.
//!
//! # Measured
//!
//! Intel Xeon host (2 vCPUs, Linux 6.18), 2026-12-06; alternated processes of each build,
//! medians (ratios taken per round). The executor's ring (`Ring::push_back`), hand-off bench at
//! K=256, 3 processes x 3 rounds, ours ÷ the fastest peer (us per batch):
//!
//! | build | S=1 | S=2 | S=8 |
//! |---|---:|---:|---:|
//! | no prefetch | 0.55x (39.8) | 0.63x (52.9) | 0.76x |
//! | `PREFETCHW` 64 bytes past the tail | 0.49x (35.6) | 0.57x (48.1) | 0.82x |
//! | `PREFETCHW` 128 bytes past the tail (kept) | 0.47x (33.6) | 0.56x (48.3) | 0.83x |
//! | `PREFETCHT0` 64 bytes past the tail | 0.69x (49.8) | 0.75x (60.7) | 0.96x |
//!
//! S=8 stays within its spread (eight submitters contend for the lock itself), as did the
//! K=16 and oversubscribed rows in a second A/B of the whole bench (3 x 3: K=256 S=1 39.2 ->
//! 34.7 us, S=2 53.8 -> 49.0).
//!
//! The blocking queue's `put` (128 bytes past the slot it writes), `queue` bench, 4 processes
//! x 3 rounds, ns per item before -> after: 1 producer 32.2 -> 16.1, 2 producers 23.8 -> 18.2,
//! 4 producers 21.1 -> 18.5, 1 producer beside 2 hogs 37.8 -> 30.8; the ping-pong (one item in
//! flight: nothing to fetch ahead) 325 -> 329. The consumer's receive queue is this queue:
//! `consumer_dispatch` Shared, 4 x 3, 124.5 -> 104.2 ns per message (190.7 -> 150.6 CPU ns),
//! ÷ std_mpsc 0.80x -> 0.69x, ÷ the delay heap 0.28x -> 0.23x; Key_Shared 78.2 -> 78.8.
//!
//! The kept timer entries (`EntryBlocks::take` prefetches the block the next arm gets),
//! `schedule(Duration::ZERO)` hand-off at K=256, 4 x 3: 335 -> 247 ns per task, ÷ the delay
//! heap 0.94x -> 0.65x.
//!
//! # Where it runs
//!
//! x86-64 CPUs that report `PRFCHW` (CPUID leaf `0x8000_0001`, ECX bit 8; Linux shows it as
//! `3dnowprefetch`; by the vendors' documentation, AMD since the K6-2 and Intel since Broadwell:
//! only this Intel Xeon host was measured). Elsewhere, under Miri and
//! under loom, [`for_write`] does nothing. The first call reads CPUID; later ones load one
//! cached byte.

/// How far past the slot it writes a producer prefetches for its next stores: two cache lines
/// (four of the executor's 32-byte task slots, one or two of the queue's message slots).
/// Measured on the executor's ring, a little better than one line (table above); the blocking
/// queue uses the same distance, not measured against another.
pub(crate) const AHEAD: usize = 128;

/// Prefetches the cache line holding `address` for a store, where the CPU can; otherwise does
/// nothing. A hint: any address is allowed (dangling, unaligned, past an allocation's end),
/// nothing is read or written, and nothing faults.
#[inline]
pub(crate) fn for_write<T>(address: *const T) {
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    if x86_64::has_prefetchw() {
        // SAFETY: `PREFETCHW` is a hint with no architectural effect: it never faults, whatever
        // the address (one that is invalid or unmapped is ignored), reads and writes no memory
        // the program can observe, leaves the flags alone and uses no stack. The CPU has the
        // instruction (`has_prefetchw`).
        #[allow(unsafe_code)]
        unsafe {
            std::arch::asm!(
                "prefetchw [{address}]",
                address = in(reg) address,
                options(nostack, preserves_flags, readonly)
            );
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
    let _ = address;
}

#[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
mod x86_64 {
    use crate::decided_once::DecidedOnce;

    /// Whether the CPU has `PREFETCHW`, read once.
    static PREFETCHW: DecidedOnce = DecidedOnce::new();

    #[inline]
    pub(super) fn has_prefetchw() -> bool {
        PREFETCHW.get(detect)
    }

    #[cold]
    fn detect() -> bool {
        const EXTENDED_FEATURES: u32 = 0x8000_0001;
        const PRFCHW: u32 = 1 << 8;
        // `__cpuid` is safe from Rust 1.87 on and `unsafe` before (the workspace's
        // rust-version is older).
        // SAFETY: CPUID exists on every x86-64 CPU; leaf 0x8000_0000 (the highest extended
        // leaf) is defined on all of them, and the feature leaf is read only if it exists.
        #[allow(unused_unsafe, unsafe_code)]
        unsafe {
            std::arch::x86_64::__cpuid(0x8000_0000).eax >= EXTENDED_FEATURES
                && std::arch::x86_64::__cpuid(EXTENDED_FEATURES).ecx & PRFCHW != 0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefetch_of_any_address_changes_nothing() {
        let mut slots = [0u64; 32];
        for_write(slots.as_ptr());
        // Past the end, dangling and null: hints, never accesses.
        for_write(slots.as_ptr().wrapping_add(1_000));
        for_write(std::ptr::NonNull::<u64>::dangling().as_ptr());
        for_write(std::ptr::null::<u64>());
        slots[3] = 7;
        assert_eq!(slots.iter().sum::<u64>(), 7);
    }

    /// The detection agrees with what the operating system reports (Linux names the CPUID bit
    /// `3dnowprefetch` in `/proc/cpuinfo`). Natively only: valgrind's CPUID hides the bit, so
    /// the valgrind step leaves this test out.
    #[test]
    #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri), not(loom)))]
    fn the_detection_agrees_with_the_kernel() {
        let Ok(cpuinfo) = std::fs::read_to_string("/proc/cpuinfo") else {
            return; // no procfs (a sandbox): nothing to compare with
        };
        let kernel_says = cpuinfo
            .lines()
            .find(|line| line.starts_with("flags"))
            .is_some_and(|flags| flags.split_whitespace().any(|f| f == "3dnowprefetch"));
        assert_eq!(x86_64::has_prefetchw(), kernel_says);
        assert_eq!(
            x86_64::has_prefetchw(),
            kernel_says,
            "the cached answer too"
        );
    }
}
