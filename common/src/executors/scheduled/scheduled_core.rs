//! The scheduled executor's own operations on its core (`ExecutorCore<Timers>`): arm a timer,
//! cancel one, re-arm a periodic one, fire a claimed one; and the timer introspection. Admission,
//! shutdown, the worker loop and `Drop` are the core's, shared with the plain executor.
//!
//! The protocol (lock order, cancel vs fire) is described in `README.md` beside this file.

use crate::executors::executor_core::RUNNING;
use crate::executors::executor_counters::EventCounters;
use crate::executors::rejected::RejectReason;
use crate::executors::scheduled::timer_entry::{Fired, Timer, IN_DUE_LIST, NOT_IN_HEAP};
use crate::executors::scheduled::timers::{cancel_detached, ScheduledCore};
use crate::sync::Arc;
use std::time::Instant;

impl ScheduledCore {
    /// Arms a timer. The caller made `entry`; on rejection it takes its closure back out.
    /// `due_now`: the deadline is the clock the caller read to make it (a zero delay), so the
    /// timer is due at once and may take the wheel's lane (`due_now_lane.rs`).
    ///
    /// # Errors
    ///
    /// The reason: shut down, or the worker thread could not be started.
    pub(crate) fn arm(
        this: &Arc<Self>,
        deadline: Instant,
        due_now: bool,
        entry: std::sync::Arc<dyn Timer>,
    ) -> Result<(), RejectReason> {
        let mut queue = Self::admit(this).inspect_err(|_| this.count_rejected(1))?;
        let earliest = if due_now {
            queue.between.push_due(deadline, entry)
        } else {
            queue.between.push(deadline, entry)
        };
        this.queue.count_submitted(&mut queue, 1);
        this.between.note_armed();
        if earliest {
            this.between.set_next_due(deadline);
        }
        // Only a new earliest deadline changes how long a parked worker should sleep.
        let wake = earliest && std::mem::take(&mut queue.worker_parked);
        drop(queue);
        if wake {
            this.parker.unpark();
        }
        Ok(())
    }

    // ---- cancel and re-arm ---------------------------------------------------------------

    /// Cancels `entry` unless it already ran, runs (one-shot) or was cancelled; removes it from
    /// the heap at once. Returns whether this call cancelled it.
    pub(crate) fn cancel<T: Timer + ?Sized>(&self, entry: &T) -> bool {
        let mut queue = self.queue.lock();
        // Under the queue lock, so that a periodic re-arm (also under it) is either before
        // this (the entry is back in the heap, and removed below) or fails.
        let Some(cancellation) = entry.header().try_cancel(entry.is_periodic()) else {
            return false;
        };
        let removed = match entry.header().heap_index() {
            NOT_IN_HEAP => None, // claimed by the worker, or handed back by `shutdown_now`
            IN_DUE_LIST => {
                // In the wheel's lane, or moved to the worker's due list, which the worker may
                // have claimed it from since: look under the due list's lock.
                let header: *const _ = entry.header();
                queue.between.remove_from_lane(header).or_else(|| {
                    let mut due = self.between.due.lock();
                    let position = due.iter().position(|d| std::ptr::eq(d.header(), header));
                    position.and_then(|position| due.remove(position))
                })
            }
            _ => Some(queue.between.remove(entry.header())),
        };
        if let Some(removed) = &removed {
            removed.header().set_heap_index(NOT_IN_HEAP);
            // Counted only when it was still waiting: a running entry counts as completed, one
            // handed back by `shutdown_now` as returned.
            EventCounters::add_under_queue_lock(&self.events.cancelled, 1);
        }
        // A shut-down worker sleeping until this timer's deadline may now be free to exit.
        let wake = queue.run != RUNNING
            && queue.between.is_empty()
            && std::mem::take(&mut queue.worker_parked);
        drop(queue);
        if wake {
            self.parker.unpark();
        }
        entry.finish_cancel(cancellation);
        drop(removed);
        true
    }

    /// Puts a periodic entry that just ran back in the heap, at its next deadline — unless it
    /// was cancelled during the run or the executor was shut down meanwhile (it stops then).
    pub(crate) fn rearm(this: &Arc<Self>, entry: std::sync::Arc<dyn Timer>) {
        // The worker owns the closure until the re-arm's transition hands it back (see
        // `TimerEntry`), so the next deadline is read before it.
        let deadline = entry.next_deadline(Instant::now());
        let mut queue = this.queue.lock();
        if queue.run != RUNNING {
            let cancellation = entry.header().try_cancel(true);
            drop(queue);
            if let Some(cancellation) = cancellation {
                entry.finish_cancel(cancellation);
            }
            entry.discard_job();
            return;
        }
        if !entry.header().try_rearm() {
            // Cancelled during the run, after `fire` looked: the closure is still the worker's.
            drop(queue);
            entry.discard_job();
            return;
        }
        // The caller is the worker itself (the only place a periodic entry runs while the
        // executor runs), so there is nobody to wake.
        if queue.between.push(deadline, entry) {
            this.between.set_next_due(deadline);
        }
        // Java counts each run of a periodic task as a task: its next run is submitted.
        this.queue.count_submitted(&mut queue, 1);
        this.between.note_armed();
    }

    /// Fires a claimed timer (re-arming a periodic one). Periodic timers stop at shutdown, even
    /// one that was already due.
    /// Returns what it did ([`Fired::Skipped`] for a periodic timer stopped by shutdown).
    pub(crate) fn fire(this: &Arc<Self>, entry: std::sync::Arc<dyn Timer>) -> Fired {
        if entry.is_periodic() && this.run_state() != RUNNING {
            cancel_detached(&*entry);
            return Fired::Skipped;
        }
        let fired = entry.fire();
        if fired == Fired::Again {
            Self::rearm(this, entry);
        }
        fired
    }

    /// Armed timers.
    pub(crate) fn armed_timers(&self) -> usize {
        self.queue.lock().between.len()
    }

    /// Slots the timer wheel holds now.
    pub(crate) fn timer_capacity(&self) -> usize {
        self.queue.lock().between.capacity()
    }
}
