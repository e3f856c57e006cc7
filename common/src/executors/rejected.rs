//! `RejectedExecution`: a task an executor did not accept, handed back with the reason.

use std::error::Error;
use std::fmt;
use std::io;

/// Why an executor refused a task.
#[derive(Debug)]
#[non_exhaustive]
pub enum RejectReason {
    /// The executor was shut down (`shutdown` or `shutdown_now`) before the task was offered.
    Shutdown,
    /// The executor's worker thread could not be started: the thread factory's error, or,
    /// when the factory panicked, an error of kind `Other` wrapping a
    /// [`ThreadFactoryPanicked`](crate::executors::ThreadFactoryPanicked) with the panic's
    /// message. The executor is left without a worker; the next task tries again.
    ThreadStartFailed(io::Error),
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectReason::Shutdown => f.write_str("the executor has been shut down"),
            RejectReason::ThreadStartFailed(error) => {
                write!(
                    f,
                    "the executor's worker thread could not be started: {error}"
                )
            }
        }
    }
}

impl Error for RejectReason {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            RejectReason::ThreadStartFailed(error) => Some(error),
            RejectReason::Shutdown => None,
        }
    }
}

/// A task an executor did not accept, handed back to the caller with the reason.
///
/// `Debug` does not require `F: Debug`.
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::{PulsarExecutors, RejectReason};
///
/// let executor = PulsarExecutors::new_single_thread_executor();
/// executor.shutdown();
/// let rejected = executor.execute(|| println!("never runs")).unwrap_err();
/// assert!(matches!(rejected.reason(), RejectReason::Shutdown));
/// let task = rejected.into_task(); // run it elsewhere, or drop it
/// task();
/// ```
pub struct RejectedExecution<F> {
    task: F,
    reason: RejectReason,
}

impl<F> RejectedExecution<F> {
    pub(crate) fn new(task: F, reason: RejectReason) -> Self {
        Self { task, reason }
    }

    /// Why the task was refused.
    pub fn reason(&self) -> &RejectReason {
        &self.reason
    }

    /// The task that was refused, unrun.
    pub fn into_task(self) -> F {
        self.task
    }

    /// The task and the reason.
    pub fn into_parts(self) -> (F, RejectReason) {
        (self.task, self.reason)
    }
}

impl<F> fmt::Debug for RejectedExecution<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RejectedExecution")
            .field("reason", &self.reason)
            .finish_non_exhaustive()
    }
}

impl<F> fmt::Display for RejectedExecution<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task rejected: {}", self.reason)
    }
}

impl<F> Error for RejectedExecution<F> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match &self.reason {
            RejectReason::ThreadStartFailed(error) => Some(error),
            RejectReason::Shutdown => None,
        }
    }
}
