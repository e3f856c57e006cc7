//! `InvokeAnyError`: why `invoke_any` produced no value.

use crate::executors::task_error::TaskError;
use std::error::Error;
use std::fmt;

/// How one task of an `invoke_any` failed.
pub enum InvokeFailure<E> {
    /// The task ran and returned `Err`.
    Failed(E),
    /// The task did not produce a result (panicked, cancelled or rejected).
    Task(TaskError),
}

/// Why [`invoke_any`](crate::executors::SingleThreadExecutor::invoke_any) produced no value.
pub enum InvokeAnyError<E> {
    /// The list of tasks was empty.
    NoTasks,
    /// No task succeeded; each task's failure, in the tasks' order.
    AllFailed(Vec<InvokeFailure<E>>),
}

impl<E: fmt::Debug> fmt::Debug for InvokeFailure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvokeFailure::Failed(error) => f.debug_tuple("Failed").field(error).finish(),
            InvokeFailure::Task(error) => f.debug_tuple("Task").field(error).finish(),
        }
    }
}

impl<E: fmt::Debug> fmt::Debug for InvokeAnyError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvokeAnyError::NoTasks => f.write_str("NoTasks"),
            InvokeAnyError::AllFailed(failures) => {
                f.debug_tuple("AllFailed").field(failures).finish()
            }
        }
    }
}

impl<E: fmt::Debug> fmt::Display for InvokeAnyError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvokeAnyError::NoTasks => f.write_str("invoke_any was given no tasks"),
            InvokeAnyError::AllFailed(failures) => {
                write!(f, "all {} tasks failed: {:?}", failures.len(), failures)
            }
        }
    }
}

impl<E: fmt::Debug> Error for InvokeAnyError<E> {}
