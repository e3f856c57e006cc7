//! `due_stream`: whether the worker waits a moment for more zero-delay timers before it takes
//! the producers' lock — a per-worker-thread policy for a stream of `schedule(Duration::ZERO, ..)`.
//!
//! # Why
//!
//! A producer arming zero-delay timers one after another takes the queue lock for each. A
//! worker that is faster than it (it only fires them) sees each timer the moment it is armed
//! and takes the same lock to move it into its due list: one timer per pass, and the lock's
//! cache line crosses between the cores twice per timer, each time while the other side
//! waits for it (on the Intel host of 2026-12-01 a line takes 175-325 ns to go there and
//! back). Waiting a few microseconds first lets a few timers gather, so one pass moves
//! several. First measured on 2026-12-01 (another Intel host; K=256 `schedule(Duration::ZERO)`
//! hand-off, 3 x 5 rounds alternated with the build before): a 2 us wait took it from
//! 0.96-1.18x the delay heap's time per task (median ~1.02x) to 0.61-0.87x (median ~0.74x);
//! an earlier probe gave ~0.8x for 1 us and ~0.7x for 3 us. The plain `execute` hand-off and
//! timer lateness did not move. The rule of today and its figures are below.
//!
//! # When, and how long
//!
//! When the timer the worker finds due (the earliest) fell due less than [`STREAM_GAP`] after
//! the worker's last pass that moved timers ended, or before it ended (it was armed while the
//! worker fired the others): timers are streaming in. The worker then waits until that timer
//! has been due for [`STREAM_LINGER`], and no longer: no timer waits more than that for others
//! to gather, and a worker that has fallen behind its producers (the timers it finds have
//! waited longer) takes them at once. It waits the same way whether it found the timer due
//! when it came back from firing the last pass, or saw it fall due while it spun for work. A
//! timer that comes alone, or in a stream sparser than [`STREAM_GAP`], is taken at once. Never
//! under loom or Miri (they check the blocking paths) nor on a single CPU (the timers the
//! worker waits for need its core), as for the idle spin (`idle_spin.rs`). The wait never
//! yields: it is shorter than any time slice.
//!
//! # The rules before this one
//!
//! Until 2026-12-06 the worker waited 2 us, and only when its last pass had moved one or two
//! timers (and ended less than 10 us ago), and only when it found a timer due as it came back
//! from firing. A wait that gathered three or more turned the next wait off; that pass then
//! took one timer, which turned the wait on again: every other pass took a single timer.
//! Counted on the Intel host of 2026-12-06 (K=256 hand-off): 1.99-2.12 timers per pass,
//! against 7.45 when every pass of the stream waited. A rule of that day (88f295b) waited 3 us
//! on every pass of a stream while the running mean of timers per pass stayed below 16; the
//! memory of fired entries then made the producer faster (`entry_blocks.rs`), and the hand-off
//! lost its gain (458 ns per task against 389 without kept memory): the worker's share of time
//! in the wait fell from ~10% to ~5% of the profile, as if passes gathering 16 or more in 3 us
//! turned the waits off and on again (inferred from the profile, not counted). Bounding the wait by the earliest
//! timer's age needs no such count. The K=256 `schedule(Duration::ZERO)` hand-off on that
//! host, ours ÷ the delay heap, median (range) over 4-5 alternated processes x 3 rounds each
//! (the rows of one block ran side by side; throwaway builds read the variants from the
//! environment):
//!
//! | rule | ns per task | ours ÷ delay heap |
//! |---|---:|---:|
//! | one or two moved, 2 us (before) | 635 | 1.77x (1.52-2.08) |
//! | any pass, 1 us | 638 | 1.73x |
//! | any pass, 2 us | 433 | 1.12x |
//! | any pass, 3 us | 390 | 1.04-1.08x |
//! | any pass, 4 / 6 / 8 us | 383-399 | 1.08-1.12x |
//! | any pass, 3 us, below the mean's limit; handle shares on their own line (88f295b) | 366-389 | 1.05-1.07x |
//! | + kept entry memory; this rule (3 us from the earliest's deadline) | 294 | 0.84x (0.70-0.92) |
//! | the same with a 2 us / 5 us bound (and a 10 us gap) | 338 / 264 | 0.95x / 0.76x |
//! | the same waiting a full 3 us whenever the earliest has waited less (10 us gap) | 273 | 0.77x |
//!
//! The last row gathers more but lets a timer wait up to 6 us; the bound of 3 us keeps every
//! timer's added wait at 3 us or less.
//!
//! # What it costs
//!
//! Latency, for a timer that arrives in a dense stream. Probed on 2026-12-06 (Intel host): one
//! producer arming a zero-delay timer every 0.25 to 16 us, 50,000 timers per spacing,
//! arm-to-run latency, three runs of each build (the probe is
//! `microbench/examples/zero_delay_stream_latency.rs`). "Before" is the build of the
//! session's start (the rule of one or two moved, 2 us; 2-6 runs), "88f295b" the mean's rule:
//!
//! | spacing | p50 now | p50 88f295b | p50 before | p90 now | p90 88f295b | p90 before |
//! |---|---:|---:|---:|---:|---:|---:|
//! | 0.25, 0.5 us | 2.6-2.9 us | 3.7-6.2 us | 2.4-2.8 us | 3.8-4.3 us (one run 17.7) | 5.4-9.0 us | 3.1-3.4 us |
//! | 1 us | 2.7 | 2.7 | 1.4-1.7 | 3.6 | 4.4 | 2.9-3.2 |
//! | 2 us | 1.8 | 0.7 | 0.75-0.8 | 3.6 | 1.4 | 1.4-1.6 |
//! | 4 us | 0.9-1.0 | 0.7 | 0.75-0.8 | 3.5 | 1.4 | 1.4-1.6 |
//! | 8, 16 us | 0.9-1.0 | 0.7 | 0.75-0.8 | 0.9-1.1 | 1.2-1.4 | 1.4-1.6 |
//!
//! So a stream denser than one timer per microsecond pays up to ~1 us more at the median than
//! at the session's start, for 2.1x the throughput; at 2-4 us spacings a tenth of the timers
//! or more wait the full 3 us (they fall due within 1 us of a pass that ended late); a sparse
//! stream pays ~0.2 us at the median and gains at the 90th percentile (the entry's memory
//! comes from the worker's cache, not the allocator's: `entry_blocks.rs`). The p99 moves with
//! the machine's noise in every build (3-30 us). Every build also has runs where a large share
//! of the timers waited 0.2-5 ms, nearly always at the first spacing of a run (the worker's
//! and the allocator's warm-up; not traced).

use crate::idle_spin::single_cpu;
use crate::sync::SPIN_ENABLED;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// How long the earliest due timer of a stream may wait for others to gather.
pub(crate) const STREAM_LINGER: Duration = Duration::from_micros(3);
/// A timer due this soon after the worker's last pass that moved timers ended (or before it
/// ended) means timers are streaming in.
pub(crate) const STREAM_GAP: Duration = Duration::from_micros(1);

std::thread_local! {
    /// When the calling worker's last pass that moved timers ended.
    static LAST_TAKE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Records a pass that moved `moved` due timers at `now` (worker only).
#[inline]
pub(crate) fn record_take(now: Instant, moved: usize) {
    if moved > 0 {
        LAST_TAKE.with(|last| last.set(Some(now)));
    }
}

/// How long a worker about to take due timers at `now`, the earliest of them due for
/// `overdue` already, waits, its last pass that moved timers having ended at `last_take`
/// (module docs).
fn linger_for(last_take: Option<Instant>, now: Instant, overdue: Duration) -> Duration {
    let Some(last_take) = last_take else {
        return Duration::ZERO;
    };
    let earliest_due = now.checked_sub(overdue).unwrap_or(now);
    if earliest_due.saturating_duration_since(last_take) < STREAM_GAP {
        STREAM_LINGER.saturating_sub(overdue)
    } else {
        Duration::ZERO
    }
}

/// Before the worker takes the lock for timers due at `now`, the earliest due for `overdue`
/// already: if timers are streaming in, waits until that one has waited [`STREAM_LINGER`]
/// (module docs).
#[inline]
pub(crate) fn linger_if_streaming(now: Instant, overdue: Duration) {
    if !SPIN_ENABLED || single_cpu() {
        return;
    }
    let wait = linger_for(LAST_TAKE.with(Cell::get), now, overdue);
    if !wait.is_zero() {
        let until = now + wait;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_stream_waits_until_its_earliest_timer_has_waited_the_linger() {
        let at = Instant::now();
        let soon = at + STREAM_GAP / 2;
        assert_eq!(linger_for(Some(at), soon, Duration::ZERO), STREAM_LINGER);
        // Due before the last pass ended (armed while the worker fired the others), found now.
        let half = STREAM_LINGER / 2;
        assert_eq!(
            linger_for(Some(at), at + half, STREAM_GAP + half),
            STREAM_LINGER - STREAM_GAP - half,
            "the earliest timer has waited part of it already"
        );
    }

    #[test]
    fn a_timer_alone_or_one_that_waited_the_linger_already_is_taken_at_once() {
        let at = Instant::now();
        assert_eq!(
            linger_for(None, at, Duration::ZERO),
            Duration::ZERO,
            "no pass yet"
        );
        assert_eq!(
            linger_for(Some(at), at + STREAM_GAP, Duration::ZERO),
            Duration::ZERO,
            "due a gap after the last pass: a sparse stream pays nothing"
        );
        // Found late, but due soon after the last pass: no gap, and the wait counts from when
        // it fell due.
        let late = STREAM_GAP + STREAM_GAP / 2;
        assert_eq!(
            linger_for(Some(at), at + STREAM_GAP * 2, late),
            STREAM_LINGER - late
        );
        // A worker behind its producers finds timers that have waited longer: it never adds
        // to their wait.
        assert_eq!(
            linger_for(
                Some(at),
                at + STREAM_LINGER * 6,
                STREAM_LINGER * 5 + STREAM_GAP * 5
            ),
            Duration::ZERO
        );
    }

    #[test]
    fn only_a_pass_that_moved_timers_continues_a_stream() {
        let before = LAST_TAKE.with(Cell::get);
        let at = Instant::now();
        record_take(at, 0);
        assert_eq!(LAST_TAKE.with(Cell::get), before);
        record_take(at, 3);
        assert_eq!(LAST_TAKE.with(Cell::get), Some(at));
    }

    /// The wait is bounded below by its length (it never returns early once streaming), and
    /// a timer that comes alone is not held: checked by the decision above, not by timing.
    #[test]
    #[cfg(not(miri))]
    fn a_worker_in_a_stream_waits_the_linger() {
        if single_cpu() {
            return;
        }
        let start = Instant::now();
        record_take(start, 1);
        linger_if_streaming(start, Duration::ZERO);
        assert!(start.elapsed() >= STREAM_LINGER);
    }
}
