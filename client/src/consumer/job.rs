//! `ConsumerJob`: the unit of dispatch work a consumer hands to an executor — the listener
//! trigger, or one listener call.

use crate::consumer::ticket::LaneTicket;
use crate::consumer::{Consumer, ConsumerShared};
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A unit of a consumer's dispatch work, handed to a [`ConsumerExecutor`](crate::ConsumerExecutor):
/// the listener trigger (on the internal executor) or one listener call (on a listener
/// executor). Run it with [`run`](Self::run), or drop it: a dropped job gives up its work (the
/// consumer keeps the message concerned until [`Consumer::close`](crate::Consumer::close) returns it).
///
/// A job keeps its consumer alive until it has run or is dropped. Two words, so the executors
/// of this workspace store it inline in a task slot.
pub struct ConsumerJob(Kind);

/// What a job does, and how it holds its consumer.
enum Kind {
    /// Moves messages from the receive queue to the lanes; owns one strong reference, which
    /// `run` takes (`None` afterwards, so that `drop` can tell a trigger dropped unrun).
    Trigger(Option<Arc<ConsumerShared>>),
    /// Hands the oldest message of the ticket's lane to the listener; the lane counts the
    /// ticket and holds the reference for it (`ticket.rs`).
    Listener(LaneTicket),
}

const _: () = assert!(std::mem::size_of::<ConsumerJob>() == 2 * std::mem::size_of::<usize>());

impl ConsumerJob {
    /// The trigger job of `consumer`.
    pub(crate) fn trigger(consumer: &Consumer) -> Self {
        Self(Kind::Trigger(Some(Arc::clone(consumer.arc()))))
    }

    /// `count` listener jobs of lane `lane`, appended to `out` (counted in the lane first).
    pub(crate) fn for_lane(consumer: &Consumer, lane: usize, count: usize, out: &mut Vec<Self>) {
        LaneTicket::issue(consumer.arc(), lane, count, out, |ticket| {
            Self(Kind::Listener(ticket))
        });
    }

    /// Runs the job on the calling thread.
    pub fn run(mut self) {
        match &mut self.0 {
            Kind::Trigger(slot) => {
                let Some(shared) = slot.take() else {
                    unreachable!("a trigger holds its reference until it runs");
                };
                let consumer = Consumer::from_shared(shared);
                consumer.shared().route_incoming(&consumer);
            }
            // `self` drops when this returns (also on unwinding): its ticket ends the job.
            Kind::Listener(ticket) => ticket.with_consumer(|consumer| {
                consumer
                    .shared()
                    .deliver_one_to_listener(consumer, ticket.lane());
            }),
        }
    }
}

impl Drop for ConsumerJob {
    /// A trigger dropped unrun (refused, or returned by `shutdown_now` and dropped) clears the
    /// trigger flag so the next delivery queues another. A listener job's ticket ends its place
    /// in the lane count; its message stays in the lane, for `close`.
    fn drop(&mut self) {
        if let Kind::Trigger(Some(shared)) = &self.0 {
            shared.trigger_pending.store(false, Ordering::Release);
        }
    }
}

impl fmt::Debug for ConsumerJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("ConsumerJob");
        match &self.0 {
            Kind::Trigger(shared) => {
                if let Some(shared) = shared {
                    out.field("consumer", &shared.name);
                }
                out.field("job", &"trigger")
            }
            Kind::Listener(ticket) => out
                .field("consumer", &ticket.shared().name)
                .field("listener_lane", &ticket.lane()),
        };
        out.finish()
    }
}
