//! `TaskError`: why a submitted task produced no value.

use crate::executors::thread_factory::panic_message;
use std::any::Any;
use std::error::Error;
use std::fmt;

/// Why a submitted task produced no value.
pub enum TaskError {
    /// The task panicked; the payload is the one given to `panic!`.
    Panicked(Box<dyn Any + Send>),
    /// The task was returned by `shutdown_now` and dropped unrun.
    Cancelled,
    /// The executor refused the task (it was shut down).
    Rejected,
    /// The wait was refused, not the task: `join` (or `join_timeout`, `invoke_all`,
    /// `invoke_any`) was called on the worker thread of the executor that has to produce the
    /// result, which it cannot do while its only thread waits. Returned at once instead of
    /// hanging. The task itself is unaffected (still queued, it runs later; its result is then
    /// discarded). Wait for such a result from another thread, or await the handle.
    WouldDeadlock,
}

impl TaskError {
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
            TaskError::Panicked(payload) => Some(payload),
            _ => None,
        }
    }
}

impl fmt::Debug for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Panicked(payload) => f
                .debug_tuple("Panicked")
                .field(&panic_message(payload.as_ref()))
                .finish(),
            TaskError::Cancelled => f.write_str("Cancelled"),
            TaskError::Rejected => f.write_str("Rejected"),
            TaskError::WouldDeadlock => f.write_str("WouldDeadlock"),
        }
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Panicked(payload) => {
                write!(f, "task panicked: {}", panic_message(payload.as_ref()))
            }
            TaskError::Cancelled => f.write_str("task cancelled before it ran"),
            TaskError::Rejected => f.write_str("task rejected: the executor was shut down"),
            TaskError::WouldDeadlock => f.write_str(
                "waiting for the result on the worker thread of the executor that must produce it would deadlock",
            ),
        }
    }
}

impl Error for TaskError {}
