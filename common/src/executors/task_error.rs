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
        }
    }
}

impl Error for TaskError {}
