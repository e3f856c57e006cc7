//! `Task`: a queued task handed back by `shutdown_now`, to run elsewhere or drop.

use crate::executors::raw_task::RawTask;
use std::fmt;

/// A task that was queued on an executor but never started, returned by `shutdown_now`.
///
/// [`run`](Task::run) runs it on the calling thread. Dropping it drops the closure unrun; if
/// it came from `submit` (or is a spawned future's queued poll), its
/// [`TaskHandle`](crate::executors::TaskHandle) then yields
/// [`TaskError::Cancelled`](crate::executors::TaskError::Cancelled).
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::PulsarExecutors;
/// use std::sync::mpsc;
///
/// let executor = PulsarExecutors::new_single_thread_executor();
/// let (release, blocked) = mpsc::channel::<()>();
/// executor.execute(move || blocked.recv().unwrap()).unwrap(); // keeps the worker busy
/// let queued = executor.submit(|| "ran elsewhere").unwrap();
/// let tasks = executor.shutdown_now();
/// release.send(()).unwrap();
/// // The first task may or may not have started when `shutdown_now` ran; the second had not.
/// for task in tasks {
///     task.run();
/// }
/// assert_eq!(queued.join().unwrap(), "ran elsewhere");
/// ```
pub struct Task {
    raw: RawTask,
}

impl Task {
    pub(crate) fn from_raw(raw: RawTask) -> Self {
        Self { raw }
    }

    /// Wraps a closure as a `Task` (for executors built on this crate's task slots).
    pub fn new<F: FnOnce() + Send + 'static>(f: F) -> Self {
        Self::from_raw(RawTask::new(f))
    }

    /// Runs the task on the calling thread. A panic in a task given to `execute` propagates to
    /// the caller; a task given to `submit` catches its panic and reports it to its handle.
    pub fn run(self) {
        self.raw.run();
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("inline", &self.raw.is_inline())
            .finish_non_exhaustive()
    }
}
