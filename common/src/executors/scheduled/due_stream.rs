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
//! back). Waiting a couple of microseconds first lets a few timers gather, so one pass moves
//! several. Measured side by side (K=256 `schedule(Duration::ZERO)` hand-off, 3 x 5 rounds
//! alternated with the build before): 2 us took it from 0.96-1.18x the delay heap's time per
//! task (median ~1.02x) to 0.61-0.87x (median ~0.74x); an earlier probe gave ~0.8x for 1 us
//! and ~0.7x for 3 us. The plain `execute` hand-off and timer lateness did not move.
//!
//! # When
//!
//! Only while timers stream in: the previous pass moved one or two timers and ended less than
//! [`STREAM_GAP`] ago. A timer that comes alone (after a gap) is taken at once, so its latency
//! does not change; one in a stream waits at most [`STREAM_LINGER`]. Never under loom or Miri
//! (they check the blocking paths) nor on a single CPU (the timers the worker waits for need
//! its core), as for the idle spin (`idle_spin.rs`). The wait never yields: it is shorter than
//! any time slice.
//!
//! # What it costs
//!
//! Latency, for a timer that arrives in a stream. Probed on 2026-12-02 (Intel host, a
//! throwaway build that read the wait's length from the environment): one producer arming a
//! zero-delay timer every 0.5 / 1 / 2 / 4 / 8 us, 50,000 timers, arm-to-run latency, 2 us
//! against no wait (3-8 runs each): p50 2.3-2.7 against 1.7-1.9 us at 0.5 us, 2.2-2.6 against
//! 1.8-2.0 at 1 us, 1.27-1.28 against 1.23-1.34 at 2 us; p90 +1.0 to +2.1 us at 0.5-2 us;
//! no difference from 4 us on (p50 ~1.3 us both). One run of eight at 0.5 us with the wait
//! had a p50 of 245 us (half its timers waited that long or longer), not seen again in seven
//! more. A timer spaced more than [`STREAM_GAP`] from the last pass pays nothing. A wait
//! that adapts (shorter when a wait gathered nothing) was not tried.

use crate::idle_spin::single_cpu;
use crate::sync::SPIN_ENABLED;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// How long a worker in a stream waits before it takes the lock.
pub(crate) const STREAM_LINGER: Duration = Duration::from_micros(2);
/// A pass this soon after one that moved one or two timers means timers are streaming in.
pub(crate) const STREAM_GAP: Duration = Duration::from_micros(10);

std::thread_local! {
    /// The calling worker's last pass that moved timers: when, and how many.
    static LAST_TAKE: Cell<Option<(Instant, usize)>> = const { Cell::new(None) };
}

/// Records a pass that moved `moved` due timers at `now` (worker only).
#[inline]
pub(crate) fn record_take(now: Instant, moved: usize) {
    LAST_TAKE.with(|last| last.set(Some((now, moved))));
}

/// Before the worker takes the lock for a timer that is due at `now`: waits up to
/// [`STREAM_LINGER`] if timers are streaming in (module docs).
#[inline]
pub(crate) fn linger_if_streaming(now: Instant) {
    if !SPIN_ENABLED || single_cpu() {
        return;
    }
    let streaming = is_streaming(LAST_TAKE.with(Cell::get), now);
    if streaming {
        let until = now + STREAM_LINGER;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

/// Whether the last pass, `last` (when, and how many timers it moved), says timers are
/// streaming in at `now`: it moved one or two, less than [`STREAM_GAP`] ago.
fn is_streaming(last: Option<(Instant, usize)>, now: Instant) -> bool {
    last.is_some_and(|(at, moved)| {
        (1..=2).contains(&moved) && now.saturating_duration_since(at) < STREAM_GAP
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn only_small_recent_passes_mean_a_stream() {
        let at = Instant::now();
        let soon = at + STREAM_GAP / 2;
        assert!(!is_streaming(None, soon), "no pass yet");
        assert!(is_streaming(Some((at, 1)), soon));
        assert!(is_streaming(Some((at, 2)), soon));
        assert!(
            !is_streaming(Some((at, 0)), soon),
            "a pass that moved nothing"
        );
        assert!(!is_streaming(Some((at, 3)), soon), "timers already gather");
        assert!(!is_streaming(Some((at, 1)), at + STREAM_GAP), "after a gap");
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
