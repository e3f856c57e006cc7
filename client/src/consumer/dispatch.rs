//! Listener dispatch: the trigger on the internal executor, and the routing pass that hands
//! messages to the listener executors' lanes.
//!
//! # Protocol
//!
//! 1. `deliver` puts the message into the receive queue, then `trigger`: if `trigger_pending`
//!    was `false` (swapped to `true`), one trigger job goes to the internal executor. A plain
//!    load first skips the swap while the flag is already `true` (most deliveries), so the
//!    feeder only reads the flag's line instead of taking it exclusively per message.
//! 2. The trigger job (`route_incoming`) first swaps `trigger_pending` back to `false`, then,
//!    holding the routing lock, moves messages in batches of up to [`ROUTE_BATCH`] from the
//!    receive queue to the lanes (a small batch after the pass's first may wait for one yield
//!    of the core and be topped up first: `batch_top_up.rs`): each lane's share of a
//!    batch is appended under one lock of the lane, then one listener job per message goes to
//!    the lane's executor, the whole share in one
//!    [`execute_jobs`](crate::ConsumerExecutor::execute_jobs) call (one lock of our executor's
//!    queue per share), the jobs counted in the lane with one atomic add (`ticket.rs`:
//!    listener jobs hold no reference count of their own). It checks `closed` between
//!    batches, and after [`MAX_PER_PASS`] messages it re-triggers instead of going on, so one
//!    busy consumer cannot monopolise a shared internal executor.
//! 3. A listener job (`deliver_one_to_listener`) takes one message from its lane — jobs and
//!    lane entries are one-to-one and both FIFO, so the lane's order is kept — and calls the
//!    listener outside every lock, catching a panic.
//!
//! No message is lost between `deliver` and the trigger. If `deliver` saw `false` (its swap
//! read it), it queued a new trigger itself, whose pass polls after its `put`. If it saw `true`
//! — by the load or the swap — it read some write W of `true`; let R be the router pass whose
//! reset is the next `false` after W in the flag's modification order. R drains the receive
//! queue after its reset, and `drain_to` starts by reading the queue's tail with a
//! read-modify-write (release); this `put` moved the tail by one (acquire), and all writes of
//! the tail are read-modify-writes. Had R's read come first in the tail's modification order, this
//! `put` would have read it or a later write in its release sequence, so R's reset would
//! happen-before this read of the flag, and read-coherence would forbid the read from
//! returning W, which comes before the reset. So this `put` came first, R's drain sees the
//! message, and R's pass takes it (a pass that stops at [`MAX_PER_PASS`] re-triggers when
//! the queue is not empty). The loom models in
//! `loom_tests.rs` check this on the real code; a mutant that resets the flag after the pass
//! instead of before fails them. (When that next `false` is instead written for a trigger its
//! executor refused, or one dropped unrun, either the internal executor is shut down, and
//! messages then wait for `close`, which returns them, or its thread could not start, and they
//! wait for the next `deliver`, whose trigger tries the start again.)
//!
//! `close` sets `closed`, terminates the receive queue (so `deliver` hands messages back),
//! takes the routing lock (so no message is between the queue and a lane), then drains the
//! lanes and the receive queue: each message is either taken by a listener job (handed to the
//! listener) or by `close` (returned) — both take it out of a queue under its lock.
//!
//! # Measured and not kept: listener jobs that take from the receive queue (2026-12-06)
//!
//! A consumer with one lane has nothing to route, so a pass could make one listener job per
//! message it counted in the receive queue (a read-modify-write of the tail, as `drain_to`
//! starts with) and let the jobs take their messages from the queue themselves: the router
//! would never touch a message, which now crosses from the feeder's core to the router's and
//! is copied into the lane. Built (loom models of both paths were written, but not run once
//! the measurement ruled it out) and measured on the quiet `consumer_dispatch` rows (4 alternated processes x 3 rounds, Intel Xeon host, 2 vCPUs),
//! Shared got slower with our executors, 94.8 -> 103.4 ns per message (CPU 141 -> 181 ns),
//! and 95.8 -> 106.9 (CPU 139 -> 153) with jobs that take the queue's lock at once instead of
//! reading its tail first; the same consumer on `std_mpsc` executors got faster, 174 -> 133
//! ns. Presumably (not traced) the listener thread then takes each message right behind the
//! feeder, slot by slot,
//! where the router takes what was reserved when it looked (`drain_to`'s design note: chasing
//! the producers reads each slot while its line is still being written), and the router's
//! passes, which no longer have work per message, each read the tail line the feeder writes.

use crate::consumer::batch_top_up::BatchTopUp;
use crate::consumer::sync::{now, offer_core};
use crate::consumer::{Consumer, ConsumerJob, ConsumerShared, JobRejected, Message};
use crate::executor_index::KeyIndexer;
use pulsar_common::executors::panic_message;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering;

/// Messages a routing pass moves per batch (one `drain_to` of the receive queue, and one lock
/// of each lane, per batch).
const ROUTE_BATCH: usize = 256;

/// Messages a routing pass moves before it re-triggers and yields the internal executor.
const MAX_PER_PASS: usize = 4 * 1024;

/// The routing pass's buffers, kept under the routing lock and reused from pass to pass.
pub(crate) struct RoutingState {
    /// The batch taken from the receive queue.
    batch: Vec<Message>,
    /// Key_Shared: the batch sorted by lane (one buffer per lane); unused with one lane.
    by_lane: Vec<Vec<Message>>,
    /// Key_Shared: the lane of a routing key (the index Pulsar's Java client picks).
    lane_of_key: KeyIndexer,
    /// The listener jobs of one lane's share of a batch, made in one burst before any is
    /// queued (see `hand_to_lane`); empty between hand-offs.
    jobs: Vec<ConsumerJob>,
    /// Whether a small batch waits for one yield and is topped up (`batch_top_up.rs`).
    top_up: BatchTopUp,
}

impl RoutingState {
    pub(crate) fn new(lanes: usize) -> Self {
        Self {
            batch: Vec::new(),
            by_lane: if lanes > 1 {
                (0..lanes).map(|_| Vec::new()).collect()
            } else {
                Vec::new()
            },
            lane_of_key: KeyIndexer::new(lanes.max(1)),
            jobs: Vec::new(),
            top_up: BatchTopUp::new(),
        }
    }

    /// Moves anything left in the buffers (nothing, between passes) to `out`.
    pub(crate) fn drain_into(&mut self, out: &mut Vec<Message>) {
        for lane in &mut self.by_lane {
            out.append(lane);
        }
        out.append(&mut self.batch);
    }
}

impl ConsumerShared {
    /// Makes sure a trigger job is queued on the internal executor.
    #[inline]
    pub(crate) fn trigger(&self, consumer: &Consumer) {
        if self.trigger_pending.load(Ordering::Acquire)
            || self.trigger_pending.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let job = ConsumerJob::trigger(consumer);
        if self.internal.execute_job(job).is_err() {
            self.trigger_pending.store(false, Ordering::Release);
            self.log_rejection("internal");
        }
    }

    /// The trigger job: moves messages from the receive queue to the listener lanes.
    pub(crate) fn route_incoming(&self, consumer: &Consumer) {
        self.trigger_pending.swap(false, Ordering::AcqRel);
        let mut moved = 0;
        let mut routing = self.routing.lock();
        let RoutingState {
            batch,
            by_lane,
            lane_of_key,
            jobs,
            top_up,
        } = &mut *routing;
        loop {
            if self.closed.load(Ordering::Acquire) {
                return; // `close` takes over what is left
            }
            if moved >= MAX_PER_PASS {
                drop(routing);
                if !self.incoming.is_empty() {
                    self.trigger(consumer);
                }
                return;
            }
            let drained = self.incoming.drain_to(batch, ROUTE_BATCH);
            if drained == 0 {
                return;
            }
            top_up.top_up_small_batch(drained, moved == 0, now, offer_core, || {
                self.incoming.drain_to(batch, ROUTE_BATCH - drained);
            });
            moved += batch.len();
            if by_lane.is_empty() {
                self.hand_to_lane(consumer, 0, batch, jobs);
            } else {
                for message in batch.drain(..) {
                    let lane = lane_of_key.index_for_bytes(message.routing_key_bytes());
                    by_lane[lane].push(message);
                }
                for (lane, messages) in by_lane.iter_mut().enumerate() {
                    // A lane whose jobs were refused for a failed thread start is handed over
                    // even with no new message, so its messages do not wait for one of their
                    // keys to come again.
                    if !messages.is_empty() || self.lanes[lane].has_refused_jobs() {
                        self.hand_to_lane(consumer, lane, messages, jobs);
                    }
                }
            }
        }
    }

    /// Appends `messages` to lane `lane` and queues one listener job per message (plus the
    /// jobs the lane's executor refused before), all in one call to the lane's executor.
    #[inline]
    fn hand_to_lane(
        &self,
        consumer: &Consumer,
        lane: usize,
        messages: &mut Vec<Message>,
        jobs: &mut Vec<ConsumerJob>,
    ) {
        let target = &self.lanes[lane];
        let count = messages.len() + target.take_refused_jobs();
        ConsumerJob::for_lane(consumer, lane, count, jobs);
        target.push_all(messages);
        if let Err(rejected) = target.executor.execute_jobs(jobs) {
            // The messages stay in the lane: `close` returns them. An executor whose thread
            // could not start stays open and tries again at its next task, so the next
            // hand-over queues their jobs again (a job that finds the lane empty does nothing,
            // so counting every job of a partly refused batch as refused is safe). A shut-down
            // executor never accepts again: offering it the jobs at every hand-over would
            // only make and drop more of them each time.
            if rejected == JobRejected::ThreadStartFailed {
                target.note_refused_jobs(count);
            }
            self.log_rejection("listener");
        }
    }

    /// A listener job: hands the oldest message of `lane` to the listener.
    pub(crate) fn deliver_one_to_listener(&self, consumer: &Consumer, lane: usize) {
        let Some(listener) = &self.listener else {
            unreachable!("lanes exist only with a listener");
        };
        let lane = &self.lanes[lane];
        // The message is taken inside the closure, so that it goes from the lane straight to
        // the listener's argument: captured by the closure, it was copied twice more through
        // the stack, the second copy stalling on the first (misaligned stores read back
        // across their boundaries).
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            if let Some(message) = lane.pop() {
                listener.received(consumer, message);
            } // else taken by `close`
        }));
        if let Err(payload) = outcome {
            self.listener_panics.fetch_add(1, Ordering::Relaxed);
            tracing::error!(
                consumer = %self.name,
                panic = panic_message(payload.as_ref()),
                "message listener panicked; delivery goes on"
            );
        }
    }

    fn log_rejection(&self, which: &str) {
        if !self.rejection_logged.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                consumer = %self.name,
                executor = which,
                "an executor refused the consumer's job (shut down, or its thread could not start); its messages wait for the next delivery to try again, or for close"
            );
        }
    }
}
