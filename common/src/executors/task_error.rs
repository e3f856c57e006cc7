//! `TaskError`: why a submitted task produced no value.

use crate::executors::rejected::RejectReason;
use crate::executors::task_panic::TaskPanic;
use std::any::Any;
use std::error::Error;
use std::fmt;

/// Why a submitted task produced no value.
///
/// `Send + Sync + 'static` and an [`Error`], so it converts into `Box<dyn Error + Send + Sync>`
/// (and `anyhow::Error`); a panic's payload is kept in a [`TaskPanic`].
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::{PulsarExecutors, TaskError};
/// use std::error::Error;
///
/// fn answer() -> Result<u32, Box<dyn Error + Send + Sync>> {
///     let executor = PulsarExecutors::new_single_thread_executor();
///     let value = executor.submit(|| 42).unwrap().join()?; // `?` boxes a `TaskError`
///     Ok(value)
/// }
/// assert_eq!(answer().unwrap(), 42);
/// ```
pub enum TaskError {
    /// The task panicked; the payload is the one given to `panic!`. (A spawned future panicked
    /// in `poll`.)
    Panicked(TaskPanic),
    /// The task was cancelled before it ran: by
    /// [`TaskHandle::cancel`](crate::executors::TaskHandle::cancel), or returned by
    /// `shutdown_now` and dropped unrun.
    Cancelled,
    /// The executor refused the task, for the reason given: it was shut down, or its worker
    /// thread could not be started (the thread factory's error or panic). For a spawned
    /// future: it was woken after the executor was shut down, so it could not be polled
    /// again; it was dropped.
    Rejected(RejectReason),
    /// The wait was refused, not the task: `join` (or `join_timeout`, `invoke_all`,
    /// `invoke_any`) was called on the worker thread of the executor that has to produce the
    /// result, which it cannot do while its only thread waits. Returned at once instead of
    /// hanging. The task itself is unaffected (still queued, it runs later; its result is then
    /// discarded). Wait for such a result from another thread, or await the handle.
    WouldDeadlock,
}

impl TaskError {
    /// A task's caught panic.
    pub(crate) fn panicked(payload: Box<dyn Any + Send>) -> Self {
        TaskError::Panicked(TaskPanic::new(payload))
    }

    /// Whether the task panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self, TaskError::Panicked(_))
    }

    /// Whether the task was cancelled.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, TaskError::Cancelled)
    }

    /// Whether the wait was refused because it would have deadlocked (a self-join).
    pub fn is_would_deadlock(&self) -> bool {
        matches!(self, TaskError::WouldDeadlock)
    }

    /// The panic payload, if the task panicked (to re-raise it with
    /// `std::panic::resume_unwind`).
    pub fn into_panic(self) -> Option<Box<dyn Any + Send>> {
        match self {
            TaskError::Panicked(panic) => Some(panic.into_inner()),
            _ => None,
        }
    }
}

impl fmt::Debug for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Panicked(panic) => {
                f.debug_tuple("Panicked").field(&panic.message()).finish()
            }
            TaskError::Cancelled => f.write_str("Cancelled"),
            TaskError::Rejected(reason) => f.debug_tuple("Rejected").field(reason).finish(),
            TaskError::WouldDeadlock => f.write_str("WouldDeadlock"),
        }
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Panicked(panic) => write!(f, "task panicked: {}", panic.message()),
            TaskError::Cancelled => f.write_str("task cancelled before it ran"),
            TaskError::Rejected(reason) => write!(f, "task rejected: {reason}"),
            TaskError::WouldDeadlock => f.write_str(
                "waiting for the result on the worker thread of the executor that must produce it would deadlock",
            ),
        }
    }
}

impl Error for TaskError {
    /// For a rejection, its [`RejectReason`] (whose own source is the thread factory's error).
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            TaskError::Rejected(reason) => Some(reason),
            _ => None,
        }
    }
}
