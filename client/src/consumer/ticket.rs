//! `JobTicket`: a job's hold on its consumer, counted by the consumer's job counts instead of by
//! its `Arc` — the client's only `unsafe` code.
//!
//! # Design note: counted per lane, not per job
//!
//! The router makes one listener job per message. An `Arc` clone per job (on the router's
//! core) and a drop per job (on the listener's core) would move the reference count's cache
//! line between the two cores once per message; side by side that cost about a third of
//! the dispatch throughput, enough to miss the `consumer_dispatch` targets. (Coalescing the
//! jobs into one "drain this lane" job per busy period, which needs no `unsafe`, takes our
//! executors off the per-message path altogether: every executor then measures the same, and
//! the targets, which compare executors, fail; that design was measured and not kept.)
//!
//! Instead, each job holds a ticket counted in one of the consumer's job counts — a listener
//! job in its lane's (`Lane::jobs`, on the cache line of the lane's messages, which the
//! listener thread writes anyway), a trigger job in the trigger count
//! (`ConsumerShared::trigger_jobs`) — and each count as a whole holds **one** strong reference
//! while it is above zero:
//!
//! - [`JobTicket::issue_for_lane`] adds a whole share's tickets with one `fetch_add` *before* it makes
//!   them; the add that moves the count from 0 takes the count's strong reference (the caller
//!   holds its own handle throughout, so the consumer is alive);
//! - a ticket's `Drop` (its job ran, or was dropped unrun: refused, or returned by
//!   `shutdown_now`) does one `fetch_sub` as the very last thing it does with the consumer; the
//!   `fetch_sub` that moves the count to 0 releases the count's strong reference.
//!
//! Every ticket is counted from before it exists until its last access, so while any ticket
//! lives its count's reference does, and the consumer with it. Additions and releases of a
//! count's reference pair up in the count's modification order (0 -> n takes, 1 -> 0 releases),
//! so the strong count never drops below the handles that really exist. This is `Arc`'s own
//! drop argument one level up: nothing of the consumer is touched after a `fetch_sub` that did
//! not reach 0.
//!
//! A ticket is two words, a pointer and an integer, so a job (one ticket) is handed to and
//! from the executors' task code in two registers.
//!
//! # Memory ordering
//!
//! Both sides use `AcqRel`. The `fetch_sub` that reaches 0 acquires every earlier ticket's
//! release (their accesses to the consumer happen before the count's reference is dropped, as
//! in `Arc::drop`), and an `issue` that moves the count from 0 acquires the release that
//! brought it to 0, so the reference it takes is ordered after the one released.
//!
//! # Provenance
//!
//! The pointer a ticket keeps is [`Arc::as_ptr`] of the consumer's `Arc` — the pointer
//! `Arc::into_raw` returns, whose provenance covers the whole allocation, reference counts
//! included — never one made from a `&ConsumerShared`, which would cover only the value and
//! make [`Arc::from_raw`] and [`Arc::decrement_strong_count`] undefined behaviour (Miri's
//! Stacked Borrows reports it). `tests/consumer_lifetime.rs` runs under Miri.

use crate::consumer::sync::AtomicUsize;
use crate::consumer::{Consumer, ConsumerShared};
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One job's hold on its consumer: valid while it is counted in the job count its slot names
/// (module docs).
pub(crate) struct JobTicket {
    /// [`Arc::as_ptr`] of the consumer's `Arc`; kept alive by the count's strong reference.
    shared: NonNull<ConsumerShared>,
    /// Which count the ticket is in, and what its job does: a lane index (a listener job of
    /// that lane), or [`TRIGGER`](Self::TRIGGER) / [`SPENT_TRIGGER`](Self::SPENT_TRIGGER)
    /// (a trigger job, before and after it started; both in the trigger count).
    slot: usize,
}

/// The `Send`/`Sync` impls below rest on this: a field added to the consumer that is neither
/// `Send` nor `Sync` fails the build here instead of making them unsound.
const _: fn() = || {
    fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<ConsumerShared>();
};

// SAFETY: a ticket is a handle on a `ConsumerShared` (which is `Send + Sync`, asserted above),
// like an `Arc<ConsumerShared>`; nothing in it is tied to the thread that made it, and its
// `Drop` only does atomic operations and an `Arc` release.
#[allow(unsafe_code)]
unsafe impl Send for JobTicket {}

// SAFETY: through `&JobTicket` only shared reads of the `Sync` consumer are possible; dropping
// a ticket takes it by value.
#[allow(unsafe_code)]
unsafe impl Sync for JobTicket {}

impl JobTicket {
    /// The slot of a trigger job that has not started.
    pub(crate) const TRIGGER: usize = usize::MAX;
    /// The slot of a trigger job that has started (it counts as its trigger did).
    pub(crate) const SPENT_TRIGGER: usize = usize::MAX - 1;

    /// Issues `count` tickets of listener lane `lane`, each passed to `make` (which wraps it in
    /// a job) and the result appended to `out`.
    #[inline]
    pub(crate) fn issue_for_lane<J>(
        shared: &Arc<ConsumerShared>,
        lane: usize,
        count: usize,
        out: &mut Vec<J>,
        make: impl Fn(JobTicket) -> J,
    ) {
        debug_assert!(lane < shared.lanes.len());
        if count == 0 {
            return;
        }
        let pointer = count_in(shared, lane, count);
        out.extend((0..count).map(|_| {
            make(JobTicket {
                shared: pointer,
                slot: lane,
            })
        }));
    }

    /// Issues the ticket of a trigger job.
    pub(crate) fn issue_for_trigger(shared: &Arc<ConsumerShared>) -> JobTicket {
        JobTicket {
            shared: count_in(shared, Self::TRIGGER, 1),
            slot: Self::TRIGGER,
        }
    }

    /// The ticket's slot.
    #[inline]
    pub(crate) fn slot(&self) -> usize {
        self.slot
    }

    /// Marks a trigger's ticket as started (it stays in the trigger count).
    #[inline]
    pub(crate) fn spend_trigger(&mut self) {
        debug_assert_eq!(self.slot, Self::TRIGGER);
        self.slot = Self::SPENT_TRIGGER;
    }

    /// The consumer, while this ticket keeps it alive.
    pub(crate) fn shared(&self) -> &ConsumerShared {
        // SAFETY: the pointer is `Arc::as_ptr` of a live `Arc` (allocation provenance), and
        // while this ticket is counted (until its `Drop`), its count holds a strong reference,
        // so the consumer outlives the returned borrow of `self`.
        #[allow(unsafe_code)]
        unsafe {
            self.shared.as_ref()
        }
    }

    /// Calls `f` with a [`Consumer`] handle on this ticket's consumer that owns no count of its
    /// own (it is never dropped); the listener gets it as its `&Consumer` and may clone it.
    pub(crate) fn with_consumer<R>(&self, f: impl FnOnce(&Consumer) -> R) -> R {
        // SAFETY: the pointer is `Arc::as_ptr` of an `Arc<ConsumerShared>`, the pointer
        // `Arc::into_raw` returns, as `from_raw` requires. The `Arc` made here is never dropped
        // (`ManuallyDrop`, also on unwinding), so it takes no count it does not own; the
        // count's strong reference keeps the consumer alive while `self` is borrowed, which
        // outlasts `f` and any clone `f` makes (a clone takes its own count).
        #[allow(unsafe_code)]
        let consumer = ManuallyDrop::new(Consumer::from_shared(unsafe {
            Arc::from_raw(self.shared.as_ptr())
        }));
        f(&consumer)
    }
}

impl Drop for JobTicket {
    /// Ends the ticket: one `fetch_sub` of its count and, if that was the last ticket, the
    /// release of the count's strong reference.
    fn drop(&mut self) {
        let jobs = count_of(self.shared(), self.slot);
        // Nothing of the consumer is touched after a decrement that does not reach 0 (another
        // thread may then release the last reference at any time), exactly as in `Arc::drop`.
        if jobs.fetch_sub(1, Ordering::AcqRel) == 1 {
            // SAFETY: the count went 1 -> 0, so this ticket owns the count's strong reference,
            // taken by the `count_in` that moved the count from 0, and releases it once. The
            // pointer is `Arc::as_ptr` of that `Arc` (allocation provenance), as
            // `decrement_strong_count` requires.
            #[allow(unsafe_code)]
            unsafe {
                Arc::decrement_strong_count(self.shared.as_ptr())
            };
        }
    }
}

/// Adds `count` (> 0) tickets to the count of slot `slot` before they exist, taking the count's
/// strong reference if it was 0; returns the pointer the tickets keep.
#[inline]
fn count_in(shared: &Arc<ConsumerShared>, slot: usize, count: usize) -> NonNull<ConsumerShared> {
    if count_of(shared, slot).fetch_add(count, Ordering::AcqRel) == 0 {
        // The count's one strong reference; released by the ticket whose drop brings the count
        // back to 0.
        let _ = Arc::into_raw(Arc::clone(shared));
    }
    NonNull::new(Arc::as_ptr(shared).cast_mut()).expect("Arc::as_ptr is never null")
}

/// The job count a ticket of slot `slot` is in.
#[inline]
fn count_of(shared: &ConsumerShared, slot: usize) -> &AtomicUsize {
    if slot >= JobTicket::SPENT_TRIGGER {
        &shared.trigger_jobs
    } else {
        shared.lanes[slot].jobs()
    }
}
