//! `SingleWorkerExecutor<K>`: the handle users hold — clones share one executor — with the
//! operations every kind offers, written once: [`SingleThreadExecutor`] (`K` = `NoTimers`) and
//! [`ScheduledExecutor`] (`K` = `Timers`) are this type, and differ only in what the worker
//! does between batches.
//!
//! [`SingleThreadExecutor`]: crate::executors::SingleThreadExecutor
//! [`ScheduledExecutor`]: crate::executors::ScheduledExecutor

use crate::executors::between_batches::BetweenBatches;
use crate::executors::executor_core::{ExecutorCore, RUNNING, TERMINATED};
use crate::executors::executor_handle::ExecutorHandle;
use crate::executors::executor_stats::ExecutorStats;
use crate::executors::invoke_any::{InvokeAnyError, InvokeFailure};
use crate::executors::raw_task::{Job, RawTask};
use crate::executors::rejected::RejectedExecution;
use crate::executors::staging;
use crate::executors::submit_task::SubmitJob;
use crate::executors::task::Task;
use crate::executors::task_error::TaskError;
use crate::executors::task_handle::TaskHandle;
use crate::sync::Arc as CoreArc;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// An executor with one worker thread, started lazily, that runs its tasks in FIFO order; `K`
/// says what else the worker does between batches of tasks. Use it through its two kinds:
/// [`SingleThreadExecutor`](crate::executors::SingleThreadExecutor) (nothing else) and
/// [`ScheduledExecutor`](crate::executors::ScheduledExecutor) (timers). Every operation below is
/// the same for both; the scheduled kind adds `schedule*`.
///
/// Clones share one executor; the last clone dropped shuts it down gracefully (see
/// [`auto_shutdown_on_drop`](Self::auto_shutdown_on_drop)).
pub struct SingleWorkerExecutor<K: BetweenBatches> {
    handle: Arc<ExecutorHandle<K>>,
}

impl<K: BetweenBatches> Clone for SingleWorkerExecutor<K> {
    fn clone(&self) -> Self {
        Self {
            handle: Arc::clone(&self.handle),
        }
    }
}

impl<K: BetweenBatches> SingleWorkerExecutor<K> {
    pub(crate) fn from_core(core: ExecutorCore<K>, auto_shutdown_on_drop: bool) -> Self {
        Self {
            handle: Arc::new(ExecutorHandle {
                core: CoreArc::new(core),
                auto_shutdown_on_drop,
            }),
        }
    }

    pub(crate) fn core(&self) -> &CoreArc<ExecutorCore<K>> {
        &self.handle.core
    }

    /// Queues `job`; on refusal hands it back in its own type.
    #[inline]
    fn execute_job<J: Job>(&self, job: J) -> Result<(), RejectedExecution<J>> {
        enqueue_job(self.core(), job)
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
        self.execute_job(f)
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
        staging::execute_all(tasks, |staged| {
            ExecutorCore::enqueue_all(self.core(), staged)
        })
    }

    /// Queues `f` and returns a handle to its result, which can also
    /// [`cancel`](TaskHandle::cancel) it. Allocates one cell per task, holding the closure and
    /// its result; the queue holds only the cell's pointer.
    ///
    /// # Errors
    ///
    /// As for [`execute`](Self::execute): `f` comes back if the executor refused it.
    pub fn submit<F, R>(&self, f: F) -> Result<TaskHandle<R>, RejectedExecution<F>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let core = self.core();
        let (job, cell) = SubmitJob::new(f, core.cancelled_tasks().clone());
        match self.execute_job(job) {
            Ok(()) => Ok(TaskHandle::new(cell, core.id())),
            Err(rejected) => {
                let (job, reason) = rejected.into_parts();
                Err(RejectedExecution::new(job.reclaim(), reason))
            }
        }
    }

    /// Runs every task and waits for all of them; results come back in the tasks' order.
    /// A task the executor refused yields [`TaskError::Rejected`] with the reason (shut down,
    /// or the worker thread could not be started).
    ///
    /// Called on this executor's own worker thread (from one of its tasks), where it could
    /// only wait forever, it submits nothing: every task is dropped unrun and yields
    /// [`TaskError::WouldDeadlock`].
    pub fn invoke_all<F, R>(&self, tasks: Vec<F>) -> Vec<Result<R, TaskError>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        if self.core().is_current_worker() {
            return tasks
                .into_iter()
                .map(|_| Err(TaskError::WouldDeadlock))
                .collect();
        }
        let handles: Vec<_> = tasks.into_iter().map(|task| self.submit(task)).collect();
        handles
            .into_iter()
            .map(|handle| match handle {
                Ok(handle) => handle.join(),
                Err(rejected) => Err(TaskError::Rejected(rejected.into_parts().1)),
            })
            .collect()
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
        if tasks.is_empty() {
            return Err(InvokeAnyError::NoTasks);
        }
        if self.core().is_current_worker() {
            let refused = tasks
                .into_iter()
                .map(|_| InvokeFailure::Task(TaskError::WouldDeadlock));
            return Err(InvokeAnyError::AllFailed(refused.collect()));
        }
        let succeeded = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = tasks
            .into_iter()
            .map(|task| {
                let succeeded = Arc::clone(&succeeded);
                self.submit(move || {
                    if succeeded.load(Ordering::Acquire) {
                        return None; // an earlier task already succeeded: skip
                    }
                    let outcome = task();
                    if outcome.is_ok() {
                        succeeded.store(true, Ordering::Release);
                    }
                    Some(outcome)
                })
            })
            .collect();
        let mut failures = Vec::new();
        for handle in handles {
            let outcome = match handle {
                Ok(handle) => handle.join(),
                Err(rejected) => Err(TaskError::Rejected(rejected.into_parts().1)),
            };
            match outcome {
                Ok(Some(Ok(value))) => return Ok(value),
                Ok(Some(Err(error))) => failures.push(InvokeFailure::Failed(error)),
                Ok(None) => failures.push(InvokeFailure::Task(TaskError::Cancelled)),
                Err(error) => failures.push(InvokeFailure::Task(error)),
            }
        }
        Err(InvokeAnyError::AllFailed(failures))
    }

    /// Starts a graceful shutdown: new tasks are rejected, queued tasks still run, then the
    /// worker exits. On a scheduled executor armed one-shot timers still run at their
    /// deadlines and periodic timers are cancelled (their handles report
    /// [`TaskError::Cancelled`]); the worker exits when nothing is left. Idempotent; does not
    /// wait (see [`await_termination`](Self::await_termination)).
    ///
    /// Tasks queued while a thread start was in progress that then failed (the thread factory
    /// returned an error or panicked) have no worker: `shutdown` tries once more to start one
    /// for them. If that start fails too, they stay queued, and the executor terminates once
    /// [`shutdown_now`](Self::shutdown_now) has taken them back. (A later `shutdown` tries the
    /// start again; if no start ever succeeds, dropping the last handle drops them, each once.)
    pub fn shutdown(&self) {
        ExecutorCore::shutdown(self.core());
    }

    /// Stops at once: new tasks are rejected and every queued task not yet started comes back,
    /// oldest first — on a scheduled executor followed by its one-shot timers, earliest first,
    /// whatever their deadlines (running one fires it); periodic timers are cancelled instead.
    /// The task running now (if any) finishes — Rust cannot interrupt a thread. Dropping a
    /// returned [`Task`] cancels it (its handle yields [`TaskError::Cancelled`]).
    pub fn shutdown_now(&self) -> Vec<Task> {
        ExecutorCore::shutdown_now(self.core())
    }

    /// Whether `shutdown` or `shutdown_now` has been called (or the last clone dropped).
    pub fn is_shutdown(&self) -> bool {
        self.core().run_state() != RUNNING
    }

    /// Whether the executor is shut down and its worker has exited (or never started).
    pub fn is_terminated(&self) -> bool {
        self.core().run_state() == TERMINATED
    }

    /// Waits up to `timeout` for termination; `true` if terminated. Called from the executor's
    /// own worker thread it returns at once (the worker cannot wait for itself).
    pub fn await_termination(&self, timeout: Duration) -> bool {
        self.core().await_termination(timeout)
    }

    /// Tasks accepted and not yet started; on a scheduled executor plus its live timers (a
    /// cancelled timer is removed at once and not counted).
    pub fn pending_tasks(&self) -> usize {
        self.core().pending_tasks()
    }

    /// Task slots allocated now (each slot is four machine words).
    pub fn queue_capacity(&self) -> usize {
        self.core().queue_capacity()
    }

    /// How many times a producer had to wake the parked worker (a diagnostic: producers make
    /// a wake-up call only when the worker is parked, never while it is awake).
    pub fn worker_wakeups(&self) -> u64 {
        self.core().wakeups()
    }

    /// A snapshot of the executor's counters, taken without the queue lock (a few atomic
    /// loads): see [`ExecutorStats`] for what each counts. Exact once the executor is idle.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_common::executors::ScheduledExecutor;
    /// use std::time::Duration;
    ///
    /// let executor = ScheduledExecutor::builder().pool_name("stats").build();
    /// executor.submit(|| ()).unwrap().join().unwrap();
    /// executor.schedule(Duration::from_millis(1), || ()).unwrap().join().unwrap();
    /// executor.shutdown();
    /// assert!(executor.await_termination(Duration::from_secs(10)));
    /// let stats = executor.stats();
    /// assert_eq!((stats.submitted, stats.completed, stats.pending), (2, 2, 0));
    /// ```
    pub fn stats(&self) -> ExecutorStats {
        self.core().stats()
    }

    /// Whether the calling thread is this executor's worker, i.e. the caller is one of its
    /// tasks. There `await_termination` returns `false` at once (the worker cannot end while it
    /// runs the caller), and `invoke_all` / `invoke_any` refuse with
    /// [`TaskError::WouldDeadlock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_common::executors::PulsarExecutors;
    ///
    /// let executor = PulsarExecutors::new_single_thread_executor();
    /// assert!(!executor.is_current_worker());
    /// let inside = executor.clone();
    /// assert!(executor.submit(move || inside.is_current_worker()).unwrap().join().unwrap());
    /// # executor.shutdown();
    /// ```
    pub fn is_current_worker(&self) -> bool {
        self.core().is_current_worker()
    }

    /// Whether dropping the last clone shuts the executor down without a warning.
    pub fn auto_shutdown_on_drop(&self) -> bool {
        self.handle.auto_shutdown_on_drop
    }

    /// The worker thread's name once started, else `single-thread-executor#<id>` (or
    /// `scheduled-executor#<id>`).
    pub fn name(&self) -> String {
        self.core().name()
    }
}

impl<K: BetweenBatches> fmt::Debug for SingleWorkerExecutor<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.core().run_state() {
            RUNNING => "running",
            TERMINATED => "terminated",
            _ => "shutting down",
        };
        f.debug_struct(K::TYPE_NAME)
            .field("name", &self.name())
            .field("state", &state)
            .field("pending_tasks", &self.pending_tasks())
            .field("auto_shutdown_on_drop", &self.handle.auto_shutdown_on_drop)
            .finish()
    }
}

/// Queues `job` on `core` through the one path every task takes (`execute`, `submit`, and a
/// spawned future's polls); a refused job comes back with its own type.
#[inline]
pub(crate) fn enqueue_job<K: BetweenBatches, J: Job>(
    core: &CoreArc<ExecutorCore<K>>,
    job: J,
) -> Result<(), RejectedExecution<J>> {
    match ExecutorCore::enqueue(core, RawTask::new(job)) {
        Ok(()) => Ok(()),
        Err((raw, reason)) => match raw.downcast::<J>() {
            Ok(job) => Err(RejectedExecution::new(job, reason)),
            Err(_) => unreachable!("a rejected task comes back with its own type"),
        },
    }
}
