//! `TaskBatch`: the tasks the worker swapped out of the ring in one go, claimed one at a time.
//!
//! # Protocol
//!
//! The worker moves the whole ring into the batch in O(1) (a storage swap) under the queue
//! lock, then runs the batch without any lock. Before it takes a task it *announces* it: it
//! stores the index after it in `taken` (which only the worker writes), runs the light side of
//! the claim fence (`claim_fence.rs`), and looks at `stolen`. `shutdown_now`, under the queue
//! lock, *steals*: it sets `stolen`, runs the heavy side of the fence, reads `taken` and takes
//! every task from there on, recording where it began in `stolen_from`.
//!
//! The fence pair makes this Dekker's handshake: of the worker's announcement and the
//! stealer's mark, at least one is seen by the other side. So for the index `i` the worker
//! announces:
//!
//! - the worker saw no steal: the stealer's read of `taken` sees the announcement, so it steals
//!   from `i + 1` on at the earliest, and the worker takes `i`;
//! - the worker saw the steal (the rare, *contested* claim): it takes the queue lock, which the
//!   stealer holds from its mark until its steal is done, and takes `i` only if `i` lies below
//!   `stolen_from` (the stealer read the announcement); otherwise `i` was stolen and the batch
//!   is over for the worker.
//!
//! Every index therefore goes to exactly one of them: a task either runs on the worker or
//! comes back from `shutdown_now` — never both, never neither. The loom models in
//! `loom_tests.rs` check it (a mutant without the fence fails them).
//!
//! # Design note: why not one read-modify-write per claim
//!
//! The first version claimed each task with a `fetch_add` on a shared index, which the stealer
//! `swap`ped: simple, but a locked instruction per task, which drains the store buffer and
//! holds back the task's slot read. On the 2-core EPYC host a probe that queues 256 counting
//! tasks behind a blocked worker and times the worker alone measured ~20 ns per task with it
//! and ~8.5 ns with the announcement (an uncontended producer submits in ~14 ns, so the worker
//! used to fall behind it). The announcement is a plain store and a plain load, fenced for free
//! where `membarrier(2)` exists; the rare steal pays a system call instead. (Claiming chunks of tasks with one `fetch_add` was
//! measured too and dropped: tasks claimed in a chunk would still run after `shutdown_now`
//! returned instead of coming back from it.)
//!
//! # Safety argument
//!
//! Slots hold `ManuallyDrop<RawTask>`, so the storage never drops a task by itself: each slot's
//! task is moved out (`ptr::read`) exactly once — by the worker, for an index it announced and
//! did not lose to a steal; by the stealer, for the indexes from `stolen_from` on; or by
//! `Drop`, for indexes never announced — and the protocol above makes these disjoint. The
//! storage is only ever *changed* (`refill`, `release`) by the worker, holding the queue lock,
//! after every index of the current batch has been announced — so no claim (worker, same
//! thread) and no steal (needs the queue lock) can overlap a change. Claims and steals only
//! read the storage, at disjoint indexes.

use crate::collections::ring::Ring;
use crate::executors::claim_fence;
use crate::executors::raw_task::RawTask;
use crate::sync::{AtomicBool, AtomicUsize, Ordering, UnsafeCell};
use std::mem::ManuallyDrop;
use std::ptr;

/// A queued task whose drop is managed by the claim protocol (the ring and the batch hold these).
pub(crate) type TaskSlot = ManuallyDrop<RawTask>;

/// The worker's current batch.
pub(crate) struct TaskBatch {
    /// The batch's tasks, oldest first; only slot indexes the protocol hands out are read.
    slots: UnsafeCell<Ring<TaskSlot>>,
    /// The worker's announcement: the index after the last task it took (or is taking). Only
    /// the worker writes it; `>= len` means the batch is exhausted.
    taken: AtomicUsize,
    /// Set by a steal (under the queue lock); never cleared (a stolen batch is never refilled:
    /// the worker stops).
    stolen: AtomicBool,
    /// Where the steal began: the tasks below it are the worker's. Written and read under the
    /// queue lock.
    stolen_from: AtomicUsize,
}

/// What [`TaskBatch::claim`] found.
pub(crate) enum Claim {
    /// The next task: the worker's to run.
    Task(RawTask),
    /// Every task was taken (or stolen).
    Exhausted,
    /// A steal raced this claim: settle it with [`TaskBatch::settle_contested`], under the
    /// queue lock.
    Contested,
}

// SAFETY: the slots are only read at indexes the protocol hands to one party each, and only
// changed by the worker under the queue lock when no index is outstanding (module docs);
// `RawTask` is `Send`.
unsafe impl Sync for TaskBatch {}
// SAFETY: as above; moving the batch moves `RawTask`s, which are `Send`.
unsafe impl Send for TaskBatch {}

impl TaskBatch {
    pub(crate) fn new() -> Self {
        Self {
            slots: UnsafeCell::new(Ring::empty()),
            taken: AtomicUsize::new(0),
            stolen: AtomicBool::new(false),
            stolen_from: AtomicUsize::new(0),
        }
    }

    /// Announces and takes the next task (module docs).
    ///
    /// # Safety
    ///
    /// Only the worker may call it, and never concurrently with [`refill`](Self::refill) or
    /// [`release`](Self::release) (the worker calls all three, so this holds by sequencing).
    #[inline]
    pub(crate) unsafe fn claim(&self) -> Claim {
        // Only the worker writes `taken`: this reads its own last store.
        let index = self.taken.load(Ordering::Relaxed);
        self.slots.with(|slots| {
            // SAFETY: no change of the storage overlaps this read (caller contract).
            let slots = unsafe { &*slots };
            let Some(slot) = slots.get(index) else {
                return Claim::Exhausted;
            };
            self.taken.store(index + 1, Ordering::Relaxed);
            claim_fence::light();
            if self.stolen.load(Ordering::Relaxed) {
                return Claim::Contested;
            }
            // SAFETY: no steal was seen after the announcement, so the stealer's read of
            // `taken` will see it (module docs) and steals from `index + 1` on at the earliest:
            // this is the one move out of the slot; `ManuallyDrop` keeps the ring from dropping
            // it again.
            Claim::Task(ManuallyDrop::into_inner(unsafe { ptr::read(slot) }))
        })
    }

    /// Settles a [`Claim::Contested`]: the announced task if the steal began after it, else
    /// `None` (it was stolen; the batch is over for the worker).
    ///
    /// # Safety
    ///
    /// The worker calls it, right after `claim` returned `Contested`, holding the queue lock
    /// (so the steal is complete).
    pub(crate) unsafe fn settle_contested(&self) -> Option<RawTask> {
        let index = self.taken.load(Ordering::Relaxed) - 1;
        if index >= self.stolen_from.load(Ordering::Relaxed) {
            return None;
        }
        self.slots.with(|slots| {
            // SAFETY: the storage does not change (caller contract).
            let slots = unsafe { &*slots };
            let slot = slots.get(index).expect("an announced index is below len");
            // SAFETY: the steal began above `index`, so the stealer did not take it, and the
            // worker announced it once: this is the one move out of it.
            Some(ManuallyDrop::into_inner(unsafe { ptr::read(slot) }))
        })
    }

    /// Whether every slot has been announced.
    fn is_exhausted(&self, slots: &Ring<TaskSlot>) -> bool {
        self.taken.load(Ordering::Relaxed) >= slots.len()
    }

    /// Swaps the ring's tasks into the (exhausted) batch; the ring gets the batch's storage.
    ///
    /// # Safety
    ///
    /// The worker calls it, holding the queue lock (`ring` is the queue's ring), with the
    /// batch exhausted and not stolen (after a steal the worker stops).
    pub(crate) unsafe fn refill(&self, ring: &mut Ring<TaskSlot>) {
        debug_assert!(
            !self.stolen.load(Ordering::Relaxed),
            "a stolen batch is never refilled"
        );
        self.slots.with_mut(|slots| {
            // SAFETY: the worker (the only claimer) is here, and `shutdown_now` needs the queue
            // lock the caller holds: no other access to the storage exists.
            let slots = unsafe { &mut *slots };
            debug_assert!(self.is_exhausted(slots), "refill of a batch still running");
            slots.clear(); // every task was moved out; `ManuallyDrop` drops nothing here
            slots.swap(ring);
        });
        self.taken.store(0, Ordering::Relaxed);
    }

    /// Takes every task the worker has not announced, oldest first (for `shutdown_now`). The
    /// worker takes no task after them; a second steal takes nothing.
    ///
    /// # Safety
    ///
    /// The caller holds the queue lock (so no refill or release runs, and no other steal).
    pub(crate) unsafe fn steal_unclaimed(&self, out: &mut Vec<RawTask>) {
        if self.stolen.load(Ordering::Relaxed) {
            return; // stolen before: nothing is left that the worker did not announce
        }
        self.stolen.store(true, Ordering::Relaxed);
        claim_fence::heavy();
        let announced = self.taken.load(Ordering::Relaxed);
        self.slots.with(|slots| {
            // SAFETY: the storage does not change while the queue lock is held; the worker
            // reads only indexes below `from` (module docs).
            let slots = unsafe { &*slots };
            let from = announced.min(slots.len());
            self.stolen_from.store(from, Ordering::Relaxed);
            for index in from..slots.len() {
                let slot = slots.get(index).expect("index below len");
                // SAFETY: indexes from `from` on were not announced before the mark, and any
                // later announcement sees the mark and loses (module docs): each is moved once.
                out.push(ManuallyDrop::into_inner(unsafe { ptr::read(slot) }));
            }
        });
    }

    /// Moves out every task nobody took, for a core being dropped (no worker exists).
    pub(crate) fn drain_untaken(&mut self, out: &mut Vec<RawTask>) {
        let from = if self.stolen.load(Ordering::Relaxed) {
            usize::MAX // the stealer took the rest
        } else {
            self.taken.load(Ordering::Relaxed)
        };
        let slots = self.slots.get_mut();
        for index in from.min(slots.len())..slots.len() {
            let slot = slots.get(index).expect("index below len");
            // SAFETY: `&mut self`: nobody else can read the slot; indexes from `taken` on were
            // never announced nor stolen, so each still holds its task.
            out.push(ManuallyDrop::into_inner(unsafe { ptr::read(slot) }));
        }
        self.taken.store(slots.len(), Ordering::Relaxed);
    }

    /// Tasks in the batch not yet announced by the worker (read racily: a statistic, and a
    /// capacity hint).
    ///
    /// # Safety
    ///
    /// The caller holds the queue lock.
    pub(crate) unsafe fn unclaimed(&self) -> usize {
        if self.stolen.load(Ordering::Relaxed) {
            return 0;
        }
        self.slots.with(|slots| {
            // SAFETY: the storage does not change while the queue lock is held.
            let slots = unsafe { &*slots };
            slots
                .len()
                .saturating_sub(self.taken.load(Ordering::Relaxed))
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
        let mut untaken = Vec::new();
        self.drain_untaken(&mut untaken);
        drop(untaken);
        self.slots.get_mut().clear();
    }
}
