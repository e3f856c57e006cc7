//! `Lane`: the messages routed to one listener executor and not yet taken by a listener job.

use crate::consumer::sync::{AtomicUsize, Mutex};
use crate::consumer::{ConsumerExecutor, Message};
use crossbeam_utils::CachePadded;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One listener executor of a consumer and the messages waiting for it, oldest first.
///
/// The routing pass (one at a time, under the consumer's routing lock) appends a whole batch
/// under one lock, then queues one listener job per message on the executor; each job takes
/// one message. `close` (also under the routing lock) takes whatever is left.
///
/// The executor and the messages sit on separate cache lines: the router reads the executor
/// for every job it queues, while the listener thread locks the messages for every job it
/// runs; on one line, each of those locks would evict the router's copy.
///
/// # Measured and not kept: handing over the router's batch buffers (2026-12-06)
///
/// `push_all` copies each 64-byte message once more, into ring lines the listener's core
/// last read (perf: ~8% of the quiet Shared `consumer_dispatch` row's samples, on the
/// router). A lane that kept the router's batch `Vec`s themselves (`VecDeque::from(Vec)` is
/// O(1)), handing an emptied one back for the next batch, was measured in four builds (kept
/// buffers capped or not; small batches copied into the newest buffer; every buffer a whole
/// batch; the front batch beside the lock), 4-5 alternated processes x 3 rounds each (Intel
/// Xeon host, 2 vCPUs). Ours moved from -23% to +2% ns/msg from build to build, within the
/// row's spread, while the same consumer on the `std_mpsc` executors became 12-19% slower
/// in every A/B, alone in its process too (glibc's `malloc` and `free` of their boxed jobs
/// took more of the profile); a cap on the kept buffers made ours allocate again.
pub(crate) struct Lane {
    pub(crate) executor: CachePadded<Arc<dyn ConsumerExecutor>>,
    /// The messages and the job count share one line: the router writes both once per share,
    /// the listener thread both once per job.
    state: CachePadded<LaneState>,
    /// Listener jobs the executor refused because it could not start its thread, whose messages
    /// stayed in the lane: the next hand-over queues them again (the routing pass hands over
    /// such a lane even when no new message is routed to it), so that a thread start that
    /// fails once does not leave the lane behind for good. Jobs a shut-down executor refused
    /// are not counted: it never accepts again. Read and written
    /// only by the routing pass; zero but after a refusal.
    refused_jobs: AtomicUsize,
}

struct LaneState {
    messages: Mutex<VecDeque<Message>>,
    /// Listener jobs of this lane that exist (queued, running, or refused and not yet
    /// dropped); the lane holds one strong reference to the consumer while this is above 0
    /// (see `ticket.rs`).
    jobs: AtomicUsize,
}

impl Lane {
    pub(crate) fn new(executor: Arc<dyn ConsumerExecutor>) -> Self {
        Self {
            executor: CachePadded::new(executor),
            state: CachePadded::new(LaneState {
                messages: Mutex::new(VecDeque::new()),
                jobs: AtomicUsize::new(0),
            }),
            refused_jobs: AtomicUsize::new(0),
        }
    }

    /// The lane's job count (see `ticket.rs`).
    #[inline]
    pub(crate) fn jobs(&self) -> &AtomicUsize {
        &self.state.jobs
    }

    /// Takes the count of refused jobs to queue again (see `refused_jobs`). Routing pass only.
    #[inline]
    pub(crate) fn take_refused_jobs(&self) -> usize {
        match self.refused_jobs.load(Ordering::Relaxed) {
            0 => 0,
            refused => {
                self.refused_jobs.store(0, Ordering::Relaxed);
                refused
            }
        }
    }

    /// Whether refused jobs wait to be queued again. Routing pass only.
    #[inline]
    pub(crate) fn has_refused_jobs(&self) -> bool {
        self.refused_jobs.load(Ordering::Relaxed) != 0
    }

    /// Records `count` listener jobs the executor refused. Routing pass only.
    pub(crate) fn note_refused_jobs(&self, count: usize) {
        let refused = self.refused_jobs.load(Ordering::Relaxed);
        self.refused_jobs
            .store(refused.saturating_add(count), Ordering::Relaxed);
    }

    /// Appends every message of `batch`, in order, under one lock; `batch` is left empty.
    #[inline]
    pub(crate) fn push_all(&self, batch: &mut Vec<Message>) {
        self.state.messages.lock().extend(batch.drain(..));
    }

    /// Takes the oldest message.
    #[inline]
    pub(crate) fn pop(&self) -> Option<Message> {
        self.state.messages.lock().pop_front()
    }

    /// Moves every message, oldest first, to the end of `out`.
    pub(crate) fn drain_into(&self, out: &mut Vec<Message>) {
        out.extend(self.state.messages.lock().drain(..));
    }

    /// Messages waiting now.
    pub(crate) fn len(&self) -> usize {
        self.state.messages.lock().len()
    }
}
