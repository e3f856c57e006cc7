//! `CancelledTasks`: how many cancelled tasks still sit in an executor's queue, so that
//! `pending_tasks` does not count them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The number of cancelled tasks whose queue entries still exist (in the ring, in the worker's
/// batch, or in a `shutdown_now` caller's hands). Shared by an executor core and the cells of
/// its submitted tasks and spawned futures (one `Arc` clone per task: no allocation).
///
/// A cancel that leaves an entry behind calls [`cancelled_one`](Self::cancelled_one) under the
/// task cell's lock; the entry, when it is run (a no-op) or dropped, sees the cancelled state
/// under that same lock and calls [`entry_gone`](Self::entry_gone): the lock orders the
/// increment before the decrement, so the count never wraps.
#[derive(Clone, Default)]
pub(crate) struct CancelledTasks(Arc<AtomicUsize>);

impl CancelledTasks {
    /// A cancel left a queue entry behind.
    pub(crate) fn cancelled_one(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// The entry of a cancelled task was run (as a no-op) or dropped.
    pub(crate) fn entry_gone(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }

    /// Cancelled entries now. Read under the queue lock by `pending_tasks`, which subtracts
    /// it from the queue's length (saturating: an entry the worker has just claimed may still
    /// be counted here, for the instant before it runs).
    pub(crate) fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}
