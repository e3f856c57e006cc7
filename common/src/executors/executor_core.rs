//! `ExecutorCore`: the state an executor's handles share with its worker — admission, lazy
//! start, shutdown and restart, termination and `Drop`, written once for both executors. What
//! differs (timers) is the parameter `B: BetweenBatches`; the worker loop is in
//! `worker_loop.rs`.
//!
//! The protocol (lock order, wake-up, claim, trim) is described in `README.md` beside this
//! file; the comments here point at the rule each step keeps.

use crate::collections::ring::Ring;
use crate::executors::between_batches::BetweenBatches;
use crate::executors::cancelled_tasks::CancelledTasks;
use crate::executors::claim_fence;
use crate::executors::executor_counters::{self, EventCounters, WorkerCounters};
use crate::executors::executor_stats::ExecutorStats;
use crate::executors::raw_task::RawTask;
use crate::executors::rejected::RejectReason;
use crate::executors::task::Task;
use crate::executors::task_batch::{TaskBatch, TaskSlot};
use crate::executors::thread_factory::ThreadFactory;
use crate::executors::worker_lifecycle::log_guarded;
use crate::executors::worker_lifecycle::WorkerLifecycle;
use crate::executors::worker_parker::WorkerParker;
use crate::sync::{Arc, AtomicBool, CachePadded, Mutex, MutexGuard, Ordering};
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// Run states, in the order they are reached (a state never goes back).
///
/// | state        | accepts tasks | queued tasks                  | worker                      |
/// |--------------|---------------|-------------------------------|-----------------------------|
/// | `RUNNING`    | yes           | run in FIFO order             | started lazily              |
/// | `SHUTDOWN`   | no            | still run                     | exits when the queue is empty |
/// | `STOP`       | no            | taken back by `shutdown_now`  | exits after the running task |
/// | `TERMINATED` | no            | none                          | gone (or never started)     |
pub(crate) const RUNNING: u8 = 0;
pub(crate) const SHUTDOWN: u8 = 1;
pub(crate) const STOP: u8 = 2;
pub(crate) const TERMINATED: u8 = 3;

/// Whether the worker thread exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WorkerState {
    /// No worker yet (lazy start), or its start failed.
    NotStarted,
    /// A caller is starting it, outside the lock.
    Starting,
    /// The worker has been started (it may since have exited; see the run state).
    Started,
}

/// What the queue lock protects.
#[repr(C)] // the fields every `execute` touches first, on the lock's cache line; `between` after
pub(crate) struct QueueState<L> {
    /// Tasks accepted and not yet moved to the worker's batch, oldest first. (Slots are
    /// `ManuallyDrop`: the ring's storage is swapped into the batch, whose claim protocol
    /// decides who drops each task; `ExecutorCore::drop` drops what is left here.)
    pub(crate) ring: Ring<TaskSlot>,
    /// One of [`RUNNING`], [`SHUTDOWN`], [`STOP`], [`TERMINATED`].
    pub(crate) run: u8,
    pub(crate) worker: WorkerState,
    /// Set by the worker, under this lock, right before it parks (`ExecutorCore::parker`); a
    /// producer that finds it set clears it and notifies. Nobody else ever notifies (but a
    /// `BetweenBatches` whose work changes how long the worker sleeps: a new earliest timer),
    /// so a producer makes no wake-up call while the worker is awake.
    pub(crate) worker_parked: bool,
    /// What the worker does between batches keeps here (the timer wheel; `()` for none).
    pub(crate) between: L,
}

/// The queue lock and, on the same cache line, the count of tasks it admitted.
#[repr(C)] // `submitted` first: with the lock word and the ring, on the producers' line
pub(crate) struct Producers<L> {
    /// Tasks (and timers, and re-arms of periodic timers) accepted: written under `state`'s
    /// lock with a plain load and store (the lock orders the writers), read by `stats`
    /// without it.
    submitted: AtomicU64,
    state: Mutex<QueueState<L>>,
}

impl<L> Producers<L> {
    /// Counts `count` accepted tasks. Caller holds the lock (`_held` proves it).
    #[inline]
    pub(crate) fn count_submitted(&self, _held: &mut QueueState<L>, count: usize) {
        let submitted = self.submitted.load(std::sync::atomic::Ordering::Relaxed);
        self.submitted.store(
            submitted + count as u64,
            std::sync::atomic::Ordering::Release,
        );
    }

    /// Tasks accepted so far, read without the lock (a gathering worker's look at the
    /// stream: it pulls the producers' line, so it is read sparingly).
    #[inline]
    pub(crate) fn submitted_hint(&self) -> u64 {
        self.submitted.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl<L> Deref for Producers<L> {
    type Target = Mutex<QueueState<L>>;

    fn deref(&self) -> &Mutex<QueueState<L>> {
        &self.state
    }
}

/// The executor itself; the executor's handles and its worker thread share it.
pub(crate) struct ExecutorCore<B: BetweenBatches> {
    /// The ring producers push to, and the run state. Its cache line is the producers':
    /// nothing the worker polls shares it.
    pub(crate) queue: CachePadded<Producers<B::Locked>>,
    /// The tasks the worker swapped out of `queue` in one go and runs one at a time. Each is
    /// announced before it runs (`task_batch.rs`), which makes `shutdown_now` exact: a
    /// task is either claimed by the worker (and runs) or stolen by `shutdown_now`.
    pub(crate) batch: CachePadded<TaskBatch>,
    /// The parked worker sleeps on its thread's parker; producers wake it through this
    /// (`worker_parker.rs`).
    pub(crate) parker: WorkerParker,
    /// `!queue.ring.is_empty()`, written under the queue lock only when that changes (the push
    /// that makes the ring non-empty, the swap or drain that empties it): what the spinning
    /// worker polls, on a line of its own, so a steady stream of pushes does not bounce it.
    pub(crate) has_work: CachePadded<AtomicBool>,
    /// Run-state mirror, termination signalling, naming, thread start, panic boundary, spin.
    pub(crate) lifecycle: WorkerLifecycle,
    /// After this long without work the parked worker trims its queues; `None`: never.
    pub(crate) idle_trim_after: Option<Duration>,
    /// The worker's counters (tasks run, panics, busy time), on a line of their own.
    pub(crate) worker_counters: CachePadded<WorkerCounters>,
    /// Rare events: rejections, tasks handed back, timers cancelled, wake-ups, capacity.
    pub(crate) events: EventCounters,
    /// The lock-free half of what the worker does between batches (timer hints, due list).
    pub(crate) between: B,
    /// Cancelled tasks whose entries are still queued: `pending_tasks` and the stats leave
    /// them out.
    cancelled: CancelledTasks,
}

impl<B: BetweenBatches> ExecutorCore<B> {
    pub(crate) fn new(
        factory: std::sync::Arc<dyn ThreadFactory>,
        initial_capacity: usize,
        idle_trim_after: Option<Duration>,
    ) -> Self {
        let (between, locked) = B::new();
        let ring = Ring::with_capacity(initial_capacity);
        let events = EventCounters::default();
        events
            .capacity
            .store(ring.capacity(), std::sync::atomic::Ordering::Relaxed);
        Self {
            queue: CachePadded::new(Producers {
                submitted: AtomicU64::new(0),
                state: Mutex::new(QueueState {
                    ring,
                    run: RUNNING,
                    worker: WorkerState::NotStarted,
                    worker_parked: false,
                    between: locked,
                }),
            }),
            batch: CachePadded::new(TaskBatch::new()),
            parker: WorkerParker::default(),
            has_work: CachePadded::new(AtomicBool::new(false)),
            lifecycle: WorkerLifecycle::new(factory, B::KIND, RUNNING),
            idle_trim_after,
            worker_counters: CachePadded::new(WorkerCounters::default()),
            events,
            between,
            cancelled: CancelledTasks::default(),
        }
    }

    /// A core whose worker the loom model runs itself, on a loom thread.
    #[cfg(all(loom, test))]
    pub(crate) fn new_started_for_loom(initial_capacity: usize) -> Self {
        struct NoThreads;
        impl ThreadFactory for NoThreads {
            fn new_thread(
                &self,
                _body: Box<dyn FnOnce() + Send + 'static>,
            ) -> std::io::Result<std::thread::JoinHandle<()>> {
                Err(std::io::Error::other("no threads under loom"))
            }
        }
        let core = Self::new(std::sync::Arc::new(NoThreads), initial_capacity, None);
        core.queue.lock().worker = WorkerState::Started;
        core
    }

    /// A name for logs: the worker thread's name once it exists.
    pub(crate) fn name(&self) -> String {
        self.lifecycle.name()
    }

    /// This executor's process-unique id; its handles compare it with the calling thread's
    /// to refuse a self-join.
    pub(crate) fn id(&self) -> u64 {
        self.lifecycle.id()
    }

    /// Whether the calling thread is this executor's worker (for blocking paths only).
    pub(crate) fn is_current_worker(&self) -> bool {
        self.lifecycle.is_current_worker()
    }

    pub(crate) fn run_state(&self) -> u8 {
        self.lifecycle.run_state()
    }

    /// How many times a producer had to wake the parked worker.
    pub(crate) fn wakeups(&self) -> u64 {
        self.events
            .wakeups
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A snapshot of the counters, without the queue lock.
    pub(crate) fn stats(&self) -> ExecutorStats {
        executor_counters::snapshot(
            &self.worker_counters,
            &self.events,
            &self.queue.submitted,
            self.cancelled.count(),
        )
    }

    /// Counts `count` refused tasks.
    #[cold]
    pub(crate) fn count_rejected(&self, count: usize) {
        EventCounters::add(&self.events.rejected, count);
    }

    // ---- admission -----------------------------------------------------------------------

    /// Takes the lock and admits work: refuses unless running, and starts the worker on first
    /// use. Returns the lock, for the caller to queue its work.
    ///
    /// # Errors
    ///
    /// `Shutdown`, or the thread factory's error.
    #[inline]
    pub(crate) fn admit(
        this: &Arc<Self>,
    ) -> Result<MutexGuard<'_, QueueState<B::Locked>>, RejectReason> {
        let queue = this.queue.lock();
        if queue.run != RUNNING {
            return Err(RejectReason::Shutdown);
        }
        if queue.worker == WorkerState::NotStarted {
            return Self::start_worker(this, queue);
        }
        Ok(queue)
    }

    /// Accepts `task` unless the core is shut down; starts the worker on first use.
    ///
    /// # Errors
    ///
    /// The task and the reason: shut down, or the worker thread could not be started.
    #[inline]
    pub(crate) fn enqueue(this: &Arc<Self>, task: RawTask) -> Result<(), (RawTask, RejectReason)> {
        let mut queue = match Self::admit(this) {
            Ok(queue) => queue,
            Err(reason) => {
                this.count_rejected(1);
                return Err((task, reason));
            }
        };
        queue.ring.push_back(ManuallyDrop::new(task));
        this.queue.count_submitted(&mut queue, 1);
        this.announce(queue, 1);
        Ok(())
    }

    /// Accepts every task of `tasks`, in order, under one acquisition of the lock, or none of
    /// them: on success `tasks` is left empty, on refusal untouched.
    ///
    /// # Errors
    ///
    /// The reason, as for [`enqueue`](Self::enqueue).
    pub(crate) fn enqueue_all(
        this: &Arc<Self>,
        tasks: &mut Vec<RawTask>,
    ) -> Result<(), RejectReason> {
        if tasks.is_empty() {
            return Ok(());
        }
        let count = tasks.len();
        let mut queue = Self::admit(this).inspect_err(|_| this.count_rejected(count))?;
        queue
            .ring
            .extend_exact(tasks.drain(..).map(ManuallyDrop::new));
        this.queue.count_submitted(&mut queue, count);
        this.announce(queue, count);
        Ok(())
    }

    /// After `pushed` tasks went into the ring: raises `has_work` if they made it non-empty,
    /// then releases the lock and wakes the worker only if it is parked.
    #[inline]
    fn announce(&self, mut queue: MutexGuard<'_, QueueState<B::Locked>>, pushed: usize) {
        if queue.ring.len() == pushed {
            self.has_work.store(true, Ordering::Release);
        }
        let wake = std::mem::take(&mut queue.worker_parked);
        drop(queue);
        if wake {
            self.wake_worker();
        }
    }

    /// Wakes the parked worker (the caller took `worker_parked` under the lock).
    pub(crate) fn wake_worker(&self) {
        EventCounters::add(&self.events.wakeups, 1);
        self.parker.unpark();
    }

    /// The lazy start. Called holding `queue` with the run state `RUNNING` and no worker:
    /// marks the worker `Starting`, releases the lock, starts the thread (the factory is user
    /// code: never under the lock) and takes the lock again. Returns it, still `RUNNING`, with
    /// the worker `Started`, so that the caller queues the work that asked for the thread only
    /// once the thread exists: a failed start hands that work back. After a failed start the
    /// worker is `NotStarted` again (a shut-down core with nothing left terminates).
    ///
    /// # Errors
    ///
    /// `Shutdown` if the core was shut down while the thread started (the worker sees it and
    /// exits), or the factory's error.
    #[cold]
    fn start_worker<'a>(
        this: &'a Arc<Self>,
        mut queue: MutexGuard<'a, QueueState<B::Locked>>,
    ) -> Result<MutexGuard<'a, QueueState<B::Locked>>, RejectReason> {
        queue.worker = WorkerState::Starting;
        drop(queue);
        let started = Self::spawn_worker(this);
        let mut queue = this.queue.lock();
        match started {
            Ok(()) => {
                queue.worker = WorkerState::Started;
                if queue.run != RUNNING {
                    return Err(RejectReason::Shutdown);
                }
                Ok(queue)
            }
            Err(error) => {
                queue.worker = WorkerState::NotStarted;
                // A `shutdown` that came while the thread started could not retry the start
                // for the tasks other callers queued meanwhile (the worker was `Starting`):
                // this caller does it in its place, so that no accepted task is stranded.
                let retry = Self::stranded_after_shutdown(&queue);
                if retry {
                    queue.worker = WorkerState::Starting;
                } else {
                    this.terminate_if_workerless(&mut queue);
                }
                drop(queue);
                // The retry first: the log is user code (a tracing layer), and a worker left
                // `Starting` would keep `shutdown` from ever retrying or terminating.
                if retry {
                    Self::start_worker_to_drain(this);
                }
                log_guarded(
                    || tracing::error!(executor = %this.name(), %error, "cannot start the executor's worker thread"),
                );
                Err(RejectReason::ThreadStartFailed(error))
            }
        }
    }

    /// Whether a shut-down core holds work that no worker will run: tasks queued (or timers
    /// kept) while a thread start failed. Called holding `queue` with the worker
    /// `NotStarted`.
    fn stranded_after_shutdown(queue: &QueueState<B::Locked>) -> bool {
        queue.worker == WorkerState::NotStarted
            && queue.run == SHUTDOWN
            && (!queue.ring.is_empty() || B::has_pending(&queue.between))
    }

    /// Starts a worker to drain a shut-down core whose earlier thread start failed (the caller
    /// marked the worker `Starting` under the lock and released it). If this start fails too,
    /// the work stays queued for `shutdown_now` to return, and a core with nothing left (a
    /// `shutdown_now` came meanwhile) terminates.
    #[cold]
    fn start_worker_to_drain(this: &Arc<Self>) {
        let started = Self::spawn_worker(this);
        let mut queue = this.queue.lock();
        match started {
            Ok(()) => queue.worker = WorkerState::Started,
            Err(error) => {
                queue.worker = WorkerState::NotStarted;
                this.terminate_if_workerless(&mut queue);
                drop(queue);
                log_guarded(
                    || tracing::error!(executor = %this.name(), %error, "cannot start a worker to drain the queue at shutdown; shutdown_now returns the queued tasks"),
                );
            }
        }
    }

    /// For the last handle's drop, after `shutdown`: if the core holds work no worker will run
    /// (its thread start failed, and so did the shutdown's retry), takes it as `shutdown_now`
    /// does (so the core terminates) and drops it at the panic boundary.
    #[cold]
    pub(crate) fn drop_unrunnable(this: &Arc<Self>) {
        if !Self::stranded_after_shutdown(&this.queue.lock()) {
            return;
        }
        for task in Self::shutdown_now(this) {
            this.lifecycle.guarded(move || drop(task));
        }
    }

    /// Starts the worker thread (under loom, refuses: the models drive the worker).
    fn spawn_worker(this: &Arc<Self>) -> std::io::Result<()> {
        let core = Arc::clone(this);
        this.lifecycle
            .spawn(Box::new(move || Self::run_worker(&core)))
    }

    // ---- shutdown ------------------------------------------------------------------------

    /// Graceful shutdown: no new tasks; queued ones still run (and what `B` keeps, as it
    /// decides: one-shot timers run, periodic ones are cancelled); then the worker exits.
    /// Idempotent; never blocks beyond the queue lock.
    pub(crate) fn shutdown(this: &Arc<Self>) {
        let mut queue = this.queue.lock();
        if queue.run == RUNNING {
            this.lifecycle.set_run(&mut queue.run, SHUTDOWN);
        }
        let cancelled = B::on_shutdown(this, &mut queue.between);
        let restart = Self::stranded_after_shutdown(&queue);
        this.terminate_if_workerless(&mut queue);
        let wake = std::mem::take(&mut queue.worker_parked);
        if restart {
            queue.worker = WorkerState::Starting;
        }
        drop(queue);
        if wake {
            this.parker.unpark();
        }
        B::finish_cancelled(&this.lifecycle, cancelled);
        if restart {
            // Tasks stranded by an earlier failed thread start: try once more to run them.
            Self::start_worker_to_drain(this);
        }
    }

    /// Stops: no new tasks; every queued task not yet claimed by the worker is returned,
    /// oldest first (then what `B` hands back: one-shot timers, earliest first). The running
    /// task (if any) finishes. Idempotent.
    pub(crate) fn shutdown_now(this: &Arc<Self>) -> Vec<Task> {
        // The steal's fence may decide its mode the first time (a system call and perhaps a
        // log): decided here, before the lock, never under it.
        claim_fence::prepare();
        let mut queue = this.queue.lock();
        if queue.run < STOP {
            this.lifecycle.set_run(&mut queue.run, STOP);
        }
        let mut taken = Vec::new();
        // SAFETY: the queue lock is held.
        taken.reserve_exact(unsafe { this.batch.unclaimed() } + queue.ring.len());
        // SAFETY: the queue lock is held. The batch's tasks are older than the ring's.
        unsafe { this.batch.steal_unclaimed(&mut taken) };
        while let Some(slot) = queue.ring.pop_front() {
            taken.push(ManuallyDrop::into_inner(slot));
        }
        let cancelled = B::on_shutdown_now(this, &mut queue.between, &mut taken);
        EventCounters::add(&this.events.returned, taken.len());
        this.has_work.store(false, Ordering::Release);
        this.terminate_if_workerless(&mut queue);
        let wake = std::mem::take(&mut queue.worker_parked);
        drop(queue);
        if wake {
            this.parker.unpark();
        }
        B::finish_cancelled(&this.lifecycle, cancelled);
        taken.into_iter().map(Task::from_raw).collect()
    }

    /// With no worker and nothing left to run, a shut-down core is terminated at once.
    fn terminate_if_workerless(&self, queue: &mut QueueState<B::Locked>) {
        if queue.worker == WorkerState::NotStarted
            && queue.run != RUNNING
            && queue.run != TERMINATED
            && queue.ring.is_empty()
            && !B::has_pending(&queue.between)
        {
            self.lifecycle.mark_terminated(&mut queue.run);
        }
    }

    /// Waits until the worker has exited (or was never needed), at most `timeout`.
    pub(crate) fn await_termination(&self, timeout: Duration) -> bool {
        self.lifecycle
            .await_termination(&self.queue, |queue| queue.run, timeout)
    }

    // ---- introspection -------------------------------------------------------------------

    /// Tasks accepted and not yet started (and what `B` holds: live timers), cancelled ones
    /// left out.
    pub(crate) fn pending_tasks(&self) -> usize {
        let queue = self.queue.lock();
        // SAFETY: the queue lock is held.
        let unclaimed = unsafe { self.batch.unclaimed() };
        let queued = queue.ring.len() + unclaimed + self.between.pending(&queue.between);
        queued.saturating_sub(self.cancelled.count())
    }

    /// The count of cancelled tasks still queued, shared with the tasks' cells.
    pub(crate) fn cancelled_tasks(&self) -> &CancelledTasks {
        &self.cancelled
    }

    /// Task slots allocated now (the producers' ring plus the worker's batch).
    pub(crate) fn queue_capacity(&self) -> usize {
        let queue = self.queue.lock();
        // SAFETY: the queue lock is held.
        queue.ring.capacity() + unsafe { self.batch.capacity() }
    }
}

impl<B: BetweenBatches> Drop for ExecutorCore<B> {
    fn drop(&mut self) {
        // Tasks still queued (only possible when no worker could ever be started): the ring
        // holds them as `ManuallyDrop`, so drop them here, once — each at the panic boundary,
        // so that a capture panicking in `Drop` neither escapes this `Drop` nor leaks the
        // tasks after it. The batch's unclaimed tasks (none in a correct run: the worker only
        // exits with its batch exhausted or stolen) are taken out the same way first. Then `B`
        // cancels what it still holds (leftover timers: a handle must never wait forever).
        let mut stranded = Vec::new();
        let mut ring = {
            let mut queue = self.queue.lock();
            self.batch.drain_untaken(&mut stranded);
            std::mem::replace(&mut queue.ring, Ring::empty())
        };
        let queued = std::iter::from_fn(|| ring.pop_front().map(ManuallyDrop::into_inner));
        self.lifecycle
            .drop_stranded(stranded.into_iter().chain(queued));
        let leftovers = self.between.take_leftovers(&mut self.queue.lock().between);
        B::cancel_leftovers(&self.lifecycle, leftovers);
    }
}
