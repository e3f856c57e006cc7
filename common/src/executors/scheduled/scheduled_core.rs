//! The scheduled executor's own operations on its core (`ExecutorCore<Timers>`): arm a timer,
//! cancel one, re-arm a periodic one, fire a claimed one; and the timer introspection. Admission,
//! shutdown, the worker loop and `Drop` are the core's, shared with the plain executor.
//!
//! The protocol (lock order, cancel vs fire) is described in `README.md` beside this file.

use crate::executors::executor_core::{QueueState, RUNNING};
use crate::executors::executor_counters::EventCounters;
use crate::executors::rejected::RejectReason;
use crate::executors::scheduled::core_share::{CoreShare, HandleShares};
use crate::executors::scheduled::entry_blocks::Block;
use crate::executors::scheduled::timer_entry::{
    EntryHeader, EntryOutcome, Fired, Timer, TimerEntry, TimerJob, IN_DUE_LIST, NOT_IN_HEAP,
};
use crate::executors::scheduled::timer_ref::TimerRef;
use crate::executors::scheduled::timers::{cancel_detached, LockedTimers, ScheduledCore};
use crate::sync::Arc;
use std::alloc::Layout;
use std::time::Instant;

impl ScheduledCore {
    /// Arms a timer running `job`, due at `deadline`. `due_now`: the deadline is the clock the
    /// caller read to make it (a zero delay), so the timer is due at once and may take the
    /// wheel's lane (`due_now_lane.rs`). Returns the handle's reference to the entry and its
    /// share of the core (`core_share.rs`).
    ///
    /// The entry goes into the memory of a fired one when the producers' side keeps one of its
    /// layout (`entry_blocks.rs`), taken under the queue lock this holds anyway; otherwise it
    /// is allocated and written before the lock.
    ///
    /// # Errors
    ///
    /// The job back, and the reason: shut down, or the worker thread could not be started.
    #[allow(clippy::type_complexity)]
    pub(crate) fn arm<J: TimerJob>(
        this: &Arc<Self>,
        deadline: Instant,
        due_now: bool,
        job: J,
    ) -> Result<(TimerRef<dyn EntryOutcome<J::Output>>, CoreShare), (J, RejectReason)> {
        let layout = Layout::new::<TimerEntry<J>>();
        // Made before the lock in fresh memory, unless kept memory is likely to be there: then
        // under the lock, in it.
        let made = if this.between.may_keep_blocks() {
            Err(job)
        } else {
            Ok(TimerRef::pair_in(job, Block::allocate(layout)))
        };
        let mut queue = match Self::admit(this) {
            Ok(queue) => queue,
            Err(reason) => {
                this.count_rejected(1);
                let job = match made {
                    Err(job) => job,
                    Ok((_timer, handle)) => handle
                        .take_job()
                        .expect("a new entry still holds its closure"),
                };
                return Err((job, reason));
            }
        };
        let (timer, handle) = made.unwrap_or_else(|job| {
            // A stale hint: allocated under the lock.
            let block = queue
                .between
                .kept
                .take(layout)
                .unwrap_or_else(|| Block::allocate(layout));
            if queue.between.kept.is_empty() {
                this.between.note_no_kept_blocks();
            }
            TimerRef::pair_in(job, block)
        });
        let share = HandleShares::take(this, queue.run);
        let timer = timer.erase();
        let earliest = if due_now {
            queue.between.push_due(deadline, timer)
        } else {
            queue.between.push(deadline, timer)
        };
        this.queue.count_submitted(&mut queue, 1);
        this.between.note_armed();
        this.between.lower_next_due(deadline);
        // Only a new earliest deadline changes how long a parked worker should sleep.
        let wake = earliest && std::mem::take(&mut queue.worker_parked);
        drop(queue);
        if wake {
            this.parker.unpark();
        }
        Ok((handle.outcome(), share))
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
        queue: &mut QueueState<LockedTimers>,
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
        queue.between.push(deadline, entry);
        this.between.lower_next_due(deadline);
        // Java counts each run of a periodic task as a task: its next run is submitted.
        this.queue.count_submitted(&mut queue, 1);
        this.between.note_armed();
    }

    /// Fires a claimed timer (re-arming a periodic one). Periodic timers stop at shutdown, even
    /// one that was already due.
    /// Returns what it did ([`Fired::Skipped`] for a periodic timer stopped by shutdown).
    /// With it, the entry's memory if the worker's reference was its last (the handle was
    /// dropped): for the next timer of its layout (`entry_blocks.rs`).
    pub(crate) fn fire(this: &Arc<Self>, entry: TimerRef<dyn Timer>) -> (Fired, Option<Block>) {
        if entry.is_periodic() && this.run_state() != RUNNING {
            cancel_detached(&*entry);
            return (Fired::Skipped, entry.release_keeping());
        }
        let fired = entry.fire();
        if fired == Fired::Again {
            Self::rearm(this, entry);
            return (fired, None);
        }
        (fired, entry.release_keeping())
    }

    /// Armed timers.
    pub(crate) fn armed_timers(&self) -> usize {
        self.queue.lock().between.len()
    }

    /// Slots the timer wheel holds now.
    pub(crate) fn timer_capacity(&self) -> usize {
        let queue = self.queue.lock();
        let fired = self.between.due.lock().fired.len();
        queue.between.capacity() + queue.between.kept.len() + fired
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::executors::scheduled::timer_entry::Once;
    use crate::executors::{NamedThreadFactory, ScheduledExecutor};
    use std::time::Duration;

    /// The `next_due` hint is never later than the earliest armed timer's deadline, or a timer
    /// falling due during a batch waits for the whole batch. A timer filed above level 0 is
    /// known to the wheel only by its slot's start, while the hint holds its exact deadline; a
    /// timer armed between the two is not "the earliest" to the wheel, yet due first, and
    /// must lower the hint. (Audit of 2026-12-07: the hint kept the later deadline.)
    #[test]
    fn a_timer_armed_before_the_earliest_exact_deadline_lowers_the_next_due_hint() {
        let executor = ScheduledExecutor::new(NamedThreadFactory::new("next-due-hint"));
        // A worker busy in a task does no pass that could refresh the hint meanwhile.
        let release = pulsar_testkit::block_worker_with(|task| executor.execute(task).unwrap());
        let core = executor.core();
        let hint = || core.between.next_due_hint();
        let far = executor.schedule(Duration::from_secs(10), || ()).unwrap();
        let slot_start = core.queue.lock().between.next_due_nanos().unwrap();
        assert!(
            slot_start < hint(),
            "the far timer is filed above level 0, known by its slot's start"
        );
        let deadline = core.between.origin() + Duration::from_nanos(slot_start);
        let Ok((near, share)) = ScheduledCore::arm(core, deadline, false, Once(|| ())) else {
            panic!("a running executor accepts a timer");
        };
        assert!(
            hint() <= slot_start,
            "the hint ({}) must not be later than the near timer ({slot_start})",
            hint()
        );
        release.send(()).unwrap();
        drop((near, share, far));
        drop(executor.shutdown_now());
    }
}
