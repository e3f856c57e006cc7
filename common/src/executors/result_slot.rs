//! `ResultSlot`: the one-shot slot a task writes its outcome into and its handle reads from.

use crate::executors::task_error::TaskError;
use crate::executors::worker_lifecycle::is_worker_of;
use crate::sync::plain::{Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// The outcome half of a task's shared cell: a blocking `join` waits on `done`, an `.await`
/// leaves its waker in the state. Written once; read once.
pub(crate) struct ResultSlot<R> {
    state: Mutex<SlotState<R>>,
    done: Condvar,
}

enum SlotState<R> {
    /// No outcome yet: the waker of the last poll, if the handle is awaited, and whether a
    /// thread sleeps (or slept) on `done` in `wait` — notifying `done` is a system call, made
    /// only then.
    Pending {
        waker: Option<Waker>,
        sleeping: bool,
    },
    Ready(Result<R, TaskError>),
    /// The handle took the outcome.
    Taken,
}

impl<R> ResultSlot<R> {
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(SlotState::Pending {
                waker: None,
                sleeping: false,
            }),
            done: Condvar::new(),
        }
    }

    /// Stores the outcome (the first one; a later one is dropped) and wakes whoever waits.
    /// Wakes the awaiting task's waker after the lock is released (it is user code).
    pub(crate) fn complete(&self, outcome: Result<R, TaskError>) {
        let (waker, sleeping) = {
            let mut state = self.state.lock();
            match &mut *state {
                SlotState::Pending { waker, sleeping } => {
                    let woken = (waker.take(), *sleeping);
                    *state = SlotState::Ready(outcome);
                    woken
                }
                SlotState::Ready(_) | SlotState::Taken => return,
            }
        };
        // A sleeper set `sleeping` under the lock before it slept (and re-checks the state
        // under it when woken), so no wake-up is lost by skipping the notify otherwise.
        if sleeping {
            self.done.notify_all();
        }
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Waits until `deadline` (`None`: no limit) and takes the outcome; `None` on timeout.
    /// On the worker thread of executor `executor`, with no outcome yet, returns
    /// `WouldDeadlock` at once instead of waiting (see `TaskHandle::join`).
    pub(crate) fn wait(
        &self,
        executor: u64,
        deadline: Option<Instant>,
    ) -> Option<Result<R, TaskError>> {
        let mut state = self.state.lock();
        loop {
            if let Some(outcome) = take_ready(&mut state) {
                return Some(outcome);
            }
            if is_worker_of(executor) {
                return Some(Err(TaskError::WouldDeadlock));
            }
            if let SlotState::Pending { sleeping, .. } = &mut *state {
                *sleeping = true;
            }
            match deadline {
                None => state = self.done.wait(state),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    let (guard, timed_out) = self.done.wait_timeout(state, left);
                    state = guard;
                    if timed_out {
                        return take_ready(&mut state);
                    }
                }
            }
        }
    }

    /// The `Future::poll` of a handle.
    ///
    /// # Panics
    ///
    /// If the outcome was taken already (polled again after `Ready`).
    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<Result<R, TaskError>> {
        let mut state = self.state.lock();
        match &mut *state {
            SlotState::Pending { waker, .. } => {
                match waker {
                    Some(waker) if waker.will_wake(cx.waker()) => {}
                    _ => *waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            SlotState::Taken => panic!("a task handle polled after it returned Ready"),
            SlotState::Ready(_) => Poll::Ready(take_ready(&mut state).expect("ready")),
        }
    }

    /// Whether the outcome is there (or was taken).
    pub(crate) fn is_finished(&self) -> bool {
        !matches!(*self.state.lock(), SlotState::Pending { .. })
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

impl<R> ResultSlot<R> {
    /// Drops `value` (a cancelled closure, a finished future: user code), then stores
    /// `outcome`. A panic in that drop is re-raised once the outcome is stored, so the handle
    /// resolves whatever the drop does.
    pub(crate) fn complete_after_dropping<T>(&self, value: T, outcome: Result<R, TaskError>) {
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(value)));
        self.complete(outcome);
        if let Err(payload) = dropped {
            std::panic::resume_unwind(payload);
        }
    }
}
