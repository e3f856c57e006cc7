//! `BatchTopUp`: a routing pass that drained only a few messages offers its core once, then
//! tops the batch up from the receive queue before it hands the batch on.
//!
//! # Why
//!
//! A routing pass costs the same per batch whatever the batch's size: a lock of each lane it
//! feeds, one `execute_jobs` call (a queue reservation, perhaps a wake-up of the listener
//! thread), and the lane's lines, which the listener thread writes for every job, taken back
//! by the router. A router that keeps up with its feeder drains the receive queue as fast as
//! it fills, so it hands on a few messages per batch and pays that cost every few messages,
//! on a core it shares with the feeder or the listener whenever the machine has fewer cores
//! than busy threads.
//!
//! Measured on the `consumer_dispatch` bench (Intel Xeon host, 2 vCPUs, 2026-12-06; one feeder,
//! the internal executor and one listener executor, so three busy threads on two cores): with
//! our executors the router drained 4 to 19 messages per batch (the mean of each of 4 rounds),
//! with std's mpsc executors, whose per-job boxing and send slow the router down, 167 to 255.
//! Ours then took 1.09x-1.24x std_mpsc's time per message and ~230-270 ns of CPU per message,
//! except in rounds where the kernel placed the threads well (~80-100 ns per message).
//!
//! # What it does
//!
//! When a drain returns fewer than [`SMALL_BATCH`] messages, and the drains have been that
//! small on average lately (a running mean, each drain weighing an eighth), the router yields
//! once (`sched_yield`): a feeder or listener queued on the router's core runs first, and the
//! feeder's messages gather meanwhile; a yield that finds its core otherwise free returns at
//! once (p50 0.41 us on the AMD EPYC host, `idle_spin.rs`; not re-measured here). Then it
//! drains again into the same batch, up to the batch's size. One yield per batch, never more. A
//! router that falls behind does not yield: its drains are large, and so is their mean, so the
//! odd small drain among them does not make it give up a core it is the bottleneck of. (Without
//! the mean, Key_Shared, whose router is the bottleneck with ~170 messages per drain on
//! average, ran 8-18% slower: 83.7 ns per message in a full run against 76.3 / 71.1 before,
//! 8-13% in three A/Bs.) And a pass's first drain never yields: a message that comes alone (a
//! consumer at a low rate) is handed on at once, with no system call and no wait behind another
//! thread; only a pass that finds more messages after its first batch, a feeder that is
//! streaming, yields for its small drains. (The rate bench's passes moved 88 to 1,210 messages
//! each, in batches of 4 to 40.)
//!
//! Beside a CPU hog a yield can hand the hog a whole time slice (milliseconds; see
//! `pulsar_common`'s `idle_spin.rs`, "Yields beside a CPU hog"). A yield that took
//! [`SLOW_YIELD`] or more turns the yields off for [`OFF_AFTER_SLOW_YIELD`]; the router then
//! hands on what it drains, as it did before.
//!
//! Measured on the same host and bench, alternated processes of each build, medians of the
//! per-round ratios (ours ÷ std_mpsc, ours ÷ the delay heap):
//!
//! - First look (2 processes x 3 rounds; a throwaway build with the yield for every drain
//!   under 32 and no other rule): Shared 1.17x -> 0.65x and 0.36x -> 0.24x, CPU per message
//!   232 -> 143 ns; Key_Shared 0.29x -> 0.28x; the oversubscribed rows within their wide
//!   spread (Shared 0.88x -> 0.75x, Key_Shared 2.17x -> 1.97x). A threshold of 128 did worse
//!   (Shared 0.73x, oversubscribed Shared 1.78x).
//! - With the slow-yield rule (4 processes x 3 rounds): Shared 0.96x -> 0.85x (0.81x without
//!   the rule), 0.35x -> 0.31x; Key_Shared 0.28x -> 0.31x. Burners pinned one per core
//!   (2 x 3): oversubscribed Shared 0.81x -> 0.85x, Key_Shared 1.88x -> 3.55x, both within
//!   spreads of 0.4x-7.3x.
//! - With the running mean as well (5 processes x 3 rounds; base, slow-yield rule alone, both
//!   rules): Shared 0.80x / 0.68x / 0.70x (worst round 1.32x / 0.93x / 0.92x), 0.30x / 0.30x /
//!   0.25x; Key_Shared 0.29x / 0.32x / 0.29x, 0.24x / 0.27x / 0.21x.
//! - With the first drain of a pass exempt as well (5 processes x 3 rounds; base, both rules,
//!   all three): Shared 0.77x / 0.75x / 0.80x, 0.34x / 0.26x / 0.26x, CPU per message 221 /
//!   175 / 174 ns; Key_Shared 0.30x / 0.29x / 0.28x, 0.22x / 0.26x / 0.25x. Oversubscribed
//!   (2 x 3, base / all three): Shared 1.65x / 2.96x and Key_Shared 3.03x / 1.70x, rounds
//!   ranging from 0.4x to 11x in both builds.
//!
//! Two full bench runs of the code before the first-drain rule are in the README's results.

use std::time::{Duration, Instant};

/// A drained batch smaller than this is topped up after a yield (an eighth of the routing
/// batch).
pub(crate) const SMALL_BATCH: usize = 32;

/// A yield this long lost the core to another busy thread for a time slice.
pub(crate) const SLOW_YIELD: Duration = Duration::from_millis(1);

/// How long the yields stay off after a slow one.
pub(crate) const OFF_AFTER_SLOW_YIELD: Duration = Duration::from_millis(100);

/// The weight of the latest drain in the running mean of drains: 1 / `MEAN_WEIGHT`.
const MEAN_WEIGHT: u32 = 8;

/// Whether a routing pass yields before it tops up a small batch; kept with the routing state,
/// under the routing lock.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchTopUp {
    /// Yields are off until then (after a slow yield).
    off_until: Option<Instant>,
    /// The running mean of the drains' sizes (before any top-up), times [`MEAN_WEIGHT`]:
    /// each drain moves it an eighth of the way to its own size.
    mean_drain_scaled: u32,
}

impl BatchTopUp {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// If `drained` messages are a small batch, not the first of their routing pass
    /// (`first_of_pass`), the recent drains were small on average, and yields are on, yields
    /// once (through `offer_core`) and calls `top_up`, which drains more into the same batch.
    /// Reads the clock (through `now`) only when it would yield.
    #[inline]
    pub(crate) fn top_up_small_batch(
        &mut self,
        drained: usize,
        first_of_pass: bool,
        mut now: impl FnMut() -> Instant,
        offer_core: impl FnOnce(),
        top_up: impl FnOnce(),
    ) {
        let scaled = self.mean_drain_scaled;
        self.mean_drain_scaled = (scaled - scaled / MEAN_WEIGHT)
            .saturating_add(u32::try_from(drained).unwrap_or(u32::MAX));
        if first_of_pass || drained >= SMALL_BATCH || self.mean_drain() >= SMALL_BATCH {
            return;
        }
        let start = now();
        if self.off_until.is_some_and(|until| start < until) {
            return;
        }
        self.off_until = None;
        offer_core();
        let end = now();
        if end.saturating_duration_since(start) >= SLOW_YIELD {
            self.off_until = Some(end + OFF_AFTER_SLOW_YIELD);
        }
        top_up();
    }

    /// The running mean of the drains' sizes.
    fn mean_drain(&self) -> usize {
        (self.mean_drain_scaled / MEAN_WEIGHT) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs one batch of `drained` messages at `start`, the yield taking `yield_takes`; whether
    /// it yielded and whether it topped up.
    fn batch(
        policy: &mut BatchTopUp,
        drained: usize,
        start: Instant,
        yield_takes: Duration,
    ) -> (bool, bool) {
        let mut reads = 0;
        let mut yielded = false;
        let mut topped_up = false;
        policy.top_up_small_batch(
            drained,
            false,
            || {
                reads += 1;
                if reads == 1 {
                    start
                } else {
                    start + yield_takes
                }
            },
            || yielded = true,
            || topped_up = true,
        );
        assert_eq!(
            yielded, topped_up,
            "a top-up follows every yield, and only a yield"
        );
        (yielded, topped_up)
    }

    #[test]
    fn only_a_small_batch_yields_and_is_topped_up() {
        let start = Instant::now();
        for (drained, yields) in [
            (SMALL_BATCH, false),
            (256, false),
            (SMALL_BATCH - 1, true),
            (1, true),
        ] {
            let mut policy = BatchTopUp::new();
            assert_eq!(
                batch(&mut policy, drained, start, Duration::ZERO),
                (yields, yields),
                "a fresh router's drain of {drained}"
            );
            assert_eq!(policy.off_until, None, "a fast yield leaves the yields on");
        }
        let mut policy = BatchTopUp::new();
        for _ in 0..100 {
            assert_eq!(batch(&mut policy, 4, start, Duration::ZERO), (true, true));
        }
    }

    #[test]
    fn a_small_drain_among_large_ones_does_not_yield() {
        let start = Instant::now();
        let mut policy = BatchTopUp::new();
        for _ in 0..32 {
            assert_eq!(
                batch(&mut policy, 256, start, Duration::ZERO),
                (false, false)
            );
        }
        assert!(
            policy.mean_drain() > 240,
            "the mean is near 256: {}",
            policy.mean_drain()
        );
        assert_eq!(batch(&mut policy, 1, start, Duration::ZERO), (false, false));
        // A run of small drains brings the mean down, and the yields back.
        let mut small = 1;
        while batch(&mut policy, 1, start, Duration::ZERO) == (false, false) {
            small += 1;
            assert!(small < 64, "the mean never fell below SMALL_BATCH");
        }
        assert!(policy.mean_drain() < SMALL_BATCH);
        assert!(small > 8, "one small drain is not enough: {small}");
    }

    #[test]
    fn the_first_drain_of_a_pass_never_yields_nor_reads_the_clock() {
        let mut policy = BatchTopUp::new();
        for _ in 0..100 {
            policy.top_up_small_batch(
                1,
                true,
                || panic!("the clock was read for a pass's first drain"),
                || panic!("a pass's first drain yielded"),
                || panic!("a pass's first drain was topped up"),
            );
        }
        assert_eq!(policy.mean_drain(), 1, "it still counts in the mean");
        let start = Instant::now();
        assert_eq!(batch(&mut policy, 1, start, Duration::ZERO), (true, true));
    }

    #[test]
    fn a_large_batch_does_not_read_the_clock() {
        let mut policy = BatchTopUp::new();
        policy.top_up_small_batch(
            SMALL_BATCH,
            false,
            || panic!("the clock was read for a large batch"),
            || panic!("a large batch yielded"),
            || panic!("a large batch was topped up"),
        );
    }

    #[test]
    fn a_slow_yield_turns_the_yields_off_for_a_while() {
        let start = Instant::now();
        let mut policy = BatchTopUp::new();
        let slow = SLOW_YIELD;
        assert_eq!(
            batch(&mut policy, 1, start, slow),
            (true, true),
            "it still tops up"
        );
        let resumed = start + slow;
        assert_eq!(policy.off_until, Some(resumed + OFF_AFTER_SLOW_YIELD));
        // Off: small batches go on as they are.
        let just_before = resumed + OFF_AFTER_SLOW_YIELD - Duration::from_micros(1);
        assert_eq!(
            batch(&mut policy, 1, just_before, Duration::ZERO),
            (false, false)
        );
        // On again once the time is up, and a fast yield then leaves them on.
        let after = resumed + OFF_AFTER_SLOW_YIELD;
        assert_eq!(batch(&mut policy, 1, after, Duration::ZERO), (true, true));
        assert_eq!(policy.off_until, None);
        // A yield just under the limit is not slow.
        let almost = SLOW_YIELD - Duration::from_micros(1);
        assert_eq!(batch(&mut policy, 1, after, almost), (true, true));
        assert_eq!(policy.off_until, None);
    }
}
