//! `TaskBatch`: the tasks the worker swapped out of the ring in one go, claimed one at a time.
//!
//! # Protocol
//!
//! The worker moves the whole ring into the batch in O(1) (a storage swap) under the queue
//! lock, then runs the batch without any lock: each task is first *claimed* with one
//! `fetch_add` on `next`, which hands out slot indexes in order. `shutdown_now`, under the
//! queue lock, *steals* every slot not yet claimed with one `swap` of `next` to [`STOLEN`]. The
//! read-modify-writes on `next` are totally ordered, so every slot index goes to exactly one of
//! them: a task either runs on the worker or comes back from `shutdown_now` — never both, never
//! neither. (The loom models in `loom_tests.rs` check it. One atomic per claim, rather than a
//! lock or a compare-and-swap per task, keeps the claim cheap on the worker's path.)
//!
//! # Safety argument
//!
//! Slots hold `ManuallyDrop<RawTask>`, so the storage never drops a task by itself: each slot's
//! task is moved out (`ptr::read`) exactly once, by whoever obtained its index from `next`, or
//! dropped by `Drop` if nobody did. The storage is only ever *changed* (`refill`, `release`) by
//! the worker, holding the queue lock, after every index of the current batch has been handed
//! out — so no claim (worker, same thread) and no steal (needs the queue lock) can overlap a
//! change. Claims and steals only read the storage, at disjoint indexes.

use crate::collections::ring::Ring;
use crate::executors::raw_task::RawTask;
use crate::sync::{AtomicUsize, Ordering, UnsafeCell};
use std::mem::ManuallyDrop;
use std::ptr;

/// A queued task whose drop is managed by the claim protocol (the ring and the batch hold these).
pub(crate) type TaskSlot = ManuallyDrop<RawTask>;

/// `next` after a steal: larger than any batch, far from overflow by the worker's few
/// increments before it sees the stop.
const STOLEN: usize = usize::MAX / 2;

/// The worker's current batch.
pub(crate) struct TaskBatch {
    /// The batch's tasks, oldest first; only slot indexes handed out by `next` are read.
    slots: UnsafeCell<Ring<TaskSlot>>,
    /// The next slot index to hand out; `>= len` means the batch is exhausted.
    next: AtomicUsize,
}

// SAFETY: the slots are only read at indexes handed out once each by the atomic `next`, and
// only changed by the worker under the queue lock when no index is outstanding (module docs);
// `RawTask` is `Send`.
unsafe impl Sync for TaskBatch {}
// SAFETY: as above; moving the batch moves `RawTask`s, which are `Send`.
unsafe impl Send for TaskBatch {}

impl TaskBatch {
    pub(crate) fn new() -> Self {
        Self {
            slots: UnsafeCell::new(Ring::empty()),
            next: AtomicUsize::new(0),
        }
    }

    /// Claims the next task, or `None` once the batch is exhausted (or stolen).
    ///
    /// # Safety
    ///
    /// Only the worker may call it, and never concurrently with [`refill`](Self::refill) or
    /// [`release`](Self::release) (the worker calls all three, so this holds by sequencing).
    #[inline]
    pub(crate) unsafe fn claim(&self) -> Option<RawTask> {
        let index = self.next.fetch_add(1, Ordering::AcqRel);
        self.slots.with(|slots| {
            // SAFETY: no change of the storage overlaps this read (caller contract), and
            // `index` was handed out to this call alone, so nobody else reads this slot.
            let slots = unsafe { &*slots };
            let slot = slots.get(index)?;
            // SAFETY: slot `index` still holds its task (nobody else got this index) and this
            // is the one move out of it; `ManuallyDrop` keeps the ring from dropping it again.
            Some(ManuallyDrop::into_inner(unsafe { ptr::read(slot) }))
        })
    }

    /// Whether every slot has been handed out.
    fn is_exhausted(&self, slots: &Ring<TaskSlot>) -> bool {
        self.next.load(Ordering::Acquire) >= slots.len()
    }

    /// Swaps the ring's tasks into the (exhausted) batch; the ring gets the batch's storage.
    ///
    /// # Safety
    ///
    /// The worker calls it, holding the queue lock (`ring` is the queue's ring), with the
    /// batch exhausted.
    pub(crate) unsafe fn refill(&self, ring: &mut Ring<TaskSlot>) {
        self.slots.with_mut(|slots| {
            // SAFETY: the worker (the only claimer) is here, and `shutdown_now` needs the queue
            // lock the caller holds: no other access to the storage exists.
            let slots = unsafe { &mut *slots };
            debug_assert!(self.is_exhausted(slots), "refill of a batch still running");
            slots.clear(); // every task was moved out; `ManuallyDrop` drops nothing here
            slots.swap(ring);
        });
        self.next.store(0, Ordering::Release);
    }

    /// Takes every task not yet claimed, oldest first (for `shutdown_now`). Afterwards every
    /// claim returns `None`.
    ///
    /// # Safety
    ///
    /// The caller holds the queue lock (so no refill or release runs).
    pub(crate) unsafe fn steal_unclaimed(&self, out: &mut Vec<RawTask>) {
        let first = self.next.swap(STOLEN, Ordering::AcqRel);
        self.slots.with(|slots| {
            // SAFETY: the storage does not change while the queue lock is held; concurrent
            // claims read other indexes (the swap took `first..` away from them).
            let slots = unsafe { &*slots };
            for index in first.min(slots.len())..slots.len() {
                let slot = slots.get(index).expect("index below len");
                // SAFETY: the swap handed `first..len` to this call alone; each is moved once.
                out.push(ManuallyDrop::into_inner(unsafe { ptr::read(slot) }));
            }
        });
    }

    /// Tasks in the batch not yet claimed.
    ///
    /// # Safety
    ///
    /// The caller holds the queue lock.
    pub(crate) unsafe fn unclaimed(&self) -> usize {
        self.slots.with(|slots| {
            // SAFETY: the storage does not change while the queue lock is held.
            let slots = unsafe { &*slots };
            slots
                .len()
                .saturating_sub(self.next.load(Ordering::Acquire))
        })
    }

    /// Slots allocated by the batch's storage.
    ///
    /// # Safety
    ///
    /// The caller holds the queue lock.
    pub(crate) unsafe fn capacity(&self) -> usize {
        // SAFETY: the storage does not change while the queue lock is held.
        self.slots.with(|slots| unsafe { &*slots }.capacity())
    }

    /// Frees the storage of an exhausted batch; returns the slots freed.
    ///
    /// # Safety
    ///
    /// As for [`refill`](Self::refill).
    pub(crate) unsafe fn release(&self) -> usize {
        self.slots.with_mut(|slots| {
            // SAFETY: as in `refill`: no other access to the storage exists.
            let slots = unsafe { &mut *slots };
            if !self.is_exhausted(slots) {
                return 0;
            }
            slots.clear();
            slots.release()
        })
    }
}

impl Drop for TaskBatch {
    fn drop(&mut self) {
        let next = self.next.load(Ordering::Acquire);
        let slots = self.slots.get_mut();
        for index in next.min(slots.len())..slots.len() {
            let slot = slots.get(index).expect("index below len");
            // SAFETY: `&mut self`: nobody else can read the slot; indexes from `next` on were
            // never handed out, so each still holds its task, dropped here once.
            drop(ManuallyDrop::into_inner(unsafe { ptr::read(slot) }));
        }
        slots.clear();
    }
}
