//! The counters behind `ExecutorStats`, split by who writes them so that the per-task path
//! costs one uncontended store: the worker's own (`WorkerCounters`), and the rare events'
//! (`EventCounters`). The producers' count of accepted tasks sits beside the queue lock
//! (`executor_core::Producers`).
//!
//! # Memory ordering
//!
//! The counters order nothing in the executor's protocol (they are plain `std` atomics, not
//! modelled by loom). `stats` reads `completed` with `Acquire` before `submitted`: the worker
//! stores `completed` with `Release` after running a task it took under the queue lock, after
//! the producer counted it there, so a snapshot never shows a task completed but not
//! submitted.

use crate::executors::executor_stats::ExecutorStats;
use crate::executors::raw_task::JobOutcome;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Written by the worker thread only (plain load + store, no read-modify-write), read by
/// `stats` from any thread.
#[derive(Default)]
pub(crate) struct WorkerCounters {
    /// Tasks run (returned or panicked).
    completed: AtomicU64,
    /// Tasks that panicked.
    panicked: AtomicU64,
    /// Cancelled entries the worker reached and retired (each a no-op).
    cancelled: AtomicU64,
    /// Nanoseconds spent in batches.
    busy_nanos: AtomicU64,
}

impl WorkerCounters {
    /// Counts one task run by the worker. Worker thread only.
    #[inline]
    pub(crate) fn record(&self, outcome: JobOutcome) {
        match outcome {
            JobOutcome::Completed => {}
            JobOutcome::Panicked => {
                let panicked = self.panicked.load(Ordering::Relaxed);
                self.panicked.store(panicked + 1, Ordering::Relaxed);
            }
            JobOutcome::Cancelled => {
                let cancelled = self.cancelled.load(Ordering::Relaxed);
                self.cancelled.store(cancelled + 1, Ordering::Release);
                return;
            }
        }
        let completed = self.completed.load(Ordering::Relaxed);
        self.completed.store(completed + 1, Ordering::Release);
    }

    /// Adds `busy` to the busy time. Worker thread only.
    fn add_busy(&self, busy: Duration) {
        let nanos = u64::try_from(busy.as_nanos()).unwrap_or(u64::MAX);
        let total = self.busy_nanos.load(Ordering::Relaxed);
        self.busy_nanos
            .store(total.saturating_add(nanos), Ordering::Relaxed);
    }
}

/// The worker's current busy period: from the moment it finds work after being idle until it
/// next finds none. The clock is read only at those two transitions, so a worker that goes
/// from batch to batch without running dry reads no clock at all, and one that runs dry after
/// every batch reads it where it would spin anyway.
pub(crate) struct BusySpan {
    /// When the current busy period began; `None` while idle.
    since: Option<Instant>,
}

impl BusySpan {
    /// A busy period beginning now (the worker starts because there is work).
    pub(crate) fn begin() -> Self {
        Self {
            since: Some(Instant::now()),
        }
    }

    /// The worker found work: a new busy period begins, unless one is running.
    #[inline]
    pub(crate) fn resume(&mut self) {
        if self.since.is_none() {
            self.since = Some(Instant::now());
        }
    }

    /// The worker ran dry (it is about to spin, park or exit): the busy period ends and its
    /// length is added to `counters`.
    #[inline]
    pub(crate) fn end(&mut self, counters: &WorkerCounters) {
        if let Some(since) = self.since.take() {
            counters.add_busy(since.elapsed());
        }
    }
}

/// Rare events, counted by whoever sees them (read-modify-writes: never on the per-task path).
#[derive(Default)]
pub(crate) struct EventCounters {
    /// Tasks refused.
    pub(crate) rejected: AtomicU64,
    /// Tasks handed back by `shutdown_now`.
    pub(crate) returned: AtomicU64,
    /// Accepted timers that left without running (cancelled, or stopped at shutdown) before
    /// the worker claimed them. Written only under the queue lock
    /// ([`add_under_queue_lock`](Self::add_under_queue_lock)); a timer cancelled after the
    /// worker claimed it is the worker's to count (`WorkerCounters::cancelled`).
    pub(crate) cancelled: AtomicU64,
    /// Wake-up calls producers made to the parked worker.
    pub(crate) wakeups: AtomicU64,
    /// Task slots allocated, as of the worker's last refill or trim (written under the queue
    /// lock).
    pub(crate) capacity: AtomicUsize,
}

impl EventCounters {
    /// Adds `count` to `counter`.
    #[inline]
    pub(crate) fn add(counter: &AtomicU64, count: usize) {
        counter.fetch_add(count as u64, Ordering::Release);
    }

    /// Adds `count` to `counter`, whose every writer holds the executor's queue lock (the
    /// lock orders the writes, so a plain load and store do: a cancel pays no extra
    /// read-modify-write). Caller holds the queue lock.
    #[inline]
    pub(crate) fn add_under_queue_lock(counter: &AtomicU64, count: usize) {
        let value = counter.load(Ordering::Relaxed);
        counter.store(value + count as u64, Ordering::Release);
    }
}

/// The snapshot: the worker's counters first (`Acquire`), then the events', then `submitted`.
/// `cancelled_queued`: cancelled tasks whose entries are still queued (no longer pending).
pub(crate) fn snapshot(
    worker: &WorkerCounters,
    events: &EventCounters,
    submitted: &AtomicU64,
    cancelled_queued: usize,
) -> ExecutorStats {
    let completed = worker.completed.load(Ordering::Acquire);
    let retired_cancelled = worker.cancelled.load(Ordering::Acquire);
    let panicked = worker.panicked.load(Ordering::Relaxed);
    let busy = Duration::from_nanos(worker.busy_nanos.load(Ordering::Relaxed));
    let returned = events.returned.load(Ordering::Acquire);
    let cancelled = events.cancelled.load(Ordering::Acquire);
    let submitted = submitted.load(Ordering::Acquire);
    let finished = completed
        .saturating_add(returned)
        .saturating_add(cancelled)
        .saturating_add(retired_cancelled)
        .saturating_add(cancelled_queued as u64);
    ExecutorStats {
        submitted,
        completed,
        panicked,
        rejected: events.rejected.load(Ordering::Relaxed),
        pending: submitted.saturating_sub(finished),
        queue_capacity: events.capacity.load(Ordering::Relaxed),
        worker_wakeups: events.wakeups.load(Ordering::Relaxed),
        busy,
    }
}
