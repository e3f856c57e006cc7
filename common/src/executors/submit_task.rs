//! A submitted closure's shared cell: the closure, its claim-or-cancel state and its outcome,
//! in the one allocation `submit` makes.
//!
//! # Design
//!
//! `submit` puts the closure into the `Arc` that also holds the result slot, and queues only
//! the `Arc` (one word: it always fits a task slot inline). The worker's job and
//! [`TaskHandle::cancel`](crate::executors::TaskHandle::cancel) race for the closure under the
//! cell's lock, so exactly one of them takes it:
//!
//! | stage       | meaning                                        | next (who)                              |
//! |-------------|------------------------------------------------|-----------------------------------------|
//! | `Pending`   | queued, holds the closure                      | `Claimed` (the job), `Cancelled` (`cancel`), `Dropped` (the job dropped unrun, or a rejected submit takes the closure back) |
//! | `Claimed`   | the job took the closure and runs (ran) it     | final                                   |
//! | `Cancelled` | `cancel` took and dropped the closure; the queue entry is still there | `Dropped` (the entry is run or dropped) |
//! | `Dropped`   | nothing left to do                             | final                                   |
//!
//! `cancel` drops the closure itself, before it returns, and counts the entry it leaves in
//! the queue in the executor's [`CancelledTasks`]; the entry, when the worker reaches it (or
//! when a `shutdown_now` caller runs or drops it), is a no-op that takes it off that count.
//! No user code runs under the lock: closures run and drop after it is released.

use crate::executors::cancelled_tasks::CancelledTasks;
use crate::executors::raw_task::{Job, JobOutcome};
use crate::executors::result_slot::ResultSlot;
use crate::executors::task_error::TaskError;
use crate::executors::task_handle::TaskCell;
use crate::sync::plain::Mutex;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

/// The cell `submit` allocates: closure, stage and outcome.
pub(crate) struct SubmitCell<F, R> {
    stage: Mutex<Stage<F>>,
    slot: ResultSlot<R>,
    cancelled: CancelledTasks,
}

enum Stage<F> {
    Pending(F),
    Claimed,
    Cancelled,
    Dropped,
}

/// The queue entry of a submitted closure: the cell's `Arc`. Run, it runs the closure unless
/// it was cancelled; dropped unrun (`shutdown_now`'s caller dropped it, or the executor
/// dropped it), it cancels the task.
pub(crate) struct SubmitJob<F, R> {
    /// `None` once run (so that `Drop` does nothing) or taken back by [`Self::reclaim`].
    cell: Option<Arc<SubmitCell<F, R>>>,
}

impl<F, R> SubmitJob<F, R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    /// A queue entry for `f` and the cell its handle will share. `cancelled` is the
    /// executor's count of cancelled entries.
    pub(crate) fn new(f: F, cancelled: CancelledTasks) -> (Self, Arc<SubmitCell<F, R>>) {
        let cell = Arc::new(SubmitCell {
            stage: Mutex::new(Stage::Pending(f)),
            slot: ResultSlot::new(),
            cancelled,
        });
        let job = Self {
            cell: Some(Arc::clone(&cell)),
        };
        (job, cell)
    }

    /// The closure of an entry the executor refused (never queued, so never claimed nor
    /// cancelled: its handle was not handed out).
    pub(crate) fn reclaim(mut self) -> F {
        let cell = self.cell.take().expect("an entry is reclaimed once");
        let stage = std::mem::replace(&mut *cell.stage.lock(), Stage::Dropped);
        match stage {
            Stage::Pending(f) => f,
            _ => unreachable!("a refused entry still holds its closure"),
        }
    }
}

impl<F, R> Job for SubmitJob<F, R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    fn run(mut self) -> JobOutcome {
        let Some(cell) = self.cell.take() else {
            unreachable!("an entry holds its cell until it runs or is reclaimed")
        };
        let f = {
            let mut stage = cell.stage.lock();
            match std::mem::replace(&mut *stage, Stage::Claimed) {
                Stage::Pending(f) => f,
                Stage::Cancelled => {
                    *stage = Stage::Dropped;
                    cell.cancelled.entry_gone();
                    return JobOutcome::Cancelled;
                }
                Stage::Claimed | Stage::Dropped => unreachable!("a task's one entry runs once"),
            }
        };
        let outcome = panic::catch_unwind(AssertUnwindSafe(f)).map_err(TaskError::panicked);
        let job_outcome = match outcome {
            Ok(_) => JobOutcome::Completed,
            Err(_) => JobOutcome::Panicked,
        };
        cell.slot.complete(outcome);
        job_outcome
    }
}

impl<F, R> Drop for SubmitJob<F, R> {
    fn drop(&mut self) {
        if let Some(cell) = self.cell.take() {
            cell.entry_dropped();
        }
    }
}

impl<F, R> SubmitCell<F, R> {
    /// The queue entry went away unrun: cancels a pending task (its handle yields
    /// `Cancelled`), or takes a cancelled one off the count.
    fn entry_dropped(&self) {
        let stage = {
            let mut stage = self.stage.lock();
            match &*stage {
                Stage::Pending(_) => std::mem::replace(&mut *stage, Stage::Dropped),
                Stage::Cancelled => {
                    *stage = Stage::Dropped;
                    self.cancelled.entry_gone();
                    return;
                }
                Stage::Claimed | Stage::Dropped => return,
            }
        };
        if let Stage::Pending(f) = stage {
            self.slot
                .complete_after_dropping(f, Err(TaskError::Cancelled));
        }
    }
}

impl<F, R> TaskCell<R> for SubmitCell<F, R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    fn slot(&self) -> &ResultSlot<R> {
        &self.slot
    }

    fn cancel(&self) -> bool {
        let stage = {
            let mut stage = self.stage.lock();
            if !matches!(*stage, Stage::Pending(_)) {
                return false;
            }
            // Counted under the lock, before the entry can see `Cancelled` and uncount it.
            self.cancelled.cancelled_one();
            std::mem::replace(&mut *stage, Stage::Cancelled)
        };
        let Stage::Pending(f) = stage else {
            unreachable!("checked above")
        };
        self.slot
            .complete_after_dropping(f, Err(TaskError::Cancelled));
        true
    }
}
