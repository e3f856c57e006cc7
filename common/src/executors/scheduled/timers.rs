//! `Timers`: what the scheduled executor's worker does between batches — take the timers that
//! fell due from the wheel into the due list and fire them, one at a time, at task boundaries.
//! The core's `BetweenBatches` parameter for `ScheduledExecutor`.
//!
//! The protocol (lock order, cancel vs fire, the `next_due` hint) is described in `README.md`
//! beside this file.

use crate::executors::between_batches::BetweenBatches;
use crate::executors::executor_core::{ExecutorCore, QueueState};
use crate::executors::executor_counters::EventCounters;
use crate::executors::raw_task::{Job, JobOutcome, RawTask};
use crate::executors::scheduled::core_share::HandleShares;
use crate::executors::scheduled::due_stream;
use crate::executors::scheduled::entry_blocks::{Block, EntryBlocks};
use crate::executors::scheduled::timer_entry::{Cancellation, Fired, Timer, NOT_IN_HEAP};
use crate::executors::scheduled::timer_ref::TimerRef;
use crate::executors::scheduled::timer_wheel::TimerWheel;
use crate::executors::worker_lifecycle::WorkerLifecycle;
use crate::idle_spin;
use crate::sync::{Arc, AtomicBool, CachePadded, Mutex, Ordering};
use std::collections::VecDeque;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// How long the worker spins, without yielding, for work or a timer falling due while a timer is
/// armed, before it parks (see `spin_for_work`).
const TIMER_SPIN: Duration = Duration::from_micros(10);

/// The scheduled executor's core.
pub(crate) type ScheduledCore = ExecutorCore<Timers>;

/// The kind of [`ScheduledExecutor`](crate::executors::ScheduledExecutor): its worker fires
/// the timers that fall due between (and within) batches. Internally: the lock-free half of the
/// timers (the wheel itself is under the queue lock).
pub struct Timers {
    /// The timers that were due when the worker last took work, earliest first; they run
    /// after the batch. Taking one out under this lock is the worker's claim: a due timer is
    /// claimed (and fired), or still here when `cancel` removes it or `shutdown_now` takes it.
    /// Lock order: the queue lock, then this, then an entry's own lock.
    pub(crate) due: CachePadded<Mutex<DueList>>,
    /// Whether the worker moved timers into `due` since it last found `due` empty: read and
    /// written by the worker only, so a batch with no timer due costs no lock of `due`.
    due_pending: AtomicBool,
    /// Whether the timer wheel may hold entries: set under the queue lock by every push,
    /// cleared under it by the worker when it sees the wheel empty. A hint for the worker's
    /// lock-free look before it takes the producers' lock (`refill_batch`); stale `true` only
    /// costs a lock round trip.
    pub(crate) armed: AtomicBool,
    /// When the earliest armed timer falls due, in nanoseconds from `origin` (`u64::MAX`:
    /// none armed). A hint the worker reads without a lock between two tasks of a batch and
    /// while it spins, so that a timer falling due then runs at the next task boundary rather
    /// than after the batch. Written under the queue lock: lowered by `arm` and `rearm` to
    /// their deadline when it is earlier (never later than the earliest armed deadline), and
    /// set by the worker whenever it takes due timers. A cancel
    /// leaves it early, which costs one look under the lock. (A plain std atomic: it orders
    /// nothing, so the loom models need not track it.)
    next_due: std::sync::atomic::AtomicU64,
    /// The timer wheel's origin (`TimerWheel::origin`), to read `next_due` against the clock.
    origin: Instant,
    /// Whether the producers' side may hold kept entry memory (`LockedTimers::kept`): set
    /// under the queue lock when the worker hands blocks over, cleared under it by the arm that
    /// takes the last. A hint for the arm, which takes a block under the lock it arms under
    /// when this is set and otherwise allocates before taking it; stale either way, it costs
    /// an allocation (under the lock, or of a block that was there). On its own line: the
    /// worker writes it once per hand-over, every arm reads it.
    kept_hint: CachePadded<AtomicBool>,
    /// The handles' shares of the core (`core_share.rs`), on a line of their own: every arm
    /// writes it and every handle's drop, where the worker polls `armed` and `next_due` above
    /// (measured: the K=256 `schedule(Duration::ZERO)` hand-off 386 -> 372 ns per task, 5
    /// alternated processes x 3 rounds, Intel host, 2026-12-06).
    pub(crate) shares: CachePadded<HandleShares>,
}

/// The worker's due list (`Timers::due`): the timers due when it last took them, earliest
/// first, and the memory of those it fired, kept until it next holds the queue lock to hand it
/// over (`entry_blocks.rs`). Derefs to the timers.
#[derive(Default)]
pub(crate) struct DueList {
    timers: VecDeque<TimerRef<dyn Timer>>,
    /// Memory of fired entries (their last reference was the worker's), for the producers.
    pub(crate) fired: EntryBlocks,
}

impl Deref for DueList {
    type Target = VecDeque<TimerRef<dyn Timer>>;

    fn deref(&self) -> &Self::Target {
        &self.timers
    }
}

impl DerefMut for DueList {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.timers
    }
}

/// What the queue lock guards for the timers (the core's `QueueState::between`): the wheel,
/// and the memory of fired entries handed over for the next arms (`entry_blocks.rs`). Derefs to
/// the wheel.
pub struct LockedTimers {
    wheel: TimerWheel,
    /// Kept entry memory for the producers (`ScheduledCore::arm` takes from it).
    pub(crate) kept: EntryBlocks,
}

impl Deref for LockedTimers {
    type Target = TimerWheel;

    fn deref(&self) -> &TimerWheel {
        &self.wheel
    }
}

impl DerefMut for LockedTimers {
    fn deref_mut(&mut self) -> &mut TimerWheel {
        &mut self.wheel
    }
}

/// Timers taken out under the queue lock — periodic timers cancelled at shutdown, or the
/// leftovers of a dropped core — to finish (drop their closures) without it.
/// Each with its won cancel, or `None` for a leftover still to cancel.
#[derive(Default)]
pub struct Detached(Vec<(TimerRef<dyn Timer>, Option<Cancellation>)>);

impl Detached {
    /// Cancels `entries`, armed (so `SCHEDULED`), under the queue lock.
    fn cancel_armed(entries: Vec<TimerRef<dyn Timer>>) -> Self {
        let cancelled = entries
            .into_iter()
            .map(|entry| {
                let cancellation = entry.header().try_cancel(true);
                debug_assert!(cancellation.is_some(), "an armed entry is SCHEDULED");
                (entry, cancellation)
            })
            .collect();
        Self(cancelled)
    }

    /// Without the queue lock: finishes each cancel (or cancels a leftover), dropping the
    /// closures. Each is user code, guarded so one panicking capture neither leaves the other
    /// handles waiting nor unwinds out of a `Drop` that called this.
    fn finish(self, lifecycle: &WorkerLifecycle) {
        for (entry, cancellation) in self.0 {
            lifecycle.guarded(|| match cancellation {
                Some(cancellation) => entry.finish_cancel(cancellation),
                None => cancel_detached(&*entry),
            });
        }
    }
}

/// A one-shot timer handed back by `shutdown_now`, as a [`Task`](crate::executors::Task).
///
/// Running it fires the entry (completing its handle); dropping it unrun cancels the entry, so
/// the task's handle never waits forever. Three words: it sits inline in a task slot.
struct Fire {
    entry: Option<TimerRef<dyn Timer>>,
    core: Arc<ScheduledCore>,
}

impl Job for Fire {
    fn run(mut self) -> JobOutcome {
        let entry = self.entry.take().expect("a Fire runs once");
        match ScheduledCore::fire(&self.core, entry).0 {
            Fired::Panicked => JobOutcome::Panicked,
            Fired::Done | Fired::Again | Fired::Skipped => JobOutcome::Completed,
        }
    }
}

impl Drop for Fire {
    fn drop(&mut self) {
        if let Some(entry) = self.entry.take() {
            cancel_detached(&*entry);
        }
    }
}

/// Cancels an entry that is not in the wheel (due, or handed back by `shutdown_now`).
pub(crate) fn cancel_detached(entry: &dyn Timer) {
    if let Some(cancellation) = entry.header().try_cancel(entry.is_periodic()) {
        entry.finish_cancel(cancellation);
    }
}

impl fmt::Debug for Timers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Timers")
    }
}

impl Timers {
    /// Sets the `armed` hint after a push. Caller holds the queue lock. Stored only when it was
    /// clear: the worker reads the hint's line while it spins, and a store of an unchanged
    /// value would still take the line from it on every arm.
    #[inline]
    pub(crate) fn note_armed(&self) {
        if !self.armed.load(Ordering::Relaxed) {
            self.armed.store(true, Ordering::Relaxed);
        }
    }

    /// Whether a timer is due now (the `next_due` hint); if one is, and timers are streaming
    /// in, first waits a moment for more to gather (`due_stream.rs`).
    #[inline]
    fn linger_if_due(&self) -> bool {
        let Some((now, overdue)) = self.due_now() else {
            return false;
        };
        due_stream::linger_if_streaming(now, overdue);
        true
    }

    /// Whether the producers' side may keep entry memory for an arm (`kept_hint`).
    #[inline]
    pub(crate) fn may_keep_blocks(&self) -> bool {
        self.kept_hint.load(Ordering::Relaxed)
    }

    /// After an arm took the last kept block. Caller holds the queue lock.
    #[inline]
    pub(crate) fn note_no_kept_blocks(&self) {
        if self.kept_hint.load(Ordering::Relaxed) {
            self.kept_hint.store(false, Ordering::Relaxed);
        }
    }

    /// Lowers the `next_due` hint to `deadline` if that is earlier, after a timer was armed
    /// for it. Caller holds the queue lock (every writer of the hint does).
    ///
    /// The wheel's "became the earliest" answer cannot decide this: for a timer filed above
    /// level 0 the wheel knows only the start of its slot, so a timer armed between that
    /// start and the exact deadline the hint holds is not "earliest" there, yet due first.
    pub(crate) fn lower_next_due(&self, deadline: Instant) {
        let nanos = self.nanos_from_origin(deadline);
        if nanos < self.next_due.load(Ordering::Relaxed) {
            self.next_due.store(nanos, Ordering::Relaxed);
        }
    }

    /// Sets the `next_due` hint from the wheel. Caller holds the queue lock.
    fn refresh_next_due(&self, wheel: &TimerWheel) {
        let next = wheel.next_due_nanos().unwrap_or(u64::MAX);
        self.next_due.store(next, Ordering::Relaxed);
    }

    /// Whether a timer may be due now (a lock-free hint, never late: see `next_due`).
    #[inline]
    fn timer_due_hint(&self) -> bool {
        self.due_now().is_some()
    }

    /// The clock, if a timer may be due by it (the clock is read only when a timer is armed:
    /// this runs between every two tasks), with how long the earliest timer has been due.
    #[inline]
    fn due_now(&self) -> Option<(Instant, Duration)> {
        let next = self.next_due.load(Ordering::Relaxed);
        if next == u64::MAX {
            return None;
        }
        let now = Instant::now();
        let overdue = self.nanos_from_origin(now).checked_sub(next)?;
        Some((now, Duration::from_nanos(overdue)))
    }

    /// The timer wheel's origin: the loom models arm their timers at it, so that a timer's
    /// tick (0) does not depend on how long an iteration took (see `loom_tests::arm_via`);
    /// unit tests turn the wheel's nanoseconds back into instants with it.
    #[cfg(test)]
    pub(crate) fn origin(&self) -> Instant {
        self.origin
    }

    /// The `next_due` hint, for tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn next_due_hint(&self) -> u64 {
        self.next_due.load(Ordering::Relaxed)
    }

    /// `instant` in nanoseconds from the timer wheel's origin (0 before it; never `u64::MAX`).
    fn nanos_from_origin(&self, instant: Instant) -> u64 {
        let nanos = instant.saturating_duration_since(self.origin).as_nanos();
        u64::try_from(nanos).map_or(u64::MAX - 1, |nanos| nanos.min(u64::MAX - 1))
    }

    /// Moves the timers due at `now` to the end of the due list (after any left there: they
    /// fell due earlier) and refreshes the `next_due` hint. Caller holds the queue lock.
    fn move_due_timers(&self, locked: &mut LockedTimers, now: Instant) {
        {
            let mut due = self.due.lock();
            let before = due.len();
            locked.wheel.take_due_into(now, &mut due.timers);
            due_stream::record_take(now, due.len() - before);
            // Both locks are held: hand the memory of the entries fired since over.
            if !due.fired.is_empty() {
                locked.kept.take_all_from(&mut due.fired);
                if !self.kept_hint.load(Ordering::Relaxed) {
                    self.kept_hint.store(true, Ordering::Relaxed);
                }
            }
        }
        self.due_pending.store(true, Ordering::Relaxed);
        self.refresh_next_due(locked);
    }

    /// Between two tasks of a batch: takes the timers that have fallen due (the `next_due`
    /// hint said so) into the due list, so they run before the rest of the batch.
    fn take_due_timers(core: &ScheduledCore) {
        let mut queue = core.queue.lock();
        if queue
            .between
            .peek_deadline()
            .is_some_and(|deadline| deadline <= Instant::now())
        {
            core.between
                .move_due_timers(&mut queue.between, Instant::now());
        } else {
            // The hint was early (a cancel removed the timer it was for).
            core.between.refresh_next_due(&queue.between);
        }
    }

    /// Runs the timers in the due list, earliest first, one at a time.
    fn run_due(core: &Arc<ScheduledCore>) {
        let timers = &core.between;
        if !timers.due_pending.load(Ordering::Relaxed) {
            return;
        }
        // The memory of the entry fired last, if the worker's reference was its last: kept in
        // the due list under the lock taken next (`entry_blocks.rs`).
        let mut fired_memory: Option<Block> = None;
        loop {
            let next = {
                let mut due = timers.due.lock();
                if let Some(block) = fired_memory.take() {
                    due.fired.keep(block);
                }
                let next = due.pop_front();
                if next.is_none() {
                    // Cleared under the lock that showed `due` empty. Only the worker adds
                    // timers to `due` (`move_due_timers`, which sets the flag again); `shutdown`
                    // puts back only what it took out within one hold of this lock.
                    timers.due_pending.store(false, Ordering::Relaxed);
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
            let fired = panic::catch_unwind(AssertUnwindSafe(|| ScheduledCore::fire(core, entry)));
            let fired = fired.map(|(fired, memory)| {
                fired_memory = memory;
                fired
            });
            let outcome = match fired {
                Ok(Fired::Skipped) => {
                    // Cancelled after the worker claimed it: it leaves without running, a
                    // cancelled entry the worker retired.
                    core.worker_counters.record(JobOutcome::Cancelled);
                    continue;
                }
                Ok(Fired::Done | Fired::Again) => JobOutcome::Completed,
                Ok(Fired::Panicked) => JobOutcome::Panicked,
                Err(payload) => {
                    core.lifecycle.report_panic(payload);
                    JobOutcome::Panicked
                }
            };
            core.worker_counters.record(outcome);
        }
    }

    /// Takes every timer out of the due list and the wheel: due ones first, then the armed
    /// ones, each earliest first.
    fn take_all(&self, wheel: &mut TimerWheel) -> Vec<TimerRef<dyn Timer>> {
        let mut timers: Vec<_> = self.due.lock().timers.drain(..).collect();
        timers.extend(wheel.drain_in_order());
        timers
    }
}

// The sealed trait's hooks speak of crate-private types (see `BetweenBatches`).
#[allow(private_interfaces)]
impl BetweenBatches for Timers {
    type Locked = LockedTimers;
    type Detached = Detached;
    const KIND: &'static str = "scheduled-executor";
    const TYPE_NAME: &'static str = "ScheduledExecutor";
    const DEFAULT_POOL_NAME: &'static str = crate::executors::DEFAULT_SCHEDULED_POOL_NAME;

    fn new() -> (Self, LockedTimers) {
        let wheel = TimerWheel::new();
        let timers = Self {
            due: CachePadded::new(Mutex::new(DueList::default())),
            due_pending: AtomicBool::new(false),
            armed: AtomicBool::new(false),
            next_due: std::sync::atomic::AtomicU64::new(u64::MAX),
            origin: wheel.origin(),
            kept_hint: CachePadded::new(AtomicBool::new(false)),
            shares: CachePadded::new(HandleShares::new()),
        };
        let locked = LockedTimers {
            wheel,
            kept: EntryBlocks::new(),
        };
        (timers, locked)
    }

    fn has_pending(wheel: &LockedTimers) -> bool {
        !wheel.is_empty()
    }

    fn pending(&self, wheel: &LockedTimers) -> usize {
        self.due.lock().len() + wheel.len()
    }

    /// Between two tasks, if a timer has fallen due since the pass began (the `next_due`
    /// hint), the due timers are taken and run first. (The timers already due when the pass
    /// began run after its tasks, which were queued before it began: on an idle worker
    /// `execute(a)` then `schedule(Duration::ZERO, b)` runs `a` first.) `cancel` may remove a
    /// due timer meanwhile.
    #[inline]
    fn after_task(core: &Arc<ScheduledCore>) {
        if core.between.timer_due_hint() {
            Self::take_due_timers(core);
            Self::run_due(core);
        }
    }

    #[inline]
    fn after_batch(core: &Arc<ScheduledCore>) {
        Self::run_due(core);
    }

    fn take_ready(
        core: &ScheduledCore,
        queue: &mut QueueState<LockedTimers>,
        took_tasks: bool,
    ) -> bool {
        let due_at = match queue.between.peek_deadline() {
            Some(deadline) => {
                let now = Instant::now();
                (deadline <= now).then_some(now)
            }
            None => None,
        };
        let Some(now) = due_at else {
            if !took_tasks {
                core.between.refresh_next_due(&queue.between);
            }
            return took_tasks;
        };
        debug_assert!(
            core.between.due.lock().is_empty(),
            "the due list was worked off before"
        );
        core.between.move_due_timers(&mut queue.between, now);
        true
    }

    /// Only when a timer may be due now (`next_due` is never late): with timers armed but none
    /// due, the worker spins on its own lines (`spin_for_work` watches `next_due` too) instead
    /// of taking the producers' lock, which a `schedule(Duration::ZERO, ..)` stream's producer
    /// takes for every timer.
    #[inline]
    fn look_first(&self) -> bool {
        self.armed.load(Ordering::Relaxed) && self.linger_if_due()
    }

    #[inline]
    fn note_idle(&self, _wheel: &LockedTimers) {
        // Stored only when set, as in `note_armed`.
        if self.armed.load(Ordering::Relaxed) {
            self.armed.store(false, Ordering::Relaxed);
        }
    }

    #[inline]
    fn wake_at(wheel: &LockedTimers) -> Option<Instant> {
        wheel.peek_deadline()
    }

    /// A bounded spin, never yielding, watching for immediate work and for a timer falling
    /// due (adapted to whether spinning has been winning, `idle_spin.rs`; a cold worker then
    /// yields a few times, but not while a timer is armed: a yield may cost a time slice, and
    /// the timer would be that late); an idle executor then parks (until the next deadline, if a timer is armed) and costs no CPU. With a
    /// timer armed the spin is at most `TIMER_SPIN`: the worker then parks until the deadline.
    #[inline]
    fn spin_for_work(&self, work_hint: impl Fn() -> bool) {
        let ready = || work_hint() || self.timer_due_hint();
        let armed = self.next_due.load(Ordering::Relaxed) != u64::MAX;
        let cap = if armed {
            TIMER_SPIN
        } else {
            idle_spin::MAX_SPIN
        };
        idle_spin::spin_for_work(ready, cap, !armed);
        // A timer that fell due while the worker spun is one of a stream as much as one found
        // due before the spin: let others gather the same way before the worker takes the lock.
        if !work_hint() {
            self.linger_if_due();
        }
    }

    fn holds_idle_memory(&self, locked: &LockedTimers) -> bool {
        if locked.capacity() > 0 || locked.kept.holds_memory() {
            return true; // without the due list's lock, as on every park of an armed wheel
        }
        let due = self.due.lock();
        due.capacity() > 0 || due.fired.holds_memory()
    }

    /// The due list, the kept entry memory and an empty wheel entirely.
    fn trim_idle(&self, locked: &mut LockedTimers) -> usize {
        let due = {
            let mut due = self.due.lock();
            let fired = due.fired.free_all();
            if due.is_empty() {
                fired + std::mem::take(&mut due.timers).capacity()
            } else {
                fired
            }
        };
        self.kept_hint.store(false, Ordering::Relaxed);
        due + locked.kept.free_all() + locked.release_if_empty()
    }

    /// Periodic timers stop at shutdown (Java's default): taken out of the wheel and the due
    /// list, and moved to `CANCELLED`; one-shot timers stay and still run.
    fn on_shutdown(core: &Arc<ScheduledCore>, wheel: &mut LockedTimers) -> Self::Detached {
        HandleShares::give_up_spares(core);
        let mut periodic = wheel.extract(|entry| entry.is_periodic());
        {
            let mut due = core.between.due.lock();
            for entry in std::mem::take(&mut due.timers) {
                if entry.is_periodic() {
                    entry.header().set_heap_index(NOT_IN_HEAP);
                    periodic.push(entry);
                } else {
                    due.push_back(entry);
                }
            }
        }
        EventCounters::add_under_queue_lock(&core.events.cancelled, periodic.len());
        Detached::cancel_armed(periodic)
    }

    /// One-shot timers come back as tasks that fire them (after the immediate tasks: those
    /// already due, then the armed ones, earliest first); periodic ones are cancelled.
    fn on_shutdown_now(
        core: &Arc<ScheduledCore>,
        wheel: &mut LockedTimers,
        taken: &mut Vec<RawTask>,
    ) -> Self::Detached {
        HandleShares::give_up_spares(core);
        let timers = core.between.take_all(wheel);
        taken.reserve_exact(timers.len());
        let mut periodic = Vec::new();
        for entry in timers {
            entry.header().set_heap_index(NOT_IN_HEAP);
            if entry.is_periodic() {
                periodic.push(entry);
            } else {
                taken.push(RawTask::new(Fire {
                    entry: Some(entry),
                    core: Arc::clone(core),
                }));
            }
        }
        EventCounters::add_under_queue_lock(&core.events.cancelled, periodic.len());
        Detached::cancel_armed(periodic)
    }

    fn finish_cancelled(lifecycle: &WorkerLifecycle, periodic: Detached) {
        periodic.finish(lifecycle);
    }

    /// Leftover timers are unreachable in a correct run (the worker exits only once the wheel
    /// is empty, and `shutdown_now` empties it), but a handle must never wait forever.
    fn take_leftovers(&self, wheel: &mut LockedTimers) -> Self::Detached {
        Detached(
            self.take_all(wheel)
                .into_iter()
                .map(|entry| (entry, None))
                .collect(),
        )
    }

    fn cancel_leftovers(lifecycle: &WorkerLifecycle, leftovers: Detached) {
        leftovers.finish(lifecycle);
    }
}
