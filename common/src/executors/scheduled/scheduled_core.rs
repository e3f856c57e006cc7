//! `ScheduledCore`: the state a scheduled executor's handles share with its worker, and the
//! worker loop (a FIFO fast path for immediate tasks beside the timer heap).
//!
//! The protocol (lock order, wake-up, claim, cancel vs fire) is described in `README.md`
//! beside this file; the FIFO path is the single-thread executor's, step for step, on the same
//! `Ring<TaskSlot>` and `TaskBatch` (whose safety contract this file keeps: see the `SAFETY`
//! comments).

use crate::collections::ring::Ring;
use crate::executors::executor_core::{WorkerState, RUNNING, SHUTDOWN, STOP, TERMINATED};
use crate::executors::fifo_admission::{FifoAdmission, FifoCore, FifoQueue};
use crate::executors::raw_task::{Job, RawTask};
use crate::executors::rejected::RejectReason;
use crate::executors::scheduled::timer_entry::{Timer, IN_DUE_LIST, NOT_IN_HEAP};
use crate::executors::scheduled::timer_wheel::TimerWheel;
use crate::executors::task::Task;
use crate::executors::task_batch::{TaskBatch, TaskSlot};
use crate::executors::thread_factory::ThreadFactory;
use crate::executors::worker_lifecycle::{WorkerLifecycle, WorkerSlot};
use crate::idle_spin;
use crate::sync::{Arc, AtomicBool, CachePadded, Condvar, Mutex, Ordering};
use std::collections::VecDeque;
use std::mem::ManuallyDrop;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// How long the worker spins, without yielding, for work or a timer falling due while a timer is
/// armed, before it parks (see `spin_for_work`).
const TIMER_SPIN: Duration = Duration::from_micros(10);

/// How long the worker must have been idle before it gives the memory of a burst back.
const IDLE_TRIM_AFTER: Duration = Duration::from_secs(1);

/// What the queue lock protects.
#[repr(C)] // the fields every `execute` touches first, on the lock's cache line; timers after
pub(crate) struct QueueState {
    /// Immediate tasks accepted and not yet moved to the worker's batch, oldest first. (Slots
    /// are `ManuallyDrop`: the storage is swapped into the `TaskBatch`, whose claim protocol
    /// decides who drops each task; `Drop` drops what is left here.)
    ring: Ring<TaskSlot>,
    /// One of `RUNNING`, `SHUTDOWN`, `STOP`, `TERMINATED` (the executor core's states).
    run: u8,
    worker: WorkerState,
    /// Set by the worker, under this lock, right before it waits on `work_available`; a
    /// producer (or a `schedule` whose timer became the earliest) that finds it set clears it
    /// and notifies. Nobody else notifies, so producers make no wake-up call while the worker
    /// is awake.
    worker_parked: bool,
    /// Delayed and periodic tasks waiting for their deadline.
    timers: TimerWheel,
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

/// The executor itself; `ScheduledExecutor` handles, `ScheduledHandle`s and the worker share it.
pub(crate) struct ScheduledCore {
    /// Ring, timers and run state. Lock order: `queue`, then `due`, then an entry's own lock.
    /// Its cache line is the producers': nothing the worker polls shares it.
    queue: CachePadded<Mutex<QueueState>>,
    /// The immediate tasks the worker swapped out of the ring in one go; each is claimed with
    /// one atomic increment before it runs, or stolen by `shutdown_now` (the plain executor's
    /// `TaskBatch`).
    batch: CachePadded<TaskBatch>,
    /// The timers that were due when the worker last took work, earliest first; they run
    /// after the batch. Taking one out under this lock is the worker's claim: a due timer is
    /// claimed (and fired), or still here when `cancel` removes it or `shutdown_now` takes it.
    due: CachePadded<Mutex<VecDeque<std::sync::Arc<dyn Timer>>>>,
    /// Whether the worker moved timers into `due` since it last found `due` empty: read and
    /// written by the worker only, so a batch with no timer due costs no lock of `due`.
    due_pending: AtomicBool,
    /// Whether the timer heap may hold entries: set under the queue lock by every push, cleared
    /// under it by the worker when it sees the heap empty. A hint for the worker's lock-free
    /// look before it takes the producers' lock (`refill_batch`); stale `true` only costs a
    /// lock round trip.
    timers_armed: AtomicBool,
    /// When the earliest armed timer falls due, in nanoseconds from `timer_origin`
    /// (`u64::MAX`: none armed). A hint the worker reads without a lock between two tasks of a
    /// batch and while it spins, so that a timer falling due then runs at the next task
    /// boundary rather than after the batch. Written under the queue lock: by `arm` and
    /// `rearm` when their timer became the earliest, and by the worker whenever it takes due
    /// timers. A cancel leaves it early, which costs one look under the lock. (A plain std
    /// atomic: it orders nothing, so the loom models need not track it.)
    next_due: std::sync::atomic::AtomicU64,
    /// The timer wheel's origin (`TimerWheel::origin`), to read `next_due` against the clock.
    timer_origin: Instant,
    /// The parked worker waits here (with the `queue` lock), with a timeout when a timer is
    /// armed.
    work_available: Condvar,
    /// Whether the ring has tasks: set by the producer whose push made it non-empty, cleared
    /// by the worker when it takes them, on its own cache line. What the spinning worker polls.
    has_work: CachePadded<AtomicBool>,
    /// Wake-up calls producers made (a diagnostic; only the slow path touches it).
    wakeups: std::sync::atomic::AtomicU64,
    /// Run-state mirror, termination signalling, naming, thread start, panic boundary, spin
    /// (shared with the plain executor's core).
    lifecycle: WorkerLifecycle,
}

/// A one-shot timer handed back by `shutdown_now`, as a [`Task`].
///
/// Running it fires the entry (completing its handle); dropping it unrun cancels the entry, so
/// the task's handle never waits forever. Three words: it sits inline in a task slot.
struct Fire {
    entry: Option<std::sync::Arc<dyn Timer>>,
    core: Arc<ScheduledCore>,
}

impl Job for Fire {
    fn run(mut self) {
        let entry = self.entry.take().expect("a Fire runs once");
        ScheduledCore::fire(&self.core, entry);
    }
}

impl Drop for Fire {
    fn drop(&mut self) {
        if let Some(entry) = self.entry.take() {
            cancel_detached(&*entry);
        }
    }
}

/// Cancels an entry that is not in the heap (due, or handed back by `shutdown_now`).
fn cancel_detached(entry: &dyn Timer) {
    if entry.header().try_cancel(entry.is_periodic()) {
        entry.finish_cancel();
    }
}

impl ScheduledCore {
    pub(crate) fn new(factory: std::sync::Arc<dyn ThreadFactory>) -> Self {
        let timers = TimerWheel::new();
        let timer_origin = timers.origin();
        Self {
            queue: CachePadded::new(Mutex::new(QueueState {
                ring: Ring::with_capacity(crate::collections::ring::MIN_TRIM_CAPACITY),
                timers,
                run: RUNNING,
                worker: WorkerState::NotStarted,
                worker_parked: false,
            })),
            batch: CachePadded::new(TaskBatch::new()),
            due: CachePadded::new(Mutex::new(VecDeque::new())),
            due_pending: AtomicBool::new(false),
            timers_armed: AtomicBool::new(false),
            next_due: std::sync::atomic::AtomicU64::new(u64::MAX),
            timer_origin,
            work_available: Condvar::new(),
            has_work: CachePadded::new(AtomicBool::new(false)),
            wakeups: std::sync::atomic::AtomicU64::new(0),
            lifecycle: WorkerLifecycle::new(factory, "scheduled-executor", RUNNING),
        }
    }

    /// A name for logs: the worker thread's name once it exists.
    pub(crate) fn name(&self) -> String {
        self.lifecycle.name()
    }

    /// Whether the calling thread is this executor's worker (for blocking paths only: a
    /// handle's `join` refuses to wait there).
    pub(crate) fn is_current_worker(&self) -> bool {
        self.lifecycle.is_current_worker()
    }

    pub(crate) fn run_state(&self) -> u8 {
        self.lifecycle.run_state()
    }

    // ---- admission -----------------------------------------------------------------------

    /// Arms a timer. The caller made `entry`; on rejection it takes its closure back out.
    ///
    /// # Errors
    ///
    /// The reason: shut down, or the worker thread could not be started.
    pub(crate) fn arm(
        this: &Arc<Self>,
        deadline: Instant,
        entry: std::sync::Arc<dyn Timer>,
    ) -> Result<(), RejectReason> {
        let mut queue = Self::admit(this)?;
        let earliest = queue.timers.push(deadline, entry);
        this.timers_armed.store(true, Ordering::Relaxed);
        if earliest {
            this.set_next_due(deadline);
        }
        // Only a new earliest deadline changes how long a parked worker should sleep.
        let wake = earliest && std::mem::take(&mut queue.worker_parked);
        drop(queue);
        if wake {
            this.work_available.notify_one();
        }
        Ok(())
    }

    /// A core whose worker the loom model drives itself, through `run_ready`.
    #[cfg(all(loom, test))]
    pub(crate) fn new_started_for_loom() -> Self {
        struct NoThreads;
        impl ThreadFactory for NoThreads {
            fn new_thread(
                &self,
                _body: Box<dyn FnOnce() + Send + 'static>,
            ) -> std::io::Result<std::thread::JoinHandle<()>> {
                Err(std::io::Error::other("no threads under loom"))
            }
        }
        let core = Self::new(std::sync::Arc::new(NoThreads));
        core.queue.lock().worker = WorkerState::Started;
        core
    }

    // ---- cancel and re-arm ---------------------------------------------------------------

    /// Cancels `entry` unless it already ran, runs (one-shot) or was cancelled; removes it from
    /// the heap at once. Returns whether this call cancelled it.
    pub(crate) fn cancel<T: Timer + ?Sized>(&self, entry: &T) -> bool {
        let mut queue = self.queue.lock();
        // Under the queue lock, so that a periodic re-arm (also under it) is either before
        // this (the entry is back in the heap, and removed below) or fails.
        if !entry.header().try_cancel(entry.is_periodic()) {
            return false;
        }
        let removed = match entry.header().heap_index() {
            NOT_IN_HEAP => None, // claimed by the worker, or handed back by `shutdown_now`
            IN_DUE_LIST => {
                // The worker may have claimed it since: look under the due list's lock.
                let mut due = self.due.lock();
                let header: *const _ = entry.header();
                let position = due.iter().position(|d| std::ptr::eq(d.header(), header));
                position.and_then(|position| due.remove(position))
            }
            index => Some(queue.timers.remove(index)),
        };
        if let Some(removed) = &removed {
            removed.header().set_heap_index(NOT_IN_HEAP);
        }
        // A shut-down worker sleeping until this timer's deadline may now be free to exit.
        let wake = queue.run != RUNNING
            && queue.timers.is_empty()
            && std::mem::take(&mut queue.worker_parked);
        drop(queue);
        if wake {
            self.work_available.notify_one();
        }
        entry.finish_cancel();
        drop(removed);
        true
    }

    /// Puts a periodic entry that just ran back in the heap, at its next deadline — unless it
    /// was cancelled during the run or the executor was shut down meanwhile (it stops then).
    fn rearm(this: &Arc<Self>, entry: std::sync::Arc<dyn Timer>) {
        let mut queue = this.queue.lock();
        if queue.run != RUNNING {
            let cancelled = entry.header().try_cancel(true);
            drop(queue);
            if cancelled {
                entry.finish_cancel();
            }
            return;
        }
        if entry.header().try_rearm() {
            let deadline = entry.next_deadline(Instant::now());
            // The caller is the worker itself (the only place a periodic entry runs while the
            // executor runs), so there is nobody to wake.
            if queue.timers.push(deadline, entry) {
                this.set_next_due(deadline);
            }
            this.timers_armed.store(true, Ordering::Relaxed);
        }
    }

    /// Fires a claimed timer (re-arming a periodic one). Periodic timers stop at shutdown, even
    /// one that was already due.
    fn fire(this: &Arc<Self>, entry: std::sync::Arc<dyn Timer>) {
        if entry.is_periodic() && this.run_state() != RUNNING {
            cancel_detached(&*entry);
        } else if entry.fire() {
            Self::rearm(this, entry);
        }
    }

    // ---- shutdown ------------------------------------------------------------------------

    /// Graceful shutdown: no new tasks; queued immediate tasks and armed one-shot timers still
    /// run (at their deadlines); periodic timers are cancelled. Idempotent.
    pub(crate) fn shutdown(this: &Arc<Self>) {
        let mut queue = this.queue.lock();
        if queue.run == RUNNING {
            this.lifecycle.set_run(&mut queue.run, SHUTDOWN);
        }
        let mut periodic = queue.timers.extract(|entry| entry.is_periodic());
        {
            let mut due = this.due.lock();
            for entry in std::mem::take(&mut *due) {
                if entry.is_periodic() {
                    entry.header().set_heap_index(NOT_IN_HEAP);
                    periodic.push(entry);
                } else {
                    due.push_back(entry);
                }
            }
        }
        for entry in &periodic {
            let cancelled = entry.header().try_cancel(true);
            debug_assert!(cancelled, "an armed entry is SCHEDULED");
        }
        let restart = queue.worker == WorkerState::NotStarted
            && !(queue.ring.is_empty() && queue.timers.is_empty());
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
        for entry in periodic {
            // Drops the closure: user code, guarded so one panicking capture neither leaves
            // the other handles waiting nor unwinds out of a `Drop` that called this.
            this.lifecycle.guarded(|| entry.finish_cancel());
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

    /// Stops: no new tasks; every task not yet claimed comes back — the immediate tasks (the
    /// worker's batch, then the ring), oldest first, then the one-shot timers (those already
    /// due, then the armed ones), earliest first. Periodic timers are cancelled instead. The
    /// running task (if any) finishes.
    pub(crate) fn shutdown_now(this: &Arc<Self>) -> Vec<Task> {
        let mut queue = this.queue.lock();
        if queue.run < STOP {
            this.lifecycle.set_run(&mut queue.run, STOP);
        }
        let mut timers: Vec<_> = this.due.lock().drain(..).collect();
        timers.extend(queue.timers.drain_in_order());
        let mut taken = Vec::new();
        // SAFETY: the queue lock is held.
        taken.reserve_exact(unsafe { this.batch.unclaimed() } + queue.ring.len() + timers.len());
        // SAFETY: the queue lock is held. The batch's tasks are older than the ring's.
        unsafe { this.batch.steal_unclaimed(&mut taken) };
        while let Some(slot) = queue.ring.pop_front() {
            taken.push(ManuallyDrop::into_inner(slot));
        }
        let mut periodic = Vec::new();
        for entry in timers {
            entry.header().set_heap_index(NOT_IN_HEAP);
            if entry.is_periodic() {
                let cancelled = entry.header().try_cancel(true);
                debug_assert!(cancelled, "an armed entry is SCHEDULED");
                periodic.push(entry);
            } else {
                taken.push(RawTask::new(Fire {
                    entry: Some(entry),
                    core: Arc::clone(this),
                }));
            }
        }
        this.has_work.store(false, Ordering::Release);
        this.terminate_if_workerless(&mut queue);
        let wake = std::mem::take(&mut queue.worker_parked);
        drop(queue);
        if wake {
            this.work_available.notify_one();
        }
        for entry in periodic {
            this.lifecycle.guarded(|| entry.finish_cancel());
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

    // ---- introspection -------------------------------------------------------------------

    /// Immediate tasks not yet started plus armed timers (cancelled ones are removed at once).
    pub(crate) fn pending_tasks(&self) -> usize {
        let queue = self.queue.lock();
        let due = self.due.lock().len();
        // SAFETY: the queue lock is held.
        queue.ring.len() + unsafe { self.batch.unclaimed() } + due + queue.timers.len()
    }

    /// Armed timers.
    pub(crate) fn armed_timers(&self) -> usize {
        self.queue.lock().timers.len()
    }

    /// Slots the timer heap holds now.
    pub(crate) fn timer_capacity(&self) -> usize {
        self.queue.lock().timers.capacity()
    }

    /// Task slots allocated now (the producers' ring plus the worker's batch).
    pub(crate) fn queue_capacity(&self) -> usize {
        let queue = self.queue.lock();
        // SAFETY: the queue lock is held.
        queue.ring.capacity() + unsafe { self.batch.capacity() }
    }

    // ---- the worker ----------------------------------------------------------------------

    /// The worker thread's body.
    pub(crate) fn run_worker(this: &Arc<Self>) {
        let Some(_worker) = this.lifecycle.enter_worker() else {
            return; // another thread runs this executor's worker loop
        };
        // Signals termination however the loop ends.
        struct Terminator<'a>(&'a ScheduledCore);
        impl Drop for Terminator<'_> {
            fn drop(&mut self) {
                let mut queue = self.0.queue.lock();
                self.0.mark_terminated(&mut queue);
            }
        }
        let _terminator = Terminator(this);
        loop {
            Self::run_batch(this);
            if !Self::refill_batch(this) {
                return;
            }
        }
    }

    /// Claims and runs the batch one task at a time, then the due timers one at a time;
    /// between two tasks, if a timer has fallen due since the pass began (the `next_due`
    /// hint), the due timers are taken and run first. (The timers already due when the pass
    /// began run after its tasks, which were queued before it began: on an idle worker
    /// `execute(a)` then `schedule(Duration::ZERO, b)` runs `a` first.) `shutdown_now` may
    /// steal the rest of the batch, `cancel` may remove a due timer.
    fn run_batch(this: &Arc<Self>) {
        // SAFETY: this is the worker (or, under loom, the one thread driving it); it refills
        // or releases the batch only in `take_ready` / `trim_idle`, after this loop.
        while let Some(task) = unsafe { this.batch.claim() } {
            this.lifecycle.run_task(task);
            if this.timer_due_hint() {
                Self::take_due_timers(this);
                Self::run_due(this);
            }
        }
        Self::run_due(this);
    }

    /// Runs the timers in the due list, earliest first, one at a time.
    fn run_due(this: &Arc<Self>) {
        if !this.due_pending.load(Ordering::Relaxed) {
            return;
        }
        loop {
            let next = {
                let mut due = this.due.lock();
                let next = due.pop_front();
                if next.is_none() {
                    // Cleared under the lock that showed `due` empty. Only the worker adds
                    // timers to `due` (`move_due_timers`, which sets the flag again); `shutdown`
                    // puts back only what it took out within one hold of this lock.
                    this.due_pending.store(false, Ordering::Relaxed);
                }
                next
            };
            let Some(entry) = next else {
                break;
            };
            // Claimed: `cancel` no longer finds it in the due list (it still may win the
            // entry's own state, and then `fire` does nothing).
            entry.header().set_heap_index(NOT_IN_HEAP);
            // User panics are caught inside `fire`; this catches one from a closure's `Drop`,
            // at the same boundary as a task's.
            let fired = panic::catch_unwind(AssertUnwindSafe(|| Self::fire(this, entry)));
            if let Err(payload) = fired {
                this.lifecycle.report_panic(payload);
            }
        }
    }

    /// Moves what is ready into the (empty) batch: the queued immediate tasks, then the timers
    /// due now. Returns whether it moved anything. Caller holds the queue lock.
    fn take_ready(this: &Arc<Self>, queue: &mut QueueState) -> bool {
        let due_at = match queue.timers.peek_deadline() {
            Some(deadline) => {
                let now = Instant::now();
                (deadline <= now).then_some(now)
            }
            None => None,
        };
        if queue.ring.is_empty() && due_at.is_none() {
            this.refresh_next_due(queue);
            return false;
        }
        if !queue.ring.is_empty() {
            // O(1): the producers get the batch's (empty) storage back.
            // SAFETY: the worker, under the queue lock, with the batch exhausted (`run_batch`'s
            // claim loop ended before this).
            unsafe { this.batch.refill(&mut queue.ring) };
            this.has_work.store(false, Ordering::Release);
        }
        if let Some(now) = due_at {
            debug_assert!(
                this.due.lock().is_empty(),
                "the due list was worked off before"
            );
            Self::move_due_timers(this, queue, now);
        }
        true
    }

    /// Moves the timers due at `now` to the end of the due list (after any left there: they
    /// fell due earlier) and refreshes the `next_due` hint. Caller holds the queue lock.
    fn move_due_timers(this: &Arc<Self>, queue: &mut QueueState, now: Instant) {
        {
            let mut due = this.due.lock();
            while let Some(entry) = queue.timers.pop_due(now) {
                entry.header().set_heap_index(IN_DUE_LIST);
                due.push_back(entry);
            }
        }
        this.due_pending.store(true, Ordering::Relaxed);
        this.refresh_next_due(queue);
    }

    /// Between two tasks of a batch: takes the timers that have fallen due (the `next_due`
    /// hint said so) into the due list, so they run before the rest of the batch.
    fn take_due_timers(this: &Arc<Self>) {
        let mut queue = this.queue.lock();
        if queue
            .timers
            .peek_deadline()
            .is_some_and(|deadline| deadline <= Instant::now())
        {
            Self::move_due_timers(this, &mut queue, Instant::now());
        } else {
            // The hint was early (a cancel removed the timer it was for).
            this.refresh_next_due(&queue);
        }
    }

    /// Records that `deadline` is the earliest armed timer's. Caller holds the queue lock.
    fn set_next_due(&self, deadline: Instant) {
        self.next_due
            .store(self.nanos_from_origin(deadline), Ordering::Relaxed);
    }

    /// Sets the `next_due` hint from the wheel. Caller holds the queue lock.
    fn refresh_next_due(&self, queue: &QueueState) {
        let next = queue.timers.next_due_nanos().unwrap_or(u64::MAX);
        self.next_due.store(next, Ordering::Relaxed);
    }

    /// Whether a timer may be due now (a lock-free hint, never late: see `next_due`).
    #[inline]
    fn timer_due_hint(&self) -> bool {
        let next = self.next_due.load(Ordering::Relaxed);
        next != u64::MAX && self.nanos_from_origin(Instant::now()) >= next
    }

    /// `instant` in nanoseconds from the timer wheel's origin (0 before it; never `u64::MAX`).
    fn nanos_from_origin(&self, instant: Instant) -> u64 {
        let nanos = instant
            .saturating_duration_since(self.timer_origin)
            .as_nanos();
        u64::try_from(nanos).map_or(u64::MAX - 1, |nanos| nanos.min(u64::MAX - 1))
    }

    /// Fills the (empty) batch, waiting for work or for the next deadline if there is none.
    /// Returns `false` when the worker must exit.
    fn refill_batch(this: &Arc<Self>) -> bool {
        let mut spun = false;
        let mut trimmed = false;
        let mut idle_since: Option<Instant> = None;
        // Look without the lock first, as the plain executor does: with no immediate task and
        // no timer armed, spin on the worker's own line and leave the producers' lock alone.
        if !this.work_hint() && !this.timers_armed.load(Ordering::Relaxed) {
            this.spin_for_work();
            spun = true;
        }
        loop {
            let mut queue = this.queue.lock();
            loop {
                if queue.run >= STOP {
                    return false;
                }
                if Self::take_ready(this, &mut queue) {
                    return true;
                }
                if queue.timers.is_empty() {
                    this.timers_armed.store(false, Ordering::Relaxed);
                    if queue.run == SHUTDOWN {
                        return false;
                    }
                }
                if !spun {
                    break;
                }
                // Park. The flag is set under the same lock producers push under, after the
                // queue was seen empty under it: no wake-up can be lost. A timer armed earlier
                // than the one we sleep for wakes us the same way.
                let now = Instant::now();
                let idle_since = *idle_since.get_or_insert(now);
                let trim_at = (!trimmed).then(|| idle_since + IDLE_TRIM_AFTER);
                let wake_at = match (queue.timers.peek_deadline(), trim_at) {
                    (Some(deadline), Some(trim)) => Some(deadline.min(trim)),
                    (deadline, trim) => deadline.or(trim),
                };
                queue.worker_parked = true;
                queue = match wake_at {
                    Some(at) => {
                        let wait = at.saturating_duration_since(now);
                        this.work_available.wait_timeout(queue, wait).0
                    }
                    None => this.work_available.wait(queue),
                };
                queue.worker_parked = false;
                if !trimmed
                    && queue.ring.is_empty()
                    && queue.run == RUNNING
                    && idle_since.elapsed() >= IDLE_TRIM_AFTER
                {
                    this.trim_idle(&mut queue);
                    trimmed = true;
                }
            }
            drop(queue);
            this.spin_for_work();
            spun = true;
        }
    }

    /// Gives the memory of a burst back: the ring by Pulsar's rule, the batch and an empty
    /// timer heap entirely.
    fn trim_idle(&self, queue: &mut QueueState) {
        let due = {
            let mut due = self.due.lock();
            if due.is_empty() {
                std::mem::take(&mut *due).capacity()
            } else {
                0
            }
        };
        // SAFETY: called by the worker from `refill_batch`, under the queue lock, with the
        // batch exhausted.
        let batch = unsafe { self.batch.release() };
        let freed = queue.ring.trim() + batch + due + queue.timers.release_if_empty();
        if freed > 0 {
            tracing::debug!(executor = %self.name(), freed_slots = freed, "idle scheduled executor trimmed its queues");
        }
    }

    /// A bounded spin, never yielding, watching for immediate work and for a timer falling
    /// due (adapted to whether spinning has been winning, `idle_spin.rs`); an idle executor
    /// then parks (until the next deadline, if a timer is armed) and costs no CPU. With a
    /// timer armed the spin is at most `TIMER_SPIN`: the worker then parks until the deadline.
    fn spin_for_work(&self) {
        let ready = || self.work_hint() || self.timer_due_hint();
        let cap = if self.next_due.load(Ordering::Relaxed) == u64::MAX {
            idle_spin::MAX_SPIN
        } else {
            TIMER_SPIN
        };
        idle_spin::spin_for_work(ready, cap);
    }

    /// Whether there may be an immediate task or a state change to act on (a lock-free hint).
    #[inline]
    fn work_hint(&self) -> bool {
        self.has_work.load(Ordering::Relaxed) || self.lifecycle.run_state_hint() != RUNNING
    }

    /// One worker step without waiting (loom models): moves what is ready and runs it.
    /// Returns whether anything was ready.
    #[cfg(all(loom, test))]
    pub(crate) fn run_ready(this: &Arc<Self>) -> bool {
        let ready = {
            let mut queue = this.queue.lock();
            queue.run < STOP && Self::take_ready(this, &mut queue)
        };
        Self::run_batch(this);
        ready
    }
}

impl FifoCore for ScheduledCore {
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
            && queue.timers.is_empty()
        {
            self.mark_terminated(queue);
        }
    }
}

impl Drop for ScheduledCore {
    fn drop(&mut self) {
        // Tasks stranded in the ring (only possible when no worker could ever be started) are
        // `ManuallyDrop`: drop them here, once. (The `TaskBatch` drops its own.) Leftover
        // timers are unreachable in a correct run (the worker exits only once the heap is
        // empty, and `shutdown_now` empties it), but a handle must never wait forever: cancel
        // them.
        // Every closure is dropped at the panic boundary, so a capture that panics in `Drop`
        // neither escapes this `Drop` nor skips what follows it.
        let mut unclaimed = Vec::new();
        let (mut stranded, timers) = {
            let mut queue = self.queue.lock();
            // SAFETY: the queue lock is held (and `&mut self`: no worker runs).
            unsafe { self.batch.steal_unclaimed(&mut unclaimed) };
            let stranded = std::mem::replace(&mut queue.ring, Ring::empty());
            (stranded, queue.timers.drain_in_order())
        };
        let queued = std::iter::from_fn(|| stranded.pop_front().map(ManuallyDrop::into_inner));
        self.lifecycle
            .drop_stranded(unclaimed.into_iter().chain(queued));
        let mut leftovers: Vec<_> = self.due.lock().drain(..).collect();
        leftovers.extend(timers);
        for entry in leftovers {
            self.lifecycle.guarded(|| cancel_detached(&*entry));
        }
    }
}
