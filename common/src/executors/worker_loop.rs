//! The worker loop of `ExecutorCore`, for both executors: run the batch, let `B` do its work
//! between batches (timers), refill the batch from the ring, spin, park, trim when idle.
//!
//! The protocol (claim, park and wake-up, trim) is described in `README.md` beside this file.

use crate::collections::ring::MIN_TRIM_CAPACITY;
use crate::executors::between_batches::BetweenBatches;
use crate::executors::executor_core::{ExecutorCore, QueueState, RUNNING, SHUTDOWN, STOP};
use crate::executors::executor_counters::BusySpan;
use crate::executors::gathering::Gathering;
use crate::executors::task_batch::Claim;
use crate::executors::worker_lifecycle::log_guarded;
use crate::idle_spin;
use crate::sync::{Arc, Ordering};
use std::time::Instant;

impl<B: BetweenBatches> ExecutorCore<B> {
    /// The worker thread's body.
    pub(crate) fn run_worker(this: &Arc<Self>) {
        let Some(_worker) = this.lifecycle.enter_worker() else {
            return; // another thread runs this executor's worker loop
        };
        // Signals termination however the loop ends (it only ends by returning, since task
        // panics are caught; the guard keeps that true if the loop ever gains a panic path).
        struct Terminator<'a, B: BetweenBatches>(&'a ExecutorCore<B>);
        impl<B: BetweenBatches> Drop for Terminator<'_, B> {
            fn drop(&mut self) {
                let mut queue = self.0.queue.lock();
                self.0.lifecycle.mark_terminated(&mut queue.run);
            }
        }
        let _terminator = Terminator(&**this);
        this.parker.register_current();
        #[cfg(not(loom))]
        crate::park_lock::prepare_parking();
        let mut busy = BusySpan::begin();
        let mut gathering = Gathering::new();
        loop {
            Self::run_batch(this);
            if !Self::refill_batch(this, &mut busy, &mut gathering) {
                busy.end(&this.worker_counters);
                return;
            }
        }
    }

    /// Claims and runs the batch one task at a time (`shutdown_now` may steal the rest), with
    /// `B`'s work after each task and after the batch.
    #[inline]
    fn run_batch(this: &Arc<Self>) {
        loop {
            // SAFETY: this is the worker (or, under loom, the one thread driving it); it
            // refills or releases the batch only in `take_ready` / `trim_idle`, after this loop.
            let task = match unsafe { this.batch.claim() } {
                Claim::Task(task) => task,
                Claim::Exhausted => break,
                Claim::Contested => {
                    // A `shutdown_now` raced the claim: its steal is done once its lock is free.
                    let _queue = this.queue.lock();
                    // SAFETY: the worker, right after a contested claim, under the queue lock.
                    match unsafe { this.batch.settle_contested() } {
                        Some(task) => task,
                        None => break,
                    }
                }
            };
            this.worker_counters.record(this.lifecycle.run_task(task));
            B::after_task(this);
        }
        B::after_batch(this);
    }

    /// Moves what is ready into the (empty) batch: the queued tasks, then what `B` takes
    /// (timers due now). Returns whether there is anything to run. Caller holds the queue lock.
    fn take_ready(&self, queue: &mut QueueState<B::Locked>) -> bool {
        let took_tasks = !queue.ring.is_empty();
        if took_tasks {
            // O(1): the producers get the batch's (empty) storage back.
            // SAFETY: the worker, under the queue lock, with the batch exhausted (`run_batch`'s
            // claim loop ended before this).
            unsafe { self.batch.refill(&mut queue.ring) };
            self.has_work.store(false, Ordering::Release);
            self.note_capacity(queue);
        }
        B::take_ready(self, queue, took_tasks)
    }

    /// Fills the (empty) batch, waiting for work (or for `B`'s next deadline) if there is
    /// none. Returns `false` when the worker must exit. `busy` ends when the worker runs dry
    /// and resumes when it finds work again.
    fn refill_batch(this: &Arc<Self>, busy: &mut BusySpan, gathering: &mut Gathering) -> bool {
        let mut spun = false;
        let mut trimmed = false;
        let mut idle_since: Option<Instant> = None;
        // Look without the lock first: while the ring stays empty the worker spins on its own
        // line and leaves the producers' lock line alone (unless `B` may have work due).
        if !this.work_hint() && !this.between.look_first() {
            busy.end(&this.worker_counters);
            this.spin_for_work();
            spun = true;
        }
        // Work queued again right after a small take: the producer may be mid-burst, and
        // waiting a moment lets it push uncontended (`gathering.rs`).
        if this.work_hint() && gathering.begins(idle_spin::is_fully_warm) {
            gathering.gather(
                Instant::now,
                || this.queue.submitted_hint(),
                || this.lifecycle.run_state_hint() != RUNNING,
            );
        }
        'lock: loop {
            let mut queue = this.queue.lock();
            loop {
                if queue.run >= STOP {
                    return false;
                }
                let queued = queue.ring.len();
                if this.take_ready(&mut queue) {
                    gathering.took(queued);
                    busy.resume();
                    return true;
                }
                if !B::has_pending(&queue.between) {
                    this.between.note_idle(&queue.between);
                    if queue.run == SHUTDOWN {
                        return false;
                    }
                }
                if !spun {
                    break;
                }
                // Park. The flag is set under the same lock producers push under, after the
                // queue was seen empty under it: no wake-up can be lost. Work of `B` that
                // changes how long to sleep (an earlier timer) wakes the worker the same way.
                busy.end(&this.worker_counters);
                // The clock is read on every park, even where no timeout needs it: a build
                // that read it only for the trim's deadline made the K=256, 8-submitter
                // hand-off ~12% slower (ours ÷ the fastest peer 0.70x -> 0.79x, three A/Bs of
                // alternated processes, 2026-12-03; a build reading it once per idle period:
                // 0.75x). Why is not understood: the read holds the queue lock ~30 ns longer
                // before the worker flags itself parked, and that row's time per batch moves
                // with small changes of the worker's timing between batches.
                let now = Instant::now();
                let idle_since = *idle_since.get_or_insert(now);
                // A timed park costs the worker more than a plain one (the kernel arms and
                // cancels a timer on every wait): only a worker holding more than its resting
                // queues waits with the idle trim's timeout.
                let trim_at = match this.idle_trim_after {
                    Some(idle) if !trimmed && this.holds_idle_memory(&queue) => {
                        idle_since.checked_add(idle)
                    }
                    _ => None,
                };
                let wake_at = match (B::wake_at(&queue.between), trim_at) {
                    (Some(deadline), Some(trim)) => Some(deadline.min(trim)),
                    (deadline, trim) => deadline.or(trim),
                };
                queue.worker_parked = true;
                drop(queue);
                this.parker.park(wake_at);
                // How long that took tells the spin policy whether spinning could have won.
                idle_spin::note_woken();
                queue = this.queue.lock();
                queue.worker_parked = false;
                if trim_at.is_some_and(|at| Instant::now() >= at)
                    && queue.ring.is_empty()
                    && queue.run == RUNNING
                {
                    let freed = this.trim_idle(&mut queue);
                    trimmed = true;
                    if freed > 0 {
                        // Logged outside the lock: a tracing layer may call this executor.
                        drop(queue);
                        // Guarded: an unwind here would end the worker loop with tasks queued.
                        log_guarded(
                            || tracing::debug!(executor = %this.name(), freed_slots = freed, "idle executor trimmed its queues"),
                        );
                        continue 'lock;
                    }
                }
            }
            drop(queue);
            busy.end(&this.worker_counters);
            this.spin_for_work();
            spun = true;
        }
    }

    /// Gives the memory of a burst back: the ring by Pulsar's rule (an empty ring goes back to
    /// 64 slots), the batch entirely (it grows back to 64 on the next swap), and what `B`
    /// holds (an empty timer wheel). Returns the slots freed.
    fn trim_idle(&self, queue: &mut QueueState<B::Locked>) -> usize {
        // SAFETY: called by the worker from `refill_batch`, under the queue lock, with the
        // batch exhausted.
        let batch = unsafe { self.batch.release() };
        let freed = queue.ring.trim() + batch + self.between.trim_idle(&mut queue.between);
        self.note_capacity(queue);
        freed
    }

    /// Whether an idle trim would give back more than the resting queues: a ring and a
    /// batch of at most [`MIN_TRIM_CAPACITY`] slots each (what a worker handed one task at a
    /// time keeps, and would allocate again at once if freed), plus what `B` holds. Caller
    /// holds the queue lock (the worker about to park; tests).
    fn holds_idle_memory(&self, queue: &QueueState<B::Locked>) -> bool {
        // SAFETY: the caller holds the queue lock, under which the batch's storage does not
        // change (`TaskBatch::capacity`'s contract).
        let batch = unsafe { self.batch.capacity() };
        queue.ring.capacity() > MIN_TRIM_CAPACITY
            || batch > MIN_TRIM_CAPACITY
            || self.between.holds_idle_memory(&queue.between)
    }

    /// Records the slots allocated now for `stats`. Caller holds the queue lock.
    fn note_capacity(&self, queue: &QueueState<B::Locked>) {
        // SAFETY: the queue lock is held.
        let capacity = queue.ring.capacity() + unsafe { self.batch.capacity() };
        self.events
            .capacity
            .store(capacity, std::sync::atomic::Ordering::Relaxed);
    }

    /// The idle spin, through `B` (the one call the worker makes to spin).
    #[inline]
    fn spin_for_work(&self) {
        self.between.spin_for_work(|| self.work_hint());
    }

    /// Whether there may be an immediate task or a state change to act on (a lock-free hint).
    #[inline]
    pub(crate) fn work_hint(&self) -> bool {
        self.has_work.load(Ordering::Relaxed) || self.lifecycle.run_state_hint() != RUNNING
    }

    /// One worker step without waiting (loom models): moves what is ready and runs it.
    /// Returns whether anything was ready.
    #[cfg(all(loom, test))]
    pub(crate) fn run_ready(this: &Arc<Self>) -> bool {
        let ready = {
            let mut queue = this.queue.lock();
            queue.run < STOP && this.take_ready(&mut queue)
        };
        Self::run_batch(this);
        ready
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::executors::between_batches::BetweenBatches;
    use crate::executors::executor_core::ExecutorCore;
    use crate::executors::{NamedThreadFactory, PulsarExecutors, ScheduledExecutor};
    use std::sync::mpsc;
    use std::time::Duration;

    /// Whether the executor's worker would park with the idle trim's timeout now.
    fn waits_for_trim<B: BetweenBatches>(core: &ExecutorCore<B>) -> bool {
        let queue = core.queue.lock();
        core.holds_idle_memory(&queue)
    }

    #[test]
    fn only_a_worker_holding_more_than_its_resting_queues_parks_with_the_trim_timeout() {
        let executor = PulsarExecutors::new_single_thread_executor();
        for value in 0..3 {
            assert_eq!(
                executor.submit(move || value).unwrap().join().unwrap(),
                value
            );
        }
        // One task at a time: a 64-slot ring and a 64-slot batch, which a trim would free
        // only for the next task to allocate again. The worker parks without a timeout.
        assert!(executor.queue_capacity() <= 128);
        assert!(!waits_for_trim(executor.core()));

        // A burst queued behind a blocked worker grows the ring past its resting size.
        let (release, blocked) = mpsc::channel::<()>();
        let (started_tx, started) = mpsc::channel();
        executor
            .execute(move || {
                started_tx.send(()).unwrap();
                blocked.recv().unwrap();
            })
            .unwrap();
        started.recv().unwrap();
        for _ in 0..1_000 {
            executor.execute(|| ()).unwrap();
        }
        assert!(waits_for_trim(executor.core()));
        release.send(()).unwrap();
        assert_eq!(executor.submit(|| 7).unwrap().join().unwrap(), 7);
        // Drained and idle, still holding the burst's storage: it waits to trim it.
        assert!(waits_for_trim(executor.core()));
    }

    #[test]
    fn a_scheduled_worker_parks_with_the_trim_timeout_while_its_timer_storage_is_held() {
        let executor = ScheduledExecutor::new(NamedThreadFactory::new("trim-test"));
        assert_eq!(executor.submit(|| 1).unwrap().join().unwrap(), 1);
        assert!(
            !waits_for_trim(executor.core()),
            "no timer yet: nothing to trim"
        );
        let timer = executor.schedule(Duration::from_secs(3600), || ()).unwrap();
        assert!(timer.cancel());
        // The wheel's storage stays allocated until an idle trim frees it.
        assert!(waits_for_trim(executor.core()));
    }
}
