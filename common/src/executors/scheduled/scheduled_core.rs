//! The scheduled executor's own operations on its core (`ExecutorCore<Timers>`): arm a timer,
//! cancel one, re-arm a periodic one, fire a claimed one; and the timer introspection. Admission,
//! shutdown, the worker loop and `Drop` are the core's, shared with the plain executor.
//!
//! The protocol (lock order, cancel vs fire) is described in `README.md` beside this file.

use crate::executors::executor_core::{QueueState, RUNNING};
use crate::executors::executor_counters::EventCounters;
use crate::executors::rejected::RejectReason;
use crate::executors::scheduled::core_share::{CoreShare, HandleShares};
use crate::executors::scheduled::timer_entry::{
    EntryHeader, Fired, Timer, IN_DUE_LIST, NOT_IN_HEAP,
};
use crate::executors::scheduled::timer_ref::TimerRef;
use crate::executors::scheduled::timer_wheel::TimerWheel;
use crate::executors::scheduled::timers::{cancel_detached, ScheduledCore};
use crate::sync::Arc;
use std::time::Instant;

impl ScheduledCore {
    /// Arms a timer. The caller made `entry`; on rejection it takes its closure back out.
    /// `due_now`: the deadline is the clock the caller read to make it (a zero delay), so the
    /// timer is due at once and may take the wheel's lane (`due_now_lane.rs`). Returns the
    /// share of the core for the timer's handle (`core_share.rs`).
    ///
    /// # Errors
    ///
    /// The reason: shut down, or the worker thread could not be started.
    pub(crate) fn arm(
        this: &Arc<Self>,
        deadline: Instant,
        due_now: bool,
        entry: TimerRef<dyn Timer>,
    ) -> Result<CoreShare, RejectReason> {
        let mut queue = Self::admit(this).inspect_err(|_| this.count_rejected(1))?;
        let share = HandleShares::take(this, queue.run);
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
        Ok(share)
    }

    // ---- cancel and re-arm ---------------------------------------------------------------

    /// Cancels `entry` unless it already ran, runs (one-shot) or was cancelled; removes it from
    /// the wheel at once. Returns whether this call cancelled it. `entry` is the caller's own
    /// reference (the handle's), which keeps the entry alive through the call.
    pub(crate) fn cancel<T: Timer + ?Sized>(&self, entry: &TimerRef<T>) -> bool {
        let mut queue = self.queue.lock();
        // Where the entry is cannot change while the queue lock is held, except that the
        // worker may claim one from its due list (under that list's lock).
        let (cancellation, removed) = match entry.header().heap_index() {
            NOT_IN_HEAP | IN_DUE_LIST => {
                // Due, claimed, or a periodic run in progress. Under the queue lock, so that a
                // periodic re-arm (also under it) either came first (the entry is then back in
                // the wheel: the arm below) or fails after this.
                let Some(cancellation) = entry.header().try_cancel(entry.is_periodic()) else {
                    return false;
                };
                (
                    cancellation,
                    self.remove_detached(&mut queue, entry.header()),
                )
            }
            _ => {
                // In the wheel, so waiting (`SCHEDULED`): unlinking it hands over the wheel's
                // reference, which the cancel's own transition lets go of (`timer_ref.rs`).
                let removed = queue.between.remove(entry.header());
                removed.header().set_heap_index(NOT_IN_HEAP);
                let Some(cancellation) = removed.cancel_unlinked() else {
                    unreachable!("a timer in the wheel is waiting");
                };
                EventCounters::add_under_queue_lock(&self.events.cancelled, 1);
                (cancellation, None)
            }
        };
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

    /// After a won cancel of an entry that is not in the wheel's levels: takes it out of the
    /// wheel's lane or the worker's due list if it waits there (`None` if the worker claimed
    /// it, or `shutdown_now` handed it back), counting it as cancelled.
    fn remove_detached(
        &self,
        queue: &mut QueueState<TimerWheel>,
        header: &EntryHeader,
    ) -> Option<TimerRef<dyn Timer>> {
        if header.heap_index() != IN_DUE_LIST {
            return None; // claimed by the worker, or handed back by `shutdown_now`
        }
        // In the wheel's lane, or moved to the worker's due list, which the worker may have
        // claimed it from since: look under the due list's lock.
        let removed = queue.between.remove_from_lane(header).or_else(|| {
            let mut due = self.between.due.lock();
            let position = due.iter().position(|d| std::ptr::eq(d.header(), header));
            position.and_then(|position| due.remove(position))
        })?;
        removed.header().set_heap_index(NOT_IN_HEAP);
        // Counted only when it was still waiting: a running entry counts as completed, one
        // handed back by `shutdown_now` as returned.
        EventCounters::add_under_queue_lock(&self.events.cancelled, 1);
        Some(removed)
    }

    /// Puts a periodic entry that just ran back in the heap, at its next deadline — unless it
    /// was cancelled during the run or the executor was shut down meanwhile (it stops then).
    pub(crate) fn rearm(this: &Arc<Self>, entry: TimerRef<dyn Timer>) {
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
    pub(crate) fn fire(this: &Arc<Self>, entry: TimerRef<dyn Timer>) -> Fired {
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
