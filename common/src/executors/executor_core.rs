//! `ExecutorCore`: the state an executor's handles share with its worker, and the worker loop.
//!
//! The protocol (lock order, wake-up, claim, trim) is described in `README.md` beside this
//! file; the comments here point at the rule each step keeps.

use crate::collections::ring::Ring;
use crate::executors::cancelled_tasks::CancelledTasks;
use crate::executors::fifo_admission::{FifoAdmission, FifoCore, FifoQueue};
use crate::executors::task::Task;
use crate::executors::task_batch::{TaskBatch, TaskSlot};
use crate::executors::thread_factory::ThreadFactory;
use crate::executors::worker_lifecycle::{WorkerLifecycle, WorkerSlot};
use crate::sync::{Arc, AtomicBool, CachePadded, Condvar, Mutex, Ordering};
use std::mem::ManuallyDrop;
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
pub(crate) struct QueueState {
    /// Tasks accepted and not yet moved to the worker's batch, oldest first. (Slots are
    /// `ManuallyDrop`: the ring's storage is swapped into the batch, whose claim protocol
    /// decides who drops each task; `ExecutorCore::drop` drops what is left here.)
    pub(crate) ring: Ring<TaskSlot>,
    /// One of [`RUNNING`], [`SHUTDOWN`], [`STOP`], [`TERMINATED`].
    pub(crate) run: u8,
    pub(crate) worker: WorkerState,
    /// Set by the worker, under this lock, right before it waits on `work_available`; a
    /// producer that finds it set clears it and notifies. Nobody else ever notifies, so a
    /// producer makes no wake-up call while the worker is awake.
    pub(crate) worker_parked: bool,
}

impl WorkerSlot for QueueState {
    fn run(&self) -> u8 {
        self.run
    }

    fn worker_mut(&mut self) -> &mut WorkerState {
        &mut self.worker
    }
}

impl FifoQueue for QueueState {
    fn ring_mut(&mut self) -> &mut Ring<TaskSlot> {
        &mut self.ring
    }

    fn worker_parked_mut(&mut self) -> &mut bool {
        &mut self.worker_parked
    }
}

/// The executor itself; `SingleThreadExecutor` handles and the worker thread share it.
pub(crate) struct ExecutorCore {
    /// The ring producers push to, and the run state. Its cache line is the producers':
    /// nothing the worker polls shares it.
    queue: CachePadded<Mutex<QueueState>>,
    /// The tasks the worker swapped out of `queue` in one go and runs one at a time. Each is
    /// claimed with one atomic increment before it runs, which makes `shutdown_now` exact: a
    /// task is either claimed by the worker (and runs) or stolen by `shutdown_now`.
    batch: CachePadded<TaskBatch>,
    /// The parked worker waits here (with the `queue` lock).
    work_available: Condvar,
    /// `!queue.ring.is_empty()`, written under the queue lock only when that changes (the push
    /// that makes the ring non-empty, the swap or drain that empties it): what the spinning
    /// worker polls, on a line of its own, so a steady stream of pushes does not bounce it.
    has_work: CachePadded<AtomicBool>,
    /// Run-state mirror, termination signalling, naming, thread start, panic boundary, spin.
    lifecycle: WorkerLifecycle,
    /// After this long without work the parked worker trims the ring; `None`: never.
    idle_trim_after: Option<Duration>,
    /// Wake-up calls producers made (a diagnostic; only the slow path touches it).
    wakeups: AtomicU64,
    /// Cancelled tasks whose entries are still queued: `pending_tasks` leaves them out.
    cancelled: CancelledTasks,
}

impl ExecutorCore {
    pub(crate) fn new(
        factory: std::sync::Arc<dyn ThreadFactory>,
        initial_capacity: usize,
        idle_trim_after: Option<Duration>,
    ) -> Self {
        Self {
            queue: CachePadded::new(Mutex::new(QueueState {
                ring: Ring::with_capacity(initial_capacity),
                run: RUNNING,
                worker: WorkerState::NotStarted,
                worker_parked: false,
            })),
            batch: CachePadded::new(TaskBatch::new()),
            work_available: Condvar::new(),
            has_work: CachePadded::new(AtomicBool::new(false)),
            lifecycle: WorkerLifecycle::new(factory, "single-thread-executor", RUNNING),
            idle_trim_after,
            wakeups: AtomicU64::new(0),
            cancelled: CancelledTasks::default(),
        }
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
        self.wakeups.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A core whose worker the loom model runs itself, on a loom thread, via `run_worker`.
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

    /// Graceful shutdown: no new tasks; queued ones still run; then the worker exits.
    /// Idempotent; never blocks beyond the queue lock.
    pub(crate) fn shutdown(this: &Arc<Self>) {
        let mut queue = this.queue.lock();
        if queue.run == RUNNING {
            this.lifecycle.set_run(&mut queue.run, SHUTDOWN);
        }
        let restart = queue.worker == WorkerState::NotStarted && !queue.ring.is_empty();
        this.terminate_if_workerless(&mut queue);
        let wake = std::mem::take(&mut queue.worker_parked);
        if restart {
            // Tasks stranded by an earlier failed thread start: try once more to run them.
            queue.worker = WorkerState::Starting;
        }
        drop(queue);
        if wake {
            this.work_available.notify_one();
        }
        if restart {
            let started = Self::spawn_worker(this);
            let mut queue = this.queue.lock();
            match started {
                Ok(()) => queue.worker = WorkerState::Started,
                Err(error) => {
                    tracing::error!(executor = %this.name(), %error, "cannot start a worker to drain the queue at shutdown; shutdown_now returns the queued tasks");
                    queue.worker = WorkerState::NotStarted;
                }
            }
        }
    }

    /// Stops: no new tasks; every queued task not yet claimed by the worker is returned,
    /// oldest first. The running task (if any) finishes. Idempotent.
    pub(crate) fn shutdown_now(&self) -> Vec<Task> {
        let mut queue = self.queue.lock();
        if queue.run < STOP {
            self.lifecycle.set_run(&mut queue.run, STOP);
        }
        let mut taken = Vec::new();
        // SAFETY: the queue lock is held.
        taken.reserve_exact(unsafe { self.batch.unclaimed() } + queue.ring.len());
        // SAFETY: the queue lock is held. The batch's tasks are older than the ring's.
        unsafe { self.batch.steal_unclaimed(&mut taken) };
        while let Some(slot) = queue.ring.pop_front() {
            taken.push(ManuallyDrop::into_inner(slot));
        }
        self.has_work.store(false, Ordering::Release);
        self.terminate_if_workerless(&mut queue);
        let wake = std::mem::take(&mut queue.worker_parked);
        drop(queue);
        if wake {
            self.work_available.notify_one();
        }
        taken.into_iter().map(Task::from_raw).collect()
    }

    fn mark_terminated(&self, queue: &mut QueueState) {
        self.lifecycle.mark_terminated(&mut queue.run);
    }

    /// Waits until the worker has exited (or was never needed), at most `timeout`.
    pub(crate) fn await_termination(&self, timeout: Duration) -> bool {
        self.lifecycle
            .await_termination(&self.queue, |queue| queue.run, timeout)
    }

    /// Tasks accepted and not yet started (cancelled ones left out).
    pub(crate) fn pending_tasks(&self) -> usize {
        let queue = self.queue.lock();
        // SAFETY: the queue lock is held.
        let queued = queue.ring.len() + unsafe { self.batch.unclaimed() };
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

    /// The worker thread's body.
    pub(crate) fn run_worker(core: &Self) {
        let Some(_worker) = core.lifecycle.enter_worker() else {
            return; // another thread runs this executor's worker loop
        };
        // Signals termination however the loop ends (it only ends by returning, since task
        // panics are caught; the guard keeps that true if the loop ever gains a panic path).
        struct Terminator<'a>(&'a ExecutorCore);
        impl Drop for Terminator<'_> {
            fn drop(&mut self) {
                let mut queue = self.0.queue.lock();
                self.0.mark_terminated(&mut queue);
            }
        }
        let _terminator = Terminator(core);
        loop {
            // Claim and run the batch one task at a time; `shutdown_now` may steal the rest.
            // SAFETY: this is the worker; it refills/releases the batch only in
            // `refill_batch`, after this loop.
            while let Some(task) = unsafe { core.batch.claim() } {
                core.lifecycle.run_task(task);
            }
            if !core.refill_batch() {
                return;
            }
        }
    }

    /// Moves the queued tasks into the (empty) batch, waiting for some if there are none.
    /// Returns `false` when the worker must exit.
    fn refill_batch(&self) -> bool {
        let mut trimmed = false;
        // Look without the lock first: while the ring stays empty the worker spins on its own
        // line and leaves the producers' lock line alone.
        if !self.work_hint() {
            self.spin_for_work();
        }
        let mut queue = self.queue.lock();
        loop {
            if queue.run >= STOP {
                return false;
            }
            if !queue.ring.is_empty() {
                // O(1): the producers get the batch's (empty) storage back.
                // SAFETY: the worker, under the queue lock, with the batch exhausted (the
                // claim loop ended).
                unsafe { self.batch.refill(&mut queue.ring) };
                self.has_work.store(false, Ordering::Release);
                return true;
            }
            if queue.run == SHUTDOWN {
                return false;
            }
            // Park. The flag is set under the same lock producers push under, after the ring
            // was seen empty under it: no wake-up can be lost.
            queue.worker_parked = true;
            queue = match self.idle_trim_after {
                Some(idle) if !trimmed => {
                    let (mut queue, timed_out) = self.work_available.wait_timeout(queue, idle);
                    if timed_out && queue.ring.is_empty() && queue.run == RUNNING {
                        self.trim_idle(&mut queue);
                        trimmed = true;
                    }
                    queue
                }
                _ => self.work_available.wait(queue),
            };
            queue.worker_parked = false;
        }
    }

    /// Whether there may be work or a state change to act on (a lock-free hint).
    #[inline]
    fn work_hint(&self) -> bool {
        self.has_work.load(Ordering::Relaxed) || self.lifecycle.run_state_hint() != RUNNING
    }

    /// Gives the memory of a burst back: the ring by Pulsar's rule (an empty ring goes back to
    /// 64 slots), the batch entirely (it grows back to 64 on the next swap).
    fn trim_idle(&self, queue: &mut QueueState) {
        // SAFETY: called by the worker from `refill_batch`, under the queue lock, with the
        // batch exhausted.
        let freed = queue.ring.trim() + unsafe { self.batch.release() };
        if freed > 0 {
            tracing::debug!(executor = %self.name(), freed_slots = freed, "idle executor trimmed its queue");
        }
    }

    /// Spins briefly for work, then yields a few times (see `WorkerLifecycle::spin_for_work`).
    fn spin_for_work(&self) {
        self.lifecycle.spin_for_work(|| self.work_hint());
    }
}

impl FifoCore for ExecutorCore {
    type Queue = QueueState;

    #[inline]
    fn admission(&self) -> FifoAdmission<'_, QueueState> {
        FifoAdmission {
            queue: &self.queue,
            has_work: &self.has_work,
            work_available: &self.work_available,
            lifecycle: &self.lifecycle,
            wakeups: &self.wakeups,
        }
    }

    fn spawn_worker(this: &Arc<Self>) -> std::io::Result<()> {
        let core = Arc::clone(this);
        this.lifecycle
            .spawn(Box::new(move || Self::run_worker(&core)))
    }

    fn terminate_if_workerless(&self, queue: &mut QueueState) {
        if queue.worker == WorkerState::NotStarted
            && queue.run != RUNNING
            && queue.run != TERMINATED
            && queue.ring.is_empty()
        {
            self.mark_terminated(queue);
        }
    }
}

impl Drop for ExecutorCore {
    fn drop(&mut self) {
        // Tasks still queued (only possible when no worker could ever be started): the ring
        // holds them as `ManuallyDrop`, so drop them here, once — each at the panic boundary,
        // so that a capture panicking in `Drop` neither escapes this `Drop` nor leaks the
        // tasks after it. The batch's unclaimed tasks (none in a correct run: the worker only
        // exits with its batch exhausted or stolen) are taken out the same way first.
        let mut stranded = Vec::new();
        let mut ring = {
            let mut queue = self.queue.lock();
            // SAFETY: the queue lock is held (and `&mut self`: no worker runs).
            unsafe { self.batch.steal_unclaimed(&mut stranded) };
            std::mem::replace(&mut queue.ring, Ring::empty())
        };
        let queued = std::iter::from_fn(|| ring.pop_front().map(ManuallyDrop::into_inner));
        self.lifecycle
            .drop_stranded(stranded.into_iter().chain(queued));
    }
}
