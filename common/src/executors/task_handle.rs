//! `TaskHandle`: the result of a submitted task or a spawned future, to join (blocking), to
//! await, or to cancel.

use crate::executors::result_slot::ResultSlot;
use crate::executors::task_error::TaskError;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// What a [`TaskHandle`] sees of its task's shared cell, whatever the task is (a submitted
/// closure, `submit_task.rs`; a spawned future, `spawn.rs`): the one allocation holding the
/// task, its state and its outcome.
pub(crate) trait TaskCell<R>: Send + Sync {
    /// Where the outcome goes.
    fn slot(&self) -> &ResultSlot<R>;

    /// Cancels the task if it has not started (see [`TaskHandle::cancel`]).
    fn cancel(&self) -> bool;
}

/// The result of a task given to `submit`, or of a future given to `spawn`.
///
/// [`join`](Self::join) blocks until the task has run; `TaskHandle` is also a [`Future`], so
/// async code can `.await` it. [`cancel`](Self::cancel) withdraws a task that has not started.
/// Dropping the handle neither cancels nor waits for the task.
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::{PulsarExecutors, TaskError};
///
/// let executor = PulsarExecutors::new_single_thread_executor();
/// assert_eq!(executor.submit(|| 17).unwrap().join().unwrap(), 17);
///
/// let failed = executor.submit(|| -> u32 { panic!("bad input") }).unwrap();
/// match failed.join() {
///     Err(TaskError::Panicked(panic)) => assert_eq!(panic.message(), "bad input"),
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
pub struct TaskHandle<R> {
    cell: Arc<dyn TaskCell<R>>,
    /// The id of the executor that runs the task: a blocking wait on its worker thread is
    /// refused ([`TaskError::WouldDeadlock`]). Checked only once the result is found not
    /// ready, never on the task's own path.
    executor: u64,
}

impl<R> TaskHandle<R> {
    /// The handle of `cell`, a task of the executor with id `executor`.
    pub(crate) fn new(cell: Arc<dyn TaskCell<R>>, executor: u64) -> Self {
        Self { cell, executor }
    }

    /// Waits for the task and returns its value, or why there is none.
    ///
    /// # Errors
    ///
    /// [`TaskError::Panicked`] with the payload if the task panicked;
    /// [`TaskError::Cancelled`] if it was cancelled ([`cancel`](Self::cancel), or returned by
    /// `shutdown_now` and dropped unrun); [`TaskError::Rejected`] if it was a spawned future
    /// woken after shutdown; [`TaskError::WouldDeadlock`] at once, without waiting, if the
    /// result is not ready and the caller is the worker thread of the task's own executor (a
    /// task joining a task of its own executor: the one thread that could run it is the one
    /// waiting).
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_common::executors::{PulsarExecutors, TaskError};
    ///
    /// let executor = PulsarExecutors::new_single_thread_executor();
    /// let same = executor.clone();
    /// let outer = executor.submit(move || same.submit(|| 1).unwrap().join());
    /// assert!(matches!(outer.unwrap().join().unwrap(), Err(TaskError::WouldDeadlock)));
    /// ```
    pub fn join(self) -> Result<R, TaskError> {
        self.cell
            .slot()
            .wait(self.executor, None)
            .expect("a wait without a deadline ends with an outcome")
    }

    /// Waits at most `timeout`. On timeout the handle is handed back (`Err(self)`) so the
    /// caller can wait again.
    ///
    /// On the worker thread of the task's own executor, with the result not ready, it returns
    /// `Ok(Err(TaskError::WouldDeadlock))` at once instead of waiting out the timeout (see
    /// [`join`](Self::join)).
    pub fn join_timeout(self, timeout: Duration) -> Result<Result<R, TaskError>, TaskHandle<R>> {
        let deadline = Instant::now().checked_add(timeout);
        match self.cell.slot().wait(self.executor, deadline) {
            Some(outcome) => Ok(outcome),
            None => Err(self),
        }
    }

    /// Whether the task has finished (ran, panicked or was cancelled).
    pub fn is_finished(&self) -> bool {
        self.cell.slot().is_finished()
    }

    /// Cancels the task if it has not started.
    ///
    /// Returns `true` if the task had not started and now never will: its closure (or future)
    /// is dropped before this returns, on the calling thread, and the handle yields
    /// [`TaskError::Cancelled`]. Returns `false` if it already ran, is running, or was
    /// cancelled already. A cancelled task counts neither as pending
    /// ([`pending_tasks`](crate::executors::SingleThreadExecutor::pending_tasks)) nor as
    /// completed; its queue entry stays until the worker reaches it and skips it.
    ///
    /// A spawned future counts as running only while it is being polled: between polls
    /// (waiting for a wake, or queued to be polled again) it can be cancelled, and is dropped.
    ///
    /// # Panics
    ///
    /// If dropping the closure panics: the panic reaches the caller, after the handle was
    /// resolved with `Cancelled`.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_common::executors::{PulsarExecutors, TaskError};
    /// use std::sync::mpsc;
    ///
    /// let executor = PulsarExecutors::new_single_thread_executor();
    /// let (started, running) = mpsc::channel();
    /// let (release, blocked) = mpsc::channel::<()>();
    /// executor.execute(move || {
    ///     started.send(()).unwrap();
    ///     blocked.recv().unwrap(); // keeps the worker busy
    /// }).unwrap();
    /// running.recv().unwrap();
    /// let queued = executor.submit(|| "never runs").unwrap();
    /// assert_eq!(executor.pending_tasks(), 1);
    /// assert!(queued.cancel());
    /// assert!(!queued.cancel(), "only once");
    /// assert_eq!(executor.pending_tasks(), 0);
    /// release.send(()).unwrap();
    /// assert!(matches!(queued.join(), Err(TaskError::Cancelled)));
    /// ```
    pub fn cancel(&self) -> bool {
        self.cell.cancel()
    }
}

impl<R> Future for TaskHandle<R> {
    type Output = Result<R, TaskError>;

    /// # Panics
    ///
    /// If polled again after it returned `Ready`.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.cell.slot().poll(cx)
    }
}

impl<R> fmt::Debug for TaskHandle<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}
