//! `SingleThreadExecutor`: the handle users hold; clones share one executor.

use crate::executors::between_batches::NoTimers;
use crate::executors::executor_core::ExecutorCore;
use crate::executors::executor_handle::ExecutorHandle;
use crate::executors::invoke_any::InvokeAnyError;
use crate::executors::rejected::RejectedExecution;
use crate::executors::task::Task;
use crate::executors::task_error::TaskError;
use crate::executors::task_handle::TaskHandle;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A single-thread executor: one worker thread, started lazily, runs the tasks in FIFO order.
///
/// Made by [`PulsarExecutors`](crate::executors::PulsarExecutors). Clones share one executor;
/// nothing can reconfigure it once made.
///
/// - **Allocation-lean**: a closure capturing up to three machine words (an `Arc` and two
///   `usize`, say) is stored inline in its ring slot, so once the ring has grown to fit,
///   [`execute`](Self::execute) allocates nothing. Larger closures are boxed.
/// - **Unbounded admission**: `execute` never blocks; tasks are rejected (and handed back)
///   only after shutdown.
/// - **Panics** never stop the executor: a panicking `execute`d task is reported to the thread
///   factory's [`on_task_panic`](crate::executors::ThreadFactory::on_task_panic); a
///   `submit`ted one to its [`TaskHandle`].
/// - **Shutdown**: [`shutdown`](Self::shutdown) lets queued tasks run;
///   [`shutdown_now`](Self::shutdown_now) hands them back. For every task offered concurrently
///   with either, exactly one holds: it ran, `shutdown_now` returned it, or it was rejected.
///   The running task is never interrupted (Rust has no thread interruption): it finishes.
/// - **Lifecycle**: with `auto_shutdown_on_drop` (the default), dropping the last clone shuts
///   the executor down gracefully: accepted tasks still run, then the thread exits. Without
///   it, the owner is expected to shut it down; if the last clone is dropped anyway, the
///   executor still shuts down gracefully and logs a warning naming itself. `Drop` never
///   blocks.
/// - **Memory back after a burst**: once the worker has been idle for the configured period
///   (1 s by default) it trims the queue back to at most 64 slots; no global trimmer thread.
/// - **No busy idling**: an idle worker spins briefly (tens of microseconds), yields a few
///   times, then parks; producers make no wake-up call while the worker is awake.
///
/// A task that holds a clone of its own executor keeps it alive (as in Java, where the queue
/// is reachable from the worker): shut such executors down explicitly.
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::PulsarExecutors;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let executor = PulsarExecutors::new_single_thread_executor();
/// let counter = Arc::new(AtomicUsize::new(0));
/// for _ in 0..100 {
///     let counter = Arc::clone(&counter);
///     executor.execute(move || {
///         counter.fetch_add(1, Ordering::Relaxed);
///     }).unwrap();
/// }
/// executor.shutdown(); // the 100 queued tasks still run
/// assert!(executor.await_termination(Duration::from_secs(10)));
/// assert_eq!(counter.load(Ordering::Relaxed), 100);
/// ```
#[derive(Clone)]
pub struct SingleThreadExecutor {
    handle: Arc<ExecutorHandle<NoTimers>>,
}

impl SingleThreadExecutor {
    pub(crate) fn from_core(core: ExecutorCore<NoTimers>, auto_shutdown_on_drop: bool) -> Self {
        Self {
            handle: ExecutorHandle::new(core, auto_shutdown_on_drop),
        }
    }

    /// Queues `f` to run on the worker thread. Never blocks.
    ///
    /// # Errors
    ///
    /// [`RejectedExecution`] handing `f` back if the executor has been shut down, or if its
    /// worker thread could not be started (the first accepted task starts it).
    #[inline]
    pub fn execute<F>(&self, f: F) -> Result<(), RejectedExecution<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        self.handle.execute(f)
    }

    /// Queues every task of `tasks`, in order, taking the queue lock once for the whole batch
    /// (and waking the worker at most once): for a producer with many tasks at hand, much
    /// cheaper than one [`execute`](Self::execute) per task. Each task still runs as its own
    /// task, in order, after the tasks queued before the call.
    ///
    /// All or nothing: either every task is accepted, or none is and all come back. The
    /// iterator is run to its end *before* the lock is taken (the tasks are staged in a
    /// per-thread buffer reused from call to call, so steady use allocates nothing beyond what
    /// [`execute`](Self::execute) would), so it may do anything, even queue tasks itself.
    ///
    /// # Errors
    ///
    /// [`RejectedExecution`] handing back every task, in order, if the executor has been shut
    /// down or its worker thread could not be started. An empty batch is always accepted.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_common::executors::PulsarExecutors;
    /// use std::sync::mpsc;
    ///
    /// let executor = PulsarExecutors::new_single_thread_executor();
    /// let (tx, rx) = mpsc::channel();
    /// let tasks = (0..4).map(|i| {
    ///     let tx = tx.clone();
    ///     move || tx.send(i).unwrap()
    /// });
    /// executor.execute_all(tasks).unwrap();
    /// assert_eq!(rx.iter().take(4).collect::<Vec<_>>(), [0, 1, 2, 3]);
    ///
    /// executor.shutdown();
    /// let rejected = executor.execute_all([|| (), || ()]).unwrap_err();
    /// assert_eq!(rejected.into_task().len(), 2);
    /// ```
    pub fn execute_all<I, F>(&self, tasks: I) -> Result<(), RejectedExecution<Vec<F>>>
    where
        I: IntoIterator<Item = F>,
        F: FnOnce() + Send + 'static,
    {
        self.handle.execute_all(tasks)
    }

    /// Queues `f` and returns a handle to its result. Allocates one result slot per task.
    ///
    /// # Errors
    ///
    /// As for [`execute`](Self::execute): `f` comes back if the executor refused it.
    pub fn submit<F, R>(&self, f: F) -> Result<TaskHandle<R>, RejectedExecution<F>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.handle.submit(f)
    }

    /// Runs every task and waits for all of them; results come back in the tasks' order.
    /// A task the executor refused yields [`TaskError::Rejected`].
    ///
    /// Called on this executor's own worker thread (from one of its tasks), where it could
    /// only wait forever, it submits nothing: every task is dropped unrun and yields
    /// [`TaskError::WouldDeadlock`].
    pub fn invoke_all<F, R>(&self, tasks: Vec<F>) -> Vec<Result<R, TaskError>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.handle.invoke_all(tasks)
    }

    /// Runs the tasks and returns the value of the first that succeeds (tasks run in order on
    /// the one worker, so that is the first `Ok` in the list); the tasks after it are skipped.
    ///
    /// # Errors
    ///
    /// [`InvokeAnyError::NoTasks`] for an empty list; [`InvokeAnyError::AllFailed`] with each
    /// task's failure, in order, when none succeeded — on this executor's own worker thread,
    /// where it could only wait forever, at once, each task dropped unrun with
    /// [`TaskError::WouldDeadlock`].
    pub fn invoke_any<F, R, E>(&self, tasks: Vec<F>) -> Result<R, InvokeAnyError<E>>
    where
        F: FnOnce() -> Result<R, E> + Send + 'static,
        R: Send + 'static,
        E: Send + 'static,
    {
        self.handle.invoke_any(tasks)
    }

    /// Starts a graceful shutdown: new tasks are rejected, queued tasks still run, then the
    /// worker exits. Idempotent; does not wait (see
    /// [`await_termination`](Self::await_termination)).
    pub fn shutdown(&self) {
        self.handle.shutdown();
    }

    /// Stops at once: new tasks are rejected and every queued task not yet started comes back,
    /// oldest first. The task running now (if any) finishes — Rust cannot interrupt a thread.
    /// Dropping a returned [`Task`] cancels it (its handle yields [`TaskError::Cancelled`]).
    pub fn shutdown_now(&self) -> Vec<Task> {
        self.handle.shutdown_now()
    }

    /// Whether `shutdown` or `shutdown_now` has been called (or the last clone dropped).
    pub fn is_shutdown(&self) -> bool {
        self.handle.is_shutdown()
    }

    /// Whether the executor is shut down and its worker has exited (or never started).
    pub fn is_terminated(&self) -> bool {
        self.handle.is_terminated()
    }

    /// Waits up to `timeout` for termination; `true` if terminated. Called from the executor's
    /// own worker thread it returns at once (the worker cannot wait for itself).
    pub fn await_termination(&self, timeout: Duration) -> bool {
        self.handle.await_termination(timeout)
    }

    /// Tasks accepted and not yet started.
    pub fn pending_tasks(&self) -> usize {
        self.handle.core.pending_tasks()
    }

    /// Task slots allocated now (each slot is four machine words).
    pub fn queue_capacity(&self) -> usize {
        self.handle.core.queue_capacity()
    }

    /// How many times a producer had to wake the parked worker (a diagnostic: producers make
    /// a wake-up call only when the worker is parked, never while it is awake).
    pub fn worker_wakeups(&self) -> u64 {
        self.handle.core.wakeups()
    }

    /// Whether dropping the last clone shuts the executor down without a warning.
    pub fn auto_shutdown_on_drop(&self) -> bool {
        self.handle.auto_shutdown_on_drop
    }

    /// The worker thread's name once started, else `single-thread-executor#<id>`.
    pub fn name(&self) -> String {
        self.handle.core.name()
    }
}

impl fmt::Debug for SingleThreadExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SingleThreadExecutor")
            .field("name", &self.name())
            .field("state", &self.handle.state_name())
            .field("pending_tasks", &self.pending_tasks())
            .field("auto_shutdown_on_drop", &self.handle.auto_shutdown_on_drop)
            .finish()
    }
}
