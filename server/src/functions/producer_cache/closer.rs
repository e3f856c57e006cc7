//! The `ProducerCache`'s closer: flushes then closes evicted producers on the cache's executor, each step with a timeout.
//!
//! # Design
//!
//! Evicted producers are handed over in batches ([`Closer::hand_over`]). Each one becomes a
//! future, `CloseProducer`, spawned on the cache's single-thread executor with
//! `SingleThreadExecutor::spawn`, as Pulsar's removal listener starts `flushAsync().orTimeout()`
//! then `closeAsync().orTimeout()` for each producer without waiting: the executor polls every
//! close in progress concurrently, each time one of its futures wakes it.
//!
//! 1. first poll: call `flush` (stage *Flushing*);
//! 2. each poll: poll the operation; a finished, failed or timed-out flush moves on to `close`
//!    (stage *Closing*); a finished, failed or timed-out close is an outcome, counted in the
//!    report.
//!
//! **Timeouts.** An operation still pending at its first poll arms a timer on the closer's
//! `ScheduledExecutor` (`producer-cache-timer`, started only then, recorded with the cache's
//! threads) and awaits its [`ScheduledHandle`] beside the operation: whichever is ready first
//! wins. A finished stage cancels its timer.
//!
//! **Giving up.** When the cache stops waiting ([`Closer::give_up`]) the producers still in
//! progress count as abandoned: a task queued on the executor cancels their spawned closes
//! (on the executor's own thread none is being polled, so each cancel drops the future, and
//! with it the producer and its operation), and a close that still gets polled (one spawned
//! concurrently with the give-up) drops itself at that poll. The timer is shut down.
//!
//! All user code (`flush`, `close`, polls, drops) runs on the executor, through the panic
//! boundary, with no lock held. The executor, the panic boundary and the thread record come
//! from the component kit (`crate::component`).

use crate::component::user_code::{catch_user, drop_user, PanicPayload};
use crate::component::ComponentExecutor;
use crate::functions::{Producer, ProducerFuture};
use parking_lot::{Condvar, Mutex};
use pulsar_common::executors::{
    panic_message, NamedThreadFactory, ScheduledExecutor, ScheduledHandle, TaskHandle,
};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The pool name of the closer's timer thread: `producer-cache-timer-{pool_id}-1`.
const TIMER_POOL_NAME: &str = "producer-cache-timer";

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
    /// Fires the operations' timeouts (its thread starts with the first operation that does
    /// not complete at once).
    timer: ScheduledExecutor,
    /// The timeout of each `flush` and each `close`.
    op_timeout: Duration,
    state: Mutex<CloserState>,
    /// `wait_idle` waits here for `pending == 0`.
    idle: Condvar,
    _producers: PhantomData<fn(P)>,
}

struct CloserState {
    /// Handed over and not yet finished (or cancelled).
    pending: usize,
    /// The closes in progress, by id: their spawned tasks' handles (`None` until `spawn`
    /// returns), for `give_up` to cancel. A close removes itself when it finishes.
    closing: HashMap<u64, Option<TaskHandle<()>>>,
    next_id: u64,
    /// The cache stopped waiting: nothing more is counted (`give_up` counted the producers
    /// still in progress as abandoned), and a close still polled drops itself.
    abandon: bool,
    report: ProducerCloseReport,
}

impl<P: Producer> Closer<P> {
    pub(crate) fn new(executor: ComponentExecutor, op_timeout: Duration) -> Self {
        let timer_threads = executor
            .threads()
            .tracking(Arc::new(NamedThreadFactory::new(TIMER_POOL_NAME)));
        Self {
            executor,
            timer: ScheduledExecutor::new(timer_threads),
            op_timeout,
            state: Mutex::new(CloserState {
                pending: 0,
                closing: HashMap::new(),
                next_id: 0,
                abandon: false,
                report: ProducerCloseReport::default(),
            }),
            idle: Condvar::new(),
            _producers: PhantomData,
        }
    }

    /// Spawns a flush-then-close of each of `evicted` on the executor.
    pub(crate) fn hand_over(this: &Arc<Self>, evicted: Vec<Evicted<P>>) {
        if evicted.is_empty() {
            return;
        }
        for removed in &evicted {
            tracing::info!(topic = %removed.topic, cause = ?removed.cause, "closing producer");
        }
        let first_id = {
            let mut state = this.state.lock();
            if state.abandon {
                // Given up already: the executor is (being) shut down.
                state.report.abandoned += evicted.len();
                drop(state);
                tracing::warn!(
                    count = evicted.len(),
                    "producers removed after the cache gave up closing; dropped unclosed"
                );
                drop_user(evicted, "evicted producers");
                return;
            }
            state.pending += evicted.len();
            let first_id = state.next_id;
            state.next_id += evicted.len() as u64;
            for id in first_id..state.next_id {
                state.closing.insert(id, None);
            }
            first_id
        };
        // Outside the lock: the first spawn starts the thread (the factory is user code).
        for (id, removed) in (first_id..).zip(evicted) {
            let close = CloseProducer {
                closer: Arc::downgrade(this),
                id,
                topic: removed.topic,
                producer: Some(removed.producer),
                stage: Stage::Start,
                timer: this.timer.clone(),
                op_timeout: this.op_timeout,
                deadline: Instant::now(),
                timeout: None,
                failed: false,
                timed_out: false,
            };
            match this.executor.spawn(close) {
                Ok(task) => {
                    if let Some(slot) = this.state.lock().closing.get_mut(&id) {
                        *slot = Some(task); // else: it finished already
                    }
                }
                Err(rejected) => {
                    tracing::warn!(%rejected, "cannot close an evicted producer; dropped unclosed");
                    drop_user(rejected, "an evicted producer");
                    let mut state = this.state.lock();
                    if state.closing.remove(&id).is_some() {
                        state.pending -= 1;
                        if !state.abandon {
                            state.report.abandoned += 1;
                        }
                        if state.pending == 0 {
                            this.idle.notify_all();
                        }
                    }
                }
            }
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

    /// Stops waiting for the producers still in progress: they count as abandoned, and a task
    /// on the executor cancels their closes (dropping their futures and producers).
    pub(crate) fn give_up(this: &Arc<Self>) {
        let in_progress: Vec<TaskHandle<()>> = {
            let mut state = this.state.lock();
            if state.abandon {
                return;
            }
            state.abandon = true;
            let pending = state.pending;
            state.report.abandoned += pending;
            if pending > 0 {
                tracing::warn!(
                    pending,
                    "producer cache closed while producers were still flushing or closing; abandoning them"
                );
            }
            state
                .closing
                .values_mut()
                .filter_map(Option::take)
                .collect()
        };
        drop(this.timer.shutdown_now());
        if in_progress.is_empty() {
            return;
        }
        let closer = Arc::clone(this);
        let cancel = move || closer.cancel_all(in_progress);
        if let Err(rejected) = this.executor.execute(cancel) {
            // No executor to run it (its thread could not start): cancel from here.
            (rejected.into_task())();
        }
    }

    /// Cancels the closes of `tasks` (on the executor, where none is being polled); each
    /// cancelled one is finished: it will not count.
    fn cancel_all(&self, tasks: Vec<TaskHandle<()>>) {
        let cancelled = tasks
            .iter()
            .filter(|task| {
                // Dropping a close drops its producer and operation: user code.
                catch_user("an abandoned producer close", || task.cancel()).unwrap_or(true)
            })
            .count();
        let mut state = self.state.lock();
        state.pending -= cancelled;
        if state.pending == 0 {
            self.idle.notify_all();
        }
    }

    pub(crate) fn report(&self) -> ProducerCloseReport {
        self.state.lock().report
    }

    pub(crate) fn executor(&self) -> &ComponentExecutor {
        &self.executor
    }
}

impl<P> Closer<P> {
    /// A close ended (with an outcome, or `None` when it dropped itself after a give-up).
    fn finished(&self, id: u64, outcome: Option<Outcome>) {
        // Each close is settled once: here, or by a successful cancel in `cancel_all` (after
        // which it is never polled again), or by `hand_over` when its spawn was refused.
        let mut state = self.state.lock();
        state.closing.remove(&id);
        state.pending -= 1;
        if !state.abandon {
            match outcome {
                Some(Outcome::Closed) => state.report.closed += 1,
                Some(Outcome::Failed) => state.report.failed += 1,
                Some(Outcome::TimedOut) => state.report.timed_out += 1,
                None => {}
            }
        }
        if state.pending == 0 {
            self.idle.notify_all();
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

/// One producer being flushed, then closed: a future spawned on the cache's executor.
struct CloseProducer<P> {
    closer: Weak<Closer<P>>,
    id: u64,
    topic: String,
    /// `None` once finished (dropped at the panic boundary).
    producer: Option<Arc<P>>,
    stage: Stage,
    timer: ScheduledExecutor,
    op_timeout: Duration,
    /// When the current stage times out.
    deadline: Instant,
    /// The current stage's timer, armed once its operation was found pending.
    timeout: Option<ScheduledHandle<()>>,
    failed: bool,
    timed_out: bool,
}

/// The operation in progress; `None` when the call that should have returned it panicked.
enum Stage {
    Start,
    Flushing(Option<ProducerFuture>),
    Closing(Option<ProducerFuture>),
    Done,
}

/// How polling the current stage ended.
enum Step {
    /// Completed, or its call panicked earlier (already noted).
    Over,
    Failed(crate::functions::ProducerError),
    TimedOut,
    Panicked(PanicPayload),
}

impl<P: Producer> Future for CloseProducer<P> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let abandoned = this
            .closer
            .upgrade()
            .map_or(true, |closer| closer.state.lock().abandon);
        if abandoned {
            this.finish(None);
            return Poll::Ready(());
        }
        match this.advance(cx) {
            Some(outcome) => {
                this.finish(Some(outcome));
                Poll::Ready(())
            }
            None => Poll::Pending,
        }
    }
}

impl<P: Producer> CloseProducer<P> {
    /// Calls `op` (`flush` or `close`: user code, no lock held) and starts its stage.
    fn start(
        &mut self,
        step: &'static str,
        op: fn(&P) -> ProducerFuture,
    ) -> Option<ProducerFuture> {
        self.deadline = Instant::now() + self.op_timeout;
        let producer = self
            .producer
            .as_ref()
            .expect("a close in progress has its producer");
        match catch_user(step_call(step), || op(producer)) {
            Ok(future) => Some(future),
            Err(payload) => {
                self.note_panic(step, &payload);
                None
            }
        }
    }

    /// Polls the current stage; moves from flush to close; `Some` once closed.
    fn advance(&mut self, cx: &mut Context<'_>) -> Option<Outcome> {
        loop {
            if matches!(self.stage, Stage::Start) {
                self.stage = Stage::Flushing(self.start("flush", P::flush));
            }
            let (future, step) = match &mut self.stage {
                Stage::Flushing(future) => (future, "flush"),
                Stage::Closing(future) => (future, "close"),
                Stage::Start | Stage::Done => unreachable!("polled after its outcome"),
            };
            let polled = future.as_mut().map(|running| {
                catch_user("a producer future's poll", || running.as_mut().poll(cx))
            });
            let polled = match polled {
                // The call itself panicked: the step is over.
                None => Step::Over,
                Some(Ok(Poll::Ready(Ok(())))) => Step::Over,
                Some(Ok(Poll::Ready(Err(error)))) => Step::Failed(error),
                Some(Ok(Poll::Pending)) if self.timeout_fired(cx) => Step::TimedOut,
                Some(Ok(Poll::Pending)) => return None,
                Some(Err(payload)) => Step::Panicked(payload),
            };
            match polled {
                Step::Over => {}
                Step::Failed(error) => {
                    tracing::warn!(topic = %self.topic, step, %error, "producer operation failed");
                    self.failed = true;
                }
                Step::TimedOut => {
                    tracing::warn!(topic = %self.topic, step, timeout = ?self.op_timeout, "producer operation timed out");
                    self.timed_out = true;
                }
                Step::Panicked(payload) => self.note_panic(step, &payload),
            }
            if let Some(timeout) = self.timeout.take() {
                timeout.cancel();
            }
            let finished_stage = std::mem::replace(&mut self.stage, Stage::Done);
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
            self.stage = Stage::Closing(self.start("close", P::close));
        }
    }

    /// With the operation pending: whether its deadline has passed, arming the stage's timer
    /// (which wakes this close at the deadline) on the first look.
    fn timeout_fired(&mut self, cx: &mut Context<'_>) -> bool {
        let now = Instant::now();
        if now >= self.deadline {
            return true;
        }
        if self.timeout.is_none() {
            match self.timer.schedule(self.deadline - now, || ()) {
                Ok(timeout) => self.timeout = Some(timeout),
                // The timer is shut down (the cache gave up): no timeout; a give-up drops
                // this close anyway.
                Err(_) => return false,
            }
        }
        let timeout = self.timeout.as_mut().expect("armed above");
        match Pin::new(timeout).poll(cx) {
            Poll::Ready(Ok(())) => true,
            // Cancelled by the timer's shutdown: as above.
            Poll::Ready(Err(_)) => {
                self.timeout = None;
                false
            }
            Poll::Pending => false,
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

impl<P> CloseProducer<P> {
    /// Drops what the close holds (user code, at the panic boundary) and tells the closer.
    fn finish(&mut self, outcome: Option<Outcome>) {
        self.release();
        if let Some(closer) = self.closer.upgrade() {
            closer.finished(self.id, outcome);
        }
    }

    /// Drops the timer, the operation and the producer.
    fn release(&mut self) {
        if let Some(timeout) = self.timeout.take() {
            timeout.cancel();
        }
        let stage = std::mem::replace(&mut self.stage, Stage::Done);
        drop_user(stage, "a producer future");
        drop_user(self.producer.take(), "a closed producer");
    }
}

impl<P> Drop for CloseProducer<P> {
    /// A cancelled (or refused) close: its operation and producer are user values.
    fn drop(&mut self) {
        self.release();
    }
}

/// The log name of a producer call.
fn step_call(step: &'static str) -> &'static str {
    match step {
        "flush" => "Producer::flush",
        _ => "Producer::close",
    }
}
