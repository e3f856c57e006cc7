//! `ScheduledHandle`: cancel, poll or join a delayed or periodic task.

use crate::executors::scheduled::core_share::CoreShare;
use crate::executors::scheduled::timer_entry::{EntryOutcome, CANCELLED, DONE};
use crate::executors::scheduled::timer_ref::TimerRef;
use crate::executors::task_error::TaskError;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The handle of a task given to [`ScheduledExecutor::schedule`] or one of the periodic
/// `schedule_*` methods.
///
/// - [`cancel`](Self::cancel) stops the task from running (a one-shot task that has not
///   started; a periodic task's future runs) and removes its timer at once: the closure is
///   dropped and the timer's slot freed during the call, not at the deadline.
/// - [`join`](Self::join) waits for the outcome: the one-shot task's value, its panic, or
///   [`TaskError::Cancelled`]. A periodic task has no value: its `join` returns when it was
///   cancelled (`Cancelled`, also at shutdown) or when a run panicked (`Panicked`, and it
///   stops repeating).
///
/// - It is a [`Future`] too, with the output `join` returns: async code can `.await` it
///   (wherever it runs; awaiting never blocks a thread, so it is also the way to wait for a
///   task of this executor from one of its own tasks' futures).
///
/// Dropping the handle neither cancels nor waits for the task.
///
/// [`ScheduledExecutor::schedule`]: crate::executors::ScheduledExecutor::schedule
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::{NamedThreadFactory, ScheduledExecutor, TaskError};
/// use std::time::Duration;
///
/// let executor = ScheduledExecutor::new(NamedThreadFactory::new("timers"));
/// let answer = executor.schedule(Duration::from_millis(1), || 42).unwrap();
/// assert_eq!(answer.join().unwrap(), 42);
///
/// let later = executor.schedule(Duration::from_secs(3600), || "never").unwrap();
/// assert!(later.cancel());
/// assert!(later.is_done());
/// assert!(matches!(later.join(), Err(TaskError::Cancelled)));
/// assert_eq!(executor.pending_tasks(), 0);
/// # executor.shutdown_now();
/// ```
pub struct ScheduledHandle<R: 'static> {
    entry: TimerRef<dyn EntryOutcome<R>>,
    /// Keeps the core alive for `cancel` (`core_share.rs`).
    core: CoreShare,
}

impl<R: Send + 'static> ScheduledHandle<R> {
    pub(crate) fn new(entry: TimerRef<dyn EntryOutcome<R>>, core: CoreShare) -> Self {
        Self { entry, core }
    }

    /// The entry, for the loom models (which wait on it from a shared handle).
    #[cfg(all(loom, test))]
    pub(crate) fn entry(&self) -> &dyn EntryOutcome<R> {
        &*self.entry
    }

    /// Cancels the task: a one-shot task that has not started will not run; a periodic task
    /// will not run again (a run in progress finishes). The timer is removed from the
    /// executor and the closure dropped before this returns.
    ///
    /// Returns `true` if this call cancelled the task; `false` if it had already completed,
    /// been cancelled, or (one-shot) started running.
    pub fn cancel(&self) -> bool {
        self.core.cancel(&self.entry)
    }

    /// Whether the task has completed: ran, panicked or was cancelled. A periodic task is done
    /// only once cancelled or after a panicking run.
    pub fn is_done(&self) -> bool {
        matches!(self.entry.header().state(), DONE | CANCELLED)
    }

    /// Whether the task was cancelled (by [`cancel`](Self::cancel), by a shutdown for a
    /// periodic task, or because `shutdown_now` returned it and it was dropped unrun).
    pub fn is_cancelled(&self) -> bool {
        self.entry.header().state() == CANCELLED
    }

    /// Waits for the outcome.
    ///
    /// # Errors
    ///
    /// [`TaskError::Panicked`] with the payload if the task (or a periodic run) panicked;
    /// [`TaskError::Cancelled`] if it was cancelled; [`TaskError::WouldDeadlock`] at once,
    /// without waiting, if the outcome is not there yet and the caller is this executor's own
    /// worker thread (which is the one that would have to produce it).
    ///
    /// # Panics
    ///
    /// If the handle, awaited as a future, already returned its outcome (`Ready`): the outcome
    /// is taken once, and a wait for it again would never end.
    pub fn join(self) -> Result<R, TaskError> {
        if let Some(refused) = self.refuse_self_join() {
            return refused;
        }
        self.entry
            .wait_outcome(None)
            .expect("waiting without a deadline ends with an outcome")
    }

    /// Waits at most `timeout`. On timeout the handle is handed back (`Err(self)`) so the
    /// caller can wait again or cancel. On the executor's own worker thread, with no outcome
    /// yet, it returns `Ok(Err(TaskError::WouldDeadlock))` at once (see [`join`](Self::join)).
    pub fn join_timeout(self, timeout: Duration) -> Result<Result<R, TaskError>, Self> {
        if let Some(refused) = self.refuse_self_join() {
            return Ok(refused);
        }
        let deadline = Instant::now().checked_add(timeout);
        match self.entry.wait_outcome(deadline) {
            Some(outcome) => Ok(outcome),
            None => Err(self),
        }
    }

    /// On this executor's worker thread: the outcome if it is already there, else
    /// `WouldDeadlock`. `None` elsewhere (the caller may wait). Only blocking calls ask.
    fn refuse_self_join(&self) -> Option<Result<R, TaskError>> {
        if !self.core.is_current_worker() {
            return None;
        }
        // A deadline already passed: takes an outcome that is there, never waits.
        let ready = self.entry.wait_outcome(Some(Instant::now()));
        Some(ready.unwrap_or(Err(TaskError::WouldDeadlock)))
    }
}

impl<R: Send + 'static> Future for ScheduledHandle<R> {
    type Output = Result<R, TaskError>;

    /// # Panics
    ///
    /// If polled again after it returned `Ready`.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.entry.poll_outcome(cx)
    }
}

impl<R: 'static> fmt::Debug for ScheduledHandle<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.entry.header().state() {
            DONE => "done",
            CANCELLED => "cancelled",
            crate::executors::scheduled::timer_entry::RUNNING => "running",
            _ => "scheduled",
        };
        f.debug_struct("ScheduledHandle")
            .field("state", &state)
            .field("periodic", &self.entry.is_periodic())
            .finish()
    }
}
