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
//! # When
//!
//! Only while timers stream in and the worker keeps up with them: the last pass that moved
//! timers ended less than [`STREAM_GAP`] ago, and the passes of this stream moved fewer than
//! [`BEHIND_MEAN`] timers on average (a running mean, each pass weighing 1/8, restarted after
//! a gap). A timer that comes alone (after a gap) is taken at once, so its latency does not
//! change; one in a stream waits at most [`STREAM_LINGER`]. A worker that has fallen behind
//! (its passes find many timers waiting) takes them at once until it has caught up: waiting
//! then would only make it later. Never under loom or Miri (they check the blocking paths) nor
//! on a single CPU (the timers the worker waits for need its core), as for the idle spin
//! (`idle_spin.rs`). The wait never yields: it is shorter than any time slice.
//!
//! # The rule before this one, and why it changed
//!
//! Until 2026-12-06 the worker waited only when its last pass had moved one or two timers,
//! 2 us. A wait that gathered three or more turned the next wait off; that pass then took one
//! timer, which turned the wait on again: every other pass took a single timer. Counted on the
//! Intel host of 2026-12-06 (K=256 hand-off): 1.99-2.12 timers per pass, against 7.45 when
//! every pass of the stream waited. That host's figures, ours ÷ the delay heap, median (range)
//! over 4-5 alternated processes x 3 rounds each; the first and last rows ran side by side,
//! the others in two runs of their own (throwaway builds reading the rule from the
//! environment):
//!
//! | rule | ns per task | ours ÷ delay heap |
//! |---|---:|---:|
//! | one or two moved, 2 us (before) | 635 | 1.77x (1.52-2.08) |
//! | any pass, 1 us | 638 | 1.73x |
//! | any pass, 2 us | 433 | 1.12x |
//! | any pass, 3 us | 390 | 1.04-1.08x |
//! | any pass, 4 / 6 / 8 us | 383-399 | 1.08-1.12x |
//! | any pass, 3 us, with the mean's limit and the handle shares on their own line (now) | 383 | 1.05x (0.93-1.19) |
//!
//! A wait on every pass has a failure the old rule shared: a producer arming faster than the
//! worker fires makes each pass find more, and each wait adds to the backlog; one of two runs
//! of the old rule at a 250 ns spacing (below) had a p50 latency of 2.6 ms, and every pass
//! waiting 3 us did the same. The mean's limit ends the waits once the worker is behind.
//!
//! # What it costs
//!
//! Latency, for a timer that arrives in a dense stream. Probed on 2026-12-06 (Intel host): one
//! producer arming a zero-delay timer every 0.25 / 0.5 / 1 / 2 / 4 / 8 us, 50,000 timers,
//! arm-to-run latency, 2-6 runs each (ranges leave out the runs of the last paragraph):
//!
//! | spacing | p50, this rule | p50, the rule before | p90, this rule | p90, before |
//! |---|---:|---:|---:|---:|
//! | 0.25 us | 4.4-4.9 us | 2.5-2.8 us | 6.9-7.4 us | 3.2-3.4 us |
//! | 0.5 us | 3.8-4.2 | 2.4-2.7 | 6.0-6.7 | 3.1-3.3 |
//! | 1 us | 2.6-2.9 | 1.4-1.7 | 4.1-4.4 | 2.9-3.2 |
//! | 2, 4, 8 us | 0.70-0.71 | 0.75-0.80 | 1.35-1.43 | 1.39-1.58 |
//!
//! So a stream denser than one timer per 2 us pays 1-1.6 us more at the median for 1.7x the
//! throughput; a sparser one pays nothing. The p99 moves with the machine's noise in both
//! (3-30 us). Both rules also have runs where a large share of the timers waited 0.2-3.5 ms (a
//! time slice; not traced): 4 of 30 spacings with this rule, 3 of 30 with the one before. The
//! probe is `microbench/examples/zero_delay_stream_latency.rs`.

use crate::idle_spin::single_cpu;
use crate::sync::SPIN_ENABLED;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// How long a worker in a stream waits before it takes the lock.
pub(crate) const STREAM_LINGER: Duration = Duration::from_micros(3);
/// A pass this soon after the last one that moved timers means timers are streaming in.
pub(crate) const STREAM_GAP: Duration = Duration::from_micros(10);
/// While the passes of a stream move this many timers or more on average, the worker is
/// behind the producers and takes the timers at once: waiting would gather nothing it needs.
pub(crate) const BEHIND_MEAN: u32 = 16;

/// The calling worker's recent passes that moved timers.
#[derive(Clone, Copy, Debug)]
struct Passes {
    /// When the last one ended.
    last: Instant,
    /// The running mean of the timers they moved, times 8 (each pass weighs 1/8), restarted
    /// by a pass after a gap.
    mean_x8: u32,
}

impl Passes {
    /// After the pass at `now` that moved `moved` timers.
    fn after(previous: Option<Self>, now: Instant, moved: usize) -> Self {
        let moved = u32::try_from(moved).unwrap_or(u32::MAX).min(1 << 20);
        let mean_x8 = match previous {
            Some(passes) if in_stream(passes.last, now) => {
                passes.mean_x8 - passes.mean_x8 / 8 + moved
            }
            _ => moved * 8,
        };
        Self { last: now, mean_x8 }
    }

    /// Whether a worker about to take due timers at `now` should wait for more (module docs).
    fn should_linger(self, now: Instant) -> bool {
        in_stream(self.last, now) && self.mean_x8 < BEHIND_MEAN * 8
    }
}

/// Whether a pass at `now` continues the stream of the pass that ended at `last`.
fn in_stream(last: Instant, now: Instant) -> bool {
    now.saturating_duration_since(last) < STREAM_GAP
}

std::thread_local! {
    static PASSES: Cell<Option<Passes>> = const { Cell::new(None) };
}

/// Records a pass that moved `moved` due timers at `now` (worker only).
#[inline]
pub(crate) fn record_take(now: Instant, moved: usize) {
    PASSES.with(|passes| passes.set(Some(Passes::after(passes.get(), now, moved))));
}

/// Before the worker takes the lock for a timer that is due at `now`: waits
/// [`STREAM_LINGER`] if timers are streaming in and it keeps up with them (module docs).
#[inline]
pub(crate) fn linger_if_streaming(now: Instant) {
    if !SPIN_ENABLED || single_cpu() {
        return;
    }
    let linger = PASSES
        .with(Cell::get)
        .is_some_and(|passes| passes.should_linger(now));
    if linger {
        let until = now + STREAM_LINGER;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The passes of a stream, `gap` apart, each moving `moved`; returns the last.
    fn stream(start: Instant, gap: Duration, moved: &[usize]) -> (Passes, Instant) {
        let mut passes = None;
        let mut at = start;
        for &count in moved {
            at += gap;
            passes = Some(Passes::after(passes, at, count));
        }
        (passes.expect("at least one pass"), at)
    }

    #[test]
    fn a_recent_pass_of_a_stream_the_worker_keeps_up_with_means_wait() {
        let at = Instant::now();
        let first = Passes::after(None, at, 1);
        assert!(first.should_linger(at + STREAM_GAP / 2));
        assert!(!first.should_linger(at + STREAM_GAP), "after a gap");
        // Passes that gather a few timers each keep it waiting: the rule the `1..=2` one
        // before it missed (a wait that gathered three turned the next wait off).
        let (gathering, end) = stream(at, Duration::from_micros(4), &[1, 8, 9, 10, 12, 8]);
        assert!(gathering.should_linger(end + Duration::from_micros(1)));
        let (nothing, end) = stream(at, Duration::from_micros(4), &[0, 0]);
        assert!(
            nothing.should_linger(end),
            "a pass whose timers a cancel took"
        );
    }

    #[test]
    fn a_worker_behind_its_producers_takes_the_timers_at_once_until_it_has_caught_up() {
        let at = Instant::now();
        let gap = Duration::from_micros(1);
        let (behind, end) = stream(at, gap, &[40]);
        assert!(!behind.should_linger(end), "one large pass after a gap");
        let (behind, end) = stream(at, gap, &[4, 4, 4, 100, 100]);
        assert!(!behind.should_linger(end), "the mean crossed the limit");
        // Small passes bring the mean back down: 100 -> 2 per pass crosses 16 within 15.
        let mut catching_up = vec![100; 8];
        catching_up.extend([2; 14]);
        let (still_behind, end) = stream(at, gap, &catching_up);
        assert!(!still_behind.should_linger(end));
        catching_up.push(2);
        let (caught_up, end) = stream(at, gap, &catching_up);
        assert!(caught_up.should_linger(end));
        // A gap restarts the mean.
        let restarted = Passes::after(Some(behind), end + STREAM_GAP, 1);
        assert!(restarted.should_linger(end + STREAM_GAP));
    }

    #[test]
    fn a_huge_pass_saturates_the_mean_instead_of_overflowing_it() {
        let at = Instant::now();
        let (passes, end) = stream(at, Duration::from_micros(1), &[usize::MAX; 100]);
        assert!(!passes.should_linger(end));
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
        linger_if_streaming(start);
        assert!(start.elapsed() >= STREAM_LINGER);
    }
}
