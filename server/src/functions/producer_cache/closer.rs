//! The `ProducerCache`'s closer: flushes then closes evicted producers on the cache's executor, each step with a timeout.
//!
//! # Design
//!
//! Evicted producers are handed over in batches ([`Closer::hand_over`]). One long-running
//! *driver* task on the cache's single-thread executor owns every close in progress and drives
//! their futures concurrently, as Pulsar's removal listener starts `flushAsync().orTimeout()`
//! then `closeAsync().orTimeout()` for each producer without waiting:
//!
//! 1. take the newly handed-over producers and call `flush` on each (stage *Flushing*);
//! 2. poll every operation; a finished, failed or timed-out flush moves on to `close` (stage
//!    *Closing*); a finished, failed or timed-out close is an outcome;
//! 3. sleep on `wake` until a future's waker fires, more producers arrive, the earliest
//!    deadline passes, or the cache gives up (`abandon`).
//!
//! The driver exits when nothing is in progress; the next hand-over queues a new one. All user
//! code (`flush`, `close`, polls, drops) runs on the driver with no lock held.
//!
//! The driver polls its futures by hand (its own waker and `wake` condvar), as does
//! `function_instance.rs`. Both are to become `SingleThreadExecutor::spawn(future)` once the
//! executor-core issue adds it; until then they stay, and this file only takes its executor,
//! panic boundary and thread record from the component kit (`crate::component`).

use crate::component::user_code::{catch_user, drop_user, PanicPayload};
use crate::component::ComponentExecutor;
use crate::functions::{Producer, ProducerFuture};
use parking_lot::{Condvar, Mutex};
use pulsar_common::executors::panic_message;
use std::fmt;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// What a [`ProducerCache`](crate::functions::ProducerCache) did with the producers it
/// removed, counted over its lifetime; returned by
/// [`close`](crate::functions::ProducerCache::close).
///
/// Every producer the cache removed (evicted, invalidated or closed) is in exactly one count
/// once `close` returns.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{Producer, ProducerCache, ProducerFuture};
///
/// struct Noop;
/// impl Producer for Noop {
///     type Message = ();
///     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
///     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
///     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
/// }
///
/// let cache: ProducerCache<(), Noop> = ProducerCache::builder().build();
/// cache.get_or_create("persistent://t/n/a", (), || Ok::<_, ()>(Noop)).unwrap();
/// let report = cache.close();
/// assert_eq!((report.closed, report.failed, report.timed_out, report.abandoned), (1, 0, 0, 0));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProducerCloseReport {
    /// Flushed and closed without error.
    pub closed: usize,
    /// `flush` or `close` failed or panicked (and neither timed out); `close` was still
    /// called after a failed flush.
    pub failed: usize,
    /// `flush` or `close` did not complete within the operation timeout; its future was
    /// dropped.
    pub timed_out: usize,
    /// Still being flushed or closed when `close` stopped waiting, or handed over after the
    /// executor was shut down: dropped without a finished close.
    pub abandoned: usize,
}

/// Why the cache removed a producer (for the log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RemovalCause {
    /// The cache was over its size bound; the least recently used producer went.
    Size,
    /// Unused for longer than the idle expiry.
    Expired,
    /// `invalidate` / `invalidate_all`.
    Explicit,
    /// The cache is closing.
    Closed,
}

/// A producer removed from the cache, to be flushed and closed.
pub(crate) struct Evicted<P> {
    pub(crate) topic: String,
    pub(crate) producer: Arc<P>,
    pub(crate) cause: RemovalCause,
}

/// How one producer's flush-then-close ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Closed,
    Failed,
    TimedOut,
}

/// Flushes and closes evicted producers on the cache's executor.
pub(crate) struct Closer<P> {
    executor: ComponentExecutor,
    /// The timeout of each `flush` and each `close`.
    op_timeout: Duration,
    state: Mutex<CloserState<P>>,
    /// The driver waits here: hand-overs, wakers and `give_up` notify it.
    wake: Condvar,
    /// `wait_idle` waits here for `pending == 0`.
    idle: Condvar,
}

struct CloserState<P> {
    /// Handed over, not yet taken by the driver.
    incoming: Vec<Evicted<P>>,
    /// Handed over and not yet finished (incoming + in progress).
    pending: usize,
    /// A waker fired since the driver last polled.
    woken: bool,
    /// A driver task is queued or running (at most one).
    driver_running: bool,
    /// The cache stopped waiting: the driver drops what is in progress and exits, counting
    /// nothing more (`give_up` counted those producers as abandoned).
    abandon: bool,
    report: ProducerCloseReport,
}

impl<P: Producer> Closer<P> {
    pub(crate) fn new(executor: ComponentExecutor, op_timeout: Duration) -> Self {
        Self {
            executor,
            op_timeout,
            state: Mutex::new(CloserState {
                incoming: Vec::new(),
                pending: 0,
                woken: false,
                driver_running: false,
                abandon: false,
                report: ProducerCloseReport::default(),
            }),
            wake: Condvar::new(),
            idle: Condvar::new(),
        }
    }

    /// Queues `evicted` to be flushed and closed; starts a driver if none is running.
    pub(crate) fn hand_over(this: &Arc<Self>, evicted: Vec<Evicted<P>>) {
        if evicted.is_empty() {
            return;
        }
        for removed in &evicted {
            tracing::info!(topic = %removed.topic, cause = ?removed.cause, "closing producer");
        }
        let start_driver = {
            let mut state = this.state.lock();
            state.pending += evicted.len();
            state.incoming.extend(evicted);
            if state.abandon {
                // Given up already: the executor is (being) shut down.
                let late = std::mem::take(&mut state.incoming);
                state.pending -= late.len();
                state.report.abandoned += late.len();
                drop(state);
                tracing::warn!(
                    count = late.len(),
                    "producers removed after the cache gave up closing; dropped unclosed"
                );
                drop_user(late, "evicted producers");
                return;
            }
            !std::mem::replace(&mut state.driver_running, true)
        };
        if !start_driver {
            this.wake.notify_one();
            return;
        }
        // Outside the lock: starting the thread calls the thread factory (user code).
        let driver = Arc::clone(this);
        if let Err(rejected) = this.executor.execute(move || driver.drive()) {
            let late = {
                let mut state = this.state.lock();
                state.driver_running = false;
                let late = std::mem::take(&mut state.incoming);
                state.pending -= late.len();
                state.report.abandoned += late.len();
                if state.pending == 0 {
                    this.idle.notify_all();
                }
                late
            };
            tracing::warn!(%rejected, count = late.len(), "cannot close evicted producers; dropped unclosed");
            drop(rejected);
            drop_user(late, "evicted producers");
        }
    }

    /// Waits until every handed-over producer is finished, or `deadline`; `true` if all are.
    pub(crate) fn wait_idle(&self, deadline: Instant) -> bool {
        let mut state = self.state.lock();
        while state.pending > 0 {
            if self.idle.wait_until(&mut state, deadline).timed_out() {
                return state.pending == 0;
            }
        }
        true
    }

    /// Stops waiting for the producers still in progress: they count as abandoned, and the
    /// driver drops them (cancelling their futures) as soon as it wakes.
    pub(crate) fn give_up(&self) {
        let mut state = self.state.lock();
        if state.abandon {
            return;
        }
        state.abandon = true;
        let pending = state.pending;
        state.report.abandoned += pending;
        drop(state);
        if pending > 0 {
            tracing::warn!(
                pending,
                "producer cache closed while producers were still flushing or closing; abandoning them"
            );
        }
        self.wake.notify_all();
    }

    pub(crate) fn report(&self) -> ProducerCloseReport {
        self.state.lock().report
    }

    pub(crate) fn executor(&self) -> &ComponentExecutor {
        &self.executor
    }

    /// The driver task (see the module docs).
    fn drive(self: Arc<Self>) {
        let waker = Waker::from(Arc::new(DriverWaker {
            closer: Arc::downgrade(&self),
        }));
        let mut cx = Context::from_waker(&waker);
        let mut active: Vec<Closing<P>> = Vec::new();
        loop {
            let (incoming, abandon) = {
                let mut state = self.state.lock();
                state.woken = false;
                (std::mem::take(&mut state.incoming), state.abandon)
            };
            if abandon {
                let dropped = active.len() + incoming.len();
                drop_user((active, incoming), "abandoned producer closes");
                let mut state = self.state.lock();
                state.pending -= dropped;
                state.driver_running = false;
                self.idle.notify_all();
                return;
            }
            active.extend(
                incoming
                    .into_iter()
                    .map(|evicted| Closing::start(evicted, self.op_timeout)),
            );

            let now = Instant::now();
            let mut finished = Vec::new();
            let mut i = 0;
            while i < active.len() {
                match active[i].advance(&mut cx, now, self.op_timeout) {
                    Some(outcome) => finished.push((active.swap_remove(i), outcome)),
                    None => i += 1,
                }
            }
            let next_deadline = active.iter().map(|op| op.deadline).min();
            let outcomes: Vec<Outcome> = finished.iter().map(|(_, outcome)| *outcome).collect();
            drop_user(finished, "a closed producer");

            let mut state = self.state.lock();
            if !outcomes.is_empty() {
                state.pending -= outcomes.len();
                if !state.abandon {
                    for outcome in outcomes {
                        match outcome {
                            Outcome::Closed => state.report.closed += 1,
                            Outcome::Failed => state.report.failed += 1,
                            Outcome::TimedOut => state.report.timed_out += 1,
                        }
                    }
                }
                if state.pending == 0 {
                    self.idle.notify_all();
                }
            }
            if !state.incoming.is_empty() || state.woken || state.abandon {
                continue;
            }
            match next_deadline {
                None => {
                    state.driver_running = false;
                    return;
                }
                Some(deadline) => {
                    self.wake.wait_until(&mut state, deadline);
                }
            }
        }
    }
}

impl<P> fmt::Debug for Closer<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("Closer")
            .field("executor", &self.executor.name())
            .field("op_timeout", &self.op_timeout)
            .field("pending", &state.pending)
            .field("report", &state.report)
            .finish()
    }
}

/// Wakes the driver: any future's progress makes it poll everything in progress again.
struct DriverWaker<P> {
    closer: Weak<Closer<P>>,
}

impl<P: Send + Sync + 'static> Wake for DriverWaker<P> {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(closer) = self.closer.upgrade() {
            closer.state.lock().woken = true;
            closer.wake.notify_one();
        }
    }
}

/// One producer being flushed, then closed.
struct Closing<P> {
    topic: String,
    producer: Arc<P>,
    stage: Stage,
    /// When the current stage times out.
    deadline: Instant,
    failed: bool,
    timed_out: bool,
}

/// The operation in progress; `None` when the call that should have returned it panicked.
enum Stage {
    Flushing(Option<ProducerFuture>),
    Closing(Option<ProducerFuture>),
}

/// How polling the current stage ended.
enum Step {
    /// Completed, or its call panicked earlier (already noted).
    Over,
    Failed(crate::functions::ProducerError),
    TimedOut,
    Panicked(PanicPayload),
}

impl<P: Producer> Closing<P> {
    /// Calls `flush` (user code, no lock held).
    fn start(evicted: Evicted<P>, timeout: Duration) -> Self {
        let mut closing = Closing {
            topic: evicted.topic,
            producer: evicted.producer,
            stage: Stage::Flushing(None),
            deadline: Instant::now() + timeout,
            failed: false,
            timed_out: false,
        };
        let producer = &closing.producer;
        match catch_user("Producer::flush", || producer.flush()) {
            Ok(future) => closing.stage = Stage::Flushing(Some(future)),
            Err(payload) => closing.note_panic("flush", &payload),
        }
        closing
    }

    /// Polls the current stage; moves from flush to close; `Some` once closed (or given up).
    fn advance(
        &mut self,
        cx: &mut Context<'_>,
        now: Instant,
        timeout: Duration,
    ) -> Option<Outcome> {
        loop {
            let (step, polled) = {
                let (future, step) = match &mut self.stage {
                    Stage::Flushing(future) => (future, "flush"),
                    Stage::Closing(future) => (future, "close"),
                };
                let polled = match future.as_mut() {
                    // The call itself panicked: the step is over.
                    None => Step::Over,
                    Some(running) => {
                        match catch_user("a producer future's poll", || running.as_mut().poll(cx)) {
                            Ok(Poll::Ready(Ok(()))) => Step::Over,
                            Ok(Poll::Ready(Err(error))) => Step::Failed(error),
                            Ok(Poll::Pending) if now >= self.deadline => Step::TimedOut,
                            Ok(Poll::Pending) => return None,
                            Err(payload) => Step::Panicked(payload),
                        }
                    }
                };
                (step, polled)
            };
            match polled {
                Step::Over => {}
                Step::Failed(error) => {
                    tracing::warn!(topic = %self.topic, step, %error, "producer operation failed");
                    self.failed = true;
                }
                Step::TimedOut => {
                    tracing::warn!(topic = %self.topic, step, ?timeout, "producer operation timed out");
                    self.timed_out = true;
                }
                Step::Panicked(payload) => self.note_panic(step, &payload),
            }
            let finished_stage = std::mem::replace(&mut self.stage, Stage::Closing(None));
            let was_flushing = matches!(finished_stage, Stage::Flushing(_));
            drop_user(finished_stage, "a producer future");
            if !was_flushing {
                let outcome = if self.timed_out {
                    Outcome::TimedOut
                } else if self.failed {
                    Outcome::Failed
                } else {
                    Outcome::Closed
                };
                if outcome == Outcome::Closed {
                    tracing::info!(topic = %self.topic, "closed producer");
                }
                return Some(outcome);
            }
            // Flushed (or failed, or timed out): close, with its own timeout.
            self.deadline = Instant::now() + timeout;
            let producer = &self.producer;
            match catch_user("Producer::close", || producer.close()) {
                Ok(future) => self.stage = Stage::Closing(Some(future)),
                Err(payload) => self.note_panic("close", &payload),
            }
        }
    }

    fn note_panic(&mut self, step: &'static str, payload: &PanicPayload) {
        tracing::error!(
            topic = %self.topic,
            step,
            panic = panic_message(payload.as_ref()),
            "producer operation panicked"
        );
        self.failed = true;
    }
}
