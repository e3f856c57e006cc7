//! `Gathering`: a worker whose takes keep coming out small while a producer pushes back to
//! back waits a moment before it takes, so that the producer pushes uncontended and the worker
//! takes the stream in batches.
//!
//! # Design
//!
//! A worker that keeps up with a producer in a tight loop (a burst of `execute`s) takes one or
//! two tasks per acquisition of the queue lock: every take pulls the lock's cache line (the
//! producers' line: lock word, ring, `submitted`) to the worker's core and every push pulls it
//! back. Each transfer costs about a core-to-core latency (120-200 ns on the 2-vCPU hosts this
//! was measured on), so the producer, whose uncontended push is far shorter (not measured here), waits on the line
//! most of the time: perf of the hand-off bench's K=256, 2-submitter row put a tenth of all
//! samples on the lock's contended paths and a third of the worker's in its spin.
//!
//! So, when the previous take held at most [`SMALL_TAKE`] tasks and work is queued again, the
//! worker waits before locking, reading the producers' count of accepted tasks once per
//! [`STEP`] (each read pulls the line away from a producer still pushing, so it is read
//! rarely). The wait goes on while each step saw at least [`STEP_RATE`] new tasks (a producer
//! pushing back to back: about one task per 65 ns or faster), and ends at the first step that
//! saw fewer, after [`MAX_GATHER`] in all, or once the executor leaves `RUNNING`.
//!
//! A gather whose first step saw fewer than [`STEP_RATE`] tasks did not pay: it cost a task
//! that was not part of a burst [`STEP`] of latency. Each one in a row doubles the number of
//! later chances to gather that are skipped (up to [`MAX_SKIPPED`]); a gather that pays brings
//! it back to none. So a ping-pong (one task in flight) or a paced stream (a task every 100 ns
//! or more) pays, once the back-off is at its cap, one [`STEP`] per ~1,000 tasks, and a burst is gathered from its start.
//!
//! Only a fully warm worker gathers: its recent idle spins all won
//! ([`crate::idle_spin::is_fully_warm`]). One whose spins have been losing runs beside more
//! busy threads than cores, where the producer may not be running at all while the worker
//! waits for it, and where a worker that keeps its core busy is the one the scheduler preempts
//! for a whole time slice; nor does one on a single CPU gather, where the producer never runs
//! meanwhile. A gather in which the worker lost its core anyway (two readings of the clock
//! [`PREEMPTED_GAP`] apart) ends there and counts as one that did not pay. (With a merely warm
//! worker, any positive score, and no such check, the hand-off beside two CPU burners at K=16,
//! 8 submitters had more bad rounds: 3 of 12 above the fastest peer against 1 of 12. This
//! rule did not change that, and a count of gathers then found that row's bad mode with almost
//! none: 55 in ~45,000 takes. See `README.md` beside this file.)
//! In a scheduled executor a timer falling due during a gather waits for it too (at most
//! [`MAX_GATHER`]): the stop condition is the run state only, the timer wheel is not polled.
//! (The timer lateness targets under a busy worker were met in all four full runs with
//! gathering; whether that bench's worker gathers was not counted.)
//!
//! Under loom and Miri nothing spins, so nothing gathers: gathering only delays when the worker
//! takes the lock, and changes no protocol.
//!
//! The figures (the hand-off bench with and without, the latency of a ping-pong and of paced
//! streams, the rules measured and not kept) are in `README.md` beside this file.

use crate::idle_spin::PREEMPTED_GAP;
use std::time::{Duration, Instant};

/// A take of at most this many tasks, with more queued by the time the worker comes back, is
/// the sign of a worker that keeps up with its producers a few tasks at a time. (16 until
/// the evening of 2026-12-06; 64 measured faster with 8 submitters and no worse on the other
/// hand-off rows, quiet or beside CPU burners: `README.md` beside this file has the figures.
/// The consumer and the latency of paced streams were not measured side by side with it.)
pub(crate) const SMALL_TAKE: usize = 64;
/// How often a gathering worker reads the producers' count.
pub(crate) const STEP: Duration = Duration::from_nanos(400);
/// New tasks per step that show a producer pushing back to back.
pub(crate) const STEP_RATE: u64 = 6;
/// The longest a worker gathers before it takes (so about the most a task waits for it).
pub(crate) const MAX_GATHER: Duration = Duration::from_micros(2);
/// The most chances to gather that a run of gathers that did not pay makes the worker skip.
pub(crate) const MAX_SKIPPED: u32 = 1023;

/// The worker's gathering state (its own: never shared).
#[derive(Debug)]
pub(crate) struct Gathering {
    /// Tasks moved by the worker's last take (`usize::MAX` before the first).
    last_take: usize,
    /// Chances to gather still to skip.
    skip: u32,
    /// What `skip` was set to after the last gather that did not pay (0 after one that did).
    back_off: u32,
}

impl Gathering {
    /// A worker that has not taken anything yet: it gathers after its first small take.
    pub(crate) const fn new() -> Self {
        Self {
            last_take: usize::MAX,
            skip: 0,
            back_off: 0,
        }
    }

    /// Records how many tasks the worker's take moved.
    #[inline]
    pub(crate) fn took(&mut self, tasks: usize) {
        self.last_take = tasks;
    }

    /// Whether to gather now, with work queued again: the last take was small, the worker is
    /// `warm`, and no run of gathers that did not pay has it skipping this chance.
    #[inline]
    pub(crate) fn begins(&mut self, warm: impl FnOnce() -> bool) -> bool {
        if self.last_take > SMALL_TAKE || !warm() {
            return false;
        }
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        true
    }

    /// Waits while the producers push back to back (see the module's design notes), reading
    /// the time from `clock`, the producers' count of accepted tasks from `submitted`, and
    /// ending at once when `stop()`. Returns how many tasks arrived while it waited, as far as
    /// its last read of the count saw.
    pub(crate) fn gather(
        &mut self,
        mut clock: impl FnMut() -> Instant,
        submitted: impl Fn() -> u64,
        stop: impl Fn() -> bool,
    ) -> u64 {
        let start = clock();
        let first = submitted();
        let end = start + MAX_GATHER;
        let mut look_at = start + STEP;
        let mut last = first;
        let mut paid = false;
        let mut last_now = start;
        loop {
            std::hint::spin_loop();
            if stop() {
                break;
            }
            let now = clock();
            if now.saturating_duration_since(last_now) >= PREEMPTED_GAP {
                // The worker lost its core while it waited: on a machine with more busy
                // threads than cores a wait can cost a time slice, so this one did not pay.
                paid = false;
                break;
            }
            last_now = now;
            if now >= look_at {
                let seen = submitted();
                let pushed = seen.wrapping_sub(last);
                last = seen;
                if pushed < STEP_RATE {
                    break;
                }
                paid = true;
                look_at = now + STEP;
            }
            if now >= end {
                break;
            }
        }
        if paid {
            self.back_off = 0;
        } else {
            self.back_off = (self.back_off * 2 + 1).min(MAX_SKIPPED);
            self.skip = self.back_off;
        }
        last.wrapping_sub(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A clock that moves `tick` per reading, and a producer that pushes `per_step` tasks per
    /// [`STEP`] of that clock (counted when the worker reads the count).
    struct Scripted {
        start: Instant,
        now: Cell<Duration>,
        tick: Duration,
        per_step: Box<dyn Fn(Duration) -> u64>,
        reads: Cell<u32>,
    }

    impl Scripted {
        fn new(tick: Duration, per_step: impl Fn(Duration) -> u64 + 'static) -> Self {
            Self {
                start: Instant::now(),
                now: Cell::new(Duration::ZERO),
                tick,
                per_step: Box::new(per_step),
                reads: Cell::new(0),
            }
        }

        fn clock(&self) -> Instant {
            self.now.set(self.now.get() + self.tick);
            self.start + self.now.get()
        }

        /// Tasks accepted by now: `per_step(elapsed)` summed over the steps begun so far.
        fn submitted(&self) -> u64 {
            self.reads.set(self.reads.get() + 1);
            let steps = (self.now.get().as_nanos() / STEP.as_nanos()) as u32;
            (0..=steps).map(|step| (self.per_step)(STEP * step)).sum()
        }

        fn elapsed(&self) -> Duration {
            self.now.get()
        }
    }

    fn gather(gathering: &mut Gathering, script: &Scripted) -> u64 {
        gathering.gather(|| script.clock(), || script.submitted(), || false)
    }

    #[test]
    fn a_producer_pushing_back_to_back_is_gathered_until_the_cap() {
        let script = Scripted::new(Duration::from_nanos(20), |_| 10);
        let mut gathering = Gathering::new();
        let arrived = gather(&mut gathering, &script);
        assert!(script.elapsed() >= MAX_GATHER);
        assert!(script.elapsed() < MAX_GATHER + STEP);
        assert!(arrived >= 4 * 10, "{arrived} tasks seen while gathering");
        // The count was read once per step (and once at the start), not on every spin.
        assert!(script.reads.get() <= 1 + (MAX_GATHER.as_nanos() / STEP.as_nanos()) as u32 + 1);
        // It paid: the next chance is taken.
        gathering.took(3);
        assert!(gathering.begins(|| true));
    }

    #[test]
    fn a_step_with_fewer_pushes_than_the_rate_ends_the_gather() {
        // Back to back for two steps, then slower than the rate.
        let script = Scripted::new(Duration::from_nanos(20), |at| {
            if at < STEP * 2 {
                STEP_RATE + 2
            } else {
                STEP_RATE - 1
            }
        });
        let mut gathering = Gathering::new();
        let arrived = gather(&mut gathering, &script);
        // The look one step in saw STEP_RATE + 2 new tasks, the next one STEP_RATE - 1.
        assert!(script.elapsed() >= STEP * 2 && script.elapsed() < STEP * 3);
        assert_eq!(arrived, 2 * STEP_RATE + 1);
        gathering.took(1);
        assert!(gathering.begins(|| true), "it paid on its first steps");
    }

    #[test]
    fn gathers_that_do_not_pay_skip_twice_as_many_chances_each_time_up_to_the_cap() {
        let mut gathering = Gathering::new();
        let mut skipped_runs = Vec::new();
        for _ in 0..12 {
            // A producer with one task in flight: nothing arrives while the worker waits.
            let script = Scripted::new(Duration::from_nanos(20), |_| 0);
            gathering.took(1);
            assert!(gathering.begins(|| true));
            gather(&mut gathering, &script);
            // One step, then it gives up.
            assert!(script.elapsed() >= STEP && script.elapsed() < STEP * 2);
            let mut skipped = 0;
            while !gathering.begins(|| true) {
                skipped += 1;
            }
            skipped_runs.push(skipped);
        }
        assert_eq!(
            skipped_runs,
            [1, 3, 7, 15, 31, 63, 127, 255, 511, 1023, 1023, 1023]
        );
    }

    #[test]
    fn a_gather_that_pays_ends_the_back_off() {
        let mut gathering = Gathering::new();
        for _ in 0..3 {
            gathering.took(1);
            while !gathering.begins(|| true) {}
            gather(
                &mut gathering,
                &Scripted::new(Duration::from_nanos(20), |_| 0),
            );
        }
        while !gathering.begins(|| true) {}
        gather(
            &mut gathering,
            &Scripted::new(Duration::from_nanos(20), |_| 50),
        );
        assert!(
            gathering.begins(|| true),
            "no chance skipped after a gather that paid"
        );
    }

    #[test]
    fn only_a_warm_worker_whose_last_take_was_small_gathers() {
        let mut gathering = Gathering::new();
        assert!(!gathering.begins(|| true), "nothing taken yet");
        gathering.took(SMALL_TAKE + 1);
        assert!(!gathering.begins(|| true));
        gathering.took(SMALL_TAKE);
        assert!(!gathering.begins(|| false), "a cold worker does not gather");
        assert!(gathering.begins(|| true));
    }

    #[test]
    fn a_gather_that_loses_its_core_ends_and_does_not_pay() {
        let script = Scripted::new(Duration::from_nanos(20), |_| 100);
        let mut gathering = Gathering::new();
        let readings = Cell::new(0);
        gathering.gather(
            || {
                readings.set(readings.get() + 1);
                if readings.get() == 30 {
                    // Preempted between two readings.
                    script.now.set(script.now.get() + PREEMPTED_GAP);
                }
                script.clock()
            },
            || script.submitted(),
            || false,
        );
        assert_eq!(readings.get(), 30, "it ends at the reading after the gap");
        gathering.took(1);
        assert!(!gathering.begins(|| true), "the next chance is skipped");
        assert!(gathering.begins(|| true));
    }

    #[test]
    fn a_stop_ends_the_gather_at_once() {
        let script = Scripted::new(Duration::from_nanos(20), |_| 100);
        let mut gathering = Gathering::new();
        let stops = Cell::new(0);
        gathering.gather(
            || script.clock(),
            || script.submitted(),
            || {
                stops.set(stops.get() + 1);
                stops.get() == 3
            },
        );
        assert_eq!(stops.get(), 3);
        assert!(script.elapsed() < STEP);
    }
}
