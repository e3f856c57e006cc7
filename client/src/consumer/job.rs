//! `ConsumerJob`: the unit of dispatch work a consumer hands to an executor — the listener
//! trigger, or one listener call.

use crate::consumer::ticket::JobTicket;
use crate::consumer::{Consumer, ConsumerShared};
use std::fmt;
use std::sync::atomic::Ordering;

/// A unit of a consumer's dispatch work, handed to a [`ConsumerExecutor`](crate::ConsumerExecutor):
/// the listener trigger (on the internal executor) or one listener call (on a listener
/// executor). Run it with [`run`](Self::run), or drop it: a dropped job gives up its work (the
/// consumer keeps the message concerned until [`Consumer::close`](crate::Consumer::close) returns it).
///
/// A job keeps its consumer alive until it has run or is dropped. Two words, so the executors
/// of this workspace store it inline in a task slot.
pub struct ConsumerJob {
    /// The job's hold on its consumer; its slot says what the job does: a listener lane's
    /// index (hand that lane's oldest message to the listener), or a trigger's slot (move
    /// messages from the receive queue to the lanes). See `ticket.rs`.
    ticket: JobTicket,
}

const _: () = assert!(std::mem::size_of::<ConsumerJob>() == 2 * std::mem::size_of::<usize>());

impl ConsumerJob {
    /// The trigger job of `consumer`.
    pub(crate) fn trigger(consumer: &Consumer) -> Self {
        Self {
            ticket: JobTicket::issue_for_trigger(consumer.arc()),
        }
    }

    /// `count` listener jobs of lane `lane`, appended to `out` (counted in the lane first).
    #[inline]
    pub(crate) fn for_lane(consumer: &Consumer, lane: usize, count: usize, out: &mut Vec<Self>) {
        JobTicket::issue_for_lane(consumer.arc(), lane, count, out, |ticket| Self { ticket });
    }

    /// Runs the job on the calling thread.
    pub fn run(mut self) {
        match self.ticket.slot() {
            JobTicket::TRIGGER => {
                // Started: `drop` must not treat it as a trigger dropped unrun.
                self.ticket.spend_trigger();
                self.ticket
                    .with_consumer(|consumer| consumer.shared().route_incoming(consumer));
            }
            lane => self.ticket.with_consumer(|consumer| {
                consumer.shared().deliver_one_to_listener(consumer, lane);
            }),
        }
        // `self` drops here (also on unwinding): its ticket ends the job.
    }

    /// The consumer, while this job keeps it alive.
    fn consumer_shared(&self) -> &ConsumerShared {
        self.ticket.shared()
    }
}

impl Drop for ConsumerJob {
    /// A trigger dropped unrun (refused, or returned by `shutdown_now` and dropped) clears the
    /// trigger flag so the next delivery queues another. Any job's ticket then ends its place
    /// in its count; a listener job's message stays in the lane, for `close`.
    fn drop(&mut self) {
        if self.ticket.slot() == JobTicket::TRIGGER {
            self.consumer_shared()
                .trigger_pending
                .store(false, Ordering::Release);
        }
    }
}

impl fmt::Debug for ConsumerJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("ConsumerJob");
        out.field("consumer", &self.consumer_shared().name);
        match self.ticket.slot() {
            JobTicket::TRIGGER | JobTicket::SPENT_TRIGGER => out.field("job", &"trigger"),
            lane => out.field("listener_lane", &lane),
        };
        out.finish()
    }
}
