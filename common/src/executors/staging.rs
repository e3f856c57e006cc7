//! Per-thread staging for `execute_all`: tasks are type-erased into task slots *before* the
//! queue lock is taken, so no caller code (the iterator, a closure's construction) ever runs
//! under the executor's lock, and the lock is held only for the copy into the ring.
//!
//! The buffer is reused from call to call, so a steady stream of `execute_all` calls allocates
//! nothing; a call made while another is staging on the same thread (the iterator itself
//! calling `execute_all`) simply gets a fresh buffer. After a burst, a buffer larger than
//! [`RETAINED_SLOTS`] is freed instead of kept.

use crate::executors::raw_task::RawTask;
use crate::executors::rejected::{RejectReason, RejectedExecution};
use std::cell::Cell;

/// Slots a thread's staging buffer keeps between calls (32 bytes each: 32 KiB).
pub(crate) const RETAINED_SLOTS: usize = 1024;

std::thread_local! {
    static STAGING: Cell<Vec<RawTask>> = const { Cell::new(Vec::new()) };
}

/// Takes this thread's staging buffer (empty; a fresh one if it is in use or already gone).
pub(crate) fn take() -> Vec<RawTask> {
    STAGING.try_with(Cell::take).unwrap_or_default()
}

/// Gives an emptied buffer back for the next call on this thread.
pub(crate) fn give_back(mut buffer: Vec<RawTask>) {
    debug_assert!(
        buffer.is_empty(),
        "staged tasks are never dropped with the buffer"
    );
    buffer.clear();
    if buffer.capacity() <= RETAINED_SLOTS {
        // During thread exit the slot may be gone: the buffer is then simply freed.
        let _ = STAGING.try_with(|slot| slot.set(buffer));
    }
}

/// `execute_all` for either executor: stages `tasks` in this thread's buffer, hands the buffer
/// to `enqueue_all` (which takes every task or none), and on refusal hands every task back in
/// its own type, in order.
pub(crate) fn execute_all<I, F>(
    tasks: I,
    enqueue_all: impl FnOnce(&mut Vec<RawTask>) -> Result<(), RejectReason>,
) -> Result<(), RejectedExecution<Vec<F>>>
where
    I: IntoIterator<Item = F>,
    F: FnOnce() + Send + 'static,
{
    let mut staged = take();
    staged.extend(tasks.into_iter().map(RawTask::new));
    let result = match enqueue_all(&mut staged) {
        Ok(()) => Ok(()),
        Err(reason) => {
            let tasks = staged
                .drain(..)
                .map(|raw| match raw.downcast::<F>() {
                    Ok(task) => task,
                    Err(_) => unreachable!("staged tasks all have the caller's type"),
                })
                .collect();
            Err(RejectedExecution::new(tasks, reason))
        }
    };
    give_back(staged);
    result
}
