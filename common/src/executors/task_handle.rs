//! `TaskHandle`: the result of a submitted task, to join (blocking) or to await.

use crate::executors::raw_task::JobOutcome;
use crate::executors::task_error::TaskError;
use crate::executors::worker_lifecycle::is_worker_of;
use parking_lot::{Condvar, Mutex};
use std::fmt;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// The one-shot slot a task writes its result into and its handle reads from.
struct ResultSlot<R> {
    state: Mutex<SlotState<R>>,
    done: Condvar,
}

enum SlotState<R> {
    /// No result yet; the waker of the last poll, if the handle is awaited.
    Pending(Option<Waker>),
    Ready(Result<R, TaskError>),
    /// The handle took the result.
    Taken,
}

/// Creates a connected completer / handle pair for a task of the executor with id `executor`
/// (whose worker thread must not block on the handle).
pub(crate) fn result_slot<R>(executor: u64) -> (Completer<R>, TaskHandle<R>) {
    let slot = Arc::new(ResultSlot {
        state: Mutex::new(SlotState::Pending(None)),
        done: Condvar::new(),
    });
    (
        Completer {
            slot: Some(Arc::clone(&slot)),
        },
        TaskHandle { slot, executor },
    )
}

/// The writing end of a result slot. Dropped without completing, it completes with
/// [`TaskError::Cancelled`] — so a submitted task that is dropped unrun cancels its handle.
pub(crate) struct Completer<R> {
    slot: Option<Arc<ResultSlot<R>>>,
}

impl<R> Completer<R> {
    /// Runs `f`, catching a panic, and completes the handle with the outcome. Returns whether
    /// `f` panicked, for the executor's statistics.
    pub(crate) fn run<F: FnOnce() -> R>(self, f: F) -> JobOutcome {
        let outcome = panic::catch_unwind(AssertUnwindSafe(f)).map_err(TaskError::Panicked);
        let ran = match outcome {
            Ok(_) => JobOutcome::Completed,
            Err(_) => JobOutcome::Panicked,
        };
        self.complete(outcome);
        ran
    }

    pub(crate) fn complete(mut self, outcome: Result<R, TaskError>) {
        if let Some(slot) = self.slot.take() {
            Self::fill(&slot, outcome);
        }
    }

    fn fill(slot: &ResultSlot<R>, outcome: Result<R, TaskError>) {
        let waker = {
            let mut state = slot.state.lock();
            match std::mem::replace(&mut *state, SlotState::Ready(outcome)) {
                SlotState::Pending(waker) => waker,
                // Unreachable: only this completer writes, once.
                other => {
                    *state = other;
                    None
                }
            }
        };
        slot.done.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<R> Drop for Completer<R> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            Self::fill(&slot, Err(TaskError::Cancelled));
        }
    }
}

/// The result of a task given to `submit`.
///
/// [`join`](Self::join) blocks until the task has run; `TaskHandle` is also a [`Future`], so
/// async code can `.await` it. Dropping the handle does not cancel the task.
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
///     Err(TaskError::Panicked(payload)) => {
///         assert_eq!(payload.downcast_ref::<&str>(), Some(&"bad input"))
///     }
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
pub struct TaskHandle<R> {
    slot: Arc<ResultSlot<R>>,
    /// The id of the executor that runs the task: a blocking wait on its worker thread is
    /// refused ([`TaskError::WouldDeadlock`]). Checked only once the result is found not
    /// ready, never on the task's own path.
    executor: u64,
}

impl<R> TaskHandle<R> {
    /// Waits for the task and returns its value, or why there is none.
    ///
    /// # Errors
    ///
    /// [`TaskError::Panicked`] with the payload if the task panicked;
    /// [`TaskError::Cancelled`] if it was returned by `shutdown_now` and dropped unrun;
    /// [`TaskError::WouldDeadlock`] at once, without waiting, if the result is not ready and
    /// the caller is the worker thread of the task's own executor (a task joining a task of
    /// its own executor: the one thread that could run it is the one waiting).
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
        let mut state = self.slot.state.lock();
        loop {
            if let Some(outcome) = take_ready(&mut state) {
                return outcome;
            }
            if is_worker_of(self.executor) {
                return Err(TaskError::WouldDeadlock);
            }
            self.slot.done.wait(&mut state);
        }
    }

    /// Waits at most `timeout`. On timeout the handle is handed back (`Err(self)`) so the
    /// caller can wait again.
    ///
    /// On the worker thread of the task's own executor, with the result not ready, it returns
    /// `Ok(Err(TaskError::WouldDeadlock))` at once instead of waiting out the timeout (see
    /// [`join`](Self::join)).
    pub fn join_timeout(self, timeout: Duration) -> Result<Result<R, TaskError>, TaskHandle<R>> {
        let deadline = Instant::now().checked_add(timeout);
        {
            let mut state = self.slot.state.lock();
            loop {
                if let Some(outcome) = take_ready(&mut state) {
                    return Ok(outcome);
                }
                if is_worker_of(self.executor) {
                    return Ok(Err(TaskError::WouldDeadlock));
                }
                match deadline {
                    Some(deadline) => {
                        if self.slot.done.wait_until(&mut state, deadline).timed_out() {
                            if let Some(outcome) = take_ready(&mut state) {
                                return Ok(outcome);
                            }
                            break;
                        }
                    }
                    None => self.slot.done.wait(&mut state),
                }
            }
        }
        Err(self)
    }

    /// Whether the task has finished (ran, panicked or was cancelled).
    pub fn is_finished(&self) -> bool {
        !matches!(*self.slot.state.lock(), SlotState::Pending(_))
    }
}

fn take_ready<R>(state: &mut SlotState<R>) -> Option<Result<R, TaskError>> {
    match std::mem::replace(state, SlotState::Taken) {
        SlotState::Ready(outcome) => Some(outcome),
        other => {
            *state = other;
            None
        }
    }
}

impl<R> Future for TaskHandle<R> {
    type Output = Result<R, TaskError>;

    /// # Panics
    ///
    /// If polled again after it returned `Ready`.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.slot.state.lock();
        match &mut *state {
            SlotState::Pending(waker) => {
                match waker {
                    Some(waker) if waker.will_wake(cx.waker()) => {}
                    _ => *waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            SlotState::Taken => panic!("TaskHandle polled after it returned Ready"),
            SlotState::Ready(_) => Poll::Ready(take_ready(&mut state).expect("ready")),
        }
    }
}

impl<R> fmt::Debug for TaskHandle<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}
