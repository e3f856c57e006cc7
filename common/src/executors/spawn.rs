//! `SingleThreadExecutor::spawn`: runs a future on the executor's worker, polling it each time
//! it is woken, and hands back a [`TaskHandle`] to its output.
//!
//! # Design
//!
//! A spawned future lives in one shared cell (`SpawnCell`) with its state and its outcome; the
//! cell's `Arc` is also the future's [`Waker`]. Each poll is an ordinary task of the executor,
//! queued through the same path as `execute` (`enqueue_job`): its queue entry is the cell's
//! pointer (one word, stored inline, so a wake allocates nothing), and the worker runs it in
//! FIFO order with every other task. The worker never blocks on a future, and a wake never
//! polls inline: it queues the next poll behind the tasks already queued.
//!
//! | state             | meaning                                          | on wake                                  |
//! |-------------------|--------------------------------------------------|------------------------------------------|
//! | `Idle`            | waiting for a wake; holds the future; not queued | -> `Queued`, and queues a poll           |
//! | `Queued`          | a poll is queued; holds the future               | nothing (one queued poll is enough)      |
//! | `Polling`         | the worker polls it now (the future is out)      | sets `woken`: queued again after the poll |
//! | `CancelledQueued` | cancelled while a poll was queued                | nothing                                  |
//! | `Done`            | finished: output, panic, cancel or rejection     | nothing                                  |
//!
//! So a future woken any number of times before its next poll is queued once, and a wake
//! after it finished does nothing. Every transition happens under the cell's lock; the future
//! is polled and dropped with the lock released (a wake from inside `poll` only sets `woken`).
//!
//! - **Output and panics**: `Ready(value)` completes the handle with the value; a panic in
//!   `poll` completes it with [`TaskError::Panicked`]. Either way the future is dropped (on
//!   the worker) before the handle resolves.
//! - **Shutdown**: `spawn` after shutdown hands the future back unpolled in the
//!   [`RejectedExecution`]. A future that is woken after shutdown cannot be queued: it is
//!   dropped by the waking thread and its handle yields [`TaskError::Rejected`]. (A graceful
//!   `shutdown` still runs the polls queued before it, as it runs every queued task.)
//!   `shutdown_now` returns queued polls as [`Task`](crate::executors::Task)s: running one
//!   polls the future on the caller's thread; dropping one drops the future and the handle
//!   yields [`TaskError::Cancelled`].
//! - **Cancel**: [`TaskHandle::cancel`] drops an `Idle` or `Queued` future at once (a queued
//!   poll then skips it and does not count as pending); a future being polled is running and
//!   cannot be cancelled (`false`).
//! - **Pinning without `unsafe`**: the future is moved into the cell as is, and boxed (pinned)
//!   by its first poll. So a refused `spawn` hands back the very future it was given, and a
//!   spawned future costs two allocations (the cell, and the box at the first poll); polls
//!   and wakes allocate nothing.
//! - **Lifetimes**: the cell holds the executor's core (not its handle: a pending future does
//!   not keep the executor from shutting down when its last handle is dropped). A future that
//!   is never woken again stays where its wakers and its handle are.

use crate::executors::between_batches::NoTimers;
use crate::executors::cancelled_tasks::CancelledTasks;
use crate::executors::executor_core::ExecutorCore;
use crate::executors::raw_task::{Job, JobOutcome};
use crate::executors::rejected::RejectedExecution;
use crate::executors::result_slot::ResultSlot;
use crate::executors::single_thread_executor::SingleThreadExecutor;
use crate::executors::single_worker_executor::enqueue_job;
use crate::executors::task_error::TaskError;
use crate::executors::task_handle::{TaskCell, TaskHandle};
use crate::sync::plain::Mutex;
use crate::sync::Arc as CoreArc;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

impl SingleThreadExecutor {
    /// Runs `future` on the worker thread and returns a handle to its output.
    ///
    /// The future is polled on the worker, as a task queued like any other: first now, then
    /// each time it is woken, queued behind the tasks already queued (never polled inside
    /// `wake`, and never blocking the worker). A wake before the next poll queues it once. A
    /// panic in `poll` goes to the handle as [`TaskError::Panicked`]. The handle is a
    /// [`TaskHandle`]: join it, await it, or [`cancel`](TaskHandle::cancel) the future between
    /// polls.
    ///
    /// A future woken after the executor was shut down is dropped, and its handle yields
    /// [`TaskError::Rejected`].
    ///
    /// # Errors
    ///
    /// [`RejectedExecution`] handing `future` back unpolled if the executor has been shut down
    /// or its worker thread could not be started.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_common::executors::PulsarExecutors;
    /// use std::future::Future;
    /// use std::pin::Pin;
    /// use std::task::{Context, Poll};
    ///
    /// /// Pending twice (waking itself each time), then ready.
    /// struct Countdown(u32);
    /// impl Future for Countdown {
    ///     type Output = &'static str;
    ///     fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<&'static str> {
    ///         if self.0 == 0 {
    ///             return Poll::Ready("liftoff");
    ///         }
    ///         self.0 -= 1;
    ///         cx.waker().wake_by_ref(); // queued again, behind the tasks already queued
    ///         Poll::Pending
    ///     }
    /// }
    ///
    /// let executor = PulsarExecutors::new_single_thread_executor();
    /// let handle = executor.spawn(Countdown(2)).unwrap();
    /// assert_eq!(handle.join().unwrap(), "liftoff");
    ///
    /// executor.shutdown();
    /// let refused = executor.spawn(async { 1 }).unwrap_err();
    /// let _unpolled = refused.into_task();
    /// ```
    pub fn spawn<F>(&self, future: F) -> Result<TaskHandle<F::Output>, RejectedExecution<F>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let core = self.core();
        let cell = Arc::new(SpawnCell {
            state: Mutex::new(State::Queued(Unpinned::Fresh(future))),
            slot: ResultSlot::new(),
            core: CoreArc::clone(core),
            cancelled: core.cancelled_tasks().clone(),
        });
        let poll = PollJob {
            cell: Some(Arc::clone(&cell)),
        };
        match enqueue_job(core, poll) {
            Ok(()) => Ok(TaskHandle::new(cell, core.id())),
            Err(rejected) => {
                let (mut poll, reason) = rejected.into_parts();
                poll.cell = None; // never queued: its `Drop` must not cancel
                let state = std::mem::replace(&mut *cell.state.lock(), State::Done);
                match state {
                    State::Queued(Unpinned::Fresh(future)) => {
                        Err(RejectedExecution::new(future, reason))
                    }
                    _ => unreachable!("a refused future was never polled"),
                }
            }
        }
    }
}

/// A spawned future's shared cell: its state, its outcome, and where to queue its polls. Its
/// `Arc` is the future's waker.
struct SpawnCell<F: Future> {
    state: Mutex<State<F>>,
    slot: ResultSlot<F::Output>,
    /// The executor that polls it (its core: the worker's, not a user handle).
    core: CoreArc<ExecutorCore<NoTimers>>,
    cancelled: CancelledTasks,
}

/// See the table in the module docs.
enum State<F> {
    Idle(Unpinned<F>),
    Queued(Unpinned<F>),
    Polling { woken: bool },
    CancelledQueued,
    Done,
}

/// The future: as given until its first poll, pinned in a box from then on.
enum Unpinned<F> {
    Fresh(F),
    Pinned(Pin<Box<F>>),
}

impl<F> Unpinned<F> {
    fn pin(self) -> Pin<Box<F>> {
        match self {
            Unpinned::Fresh(future) => Box::pin(future),
            Unpinned::Pinned(future) => future,
        }
    }
}

/// The queue entry of one poll. Dropped unrun (a `shutdown_now` caller dropped it), it
/// cancels the future.
struct PollJob<F: Future> {
    /// `None` once run, or for a refused entry (so that `Drop` does nothing).
    cell: Option<Arc<SpawnCell<F>>>,
}

impl<F> Job for PollJob<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn run(mut self) -> JobOutcome {
        match self.cell.take() {
            Some(cell) => cell.poll(),
            None => unreachable!("a queued poll holds its cell until it runs"),
        }
    }
}

impl<F: Future> Drop for PollJob<F> {
    fn drop(&mut self) {
        if let Some(cell) = self.cell.take() {
            cell.entry_dropped();
        }
    }
}

impl<F> SpawnCell<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    /// A queued poll runs (on the worker, or on a `shutdown_now` caller's thread). Each poll
    /// is one task in the executor's statistics.
    fn poll(self: Arc<Self>) -> JobOutcome {
        let future = {
            let mut state = self.state.lock();
            match std::mem::replace(&mut *state, State::Polling { woken: false }) {
                State::Queued(future) => future,
                State::CancelledQueued => {
                    *state = State::Done;
                    self.cancelled.entry_gone();
                    return JobOutcome::Cancelled;
                }
                State::Idle(_) | State::Polling { .. } | State::Done => {
                    unreachable!("a future has at most one queued poll, and only it polls")
                }
            }
        };
        let mut future = future.pin();
        let waker = Waker::from(Arc::clone(&self));
        let mut cx = Context::from_waker(&waker);
        let polled = panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut cx)));
        let outcome = match polled {
            Ok(Poll::Pending) => {
                let requeue = {
                    let mut state = self.state.lock();
                    let woken = matches!(*state, State::Polling { woken: true });
                    let future = Unpinned::Pinned(future);
                    *state = if woken {
                        State::Queued(future)
                    } else {
                        State::Idle(future)
                    };
                    woken
                };
                if requeue {
                    self.queue_poll();
                }
                return JobOutcome::Completed;
            }
            Ok(Poll::Ready(value)) => Ok(value),
            Err(payload) => Err(TaskError::panicked(payload)),
        };
        let job_outcome = match outcome {
            Ok(_) => JobOutcome::Completed,
            Err(_) => JobOutcome::Panicked,
        };
        *self.state.lock() = State::Done;
        self.slot.complete_after_dropping(future, outcome);
        job_outcome
    }

    /// Queues a poll (the state is `Queued` already). Refused (the executor was shut down),
    /// the future is dropped here and the handle yields `Rejected`.
    fn queue_poll(self: &Arc<Self>) {
        let poll = PollJob {
            cell: Some(Arc::clone(self)),
        };
        if let Err(rejected) = enqueue_job(&self.core, poll) {
            let (mut poll, reason) = rejected.into_parts();
            poll.cell = None; // never queued: its `Drop` must not cancel
            let state = std::mem::replace(&mut *self.state.lock(), State::Done);
            match state {
                State::Queued(future) => self
                    .slot
                    .complete_after_dropping(future, Err(TaskError::Rejected(reason))),
                // Cancelled between the wake and the refusal: the cancel dropped the future
                // and counted the entry that never was.
                State::CancelledQueued => self.cancelled.entry_gone(),
                _ => unreachable!("only this wake queues the future now"),
            }
        }
    }
}

impl<F: Future> SpawnCell<F> {
    /// A queued poll went away unrun: the future is dropped and the handle yields
    /// `Cancelled` (or, cancelled already, the entry is taken off the count).
    fn entry_dropped(&self) {
        let state = {
            let mut state = self.state.lock();
            match &*state {
                State::Queued(_) => std::mem::replace(&mut *state, State::Done),
                State::CancelledQueued => {
                    *state = State::Done;
                    self.cancelled.entry_gone();
                    return;
                }
                _ => return,
            }
        };
        if let State::Queued(future) = state {
            self.slot
                .complete_after_dropping(future, Err(TaskError::Cancelled));
        }
    }
}

impl<F> Wake for SpawnCell<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let queue = {
            let mut state = self.state.lock();
            match &mut *state {
                State::Idle(_) => {
                    let State::Idle(future) = std::mem::replace(&mut *state, State::Done) else {
                        unreachable!("matched above")
                    };
                    *state = State::Queued(future);
                    true
                }
                State::Polling { woken } => {
                    *woken = true;
                    false
                }
                State::Queued(_) | State::CancelledQueued | State::Done => false,
            }
        };
        if queue {
            self.queue_poll();
        }
    }
}

impl<F> TaskCell<F::Output> for SpawnCell<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn slot(&self) -> &ResultSlot<F::Output> {
        &self.slot
    }

    fn cancel(&self) -> bool {
        let future = {
            let mut state = self.state.lock();
            match std::mem::replace(&mut *state, State::Done) {
                State::Idle(future) => future,
                State::Queued(future) => {
                    // Counted under the lock, before the entry can see the state and uncount.
                    self.cancelled.cancelled_one();
                    *state = State::CancelledQueued;
                    future
                }
                other => {
                    *state = other;
                    return false;
                }
            }
        };
        self.slot
            .complete_after_dropping(future, Err(TaskError::Cancelled));
        true
    }
}
