//! `TimerEntry`: one delayed or periodic task — its state machine, its closure and its outcome.

use crate::executors::task_error::TaskError;
use crate::executors::thread_factory::panic_message;
use crate::sync::{fence, AtomicPtr, AtomicU16, Condvar, Mutex, MutexGuard, Ordering, UnsafeCell};
use std::panic::{self, AssertUnwindSafe};
use std::ptr::NonNull;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

/// Entry states: the low bits ([`STATE_MASK`]) of the `state` word of [`EntryHeader`]. A state
/// never goes back except `RUNNING -> SCHEDULED`, when a periodic entry is re-armed.
///
/// | state       | meaning                                           | next states (who)                                  |
/// |-------------|---------------------------------------------------|----------------------------------------------------|
/// | `SCHEDULED` | waiting: in the wheel, or due and queued to run   | `RUNNING` (the worker's claim), `CANCELLED`        |
/// | `RUNNING`   | the closure runs now                              | `DONE`, `SCHEDULED` (periodic re-arm), `CANCELLED` (periodic only) |
/// | `DONE`      | ran (or a periodic run panicked); outcome stored  | final                                              |
/// | `CANCELLED` | cancelled; the closure is dropped, not run        | final                                              |
pub(crate) const SCHEDULED: u8 = 0;
pub(crate) const RUNNING: u8 = 1;
pub(crate) const DONE: u8 = 2;
pub(crate) const CANCELLED: u8 = 3;
/// The bits of the state word that hold the state.
const STATE_MASK: u16 = 0b11;
/// Set (never cleared) by a handle about to wait for the outcome (`join`, or a `poll` that
/// left its waker): whoever makes the entry final then wakes it, under the `waiters` lock.
/// Without it, finishing an entry takes no lock.
const WAITING: u16 = 0b100;
/// Set once by the handle that takes the outcome: a second take is a misuse (a handle polled
/// again after `Ready`), reported with a panic instead of a wait that never ends.
const TAKEN: u16 = 0b1000;
/// One reference to the entry ([`TimerRef`](super::timer_ref::TimerRef)): the rest of the
/// state word (above the state and the two bits) counts them. An entry has at most two (its
/// armed side and its handle; tests clone more), far from the 4,095 the bits can count.
const REF_ONE: u16 = 0b1_0000;
/// The bits of the state word that count references.
const REF_MASK: u16 = !(REF_ONE - 1);

/// The state of a state word.
#[inline]
fn state_of(word: u16) -> u8 {
    // The mask leaves two bits: the cast keeps them.
    (word & STATE_MASK) as u8
}

/// Whether a state word holds a final state.
#[inline]
fn is_final(word: u16) -> bool {
    matches!(state_of(word), DONE | CANCELLED)
}

/// The `heap_index` of an entry that is neither in the timer heap nor in the worker's due
/// list: claimed by the worker, handed back by `shutdown_now`, or finished.
pub(crate) const NOT_IN_HEAP: u16 = u16::MAX;

/// The `heap_index` of an entry that fell due and waits in the worker's due list.
pub(crate) const IN_DUE_LIST: u16 = u16::MAX - 1;

/// The part of an entry the heap, the worker and `cancel` share, whatever the closure's type.
pub(crate) struct EntryHeader {
    /// One of [`SCHEDULED`], [`RUNNING`], [`DONE`], [`CANCELLED`], plus the [`WAITING`] and
    /// [`TAKEN`] bits and the reference count (`REF_ONE` each; see `timer_ref.rs`). Every
    /// transition is a compare-and-swap (`AcqRel`) that keeps the other bits, so exactly one of
    /// "the worker claims it" (`SCHEDULED -> RUNNING`) and "cancel wins" (`SCHEDULED ->
    /// CANCELLED`) happens, and no transition loses a reference's release. The state also says
    /// who owns the entry's closure and outcome cells (see [`TimerEntry`]).
    state: AtomicU16,
    /// Where the entry is: its slot list in the timer wheel, [`IN_DUE_LIST`] or
    /// [`NOT_IN_HEAP`]. Slot lists change only under the executor's queue lock, and the wheel
    /// updates them on every move, so `cancel` (which holds that lock) finds the entry's list
    /// and unlinks it in O(1). 16 bits (the wheel has 576 lists), so that the state, this and
    /// `done` share one word: the entry stays small. `IN_DUE_LIST` is set under the queue and due-list locks and cleared by the
    /// worker right after it popped the entry from the due list (after that lock is
    /// released); `cancel` re-checks under the due-list lock, so one that still reads
    /// `IN_DUE_LIST` finds the entry in no list and lets the entry's state decide. `Relaxed`:
    /// the locks order the moves between lists, and a stale read is handled as just said.
    heap_index: AtomicU16,
    /// `join` waits here for the outcome (with the entry's `waiters` lock). Here rather than
    /// beside that lock only to share a word with the state.
    done: Condvar,
    /// The entry's key and neighbours while it is in a slot list of the timer wheel. Only the
    /// wheel touches them, and only under the executor's queue lock (see [`WheelLinks`]).
    links: std::cell::UnsafeCell<WheelLinks>,
}

/// An armed entry's place in the timer wheel (`timer_wheel.rs`): its key and its neighbours
/// in its slot's doubly linked list. The wheel links the entries themselves, so arming and
/// cancelling a timer allocate and free nothing but the entry.
///
/// Only the wheel reads or writes these fields, and the wheel lives under the executor's queue
/// lock: every access is made by the thread holding that lock, through
/// [`EntryHeader::links`], and no reference to them outlives the wheel call that made it.
pub(crate) struct WheelLinks {
    /// Nanoseconds from the wheel's origin to the deadline.
    pub(crate) deadline: u64,
    /// Arming order, the tie-break between equal deadlines.
    pub(crate) seq: u64,
    /// The previous entry of the slot list.
    pub(crate) prev: Option<NonNull<EntryHeader>>,
    /// The next entry of the slot list: the wheel's reference to it, from
    /// `TimerRef::into_raw`.
    pub(crate) next: Option<NonNull<dyn Timer>>,
}

impl WheelLinks {
    /// The order of timers: deadline, then arming order.
    #[inline]
    pub(crate) fn key(&self) -> (u64, u64) {
        (self.deadline, self.seq)
    }
}

/// A won cancel ([`EntryHeader::try_cancel`]), to be finished with [`Timer::finish_cancel`]
/// once no lock is held.
#[must_use = "a won cancel must be finished with `Timer::finish_cancel`"]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cancellation {
    /// Whether the canceller now owns the closure (it cancelled a waiting entry). A periodic
    /// entry cancelled while it runs keeps its closure with the worker, which drops it after
    /// the run.
    owns_job: bool,
}

impl EntryHeader {
    fn new() -> Self {
        Self {
            state: AtomicU16::new(u16::from(SCHEDULED) | REF_ONE),
            heap_index: AtomicU16::new(NOT_IN_HEAP),
            done: Condvar::new(),
            links: std::cell::UnsafeCell::new(WheelLinks {
                deadline: 0,
                seq: 0,
                prev: None,
                next: None,
            }),
        }
    }

    /// The wheel's links of this entry.
    ///
    /// # Safety
    ///
    /// The caller is the timer wheel, holding the executor's queue lock (the only lock under
    /// which the links are touched), and holds no other reference to these links while it
    /// uses the one returned.
    #[allow(unsafe_code, clippy::mut_from_ref)]
    #[inline]
    pub(crate) unsafe fn links(&self) -> &mut WheelLinks {
        // SAFETY: the caller's contract: one thread at a time (the queue lock's holder), and
        // no other reference to the links alive meanwhile.
        unsafe { &mut *self.links.get() }
    }

    /// The state, without the waiter bits and the count.
    pub(crate) fn state(&self) -> u8 {
        state_of(self.state.load(Ordering::Acquire))
    }

    // ---- the reference count (see `timer_ref.rs`) ----------------------------------------

    /// One more reference to an entry no other thread can see yet (a plain load and store).
    pub(super) fn add_unshared_ref(&self) {
        let word = self.state.load(Ordering::Relaxed);
        self.state.store(word + REF_ONE, Ordering::Relaxed);
    }

    /// One more reference, made from one the caller holds (tests).
    #[cfg(test)]
    pub(super) fn add_ref(&self) {
        // Checked before the add, which would carry out of the word at the limit.
        assert!(
            self.state.load(Ordering::Relaxed) & REF_MASK != REF_MASK,
            "too many references to a timer"
        );
        self.state.fetch_add(REF_ONE, Ordering::Relaxed);
    }

    /// References that exist now (tests).
    #[cfg(all(test, not(loom)))]
    pub(super) fn ref_count(&self) -> usize {
        usize::from((self.state.load(Ordering::Acquire) & REF_MASK) / REF_ONE)
    }

    /// Lets go of one reference; `true` if it was the last, in which case every access through
    /// the others happened before this returned and the caller frees the entry.
    #[inline]
    pub(super) fn release_ref(&self) -> bool {
        // Alone: no other reference exists and none can be made, so no read-modify-write is
        // needed (the acquire load synchronises with the other references' releases).
        if self.state.load(Ordering::Acquire) & REF_MASK == REF_ONE {
            return true;
        }
        if self.state.fetch_sub(REF_ONE, Ordering::Release) & REF_MASK != REF_ONE {
            return false;
        }
        fence(Ordering::Acquire);
        true
    }

    /// `SCHEDULED -> CANCELLED` and one reference let go, in one compare-and-swap (see
    /// `TimerRef::cancel_unlinked`). `None`, nothing changed, if the entry was not `SCHEDULED`.
    pub(super) fn cancel_releasing_ref(&self) -> Option<Cancellation> {
        let mut word = self.state.load(Ordering::Acquire);
        loop {
            if state_of(word) != SCHEDULED {
                return None;
            }
            debug_assert!(
                word & REF_MASK > REF_ONE,
                "the caller holds another reference"
            );
            let next = ((word & !STATE_MASK) | u16::from(CANCELLED)) - REF_ONE;
            match self
                .state
                .compare_exchange(word, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(Cancellation { owns_job: true }),
                Err(actual) => word = actual,
            }
        }
    }

    /// Caller holds the queue lock (or the due-list lock, to tell `IN_DUE_LIST` from a claim).
    pub(crate) fn heap_index(&self) -> u16 {
        self.heap_index.load(Ordering::Relaxed)
    }

    /// Caller holds the queue lock (heap moves) or the due-list lock (the due list).
    pub(crate) fn set_heap_index(&self, index: u16) {
        self.heap_index.store(index, Ordering::Relaxed);
    }

    /// `from -> to`, keeping the waiter bits. Returns the word it replaced, or `None` if the
    /// state was not `from`.
    fn transition(&self, from: u8, to: u8) -> Option<u16> {
        let mut word = self.state.load(Ordering::Acquire);
        loop {
            if state_of(word) != from {
                return None;
            }
            let next = (word & !STATE_MASK) | u16::from(to);
            match self
                .state
                .compare_exchange(word, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(word),
                Err(actual) => word = actual,
            }
        }
    }

    /// `SCHEDULED -> RUNNING`: the worker's claim; the worker then owns the closure.
    fn try_start(&self) -> bool {
        self.transition(SCHEDULED, RUNNING).is_some()
    }

    /// `SCHEDULED -> CANCELLED`, or `RUNNING -> CANCELLED` for a periodic entry (its current
    /// run finishes; it is not run again). `Some` if this call cancelled the entry; the caller
    /// must then pass it to [`Timer::finish_cancel`].
    pub(crate) fn try_cancel(&self, periodic: bool) -> Option<Cancellation> {
        if self.transition(SCHEDULED, CANCELLED).is_some() {
            return Some(Cancellation { owns_job: true });
        }
        (periodic && self.transition(RUNNING, CANCELLED).is_some())
            .then_some(Cancellation { owns_job: false })
    }

    /// `RUNNING -> SCHEDULED`: re-arms a periodic entry that just ran (its closure back in
    /// place: from here the next claim or cancel owns it). Fails if it was cancelled
    /// meanwhile. Caller holds the queue lock (so that a cancel, which also takes it, finds the
    /// entry either still running or back in the heap).
    pub(crate) fn try_rearm(&self) -> bool {
        self.transition(RUNNING, SCHEDULED).is_some()
    }
}

/// How a periodic entry repeats.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Period {
    /// Each run is due `period` after the previous run was due (runs that fell behind follow
    /// each other at once, catching up, as in Java's `scheduleAtFixedRate`).
    FixedRate(Duration),
    /// Each run is due `delay` after the previous run ended.
    FixedDelay(Duration),
}

/// A closure an entry runs: once (`schedule`) or repeatedly (the periodic kinds).
///
/// A periodic job carries its own period and the deadline it was last armed for, so that a
/// one-shot entry (the common case) has no room for them: the entry stays small enough for
/// the allocator's cheapest size classes (see `entry_sizes` in the tests below).
pub(crate) trait TimerJob: Send + 'static {
    /// What one run produces.
    type Output: Send + 'static;

    /// Whether the job runs again after a run (the periodic kinds).
    const PERIODIC: bool;

    /// Runs the job once, catching a panic. A job that may run again comes back (even after a
    /// panic, so that the entry decides where it is dropped).
    fn run_once(self) -> (thread::Result<Self::Output>, Option<Self>)
    where
        Self: Sized;

    /// The deadline of the next run, `now` being when the last run ended; the job remembers it
    /// (fixed-rate periods count from the previous deadline). Only periodic jobs are asked.
    fn next_deadline(&mut self, now: Instant) -> Instant;
}

/// A closure run once (`schedule`).
pub(crate) struct Once<F>(pub(crate) F);

impl<F, R> TimerJob for Once<F>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    type Output = R;
    const PERIODIC: bool = false;

    fn run_once(self) -> (thread::Result<R>, Option<Self>) {
        (panic::catch_unwind(AssertUnwindSafe(self.0)), None)
    }

    fn next_deadline(&mut self, now: Instant) -> Instant {
        debug_assert!(false, "a one-shot entry is never re-armed");
        now
    }
}

/// A closure run repeatedly (`schedule_at_fixed_rate`, `schedule_with_fixed_delay`), with how
/// it repeats.
pub(crate) struct Repeating<F> {
    /// The caller's closure.
    pub(crate) f: F,
    period: Period,
    /// The deadline the entry was last armed for (fixed-rate periods count from it).
    deadline: Instant,
}

impl<F> Repeating<F> {
    /// `f`, first due at `deadline`, then repeating by `period`.
    pub(crate) fn new(f: F, deadline: Instant, period: Period) -> Self {
        Self {
            f,
            period,
            deadline,
        }
    }
}

impl<F> TimerJob for Repeating<F>
where
    F: FnMut() + Send + 'static,
{
    type Output = ();
    const PERIODIC: bool = true;

    fn run_once(mut self) -> (thread::Result<()>, Option<Self>) {
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| (self.f)()));
        (outcome, Some(self))
    }

    fn next_deadline(&mut self, now: Instant) -> Instant {
        self.deadline = match self.period {
            Period::FixedRate(period) => add_saturating(self.deadline, period),
            Period::FixedDelay(delay) => add_saturating(now, delay),
        };
        self.deadline
    }
}

/// One delayed or periodic task. Shared (`TimerRef`) by the timer wheel (or the worker's due list)
/// and the task's [`ScheduledHandle`](crate::executors::ScheduledHandle): one allocation holds
/// the closure, the state and the outcome.
///
/// # Who owns the cells
///
/// The closure and the outcome share one plain cell (`slot`: the closure until the worker takes
/// it to run, the outcome after; never both, so they need no room side by side); the state word
/// says who may touch it, so neither a cancel nor a fire takes a lock:
///
/// - the closure (`Slot::Job`) sits there while the entry is `SCHEDULED`. Whoever moves the entry out
///   of `SCHEDULED` owns it: the worker's claim (`RUNNING`: it takes the closure and runs it,
///   and a periodic one puts it back before its re-arm, `RUNNING -> SCHEDULED`, publishes it)
///   or a cancel (which takes it and drops it). A periodic entry cancelled while it runs
///   (`RUNNING -> CANCELLED`) leaves the closure with the worker, which drops it after the
///   run. An entry never armed (its schedule was rejected) is its maker's alone.
/// - the outcome (`Slot::Outcome`): written only by the worker while the entry is `RUNNING`, before the
///   transition to `DONE` publishes it (`Release`); read only by the handle, after it saw
///   `DONE` (`Acquire`) and set `TAKEN` (so at most once). A cancelled entry's outcome is
///   `Cancelled` by its state alone: nothing is stored.
///
/// `waiters` (a leaf lock) and `done` serve only handles that wait: one that waits sets
/// `WAITING` under the lock before it sleeps, and whoever makes the entry final sees the bit
/// in the word its transition replaced and wakes it under the same lock, so no wake-up is
/// lost and none is made when nobody waits. No user code runs under the lock (the waker is
/// woken after it). The lock and the waker it guards are allocated by the first wait
/// ([`Waiters`]): most timers are cancelled or fire with nobody waiting, and their entries
/// stay 16 bytes smaller (see the size test below).
pub(crate) struct TimerEntry<J: TimerJob> {
    header: EntryHeader,
    /// The closure, then the outcome (see the ownership rules above).
    slot: UnsafeCell<Slot<J>>,
    /// The waiters' lock and the waker of the handle's last `Pending` poll: null until the
    /// first wait installs them (see [`Waiters`]); freed with the entry.
    waiters: AtomicPtr<Waiters>,
}

/// What a waiting handle needs beside the state word: the leaf lock `done` waits with, and the
/// waker of the last `Pending` poll, woken with the outcome. Boxed, and installed in the entry
/// by the first wait (a compare-and-swap from null: the loser frees its box). Never removed
/// until the entry drops, so a pointer read from `waiters` stays valid while the entry lives.
///
/// Ordering: a waiter installs the box (release) before it takes its lock and sets `WAITING`
/// (acquire-release); whoever finishes the entry reads `WAITING` in the word its transition
/// replaced (acquire-release), so its load of `waiters` afterwards sees the box.
type Waiters = Mutex<Option<Waker>>;

// SAFETY: the cell is never accessed concurrently: the state word (compare-and-swap
// transitions with acquire/release ordering) gives each access to `slot` to one
// thread at a time, as the type's documentation sets out, and whoever takes a value out of a
// cell may be another thread than the one that put it in: hence `J: Send` and
// `J::Output: Send` (both required by `TimerJob`). No `&J` or `&J::Output` is ever shared
// between threads, so neither needs `Sync`. The header's wheel links are touched only under
// the queue lock (see `WheelLinks`), which orders every access to them.
#[allow(unsafe_code)]
unsafe impl<J: TimerJob> Sync for TimerEntry<J> {}

// SAFETY: every field but the header's wheel links is `Send` when `J` and `J::Output` are
// (both required by `TimerJob`). The links are pointers to other entries, which are `Send +
// Sync` themselves (`Timer`'s bounds), used only by the wheel under the queue lock, whatever
// thread holds it.
#[allow(unsafe_code)]
unsafe impl<J: TimerJob> Send for TimerEntry<J> {}

/// What an entry's cell holds: the closure until the worker takes it to run (or a cancel takes
/// it to drop it), the outcome of a run that made the entry `DONE` until the handle takes it.
enum Slot<J: TimerJob> {
    Job(J),
    Outcome(Result<J::Output, TaskError>),
    Empty,
}

impl<J: TimerJob> Slot<J> {
    /// Takes the closure out, leaving the cell empty (`None`, untouched, if it holds none).
    fn take_job(&mut self) -> Option<J> {
        match std::mem::replace(self, Slot::Empty) {
            Slot::Job(job) => Some(job),
            other => {
                *self = other;
                None
            }
        }
    }
}

impl<J: TimerJob> TimerEntry<J> {
    pub(crate) fn new(job: J) -> Self {
        Self {
            header: EntryHeader::new(),
            slot: UnsafeCell::new(Slot::Job(job)),
            waiters: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The waiters' lock, installed first if no wait did yet. Only a waiting handle and a
    /// finisher that saw `WAITING` (which a waiter sets under this lock) take it.
    #[allow(unsafe_code)]
    pub(super) fn waiters(&self) -> MutexGuard<'_, Option<Waker>> {
        let mut installed = self.waiters.load(Ordering::Acquire);
        if installed.is_null() {
            let fresh = Box::into_raw(Box::new(Mutex::new(None)));
            match self.waiters.compare_exchange(
                std::ptr::null_mut(),
                fresh,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => installed = fresh,
                Err(theirs) => {
                    // SAFETY: `fresh` came from `Box::into_raw` above and was never shared
                    // (the exchange failed): this is its only owner.
                    drop(unsafe { Box::from_raw(fresh) });
                    installed = theirs;
                }
            }
        }
        // SAFETY: `installed` is non-null, made by `Box::into_raw` and published by the
        // exchange (acquire here); it is freed only by the entry's `Drop`, which cannot run
        // while `&self` is borrowed, so it outlives the returned guard.
        unsafe { &*installed }.lock()
    }

    /// Takes the closure back out of an entry that was never armed (its schedule was rejected).
    pub(crate) fn take_job(&self) -> Option<J> {
        // SAFETY: the entry was never armed, so no other thread has seen it: its maker owns
        // the cell.
        #[allow(unsafe_code)]
        self.slot.with_mut(|slot| unsafe { (*slot).take_job() })
    }

    /// Takes the closure out of its cell. The caller owns the cell (see the type's docs): the
    /// worker after its claim, or the canceller of a waiting entry.
    #[allow(unsafe_code)]
    fn take_owned_job(&self) -> Option<J> {
        // SAFETY: the caller owns `job` by the state it moved the entry to (documented at each
        // call); nobody else touches it until the state moves on again.
        self.slot.with_mut(|slot| unsafe { (*slot).take_job() })
    }

    /// Stores the outcome of the run that is about to make the entry `DONE`, and makes it
    /// `DONE` (waking a waiting handle). Returns whether it did: a periodic entry cancelled
    /// during its run stays `CANCELLED` (its stored outcome is then never read). Worker only,
    /// in `RUNNING`.
    fn complete(&self, outcome: Result<J::Output, TaskError>) -> bool {
        // SAFETY: the worker owns the cell while the entry is `RUNNING` (this call's
        // precondition; the closure is out of it, taken for the run); the handle reads it only
        // after the transition below publishes it.
        #[allow(unsafe_code)]
        self.slot
            .with_mut(|slot| unsafe { *slot = Slot::Outcome(outcome) });
        match self.header.transition(RUNNING, DONE) {
            Some(replaced) => {
                self.wake_waiters(replaced);
                true
            }
            None => false,
        }
    }

    /// After the transition that made the entry final replaced `replaced`: wakes the handle's
    /// `join` and its waker if it was waiting.
    fn wake_waiters(&self, replaced: u16) {
        if replaced & WAITING == 0 {
            return;
        }
        let waker = {
            // A waiter set `WAITING`, so its box is installed (see `Waiters`).
            let mut waiters = self.waiters();
            self.header.done.notify_all();
            waiters.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Takes the outcome of an entry seen final. The `TAKEN` bit makes this the only take.
    ///
    /// # Panics
    ///
    /// If the outcome was taken already (a handle polled again after `Ready`).
    fn take_outcome(&self) -> Result<J::Output, TaskError> {
        let word = self.header.state.fetch_or(TAKEN, Ordering::AcqRel);
        assert!(
            word & TAKEN == 0,
            "a scheduled handle polled after it returned Ready"
        );
        match state_of(word) {
            CANCELLED => Err(TaskError::Cancelled),
            DONE => {
                // SAFETY: `DONE` was published (release) after the worker's last write of
                // `outcome` and read here (acquire); nobody writes it after `DONE`, and the
                // `TAKEN` bit just set makes this the only read.
                #[allow(unsafe_code)]
                let slot = self
                    .slot
                    .with_mut(|slot| unsafe { std::mem::replace(&mut *slot, Slot::Empty) });
                match slot {
                    Slot::Outcome(outcome) => outcome,
                    _ => unreachable!("a done entry holds its outcome"),
                }
            }
            _ => unreachable!("the outcome is taken only once the entry is final"),
        }
    }

    /// Sets `WAITING` (the caller holds `waiters`); returns whether the entry is final, in
    /// which case nobody will wake the caller and it must not wait.
    fn announce_waiting(&self) -> bool {
        is_final(self.header.state.fetch_or(WAITING, Ordering::AcqRel))
    }

    /// The `Future::poll` of the entry's handle: takes the outcome if it is there, else
    /// leaves the waker to be woken with it.
    ///
    /// # Panics
    ///
    /// If the outcome was taken already (polled again after `Ready`).
    fn poll(&self, cx: &mut Context<'_>) -> Poll<Result<J::Output, TaskError>> {
        if !is_final(self.header.state.load(Ordering::Acquire)) {
            // A waker's clone and drop are user code (its vtable): both run outside the
            // `waiters` lock, so a waker that calls back into this handle cannot deadlock.
            // Only this poller stores a waker (the handle is polled through `&mut`), so the
            // one it finds here is still there below unless the entry was made final
            // meanwhile (whoever does takes it), which `announce_waiting` then reports.
            let stored = matches!(&*self.waiters(), Some(waker) if waker.will_wake(cx.waker()));
            let fresh = (!stored).then(|| cx.waker().clone());
            let (pending, replaced) = {
                let mut waiters = self.waiters();
                let replaced = fresh.and_then(|fresh| waiters.replace(fresh));
                (!self.announce_waiting(), replaced)
            };
            drop(replaced);
            if pending {
                return Poll::Pending;
            }
        }
        Poll::Ready(self.take_outcome())
    }

    /// Waits for the outcome until `deadline` (`None`: no limit) and takes it.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> Option<Result<J::Output, TaskError>> {
        if !is_final(self.header.state.load(Ordering::Acquire)) {
            let mut waiters = self.waiters();
            while !self.announce_waiting() {
                match deadline {
                    None => waiters = self.header.done.wait(waiters),
                    Some(deadline) => {
                        let left = deadline.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            return None;
                        }
                        waiters = self.header.done.wait_timeout(waiters, left).0;
                    }
                }
            }
        }
        Some(self.take_outcome())
    }
}

impl<J: TimerJob> Drop for TimerEntry<J> {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // Under loom, freeing the entry is an access to its cell, checked against the others
        // (the worker's write of the outcome, say): a reference count that failed to order
        // them before the free shows as a race.
        #[cfg(loom)]
        self.slot.with_mut(|_| ());
        let installed = self.waiters.load(Ordering::Acquire);
        if !installed.is_null() {
            // SAFETY: made by `Box::into_raw` in `waiters` and never freed before; the entry is
            // being dropped (`&mut self`), so nothing else can reach the box any more.
            drop(unsafe { Box::from_raw(installed) });
        }
    }
}

/// What one [`Timer::fire`] did (the worker counts it in the executor's statistics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fired {
    /// Not run: the entry had been cancelled.
    Skipped,
    /// Ran, and is done (a one-shot, or a periodic one cancelled during its run).
    Done,
    /// A periodic entry ran and must be re-armed (or cancelled) by the caller.
    Again,
    /// Ran and panicked; it is done.
    Panicked,
}

/// The face of an entry that the heap, the worker and `shutdown` see, whatever its closure.
pub(crate) trait Timer: Send + Sync + 'static {
    /// The state and heap position.
    fn header(&self) -> &EntryHeader;

    /// Whether the entry repeats.
    fn is_periodic(&self) -> bool;

    /// Runs the entry once if it is still `SCHEDULED` (else does nothing: it was cancelled,
    /// [`Fired::Skipped`]).
    ///
    /// Returns [`Fired::Again`] when a periodic entry ran without panicking and should run
    /// again: its state is still `RUNNING`, its closure back in place, and the caller must
    /// re-arm it (`try_rearm` + heap push) or cancel it and [`discard_job`](Self::discard_job). A panicking periodic run completes the entry with the panic and
    /// returns [`Fired::Panicked`]: it stops repeating.
    fn fire(&self) -> Fired;

    /// After a won [`EntryHeader::try_cancel`]: drops the closure if the cancel owns it (the
    /// worker drops a running periodic entry's after the run) and wakes a waiting handle,
    /// which reports [`TaskError::Cancelled`]. Call without holding the queue lock: dropping
    /// the closure runs user code.
    fn finish_cancel(&self, cancellation: Cancellation);

    /// Drops the closure of a periodic entry whose run just ended and that will not run again
    /// (cancelled during the run, or stopped by a shutdown). Worker only: it owns the closure
    /// of an entry it claimed until a re-arm hands it back.
    fn discard_job(&self);

    /// For a periodic entry that just ran: its next deadline (fixed rate: the previous deadline
    /// plus the period; fixed delay: `now` plus the delay), which it also records. Worker
    /// only, before the re-arm.
    fn next_deadline(&self, now: Instant) -> Instant;
}

impl<J: TimerJob> Timer for TimerEntry<J> {
    fn header(&self) -> &EntryHeader {
        &self.header
    }

    fn is_periodic(&self) -> bool {
        J::PERIODIC
    }

    fn fire(&self) -> Fired {
        if !self.header.try_start() {
            return Fired::Skipped;
        }
        // The claim makes the worker the closure's owner.
        let Some(job) = self.take_owned_job() else {
            // Unreachable: a SCHEDULED entry holds its closure, and only its owner takes it.
            debug_assert!(false, "a claimed entry had no closure");
            return Fired::Skipped;
        };
        let (outcome, again) = job.run_once();
        match outcome {
            Ok(value) if !J::PERIODIC => {
                let completed = self.complete(Ok(value));
                debug_assert!(
                    completed,
                    "only a periodic entry is cancelled while it runs"
                );
                Fired::Done
            }
            Ok(_) => {
                if self.header.state() == CANCELLED {
                    // Cancelled during the run: the closure stayed with the worker.
                    drop(again);
                    return Fired::Done;
                }
                // Put the closure back for the re-arm (still the worker's until the re-arm's
                // `RUNNING -> SCHEDULED`; a cancel that comes first leaves it to the worker,
                // which then drops it: `discard_job`).
                if let Some(again) = again {
                    // SAFETY: the worker owns the cell while the entry is `RUNNING` or was
                    // cancelled from `RUNNING` (see the type's docs).
                    #[allow(unsafe_code)]
                    self.slot
                        .with_mut(|slot| unsafe { *slot = Slot::Job(again) });
                }
                Fired::Again
            }
            Err(payload) => {
                let log = J::PERIODIC.then(|| panic_message(payload.as_ref()).to_owned());
                // The entry is made final first: the log (a tracing layer) and the closure's
                // drop are user code and may panic too, and an entry left `RUNNING` would
                // keep its handle waiting forever. A periodic entry cancelled during the run
                // stays cancelled.
                self.complete(Err(TaskError::panicked(payload)));
                if let Some(panic) = log {
                    tracing::error!(
                        thread = thread::current().name().unwrap_or("<unnamed>"),
                        panic,
                        "a periodic task panicked; it will not run again"
                    );
                }
                drop(again);
                Fired::Panicked
            }
        }
    }

    fn finish_cancel(&self, cancellation: Cancellation) {
        // The cancel's own transition made the entry final; its `WAITING` bit is in the word
        // now (bits are never cleared), so a handle that announced itself before is woken.
        let job = if cancellation.owns_job {
            // A cancel from `SCHEDULED` owns the closure (see the type's docs).
            self.take_owned_job()
        } else {
            None
        };
        self.wake_waiters(self.header.state.load(Ordering::Acquire));
        drop(job);
    }

    fn discard_job(&self) {
        drop(self.take_owned_job());
    }

    fn next_deadline(&self, now: Instant) -> Instant {
        // SAFETY: worker only, while it owns the closure: `RUNNING`, or cancelled from
        // `RUNNING` (the caller's contract).
        #[allow(unsafe_code)]
        self.slot.with_mut(|slot| match unsafe { &mut *slot } {
            Slot::Job(job) => job.next_deadline(now),
            _ => now,
        })
    }
}

/// `start + delay`, or a deadline so far away that it never comes when that overflows.
pub(crate) fn add_saturating(start: Instant, delay: Duration) -> Instant {
    start
        .checked_add(delay)
        .or_else(|| start.checked_add(FAR_FUTURE))
        .unwrap_or(start)
}

/// About a century: the deadline of a delay too large to represent.
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// The face of an entry that its handle sees: the timer plus a typed outcome.
pub(crate) trait EntryOutcome<R>: Timer {
    /// Waits for the outcome until `deadline` (`None`: no limit) and takes it; `None` on
    /// timeout.
    fn wait_outcome(&self, deadline: Option<Instant>) -> Option<Result<R, TaskError>>;

    /// Takes the outcome if it is there, else registers the waker (see `TimerEntry::poll`).
    fn poll_outcome(&self, cx: &mut Context<'_>) -> Poll<Result<R, TaskError>>;
}

impl<J: TimerJob> EntryOutcome<J::Output> for TimerEntry<J> {
    fn wait_outcome(&self, deadline: Option<Instant>) -> Option<Result<J::Output, TaskError>> {
        self.wait(deadline)
    }

    fn poll_outcome(&self, cx: &mut Context<'_>) -> Poll<Result<J::Output, TaskError>> {
        self.poll(cx)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn installed(entry: &TimerEntry<Once<fn() -> u32>>) -> *mut Waiters {
        entry.waiters.load(Ordering::Acquire)
    }

    fn seven() -> u32 {
        7
    }

    #[test]
    fn an_entry_nobody_waits_for_allocates_no_waiters() {
        let entry = TimerEntry::new(Once(seven as fn() -> u32));
        let cancellation = entry.header().try_cancel(false).expect("scheduled");
        entry.finish_cancel(cancellation);
        assert!(installed(&entry).is_null());
        // A wait for a final entry takes the outcome without waiting: still none.
        assert!(matches!(entry.wait(None), Some(Err(TaskError::Cancelled))));
        assert!(installed(&entry).is_null());
    }

    #[test]
    fn the_first_wait_installs_the_waiters_once_and_the_entry_frees_them() {
        let entry = TimerEntry::new(Once(seven as fn() -> u32));
        // Not final: a wait with a deadline already passed installs the lock, then times out.
        assert!(entry.wait(Some(Instant::now())).is_none());
        let first = installed(&entry);
        assert!(!first.is_null());
        assert!(entry.wait(Some(Instant::now())).is_none());
        assert_eq!(installed(&entry), first, "installed once");
        // The worker's claim and run: the waiter's bit is set, so completing takes the lock.
        assert!(matches!(entry.fire(), Fired::Done));
        assert_eq!(entry.wait(None).expect("final").expect("ran"), 7);
        // Dropping the entry frees the box (Miri reports a leak or a double free).
        drop(entry);
    }

    #[test]
    fn a_waker_left_by_a_pending_poll_is_woken_with_the_outcome() {
        struct Count(std::sync::atomic::AtomicUsize);
        impl std::task::Wake for Count {
            fn wake(self: std::sync::Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let count = std::sync::Arc::new(Count(std::sync::atomic::AtomicUsize::new(0)));
        let waker = Waker::from(std::sync::Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);
        let entry = TimerEntry::new(Once(seven as fn() -> u32));
        assert!(entry.poll(&mut cx).is_pending());
        assert!(!installed(&entry).is_null());
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
        assert!(matches!(entry.fire(), Fired::Done));
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "woken once");
        assert!(matches!(entry.poll(&mut cx), Poll::Ready(Ok(7))));
    }

    fn one_shot_entry_size<F: FnOnce() + Send + 'static>(_: &F) -> usize {
        std::mem::size_of::<TimerEntry<Once<F>>>()
    }

    /// A one-shot entry with a small closure stays at or under 120 bytes: glibc's cheapest size
    /// classes (fast bins) end there, and both allocating and freeing an entry are on every
    /// timer's path (a 136-byte block costs about three times as much to free as a 120-byte
    /// one). So periodic jobs carry their period and deadline themselves, leaving one-shot
    /// entries no room for them. The common entries keep the sizes they have since the
    /// reference count moved into the state word (2026-12-03, `timer_ref.rs`): 72 bytes with no
    /// capture (an 80-byte block with glibc's header), 88 with a 24-byte capture (96). A timer's
    /// memory is much of what the schedule + cancel bench pays (page faults of fresh memory).
    #[test]
    #[cfg(all(target_pointer_width = "64", not(miri)))]
    fn a_one_shot_entry_fits_the_allocators_fast_bins() {
        let captured = [7u64; 3];
        let nothing = one_shot_entry_size(&|| ());
        let three_words = one_shot_entry_size(&move || {
            std::hint::black_box(captured);
        });
        eprintln!("entry: {nothing} bytes (no capture), {three_words} (24-byte capture)");
        assert!(nothing <= 72, "{nothing}");
        assert!(three_words <= 88, "{three_words}");
    }
}
