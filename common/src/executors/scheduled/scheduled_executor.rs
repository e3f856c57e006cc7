//! `ScheduledExecutor`: the handle users hold; clones share one scheduled executor.

use crate::executors::executor_builder::ScheduledExecutorBuilder;
use crate::executors::executor_handle::ExecutorHandle;
use crate::executors::invoke_any::InvokeAnyError;
use crate::executors::rejected::RejectedExecution;
use crate::executors::scheduled::scheduled_handle::ScheduledHandle;
use crate::executors::scheduled::timer_entry::{
    add_saturating, EntryOutcome, Once, Period, Repeating, Timer, TimerEntry, TimerJob,
};
use crate::executors::scheduled::timers::{ScheduledCore, Timers};
use crate::executors::task::Task;
use crate::executors::task_error::TaskError;
use crate::executors::task_handle::TaskHandle;
use crate::executors::thread_factory::ThreadFactory;
use crate::sync::Arc as CoreArc;
use std::fmt;
use std::sync::Arc;
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
///   entry holds the closure, the state and the outcome).
/// - **Deadlines**: nothing runs before its deadline. A task runs at or after it, on the one
///   worker thread, in deadline order (equal deadlines in scheduling order); how late depends
///   on what else the worker runs: a timer that falls due while immediate tasks run goes
///   ahead of the rest of them, at the next task boundary.
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
#[derive(Clone)]
pub struct ScheduledExecutor {
    handle: Arc<ExecutorHandle<Timers>>,
}

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

    pub(crate) fn from_core(core: ScheduledCore, auto_shutdown_on_drop: bool) -> Self {
        Self {
            handle: ExecutorHandle::new(core, auto_shutdown_on_drop),
        }
    }

    fn core(&self) -> &CoreArc<ScheduledCore> {
        &self.handle.core
    }

    /// Queues `f` to run on the worker thread as soon as it can: the FIFO fast path, never
    /// through the timer wheel. Never blocks.
    ///
    /// # Errors
    ///
    /// [`RejectedExecution`] handing `f` back if the executor has been shut down, or if its
    /// worker thread could not be started.
    #[inline]
    pub fn execute<F>(&self, f: F) -> Result<(), RejectedExecution<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        self.handle.execute(f)
    }

    /// Queues every task of `tasks` on the FIFO fast path, in order, taking the queue lock once
    /// for the whole batch; all or nothing. The same contract as
    /// [`SingleThreadExecutor::execute_all`](crate::executors::SingleThreadExecutor::execute_all):
    /// the iterator runs before the lock is taken, and steady use allocates nothing.
    ///
    /// # Errors
    ///
    /// [`RejectedExecution`] handing back every task, in order, if the executor has been shut
    /// down or its worker thread could not be started. An empty batch is always accepted.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_common::executors::{NamedThreadFactory, ScheduledExecutor};
    /// use std::sync::mpsc;
    ///
    /// let executor = ScheduledExecutor::new(NamedThreadFactory::new("batch"));
    /// let (tx, rx) = mpsc::channel();
    /// executor
    ///     .execute_all((0..3).map(|i| {
    ///         let tx = tx.clone();
    ///         move || tx.send(i).unwrap()
    ///     }))
    ///     .unwrap();
    /// assert_eq!(rx.iter().take(3).collect::<Vec<_>>(), [0, 1, 2]);
    /// # executor.shutdown();
    /// ```
    pub fn execute_all<I, F>(&self, tasks: I) -> Result<(), RejectedExecution<Vec<F>>>
    where
        I: IntoIterator<Item = F>,
        F: FnOnce() + Send + 'static,
    {
        self.handle.execute_all(tasks)
    }

    /// Queues `f` on the FIFO fast path and returns a handle to its result, as
    /// [`SingleThreadExecutor::submit`](crate::executors::SingleThreadExecutor::submit) does.
    ///
    /// # Errors
    ///
    /// As for [`execute`](Self::execute): `f` comes back if the executor refused it.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_common::executors::ScheduledExecutor;
    ///
    /// let executor = ScheduledExecutor::builder().pool_name("submit").build();
    /// assert_eq!(executor.submit(|| 6 * 7).unwrap().join().unwrap(), 42);
    /// # executor.shutdown();
    /// ```
    pub fn submit<F, R>(&self, f: F) -> Result<TaskHandle<R>, RejectedExecution<F>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.handle.submit(f)
    }

    /// Runs every task on the FIFO fast path and waits for all of them; results come back in
    /// the tasks' order. The same contract as
    /// [`SingleThreadExecutor::invoke_all`](crate::executors::SingleThreadExecutor::invoke_all)
    /// (on this executor's own worker thread: [`TaskError::WouldDeadlock`] for each task).
    pub fn invoke_all<F, R>(&self, tasks: Vec<F>) -> Vec<Result<R, TaskError>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.handle.invoke_all(tasks)
    }

    /// Runs the tasks on the FIFO fast path and returns the value of the first that succeeds;
    /// the tasks after it are skipped. The same contract as
    /// [`SingleThreadExecutor::invoke_any`](crate::executors::SingleThreadExecutor::invoke_any).
    ///
    /// # Errors
    ///
    /// [`InvokeAnyError::NoTasks`] for an empty list; [`InvokeAnyError::AllFailed`] with each
    /// task's failure, in order, when none succeeded.
    pub fn invoke_any<F, R, E>(&self, tasks: Vec<F>) -> Result<R, InvokeAnyError<E>>
    where
        F: FnOnce() -> Result<R, E> + Send + 'static,
        R: Send + 'static,
        E: Send + 'static,
    {
        self.handle.invoke_any(tasks)
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
        self.arm(Once(f), deadline, None)
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
        self.arm(Repeating(f), deadline, Some(Period::FixedRate(period)))
            .map_err(|rejected| unwrap_rejected(rejected, |Repeating(f)| f))
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
        self.arm(Repeating(f), deadline, Some(Period::FixedDelay(delay)))
            .map_err(|rejected| unwrap_rejected(rejected, |Repeating(f)| f))
    }

    fn arm<J: TimerJob>(
        &self,
        job: J,
        deadline: Instant,
        period: Option<Period>,
    ) -> Result<ScheduledHandle<J::Output>, RejectedExecution<J>> {
        let entry = Arc::new(TimerEntry::new(job, deadline, period));
        let timer: Arc<dyn Timer> = entry.clone();
        match ScheduledCore::arm(self.core(), deadline, timer) {
            Ok(()) => {
                let entry: Arc<dyn EntryOutcome<J::Output>> = entry;
                Ok(ScheduledHandle::new(entry, CoreArc::clone(self.core())))
            }
            Err(reason) => {
                let job = entry
                    .take_job()
                    .expect("a rejected entry still holds its closure");
                Err(RejectedExecution::new(job, reason))
            }
        }
    }

    /// Starts a graceful shutdown: new tasks are rejected; queued immediate tasks still run;
    /// armed one-shot timers still run at their deadlines; periodic timers are cancelled (their
    /// handles report [`TaskError::Cancelled`](crate::executors::TaskError::Cancelled)). The
    /// worker exits when nothing is left. Idempotent; does not wait (see
    /// [`await_termination`](Self::await_termination)).
    pub fn shutdown(&self) {
        self.handle.shutdown();
    }

    /// Stops at once: new tasks are rejected, and every task not yet started comes back —
    /// immediate tasks oldest first, then one-shot timers earliest first, whatever their
    /// deadlines. Periodic timers are cancelled instead. The task running now (if any)
    /// finishes. Running a returned timer task runs it (and completes its handle); dropping it
    /// cancels it.
    pub fn shutdown_now(&self) -> Vec<Task> {
        self.handle.shutdown_now()
    }

    /// Whether `shutdown` or `shutdown_now` has been called (or the last clone dropped).
    pub fn is_shutdown(&self) -> bool {
        self.handle.is_shutdown()
    }

    /// Whether the executor is shut down and its worker has exited (or never started).
    pub fn is_terminated(&self) -> bool {
        self.handle.is_terminated()
    }

    /// Waits up to `timeout` for termination; `true` if terminated. Called from the executor's
    /// own worker thread it returns at once.
    pub fn await_termination(&self, timeout: Duration) -> bool {
        self.handle.await_termination(timeout)
    }

    /// Live entries: immediate tasks not yet started plus armed timers. A cancelled timer is
    /// removed at once and not counted.
    pub fn pending_tasks(&self) -> usize {
        self.core().pending_tasks()
    }

    /// Armed timers (delayed or periodic, waiting for their deadline).
    pub fn armed_timers(&self) -> usize {
        self.core().armed_timers()
    }

    /// Slots the timer wheel's slab holds now: it shrinks by Pulsar's trim rule as timers leave, so a
    /// burst of scheduled-then-cancelled timers gives its memory back.
    pub fn timer_capacity(&self) -> usize {
        self.core().timer_capacity()
    }

    /// Immediate-task slots allocated now (each slot is four machine words).
    pub fn queue_capacity(&self) -> usize {
        self.core().queue_capacity()
    }

    /// How many times a producer had to wake the parked worker (a diagnostic).
    pub fn worker_wakeups(&self) -> u64 {
        self.core().wakeups()
    }

    /// Whether dropping the last clone shuts the executor down without a warning.
    pub fn auto_shutdown_on_drop(&self) -> bool {
        self.handle.auto_shutdown_on_drop
    }

    /// The worker thread's name once started, else `scheduled-executor#<id>`.
    pub fn name(&self) -> String {
        self.core().name()
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

impl fmt::Debug for ScheduledExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduledExecutor")
            .field("name", &self.name())
            .field("state", &self.handle.state_name())
            .field("pending_tasks", &self.pending_tasks())
            .finish()
    }
}
