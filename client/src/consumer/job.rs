//! `ConsumerJob`: the unit of dispatch work a consumer hands to an executor, and how a listener
//! job keeps its consumer alive without touching the consumer's reference count.
//!
//! # Design note: counted by the lane, not by the `Arc`
//!
//! A trigger job owns one strong reference to the consumer, like any `Arc` handle. A listener
//! job does not: the router makes hundreds of thousands of them per second, and an `Arc` clone
//! per job (on the router's core) plus a drop per job (on the listener's core) bounced the
//! count's cache line between the two cores once per message. The profile put that at about
//! half of the routing pass. A quick experiment that only dropped the count took the Shared
//! dispatch benchmark from ~84 to ~58 ns per message; this design, landed together with handing
//! each share over in one executor call, measured ~84-97 -> ~61-66 side by side on 2 cores
//! (`consumer_dispatch` in microbench).
//!
//! Instead, each lane counts its live listener jobs (`Lane::jobs`, on the cache line of the
//! lane's messages, which the listener thread writes anyway), and the lane as a whole holds
//! **one** strong reference while that count is above zero:
//!
//! - the router adds a whole share's jobs with one `fetch_add` *before* it creates them; the
//!   add that moves the count from 0 takes the lane's strong reference (the router holds its
//!   own handle throughout, so the consumer is alive);
//! - a job ends (it ran, or was dropped unrun: refused, or returned by `shutdown_now`) with one
//!   `fetch_sub` as the very last thing it does with the consumer; the `fetch_sub` that moves
//!   the count to 0 releases the lane's strong reference.
//!
//! Every job is counted from before it exists until its last access, so while any job lives
//! the lane's reference does, and the consumer with it. Additions and releases of the lane's
//! reference pair up in the count's modification order (0 -> n takes, 1 -> 0 releases), so
//! the strong count never drops below the handles that really exist. This is the same
//! argument as `Arc`'s own drop, one level up: the count is touched through the job's pointer
//! and nothing of the consumer is touched after a `fetch_sub` that did not reach 0.

use crate::consumer::{Consumer, ConsumerShared};
use std::fmt;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A unit of a consumer's dispatch work, handed to a [`ConsumerExecutor`](crate::ConsumerExecutor):
/// the listener trigger (on the internal executor) or one listener call (on a listener
/// executor). Run it with [`run`](Self::run), or drop it: a dropped job gives up its work (the
/// consumer keeps the message concerned until [`Consumer::close`](crate::Consumer::close) returns it).
///
/// Two words, so the executors of this workspace store it inline in a task slot.
pub struct ConsumerJob {
    /// The consumer. For a trigger job, one strong reference this job owns; for a listener
    /// job, a pointer kept valid by the lane's job count (module docs).
    shared: NonNull<ConsumerShared>,
    /// The listener lane this job delivers one message of, or [`ConsumerJob::TRIGGER`].
    lane: usize,
}

// SAFETY: a job is a handle on a `ConsumerShared` (which is `Send + Sync`: every field is, or
// is behind a lock or an atomic), like an `Arc<ConsumerShared>`; nothing in it is tied to the
// thread that made it.
#[allow(unsafe_code)]
unsafe impl Send for ConsumerJob {}

// SAFETY: through `&ConsumerJob` only `Debug` reads the consumer (its name), which
// `ConsumerShared: Sync` allows from any thread; running or dropping a job takes it by value.
#[allow(unsafe_code)]
unsafe impl Sync for ConsumerJob {}

impl ConsumerJob {
    /// The `lane` of the trigger job, which moves messages from the receive queue to the lanes.
    const TRIGGER: usize = usize::MAX;

    /// The trigger job of `consumer`: owns one strong reference.
    pub(crate) fn trigger(consumer: &Consumer) -> Self {
        let owned = Arc::clone(consumer.arc());
        let shared = NonNull::from(&*owned);
        // The job owns this reference now; `run` or `drop` takes it back.
        let _ = Arc::into_raw(owned);
        Self {
            shared,
            lane: Self::TRIGGER,
        }
    }

    /// `count` listener jobs of lane `lane`, appended to `out`. Counts them in the lane first
    /// (taking the lane's strong reference if the count was 0).
    pub(crate) fn for_lane(consumer: &Consumer, lane: usize, count: usize, out: &mut Vec<Self>) {
        if count == 0 {
            return;
        }
        let shared = consumer.arc();
        if shared.lanes[lane].jobs().fetch_add(count, Ordering::AcqRel) == 0 {
            // The lane's one strong reference; released by the job that brings the count
            // back to 0 (`finish_listener_job`).
            let _ = Arc::into_raw(Arc::clone(shared));
        }
        let pointer = NonNull::from(&**shared);
        out.extend((0..count).map(|_| Self {
            shared: pointer,
            lane,
        }));
    }

    /// Runs the job on the calling thread.
    pub fn run(self) {
        if self.lane == Self::TRIGGER {
            let job = ManuallyDrop::new(self);
            let consumer = Consumer::from_shared(job.take_trigger_reference());
            consumer.shared().route_incoming(&consumer);
        } else {
            // A view of the consumer for the listener's `&Consumer`, with no count of its own
            // (it is never dropped): the lane's reference keeps the consumer alive until `self`
            // is dropped at the end of this block, which ends the job (also on unwinding).
            // SAFETY: the pointer came from an `Arc<ConsumerShared>` (`for_lane`), and this
            // job is counted in its lane until `self` drops, so the lane's reference is held.
            #[allow(unsafe_code)]
            let consumer = ManuallyDrop::new(Consumer::from_shared(unsafe {
                Arc::from_raw(self.shared.as_ptr())
            }));
            consumer
                .shared()
                .deliver_one_to_listener(&consumer, self.lane);
        }
    }

    /// Takes over the trigger job's strong reference.
    fn take_trigger_reference(&self) -> Arc<ConsumerShared> {
        debug_assert_eq!(self.lane, Self::TRIGGER);
        // SAFETY: a trigger job owns one strong reference, from `Arc::into_raw` in `trigger`;
        // callers take it once (`run` and `drop` are exclusive, `run` disarms `drop`).
        #[allow(unsafe_code)]
        unsafe {
            Arc::from_raw(self.shared.as_ptr())
        }
    }

    /// The consumer, while this job keeps it alive.
    fn consumer_shared(&self) -> &ConsumerShared {
        // SAFETY: either this job owns a strong reference (trigger), or it is counted in its
        // lane, which then holds one (module docs); either lasts as long as `self`.
        #[allow(unsafe_code)]
        unsafe {
            self.shared.as_ref()
        }
    }
}

impl Drop for ConsumerJob {
    /// Ends the job: a listener job that ran, or any job dropped unrun (refused by its
    /// executor, or returned by `shutdown_now` and dropped), gives up its reference or its
    /// place in the lane count. The message of an unrun listener job stays in the lane, for
    /// `close`.
    fn drop(&mut self) {
        if self.lane == Self::TRIGGER {
            let shared = self.take_trigger_reference();
            // The trigger never ran: let the next `deliver` queue another.
            shared.trigger_pending.store(false, Ordering::Release);
            drop(shared);
        } else {
            // SAFETY: this job is counted in its lane and ends here.
            #[allow(unsafe_code)]
            unsafe {
                finish_listener_job(self.shared, self.lane)
            };
        }
    }
}

/// Ends a listener job: one `fetch_sub` of its lane's count, and, if that was the last job,
/// the release of the lane's strong reference.
///
/// # Safety
///
/// `shared` comes from an `Arc<ConsumerShared>`, and the calling job is counted in lane
/// `lane` and is ending (it is never used again).
#[allow(unsafe_code)]
unsafe fn finish_listener_job(shared: NonNull<ConsumerShared>, lane: usize) {
    // SAFETY: the job is still counted, so the consumer is alive for this access.
    let jobs = unsafe { shared.as_ref().lanes[lane].jobs() };
    // Nothing of the consumer is touched after a decrement that does not reach 0 (another
    // thread may then release the last reference at any time), exactly as in `Arc::drop`.
    if jobs.fetch_sub(1, Ordering::AcqRel) == 1 {
        // SAFETY: the count went 1 -> 0: this job owns the lane's strong reference, taken by
        // the `for_lane` that moved the count from 0, and releases it once.
        unsafe { Arc::decrement_strong_count(shared.as_ptr()) };
    }
}

impl fmt::Debug for ConsumerJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.lane == Self::TRIGGER {
            "trigger".to_owned()
        } else {
            format!("listener lane {}", self.lane)
        };
        f.debug_struct("ConsumerJob")
            .field("consumer", &self.consumer_shared().name)
            .field("job", &kind)
            .finish()
    }
}
