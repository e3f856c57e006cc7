//! `BetweenBatches`: what an executor's worker does besides running its FIFO batches — the one
//! parameter of the executor core. The plain executor does nothing ([`NoTimers`]); the scheduled
//! executor runs the timers that fall due (`scheduled::Timers`).

use crate::executors::executor_core::{ExecutorCore, QueueState};
use crate::executors::raw_task::RawTask;
use crate::executors::worker_lifecycle::WorkerLifecycle;
use crate::idle_spin;
use crate::sync::Arc;
use std::time::Instant;

/// What the core asks of the work it runs besides the FIFO ring. Every hook has the plain
/// executor's behaviour (nothing) as its default, so [`NoTimers`] is empty and compiles away.
///
/// Callback contract: the hooks called with the queue state (`&mut QueueState`) run under the
/// queue lock and must not call user code; `after_task`, `after_batch`, `finish_cancelled` and
/// `cancel_leftovers` run without it.
///
/// The trait is `pub` only so that it can bound the public
/// [`SingleWorkerExecutor`](crate::executors::SingleWorkerExecutor); it lives in a private
/// module (sealed: nothing outside this crate can name or implement it), and its hooks speak of
/// crate-private types, hence `private_interfaces` is allowed here.
#[allow(private_interfaces)]
pub trait BetweenBatches: Sized + Send + Sync + 'static {
    /// What the queue lock guards besides the ring (the timer wheel).
    type Locked: Send;
    /// Work taken out under the lock at shutdown, to finish (drop user code) without it.
    type Detached: Default;

    /// The kind of executor, for names in logs (`{KIND}#{id}`).
    const KIND: &'static str;
    /// The public type's name, for `Debug`.
    const TYPE_NAME: &'static str;
    /// The pool name of the thread factory a builder uses when given none.
    const DEFAULT_POOL_NAME: &'static str;

    /// The lock-free half and the locked half.
    fn new() -> (Self, Self::Locked);

    /// Whether the locked half still holds work that keeps the worker (armed timers).
    fn has_pending(_locked: &Self::Locked) -> bool {
        false
    }

    /// Work held besides the ring and the batch, for `pending_tasks`. Under the queue lock.
    fn pending(&self, _locked: &Self::Locked) -> usize {
        0
    }

    /// Called by the worker after each task of a batch (the scheduled executor runs a timer
    /// that has fallen due meanwhile before the rest of the batch).
    #[inline]
    fn after_task(_core: &Arc<ExecutorCore<Self>>) {}

    /// Called by the worker when the batch is exhausted, before it looks for more.
    #[inline]
    fn after_batch(_core: &Arc<ExecutorCore<Self>>) {}

    /// Under the queue lock, after the ring's tasks (if `took_tasks`) were moved to the batch:
    /// takes what else is ready. Returns whether the worker has anything to run.
    #[inline]
    fn take_ready(
        _core: &ExecutorCore<Self>,
        _queue: &mut QueueState<Self::Locked>,
        took_tasks: bool,
    ) -> bool {
        took_tasks
    }

    /// Whether the worker should skip its lock-free spin before it first looks under the lock
    /// (timers may be due: a look is cheaper than a spin that would not see them).
    #[inline]
    fn look_first(&self) -> bool {
        false
    }

    /// Under the queue lock, with nothing ready: clears hints that the locked half is empty.
    #[inline]
    fn note_idle(&self, _locked: &Self::Locked) {}

    /// The latest time a parked worker must wake up at (the next timer's deadline).
    #[inline]
    fn wake_at(_locked: &Self::Locked) -> Option<Instant> {
        None
    }

    /// The worker's idle spin: `work_hint` says whether the ring has work or the state changed.
    /// The default is the crate's one spin policy (`idle_spin.rs`: bounded, never yielding,
    /// adapted to whether spinning has been winning on this thread); the one call through
    /// which the worker spins.
    #[inline]
    fn spin_for_work(&self, work_hint: impl Fn() -> bool) {
        idle_spin::spin_for_work(work_hint, idle_spin::MAX_SPIN, true);
    }

    /// Whether [`trim_idle`](Self::trim_idle) would free anything now: an idle worker waits
    /// with the idle trim's timeout only when it would. Under the lock.
    fn holds_idle_memory(&self, _locked: &Self::Locked) -> bool {
        false
    }

    /// Gives back the memory of an idle locked half; returns the slots freed. Under the lock.
    fn trim_idle(&self, _locked: &mut Self::Locked) -> usize {
        0
    }

    /// At `shutdown`, under the queue lock: takes out what a graceful shutdown stops (periodic
    /// timers), for [`finish_cancelled`](Self::finish_cancelled).
    fn on_shutdown(_core: &Arc<ExecutorCore<Self>>, _locked: &mut Self::Locked) -> Self::Detached {
        Self::Detached::default()
    }

    /// At `shutdown_now`, under the queue lock, after the immediate tasks: appends what comes
    /// back to the caller to `taken`, and takes out what is cancelled instead.
    fn on_shutdown_now(
        _core: &Arc<ExecutorCore<Self>>,
        _locked: &mut Self::Locked,
        _taken: &mut Vec<RawTask>,
    ) -> Self::Detached {
        Self::Detached::default()
    }

    /// Without the lock: completes what `on_shutdown`/`on_shutdown_now` took out (drops user
    /// code at the panic boundary).
    fn finish_cancelled(_lifecycle: &WorkerLifecycle, _detached: Self::Detached) {}

    /// From the core's `Drop`, under the queue lock: takes out whatever is left (nothing in a
    /// correct run), for [`cancel_leftovers`](Self::cancel_leftovers).
    fn take_leftovers(&self, _locked: &mut Self::Locked) -> Self::Detached {
        Self::Detached::default()
    }

    /// From the core's `Drop`, without the lock: cancels what `take_leftovers` took out.
    fn cancel_leftovers(_lifecycle: &WorkerLifecycle, _leftovers: Self::Detached) {}
}

/// The kind of [`SingleThreadExecutor`](crate::executors::SingleThreadExecutor): its worker
/// does nothing between batches.
#[derive(Debug)]
pub struct NoTimers;

impl BetweenBatches for NoTimers {
    type Locked = ();
    type Detached = ();
    const KIND: &'static str = "single-thread-executor";
    const TYPE_NAME: &'static str = "SingleThreadExecutor";
    const DEFAULT_POOL_NAME: &'static str = crate::executors::DEFAULT_POOL_NAME;

    fn new() -> (Self, ()) {
        (NoTimers, ())
    }
}
