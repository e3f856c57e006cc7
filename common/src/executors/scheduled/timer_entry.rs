//! `TimerEntry`: one delayed or periodic task — its state machine, its closure and its outcome.

use crate::executors::task_error::TaskError;
use crate::executors::thread_factory::panic_message;
use crate::sync::{AtomicU8, AtomicUsize, Condvar, Mutex, Ordering};
use std::panic::{self, AssertUnwindSafe};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

/// Entry states (the `state` field of [`EntryHeader`]). A state never goes back except
/// `RUNNING -> SCHEDULED`, when a periodic entry is re-armed.
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

/// The `heap_index` of an entry that is neither in the timer heap nor in the worker's due
/// list: claimed by the worker, handed back by `shutdown_now`, or finished.
pub(crate) const NOT_IN_HEAP: usize = usize::MAX;

/// The `heap_index` of an entry that fell due and waits in the worker's due list.
pub(crate) const IN_DUE_LIST: usize = usize::MAX - 1;

/// The part of an entry the heap, the worker and `cancel` share, whatever the closure's type.
pub(crate) struct EntryHeader {
    /// One of [`SCHEDULED`], [`RUNNING`], [`DONE`], [`CANCELLED`]. Every transition is a
    /// compare-and-swap (`AcqRel`), so exactly one of "the worker claims it" (`SCHEDULED ->
    /// RUNNING`) and "cancel wins" (`SCHEDULED -> CANCELLED`) happens.
    state: AtomicU8,
    /// Where the entry is: its slab index in the timer wheel, [`IN_DUE_LIST`] or
    /// [`NOT_IN_HEAP`]. Slab indices change only under the executor's queue lock, and the wheel
    /// updates them on every move, so `cancel` (which holds that lock) finds the entry and
    /// unlinks it in O(1). `IN_DUE_LIST` is set under the queue and due-list locks and cleared by the
    /// worker's claim under the due-list lock; `cancel` re-checks under that lock. Every
    /// access is ordered by one of those locks, hence `Relaxed`.
    heap_index: AtomicUsize,
}

impl EntryHeader {
    fn new() -> Self {
        Self {
            state: AtomicU8::new(SCHEDULED),
            heap_index: AtomicUsize::new(NOT_IN_HEAP),
        }
    }

    pub(crate) fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// Caller holds the queue lock (or the due-list lock, to tell `IN_DUE_LIST` from a claim).
    pub(crate) fn heap_index(&self) -> usize {
        self.heap_index.load(Ordering::Relaxed)
    }

    /// Caller holds the queue lock (heap moves) or the due-list lock (the due list).
    pub(crate) fn set_heap_index(&self, index: usize) {
        self.heap_index.store(index, Ordering::Relaxed);
    }

    fn transition(&self, from: u8, to: u8) -> bool {
        self.state
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// `SCHEDULED -> RUNNING`: the worker's claim.
    fn try_start(&self) -> bool {
        self.transition(SCHEDULED, RUNNING)
    }

    /// `SCHEDULED -> CANCELLED`, or `RUNNING -> CANCELLED` for a periodic entry (its current
    /// run finishes; it is not run again). Returns whether this call cancelled the entry; the
    /// caller must then call [`Timer::finish_cancel`].
    pub(crate) fn try_cancel(&self, periodic: bool) -> bool {
        if self.transition(SCHEDULED, CANCELLED) {
            return true;
        }
        periodic && self.transition(RUNNING, CANCELLED)
    }

    /// `RUNNING -> SCHEDULED`: re-arms a periodic entry that just ran. Fails if it was cancelled
    /// meanwhile. Caller holds the queue lock (so that a cancel, which also takes it, finds the
    /// entry either still running or back in the heap).
    pub(crate) fn try_rearm(&self) -> bool {
        self.transition(RUNNING, SCHEDULED)
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

/// What the entry's lock protects.
struct Body<J: TimerJob> {
    /// The closure while the entry waits; `None` while it runs and once it is done or
    /// cancelled.
    job: Option<J>,
    /// Set exactly once: the result, the panic, or `Cancelled`. `join` (or the awaiting
    /// handle) takes it.
    outcome: Option<Result<J::Output, TaskError>>,
    /// The outcome was taken: a handle polled again after `Ready` is a bug, not a wait.
    outcome_taken: bool,
    /// The waker of the handle's last poll, woken (outside the lock) with the outcome.
    waker: Option<Waker>,
}

/// One delayed or periodic task. Shared (`Arc`) by the timer heap (or the worker's batch) and
/// the task's [`ScheduledHandle`](crate::executors::ScheduledHandle): one allocation holds the
/// closure, the state and the outcome.
///
/// The entry's lock is a leaf: nothing else is locked while it is held, and no user code runs
/// under it (closures run, and are dropped, after it is released).
pub(crate) struct TimerEntry<J: TimerJob> {
    header: EntryHeader,
    body: Mutex<Body<J>>,
    /// `join` waits here for the outcome.
    done: Condvar,
}

impl<J: TimerJob> TimerEntry<J> {
    pub(crate) fn new(job: J) -> Self {
        Self {
            header: EntryHeader::new(),
            body: Mutex::new(Body {
                job: Some(job),
                outcome: None,
                outcome_taken: false,
                waker: None,
            }),
            done: Condvar::new(),
        }
    }

    /// Takes the closure back out of an entry that was never armed (its schedule was rejected).
    pub(crate) fn take_job(&self) -> Option<J> {
        self.body.lock().job.take()
    }

    /// Stores the outcome unless one is there already, and wakes `join` and an awaiting
    /// handle.
    fn complete(&self, outcome: Result<J::Output, TaskError>) {
        let waker = {
            let mut body = self.body.lock();
            if body.outcome.is_none() && !body.outcome_taken {
                body.outcome = Some(outcome);
            }
            body.waker.take()
        };
        self.notify(waker);
    }

    /// Wakes `join` and, outside the lock (it is user code), an awaiting handle's waker.
    fn notify(&self, waker: Option<Waker>) {
        self.done.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The `Future::poll` of the entry's handle: takes the outcome if it is there, else
    /// leaves the waker to be woken with it.
    ///
    /// # Panics
    ///
    /// If the outcome was taken already (polled again after `Ready`).
    fn poll(&self, cx: &mut Context<'_>) -> Poll<Result<J::Output, TaskError>> {
        let mut body = self.body.lock();
        assert!(
            !body.outcome_taken,
            "a scheduled handle polled after it returned Ready"
        );
        match body.outcome.take() {
            Some(outcome) => {
                body.outcome_taken = true;
                Poll::Ready(outcome)
            }
            None => {
                match &body.waker {
                    Some(waker) if waker.will_wake(cx.waker()) => {}
                    _ => body.waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
        }
    }

    /// Waits for the outcome until `deadline` (`None`: no limit) and takes it.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> Option<Result<J::Output, TaskError>> {
        let mut body = self.body.lock();
        loop {
            if let Some(outcome) = body.outcome.take() {
                body.outcome_taken = true;
                return Some(outcome);
            }
            match deadline {
                None => body = self.done.wait(body),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return None;
                    }
                    body = self.done.wait_timeout(body, left).0;
                }
            }
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
    /// again: its state is still `RUNNING` and the caller must re-arm it (`try_rearm` + heap
    /// push) or cancel it. A panicking periodic run completes the entry with the panic and
    /// returns [`Fired::Panicked`]: it stops repeating.
    fn fire(&self) -> Fired;

    /// After a successful [`EntryHeader::try_cancel`]: drops the closure (unless it is running,
    /// in which case the worker drops it after the run) and completes the handle with
    /// [`TaskError::Cancelled`]. Call without holding the queue lock: dropping the closure runs
    /// user code.
    fn finish_cancel(&self);

    /// For a periodic entry that just ran: its next deadline (fixed rate: the previous deadline
    /// plus the period; fixed delay: `now` plus the delay), which it also records.
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
        let job = self.body.lock().job.take();
        let Some(job) = job else {
            // Unreachable: a SCHEDULED entry holds its closure, and only the claim takes it.
            debug_assert!(false, "a claimed entry had no closure");
            return Fired::Skipped;
        };
        let (outcome, again) = job.run_once();
        match outcome {
            Ok(value) if !J::PERIODIC => {
                let _ = self.header.transition(RUNNING, DONE);
                self.complete(Ok(value));
                Fired::Done
            }
            Ok(_) => {
                // Put the closure back unless a cancel came in during the run; a cancel after
                // this point finds it in the body and drops it.
                let stale = {
                    let mut body = self.body.lock();
                    if self.header.state() == CANCELLED {
                        again
                    } else {
                        body.job = again;
                        None
                    }
                };
                let rearm = stale.is_none();
                drop(stale);
                if rearm {
                    Fired::Again
                } else {
                    Fired::Done
                }
            }
            Err(payload) => {
                if J::PERIODIC {
                    tracing::error!(
                        thread = thread::current().name().unwrap_or("<unnamed>"),
                        panic = panic_message(payload.as_ref()),
                        "a periodic task panicked; it will not run again"
                    );
                }
                drop(again);
                if self.header.transition(RUNNING, DONE) {
                    self.complete(Err(TaskError::panicked(payload)));
                }
                Fired::Panicked
            }
        }
    }

    fn finish_cancel(&self) {
        let (job, waker) = {
            let mut body = self.body.lock();
            if body.outcome.is_none() && !body.outcome_taken {
                body.outcome = Some(Err(TaskError::Cancelled));
            }
            (body.job.take(), body.waker.take())
        };
        self.notify(waker);
        drop(job);
    }

    fn next_deadline(&self, now: Instant) -> Instant {
        // The job is back in the body: the worker re-arms (under the queue lock, which a cancel
        // also takes) only after putting it back. A job taken by a cancel meanwhile leaves the
        // entry cancelled, and its deadline unused.
        self.body
            .lock()
            .job
            .as_mut()
            .map_or(now, |job| job.next_deadline(now))
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

    fn one_shot_entry_size<F: FnOnce() + Send + 'static>(_: &F) -> usize {
        std::mem::size_of::<TimerEntry<Once<F>>>()
    }

    /// A one-shot entry with a small closure, with the `Arc`'s two counts, stays at or under
    /// 120 bytes: glibc's cheapest size classes (fast bins) end there, and both allocating and
    /// freeing an entry are on every timer's path (a 136-byte block costs about three times as
    /// much to free as a 120-byte one). So periodic jobs carry their period and deadline
    /// themselves, leaving one-shot entries no room for them.
    #[test]
    #[cfg(all(target_pointer_width = "64", not(miri)))]
    fn a_one_shot_entry_fits_the_allocators_fast_bins() {
        let counts = 2 * std::mem::size_of::<usize>();
        let captured = [7u64; 3];
        let nothing = one_shot_entry_size(&|| ());
        let three_words = one_shot_entry_size(&move || {
            std::hint::black_box(captured);
        });
        eprintln!("entry: {nothing} bytes (no capture), {three_words} (24-byte capture)");
        assert!(counts + nothing <= 120, "{nothing}");
        assert!(counts + three_words <= 120, "{three_words}");
    }
}
