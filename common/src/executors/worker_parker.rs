//! `WorkerParker`: how an executor's idle worker sleeps, and how a producer that finds it
//! parked wakes it: through the worker thread's own parker (`std::thread::park`), which the
//! worker registers when it starts.
//!
//! # Why not a condition variable
//!
//! The worker parks alone (one worker per executor) and is woken by whoever takes the
//! `worker_parked` flag under the queue lock, so a condition variable's queue of waiters and
//! its re-locking on wake-up buy nothing. Parking through `parking_lot_core` (what the crate's
//! condition variable does) also goes through its global table of parked threads: a bucket
//! lock on the way to sleep and another in the waker. The thread's own parker is one atomic
//! swap and the futex call on each side. Measured on the AMD EPYC host (2 vCPUs, 2026-12-02):
//! the hand-off bench's `sparse` row (one task, then 1 ms), 5 alternated processes of 3 rounds
//! of each build: the worker's CPU per batch 7.27 -> 6.35 us (median); a throwaway probe of
//! the same work, 8 processes: 6.83 -> 6.48 us (flume 5.35). K=256 with 2 and 8 submitters
//! kept their medians (0.55x and 0.72x the fastest peer, 15 rounds of each build), and the
//! oversubscribed rows stayed within their spread (9 rounds of each).
//!
//! # The protocol
//!
//! The worker sets `worker_parked` under the queue lock after seeing nothing ready under that
//! same lock, releases the lock, and parks; a producer that takes the flag (under the lock)
//! unparks it after releasing the lock. No wake-up is lost: the unpark comes after the flag was
//! set, and an unpark that comes before the park makes the park return at once (the parker
//! keeps one token). Wake-ups may be spurious (a token left by an unpark that came after a
//! timed park had already returned, or user code unparking the thread): the worker looks at
//! its queue again and parks again. A task that parks the worker thread itself may likewise
//! return early from its own `park`, which `std::thread::park` allows.
//!
//! An executor has at most one worker thread (`WorkerLifecycle::enter_worker`), so the handle
//! is registered once. Under loom the parker is loom's, and (loom having no clock) a timed park
//! is a park that returns when unparked, as the timed waits of `crate::sync` are.

use std::sync::OnceLock;
#[cfg(not(loom))]
use std::thread::{self, Thread};
use std::time::Instant;

/// loom's threads, with the one call of std's they lack.
#[cfg(loom)]
mod thread {
    pub(super) use loom::thread::{current, park, Thread};

    /// No clock under loom: parks until unparked.
    pub(super) fn park_timeout(_timeout: std::time::Duration) {
        park();
    }
}
#[cfg(loom)]
use thread::Thread;

/// The worker thread's parker, as the producers find it.
#[derive(Debug, Default)]
pub(crate) struct WorkerParker {
    /// The worker thread, registered by the worker before its first park.
    thread: OnceLock<Thread>,
}

impl WorkerParker {
    /// Records the calling thread as the worker (the executor's only worker thread).
    pub(crate) fn register_current(&self) {
        let current = thread::current();
        let registered = self.thread.get_or_init(|| current.clone());
        debug_assert_eq!(
            registered.id(),
            current.id(),
            "one worker thread per executor"
        );
    }

    /// Parks the calling worker thread until it is unparked or `deadline` (if any) has passed,
    /// or spuriously. The caller set `worker_parked` under the queue lock and released it.
    pub(crate) fn park(&self, deadline: Option<Instant>) {
        debug_assert!(
            self.thread.get().map(Thread::id) == Some(thread::current().id()),
            "only the registered worker parks"
        );
        match deadline {
            Some(deadline) => {
                thread::park_timeout(deadline.saturating_duration_since(Instant::now()));
            }
            None => thread::park(),
        }
    }

    /// Wakes the worker (the caller took `worker_parked` under the queue lock, so the worker
    /// registered itself before it set the flag).
    pub(crate) fn unpark(&self) {
        if let Some(worker) = self.thread.get() {
            worker.unpark();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    #[test]
    fn an_unpark_before_the_park_is_not_lost() {
        let parker = Arc::new(WorkerParker::default());
        let (registered_tx, registered_rx) = mpsc::channel();
        // The worker waits for the unpark by spinning, not by blocking: a blocking wait (a
        // channel's `recv`) parks the thread itself and would take the token meant for the
        // park below (as it may from any code that parks the worker thread between an unpark
        // and the worker's park, which the executor never does).
        let unparked = Arc::new(AtomicBool::new(false));
        let worker = {
            let (parker, unparked) = (Arc::clone(&parker), Arc::clone(&unparked));
            thread::spawn(move || {
                parker.register_current();
                registered_tx.send(()).unwrap();
                while !unparked.load(Ordering::Acquire) {
                    thread::yield_now();
                }
                // The unpark already happened: this returns at once. A lost token would sleep
                // until the (far) deadline.
                let deadline = Instant::now() + Duration::from_secs(60);
                parker.park(Some(deadline));
                Instant::now() < deadline
            })
        };
        registered_rx.recv().unwrap();
        parker.unpark();
        unparked.store(true, Ordering::Release);
        assert!(worker.join().unwrap(), "the park waited for its deadline");
    }

    #[test]
    fn a_producer_finds_no_worker_before_it_registered() {
        let parker = WorkerParker::default();
        parker.unpark(); // nothing to wake, nothing to panic about
        assert!(parker.thread.get().is_none());
        parker.register_current();
        assert_eq!(
            parker.thread.get().map(Thread::id),
            Some(thread::current().id())
        );
    }
}
