//! loom models of the scheduled executor's timer protocol: cancel racing the worker's fire
//! (exactly one wins, the closure is dropped once, the handle reports the winner, nothing is
//! left behind), cancel racing a periodic run and its re-arm (a cancelled timer never goes
//! back into the wheel), a timer taken between two tasks of a batch racing its cancel, and
//! offers racing `shutdown_now` (nothing lost, nothing twice).
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p pulsar-common
//! --release --lib loom` (`cargo xtask test` does).

use super::scheduled_handle::ScheduledHandle;
use super::timer_entry::{Once, Period, Repeating, TimerEntry, TimerJob};
use super::timers::ScheduledCore;
use crate::executors::raw_task::RawTask;
use crate::executors::task_error::TaskError;
use crate::sync::{Arc, AtomicUsize, Ordering};
use loom::thread;
use std::time::{Duration, Instant};

/// Counts its drops (a closure that captures one is dropped exactly when the token is).
struct Token(Arc<AtomicUsize>);

impl Drop for Token {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// What `ScheduledExecutor::arm` does for a zero delay (the timer takes the wheel's lane), on
/// a core whose worker the model drives.
fn arm<J: TimerJob>(core: &Arc<ScheduledCore>, job: J) -> Option<ScheduledHandle<J::Output>> {
    arm_via(core, job, true)
}

/// As [`arm`], choosing the path: `due_now` false files the (due) timer in the wheel's levels,
/// as a timer armed with a delay that has since passed is.
///
/// The deadline is the wheel's origin, not the clock: a model must take the same steps in
/// every iteration, and a timer's place in the levels depends on its tick. Armed at
/// `Instant::now()`, a timer armed more than 64 ticks (~65 us) after the core was made lands in
/// level 1 and has to be cascaded before it fires, which takes more loom steps than a level-0
/// timer; on a busy machine some iterations got there and loom aborted ("Reached unexpected
/// exploration state", CI of 06ad54a). At the origin, the timer is at tick 0 of level 0 and due
/// whenever the worker looks.
fn arm_via<J: TimerJob>(
    core: &Arc<ScheduledCore>,
    job: J,
    due_now: bool,
) -> Option<ScheduledHandle<J::Output>> {
    let deadline = core.between.origin();
    let (entry, share) = ScheduledCore::arm(core, deadline, due_now, job).ok()?;
    Some(ScheduledHandle::new(entry, share))
}

/// Shuts the model's core down when the model ends, as the executor's last clone does: that
/// gives up the spare handle shares (`core_share.rs`), which otherwise keep the core alive
/// (loom reports it as a leaked `Arc`).
struct ShutdownAtEnd(Arc<ScheduledCore>);

impl Drop for ShutdownAtEnd {
    fn drop(&mut self) {
        ScheduledCore::shutdown(&self.0);
    }
}

fn counting_job(ran: &Arc<AtomicUsize>, dropped: &Arc<AtomicUsize>) -> impl FnOnce() + Send {
    let (ran, token) = (Arc::clone(ran), Token(Arc::clone(dropped)));
    move || {
        let _keep = &token;
        ran.fetch_add(1, Ordering::SeqCst);
    }
}

/// In the wheel's lane (a zero delay) and in its levels.
#[test]
fn loom_cancel_racing_the_fire_of_a_due_timer_is_exactly_one_of_them() {
    cancel_racing_the_fire_of_a_due_timer(true);
}

#[test]
fn loom_cancel_racing_the_fire_of_a_due_timer_in_the_levels_is_exactly_one_of_them() {
    cancel_racing_the_fire_of_a_due_timer(false);
}

fn cancel_racing_the_fire_of_a_due_timer(due_now: bool) {
    loom::model(move || {
        let core = Arc::new(ScheduledCore::new_started_for_loom(64));
        let _end = ShutdownAtEnd(Arc::clone(&core));
        let ran = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        let handle = arm_via(&core, Once(counting_job(&ran, &dropped)), due_now).unwrap();
        let worker = {
            let core = Arc::clone(&core);
            thread::spawn(move || {
                ScheduledCore::run_ready(&core);
            })
        };
        let cancelled = handle.cancel();
        worker.join().unwrap();
        // Whatever the worker's step missed (the timer was cancelled before it looked) is gone.
        assert_eq!(core.pending_tasks(), 0);
        assert_eq!(ran.load(Ordering::SeqCst) + usize::from(cancelled), 1);
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        match handle.join() {
            Ok(()) => assert!(!cancelled),
            Err(TaskError::Cancelled) => assert!(cancelled),
            Err(other) => panic!("unexpected {other:?}"),
        }
    });
}

#[test]
fn loom_cancel_racing_a_periodic_run_never_rearms_it() {
    loom::model(|| {
        let core = Arc::new(ScheduledCore::new_started_for_loom(64));
        let _end = ShutdownAtEnd(Arc::clone(&core));
        let ran = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        let (counted, token) = (Arc::clone(&ran), Token(Arc::clone(&dropped)));
        let period = Period::FixedDelay(Duration::from_secs(3600));
        let job = Repeating::new(
            move || {
                let _keep = &token;
                counted.fetch_add(1, Ordering::SeqCst);
            },
            Instant::now(),
            period,
        );
        let handle = arm(&core, job).unwrap();
        let worker = {
            let core = Arc::clone(&core);
            thread::spawn(move || {
                ScheduledCore::run_ready(&core);
            })
        };
        // A periodic task can be cancelled whether it waits, is due, or runs.
        assert!(handle.cancel());
        worker.join().unwrap();
        assert!(ran.load(Ordering::SeqCst) <= 1);
        assert_eq!(
            core.pending_tasks(),
            0,
            "a cancelled timer is never re-armed"
        );
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        assert!(matches!(handle.join(), Err(TaskError::Cancelled)));
    });
}

#[test]
fn loom_offers_racing_shutdown_now_lose_nothing_and_run_nothing_twice() {
    loom::model(|| {
        let core = Arc::new(ScheduledCore::new_started_for_loom(64));
        let _end = ShutdownAtEnd(Arc::clone(&core));
        let ran = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        let producer = {
            let (core, ran, dropped) = (Arc::clone(&core), Arc::clone(&ran), Arc::clone(&dropped));
            thread::spawn(move || {
                let task = RawTask::new(counting_job(&ran, &dropped));
                let immediate = ScheduledCore::enqueue(&core, task).is_ok();
                let timer = arm(&core, Once(counting_job(&ran, &dropped))).is_some();
                usize::from(immediate) + usize::from(timer)
            })
        };
        let worker = {
            let core = Arc::clone(&core);
            thread::spawn(move || {
                ScheduledCore::run_ready(&core);
            })
        };
        let returned = ScheduledCore::shutdown_now(&core);
        let accepted = producer.join().unwrap();
        worker.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst) + returned.len(), accepted);
        assert_eq!(core.pending_tasks(), 0);
        drop(returned);
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            2,
            "every closure dropped exactly once"
        );
    });
}

#[test]
fn loom_offers_racing_graceful_shutdown_run_every_accepted_task() {
    loom::model(|| {
        let core = Arc::new(ScheduledCore::new_started_for_loom(64));
        let worker = {
            let core = Arc::clone(&core);
            thread::spawn(move || ScheduledCore::run_worker(&core))
        };
        let ran = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        let producer = {
            let (core, ran, dropped) = (Arc::clone(&core), Arc::clone(&ran), Arc::clone(&dropped));
            thread::spawn(move || {
                let timer = arm(&core, Once(counting_job(&ran, &dropped))).is_some();
                let task = RawTask::new(counting_job(&ran, &dropped));
                let immediate = ScheduledCore::enqueue(&core, task).is_ok();
                usize::from(immediate) + usize::from(timer)
            })
        };
        ScheduledCore::shutdown(&core);
        let accepted = producer.join().unwrap();
        // Every accepted task (and due one-shot timer) runs before the worker can exit: a lost
        // wake-up deadlocks here.
        worker.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), accepted);
        assert_eq!(dropped.load(Ordering::SeqCst), 2);
    });
}

#[test]
fn loom_a_timer_taken_between_two_tasks_is_run_or_cancelled_exactly_once() {
    loom::model(|| {
        let core = Arc::new(ScheduledCore::new_started_for_loom(64));
        let _end = ShutdownAtEnd(Arc::clone(&core));
        let ran = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        // Two immediate tasks, so the worker has a task boundary at which to take the timer.
        for _ in 0..2 {
            let task = RawTask::new(counting_job(&ran, &dropped));
            assert!(ScheduledCore::enqueue(&core, task).is_ok());
        }
        let worker = {
            let core = Arc::clone(&core);
            thread::spawn(move || {
                ScheduledCore::run_ready(&core);
            })
        };
        // Due at once: armed while the batch may be running, it is taken at a task boundary,
        // by the next pass, or cancelled first.
        let handle = arm(&core, Once(counting_job(&ran, &dropped))).unwrap();
        let cancelled = handle.cancel();
        worker.join().unwrap();
        ScheduledCore::run_ready(&core);
        assert_eq!(core.pending_tasks(), 0);
        assert_eq!(ran.load(Ordering::SeqCst) + usize::from(cancelled), 3);
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            3,
            "every closure dropped once"
        );
    });
}

/// A handle waiting in `join` while the worker fires the timer (or, in the second model, while
/// another thread cancels it) is woken with the outcome: the waiter bit is seen by whoever
/// finishes the entry, or the waiter sees the entry final and never sleeps. A lost wake-up
/// deadlocks the model.
#[test]
fn loom_join_racing_the_fire_is_woken_with_the_value() {
    loom::model(|| {
        let core = Arc::new(ScheduledCore::new_started_for_loom(64));
        let _end = ShutdownAtEnd(Arc::clone(&core));
        let handle = arm(&core, Once(|| 7)).unwrap();
        let worker = {
            let core = Arc::clone(&core);
            thread::spawn(move || {
                ScheduledCore::run_ready(&core);
            })
        };
        assert_eq!(handle.join().unwrap(), 7);
        worker.join().unwrap();
        assert_eq!(core.pending_tasks(), 0);
    });
}

/// In the wheel's lane (a zero delay), where the cancel takes the entry out of the lane.
#[test]
fn loom_join_racing_a_cancel_is_woken_with_cancelled() {
    join_racing_a_cancel(true);
}

/// In the wheel's levels, where the cancel's one compare-and-swap both cancels the entry and
/// lets go of the wheel's reference (`TimerRef::cancel_unlinked`), racing the waiter's bit.
#[test]
fn loom_join_racing_a_cancel_of_a_timer_in_the_levels_is_woken_with_cancelled() {
    join_racing_a_cancel(false);
}

fn join_racing_a_cancel(due_now: bool) {
    loom::model(move || {
        let core = Arc::new(ScheduledCore::new_started_for_loom(64));
        let _end = ShutdownAtEnd(Arc::clone(&core));
        let dropped = Arc::new(AtomicUsize::new(0));
        let token = Token(Arc::clone(&dropped));
        let handle =
            std::sync::Arc::new(arm_via(&core, Once(move || drop(token)), due_now).unwrap());
        let canceller = {
            let handle = std::sync::Arc::clone(&handle);
            thread::spawn(move || assert!(handle.cancel()))
        };
        // `join` takes the handle by value: wait through the entry, as `join` does.
        let outcome = handle.entry().wait_outcome(None);
        canceller.join().unwrap();
        assert!(matches!(outcome, Some(Err(TaskError::Cancelled))));
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "the closure dropped by the cancel"
        );
        assert_eq!(core.pending_tasks(), 0);
    });
}

/// The handle dropped while the worker fires the timer and lets go of its own reference: the
/// entry is freed exactly once, by whichever reference goes last (the run's output, stored in
/// the entry and never taken, is dropped with it: a leak leaves it undropped, a double free
/// drops it twice).
#[test]
fn loom_the_handle_dropped_racing_the_fire_frees_the_entry_once() {
    loom::model(|| {
        let core = Arc::new(ScheduledCore::new_started_for_loom(64));
        let _end = ShutdownAtEnd(Arc::clone(&core));
        let dropped = Arc::new(AtomicUsize::new(0));
        let output = Token(Arc::clone(&dropped));
        let handle = arm(&core, Once(move || output)).unwrap();
        let worker = {
            let core = Arc::clone(&core);
            thread::spawn(move || {
                ScheduledCore::run_ready(&core);
            })
        };
        drop(handle);
        worker.join().unwrap();
        assert_eq!(core.pending_tasks(), 0);
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "the entry freed once");
    });
}

/// Two first waits racing to install an entry's waiters' lock (`TimerEntry::waiters`): one
/// box is installed and both lock it; the loser frees its own (a lost box or a double free
/// shows under Miri, which runs the same install in `timer_entry`'s unit tests). One handle
/// never waits twice at once, but the install must not depend on that.
#[test]
fn loom_two_first_waits_install_one_waiters_lock() {
    loom::model(|| {
        let entry = Arc::new(TimerEntry::new(Once(|| 7)));
        let other = {
            let entry = Arc::clone(&entry);
            thread::spawn(move || {
                let mut guard = entry.waiters();
                *guard = None; // a write under the lock, which loom checks for races
                std::ptr::from_ref(&*guard) as usize
            })
        };
        let mine = {
            let mut guard = entry.waiters();
            *guard = None;
            std::ptr::from_ref(&*guard) as usize
        };
        assert_eq!(other.join().unwrap(), mine, "one lock for both");
    });
}

/// The handles' shares of the core (`core_share.rs`): one handle cancels and is dropped on one
/// thread while another shuts the executor down (giving the spare shares up) and lets go of
/// its own reference; the last handle is dropped after both. Whichever release comes last
/// frees the core, once: loom reports a leaked or twice-dropped `Arc`, and the core's own
/// accesses are checked against the handle's.
#[test]
fn loom_handles_racing_the_shutdown_free_the_core_once() {
    loom::model(|| {
        let core = Arc::new(ScheduledCore::new_started_for_loom(64));
        let first = arm_via(&core, Once(|| ()), false).unwrap();
        let second = arm_via(&core, Once(|| ()), false).unwrap();
        let canceller = thread::spawn(move || {
            first.cancel();
            drop(first);
        });
        let stopper = thread::spawn(move || {
            drop(ScheduledCore::shutdown_now(&core));
            drop(core);
        });
        canceller.join().unwrap();
        stopper.join().unwrap();
        // Handed back by `shutdown_now` and dropped unrun: cancelled. Its share alone keeps
        // the core now; its cancel still reaches it.
        assert!(second.is_cancelled());
        assert!(!second.cancel());
        drop(second);
    });
}
