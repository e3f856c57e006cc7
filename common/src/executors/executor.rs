//! `Executor`: what every executor of this crate offers — Java's `ExecutorService` in Rust
//! terms — so that groups and providers can hold either kind (and user code be generic).

use crate::executors::between_batches::BetweenBatches;
use crate::executors::executor_builder::ExecutorBuilder;
use crate::executors::executor_stats::ExecutorStats;
use crate::executors::rejected::RejectedExecution;
use crate::executors::single_worker_executor::SingleWorkerExecutor;
use crate::executors::task::Task;
use crate::executors::task_handle::TaskHandle;
use crate::executors::thread_factory::ThreadFactory;
use std::fmt;
use std::time::Duration;

/// An executor: accepts tasks, runs them, shuts down, reports its counters.
///
/// Implemented by [`SingleThreadExecutor`](crate::executors::SingleThreadExecutor) and
/// [`ScheduledExecutor`](crate::executors::ScheduledExecutor) (both
/// [`SingleWorkerExecutor`]s); [`ExecutorGroup`](crate::executors::ExecutorGroup) holds any
/// `Executor`. Each method has the meaning the executors' own documentation gives it; the
/// contract in short:
///
/// - `execute`, `execute_all` and `submit` never block; a refused task (after shutdown, or
///   when the worker thread cannot start) comes back in the error, with the reason.
/// - `shutdown` is graceful (queued tasks still run) and idempotent; `shutdown_now` hands
///   back the tasks that did not start; neither waits — `await_termination` does.
/// - `stats` never takes the executor's queue lock.
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::{Executor, PulsarExecutors, ScheduledExecutor};
/// use std::time::Duration;
///
/// fn sum_on<E: Executor>(executor: &E) -> u64 {
///     let handles: Vec<_> = (1..=4).map(|i| executor.submit(move || i).unwrap()).collect();
///     handles.into_iter().map(|handle| handle.join().unwrap()).sum()
/// }
///
/// let plain = PulsarExecutors::new_single_thread_executor();
/// let scheduled = ScheduledExecutor::builder().pool_name("generic").build();
/// assert_eq!(sum_on(&plain), 10);
/// assert_eq!(sum_on(&scheduled), 10);
/// for stats in [plain.stats(), scheduled.stats()] {
///     assert_eq!(stats.submitted, 4);
/// }
/// # scheduled.shutdown();
/// ```
pub trait Executor: Clone + fmt::Debug + Send + Sync + 'static {
    /// An executor with default settings whose worker thread comes from `factory` (what a
    /// group or provider calls to make its members).
    fn with_thread_factory(factory: impl ThreadFactory) -> Self
    where
        Self: Sized;

    /// Queues `f` to run on the executor. Never blocks.
    ///
    /// # Errors
    ///
    /// [`RejectedExecution`] handing `f` back if the executor refused it.
    fn execute<F>(&self, f: F) -> Result<(), RejectedExecution<F>>
    where
        F: FnOnce() + Send + 'static;

    /// Queues every task of `tasks`, in order, all or nothing.
    ///
    /// # Errors
    ///
    /// [`RejectedExecution`] handing every task back, in order, if the executor refused them.
    fn execute_all<I, F>(&self, tasks: I) -> Result<(), RejectedExecution<Vec<F>>>
    where
        I: IntoIterator<Item = F>,
        F: FnOnce() + Send + 'static;

    /// Queues `f` and returns a handle to its result.
    ///
    /// # Errors
    ///
    /// [`RejectedExecution`] handing `f` back if the executor refused it.
    fn submit<F, R>(&self, f: F) -> Result<TaskHandle<R>, RejectedExecution<F>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static;

    /// Starts a graceful shutdown: new tasks are refused, queued ones still run. Idempotent.
    fn shutdown(&self);

    /// Stops at once: new tasks are refused, queued ones not yet started come back.
    fn shutdown_now(&self) -> Vec<Task>;

    /// Waits up to `timeout` for termination; `true` if terminated.
    fn await_termination(&self, timeout: Duration) -> bool;

    /// Whether a shutdown has started.
    fn is_shutdown(&self) -> bool;

    /// Whether the executor is shut down and its worker has exited (or never started).
    fn is_terminated(&self) -> bool;

    /// Tasks accepted and not yet started (taken under the executor's lock; see `stats` for a
    /// lock-free figure).
    fn pending_tasks(&self) -> usize;

    /// A snapshot of the executor's counters, without its queue lock.
    fn stats(&self) -> ExecutorStats;

    /// A name for logs (the worker thread's, once it exists).
    fn name(&self) -> String;

    /// Whether the calling thread is this executor's worker (the caller is one of its
    /// tasks), where `await_termination` cannot wait for it. The default says no; ours tell.
    fn is_current_worker(&self) -> bool {
        false
    }
}

impl<K: BetweenBatches> Executor for SingleWorkerExecutor<K> {
    fn with_thread_factory(factory: impl ThreadFactory) -> Self {
        ExecutorBuilder::new().thread_factory(factory).build()
    }

    #[inline]
    fn execute<F>(&self, f: F) -> Result<(), RejectedExecution<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        SingleWorkerExecutor::execute(self, f)
    }

    fn execute_all<I, F>(&self, tasks: I) -> Result<(), RejectedExecution<Vec<F>>>
    where
        I: IntoIterator<Item = F>,
        F: FnOnce() + Send + 'static,
    {
        SingleWorkerExecutor::execute_all(self, tasks)
    }

    fn submit<F, R>(&self, f: F) -> Result<TaskHandle<R>, RejectedExecution<F>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        SingleWorkerExecutor::submit(self, f)
    }

    fn shutdown(&self) {
        SingleWorkerExecutor::shutdown(self)
    }

    fn shutdown_now(&self) -> Vec<Task> {
        SingleWorkerExecutor::shutdown_now(self)
    }

    fn await_termination(&self, timeout: Duration) -> bool {
        SingleWorkerExecutor::await_termination(self, timeout)
    }

    fn is_shutdown(&self) -> bool {
        SingleWorkerExecutor::is_shutdown(self)
    }

    fn is_terminated(&self) -> bool {
        SingleWorkerExecutor::is_terminated(self)
    }

    fn pending_tasks(&self) -> usize {
        SingleWorkerExecutor::pending_tasks(self)
    }

    fn stats(&self) -> ExecutorStats {
        SingleWorkerExecutor::stats(self)
    }

    fn name(&self) -> String {
        SingleWorkerExecutor::name(self)
    }

    fn is_current_worker(&self) -> bool {
        SingleWorkerExecutor::is_current_worker(self)
    }
}
