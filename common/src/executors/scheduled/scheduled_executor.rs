//! `ScheduledExecutor`: the single-worker executor whose worker also fires timers, and the
//! operations only it has (`schedule*`).

use crate::executors::executor_builder::ScheduledExecutorBuilder;
use crate::executors::rejected::RejectedExecution;
use crate::executors::scheduled::scheduled_handle::ScheduledHandle;
use crate::executors::scheduled::timer_entry::{add_saturating, Once, Period, Repeating, TimerJob};
use crate::executors::scheduled::timers::{ScheduledCore, Timers};
use crate::executors::single_worker_executor::SingleWorkerExecutor;
use crate::executors::thread_factory::ThreadFactory;
use std::time::{Duration, Instant};

/// A single-thread executor for immediate, delayed and periodic tasks — the counterpart of
/// Java's one-thread `ScheduledThreadPoolExecutor`, without its cost on plain hand-offs.
///
/// - **Fast path**: [`execute`](Self::execute) queues an immediate task in a FIFO ring, exactly
///   like [`SingleThreadExecutor`](crate::executors::SingleThreadExecutor) (small closures
///   inline, no allocation once the ring has grown); it never touches the timer structure.
///   Java's scheduled executor sends every task through its delay heap, which is why Pulsar
///   moved plain hand-offs off it (apache/pulsar#16236).
/// - **Timers**: [`schedule`](Self::schedule),
///   [`schedule_at_fixed_rate`](Self::schedule_at_fixed_rate) and
///   [`schedule_with_fixed_delay`](Self::schedule_with_fixed_delay) arm a timer in a
///   hierarchical timing wheel: O(1) to arm, O(1) to cancel, one allocation per timer (the
///   entry holds the closure, the state and the outcome), and none for a fire-and-forget
///   timer (its handle dropped before it runs) once fired entries' memory circulates: the
///   worker hands it back to the next timers of the same layout.
/// - **Deadlines**: nothing runs before its deadline. A task runs at or after it, on the one
///   worker thread, in deadline order (equal deadlines in scheduling order); how late depends
///   on what else the worker runs: a timer that falls due while immediate tasks run goes
///   ahead of the rest of them, at the next task boundary. One exception, so that a periodic
///   task cannot starve the others: a fixed-rate task that is catching up (its next deadline
///   already past when it is re-armed) runs again only after the timers that were due with it.
/// - **Cancel frees at once**: [`ScheduledHandle::cancel`] removes the timer from the wheel and
///   drops the closure during the call, so cancelled timers never pile up until their
///   deadlines; [`pending_tasks`](Self::pending_tasks) counts live entries only.
/// - **Panics** never stop the executor. A panicking `execute`d task is reported to the thread
///   factory's [`on_task_panic`](crate::executors::ThreadFactory::on_task_panic); a scheduled
///   one to its handle. A panicking periodic task stops repeating; its panic is logged and
///   reported to its handle.
/// - **Shutdown** (Java's defaults): after [`shutdown`](Self::shutdown) queued immediate tasks
///   and armed one-shot timers still run (the latter at their deadlines), periodic timers are
///   cancelled, and the worker exits when nothing is left. [`shutdown_now`](Self::shutdown_now)
///   returns every task not yet started — immediate and one-shot delayed — and cancels the
///   periodic ones. As with the plain executor, each task offered concurrently with either is
///   exactly one of: run, returned, rejected (or cancelled, for periodic tasks).
/// - **Lifecycle**: the worker starts with the first accepted task; dropping the last clone
///   shuts the executor down gracefully (so armed one-shot timers keep the thread until they
///   have run: cancel them, or call `shutdown_now`, to let it go at once). `Drop` never blocks.
///   With `auto_shutdown_on_drop(false)` ([`builder`](Self::builder)) the owner is expected to
///   shut it down; a last clone dropped anyway still shuts it down, with a warning.
/// - **Same core as the plain executor**: admission, lazy start, shutdown, termination, idle
///   trim and `Drop` are one piece of code for both; the builder has the same settings, and
///   [`submit`](Self::submit), [`invoke_all`](Self::invoke_all),
///   [`invoke_any`](Self::invoke_any) take the FIFO fast path.
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::{NamedThreadFactory, ScheduledExecutor};
/// use std::sync::mpsc;
/// use std::time::{Duration, Instant};
///
/// let executor = ScheduledExecutor::new(NamedThreadFactory::new("pulsar-client-scheduled"));
/// let (tx, rx) = mpsc::channel();
///
/// // An immediate task takes the FIFO fast path.
/// let now_tx = tx.clone();
/// executor.execute(move || now_tx.send("now").unwrap()).unwrap();
///
/// // A periodic task, cancelled after its third run.
/// let ticks = executor
///     .schedule_at_fixed_rate(Duration::ZERO, Duration::from_millis(1), move || {
///         tx.send("tick").unwrap();
///     })
///     .unwrap();
/// assert_eq!(rx.recv().unwrap(), "now");
/// for _ in 0..3 {
///     assert_eq!(rx.recv().unwrap(), "tick");
/// }
/// assert!(ticks.cancel());
///
/// // Nothing runs before its deadline.
/// let start = Instant::now();
/// let ran_at = executor.schedule(Duration::from_millis(5), Instant::now).unwrap();
/// assert!(ran_at.join().unwrap() >= start + Duration::from_millis(5));
///
/// executor.shutdown();
/// assert!(executor.await_termination(Duration::from_secs(10)));
/// ```
pub type ScheduledExecutor = SingleWorkerExecutor<Timers>;

impl ScheduledExecutor {
    /// A scheduled executor whose worker thread comes from `thread_factory`, with the
    /// builder's other defaults. No thread starts until the first task or timer is accepted.
    pub fn new(thread_factory: impl ThreadFactory) -> Self {
        Self::builder().thread_factory(thread_factory).build()
    }

    /// A builder for every setting: thread factory or pool name, auto shutdown on drop,
    /// initial capacity, idle trim (the same settings as the single-thread executor's).
    pub fn builder() -> ScheduledExecutorBuilder {
        ScheduledExecutorBuilder::new()
    }

    /// Runs `f` once, `delay` from now (not before). The handle cancels it or joins its value.
    ///
    /// # Errors
    ///
    /// [`RejectedExecution`] handing `f` back if the executor has been shut down, or if its
    /// worker thread could not be started.
    pub fn schedule<F, R>(
        &self,
        delay: Duration,
        f: F,
    ) -> Result<ScheduledHandle<R>, RejectedExecution<F>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let deadline = add_saturating(Instant::now(), delay);
        self.arm(Once(f), deadline, delay.is_zero())
            .map_err(|rejected| unwrap_rejected(rejected, |Once(f)| f))
    }

    /// Runs `f` first `initial_delay` from now, then every `period`: each run is due `period`
    /// after the previous one was due. A run that falls behind is followed at once by the next
    /// (runs never overlap: there is one thread). Runs until cancelled, shut down, or a run
    /// panics.
    ///
    /// # Panics
    ///
    /// If `period` is zero.
    ///
    /// # Errors
    ///
    /// As for [`schedule`](Self::schedule).
    pub fn schedule_at_fixed_rate<F>(
        &self,
        initial_delay: Duration,
        period: Duration,
        f: F,
    ) -> Result<ScheduledHandle<()>, RejectedExecution<F>>
    where
        F: FnMut() + Send + 'static,
    {
        assert!(!period.is_zero(), "a fixed-rate period must not be zero");
        let deadline = add_saturating(Instant::now(), initial_delay);
        let job = Repeating::new(f, deadline, Period::FixedRate(period));
        self.arm(job, deadline, initial_delay.is_zero())
            .map_err(|rejected| unwrap_rejected(rejected, |job| job.f))
    }

    /// Runs `f` first `initial_delay` from now, then again `delay` after each run ends. Runs
    /// until cancelled, shut down, or a run panics.
    ///
    /// # Panics
    ///
    /// If `delay` is zero.
    ///
    /// # Errors
    ///
    /// As for [`schedule`](Self::schedule).
    pub fn schedule_with_fixed_delay<F>(
        &self,
        initial_delay: Duration,
        delay: Duration,
        f: F,
    ) -> Result<ScheduledHandle<()>, RejectedExecution<F>>
    where
        F: FnMut() + Send + 'static,
    {
        assert!(!delay.is_zero(), "a fixed delay must not be zero");
        let deadline = add_saturating(Instant::now(), initial_delay);
        let job = Repeating::new(f, deadline, Period::FixedDelay(delay));
        self.arm(job, deadline, initial_delay.is_zero())
            .map_err(|rejected| unwrap_rejected(rejected, |job| job.f))
    }

    /// `due_now`: the delay was zero (the deadline is the clock just read).
    fn arm<J: TimerJob>(
        &self,
        job: J,
        deadline: Instant,
        due_now: bool,
    ) -> Result<ScheduledHandle<J::Output>, RejectedExecution<J>> {
        match ScheduledCore::arm(self.core(), deadline, due_now, job) {
            Ok((entry, share)) => Ok(ScheduledHandle::new(entry, share)),
            Err((job, reason)) => Err(RejectedExecution::new(job, reason)),
        }
    }

    /// Armed timers (delayed or periodic, waiting for their deadline).
    pub fn armed_timers(&self) -> usize {
        self.core().armed_timers()
    }

    /// Timer slots held now, beside the timers' own entries: the timer wheel's list heads (576,
    /// once a timer was armed) and its lane of due timers, and the entries of fired timers kept
    /// for the next ones (at most 256 on the worker's side and 256 on the producers': a stream
    /// of fire-and-forget timers allocates nothing once they are there). None per armed timer:
    /// the wheel links the entries themselves, and a cancelled timer's entry is freed with its
    /// handle, so a burst of scheduled-then-cancelled timers leaves nothing behind. An idle
    /// worker frees the list heads, the lane and the kept entries of an empty wheel.
    pub fn timer_capacity(&self) -> usize {
        self.core().timer_capacity()
    }
}

/// Unwraps the executor's job wrapper from a rejected task, handing the caller's closure back.
fn unwrap_rejected<J, F>(
    rejected: RejectedExecution<J>,
    unwrap: impl FnOnce(J) -> F,
) -> RejectedExecution<F> {
    let (job, reason) = rejected.into_parts();
    RejectedExecution::new(unwrap(job), reason)
}
