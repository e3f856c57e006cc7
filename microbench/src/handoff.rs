//! The hand-off workload: a port of Pulsar's `ExecutorHandoffBenchmark.submitAndComplete`,
//! and the rig that runs it from N concurrent submitters against one executor.

use crate::alloc::{self, AllocStats};
use crate::cpu;
use crate::crew::{Crew, Job};
use crate::executors::{Executor, Submit};
use crate::latch::CountdownLatch;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a submitter waits for its batch (JMH's `latch.await(10 s)`).
pub const BATCH_TIMEOUT: Duration = Duration::from_secs(10);

/// One batch: arm the submitting thread's latch for `tasks` tasks, `tasks` `execute`s of one
/// shared task that counts it down, then wait for the latch.
///
/// As in Pulsar's benchmark, where the task is one method reference (`latch::countDown`)
/// shared by every `execute`, submitting a task costs the harness nothing: the closure is a
/// copy of one `&'static` reference to the latch. (A closure capturing an `Arc` of the latch,
/// as this harness did before, adds two read-modify-writes per task on the latch's cache line,
/// one by the submitter and one by the worker, for every executor measured; that line then
/// moves between their cores twice per task.)
///
/// # Panics
///
/// If the batch does not complete within [`BATCH_TIMEOUT`].
///
/// # Examples
///
/// ```
/// use microbench::executors::{Executor, PulsarExecutor};
/// use microbench::handoff::submit_and_complete;
///
/// let executor = PulsarExecutor::start();
/// submit_and_complete(&executor.handle(), 16);
/// executor.shutdown();
/// ```
#[inline]
pub fn submit_and_complete<H: Submit>(handle: &H, tasks: usize) {
    let latch = batch_latch();
    latch.arm(tasks);
    let count_down = move || latch.count_down();
    for _ in 0..tasks {
        handle.execute(count_down);
    }
    assert!(
        latch.wait_timeout(BATCH_TIMEOUT),
        "a batch of {tasks} tasks did not complete within {BATCH_TIMEOUT:?}"
    );
}

/// The calling thread's batch latch, re-armed for each of its batches.
///
/// Made on the thread's first batch and leaked (one latch, a few dozen bytes, per submitting
/// thread for the life of the process), so that tasks can hold a `&'static` to it: a task
/// may still be inside `count_down` (waking the waiter) after the waiter saw zero, and a
/// batch that times out leaves its tasks queued.
fn batch_latch() -> &'static CountdownLatch {
    thread_local! {
        static LATCH: &'static CountdownLatch = Box::leak(Box::new(CountdownLatch::new(0)));
    }
    LATCH.with(|latch| *latch)
}

/// What the harness itself allocates per batch on a thread that has run one: nothing (its
/// latch is made once per thread). The benches still subtract it, so that a change to the
/// harness cannot show up as the executors' allocation.
pub fn latch_cost() -> AllocStats {
    batch_latch(); // the thread's first batch makes it
    let ((), cost) = alloc::measure_thread(|| {
        let latch = std::hint::black_box(batch_latch());
        latch.arm(0);
    });
    cost
}

/// One executor with `submitters` persistent submitting threads, each with at most one batch
/// of `tasks` tasks outstanding (JMH's `-t N`), and optionally a pause after each batch (the
/// executor then goes idle between batches).
pub struct HandoffRig<E: Executor> {
    executor: Option<E>,
    crew: Option<Crew>,
    /// The rig's own handle, for reading the worker's CPU clock.
    handle: Option<E::Handle>,
    submitters: usize,
    tasks: usize,
}

impl<E: Executor> HandoffRig<E> {
    /// Starts the executor and the submitting threads, which submit batch after batch.
    pub fn start(submitters: usize, tasks: usize) -> Self {
        Self::start_paced(submitters, tasks, Duration::ZERO)
    }

    /// As [`start`](Self::start), each submitter sleeping `pause` after each batch: the
    /// worker finds its queue empty after every batch and waits for the next, so its CPU time
    /// per batch is what an executor with sparse work spends on waiting (spinning, yielding,
    /// parking and being woken). The pause is the workload here, not synchronisation.
    pub fn start_paced(submitters: usize, tasks: usize, pause: Duration) -> Self {
        let executor = E::start();
        let jobs = (0..submitters)
            .map(|_| {
                let handle = executor.handle();
                Box::new(move |iters: u64| {
                    for _ in 0..iters {
                        submit_and_complete(&handle, tasks);
                        if !pause.is_zero() {
                            std::thread::sleep(pause);
                        }
                    }
                }) as Job
            })
            .collect();
        let crew = Crew::spawn(&format!("{}-submitter", E::NAME), jobs);
        Self {
            handle: Some(executor.handle()),
            executor: Some(executor),
            crew: Some(crew),
            submitters,
            tasks,
        }
    }

    /// Every submitter completes `iters` batches; returns the wall time, which is also the
    /// time per batch as each submitter sees it, times `iters` (JMH's average time mode).
    pub fn run(&self, iters: u64) -> Duration {
        self.crew.as_ref().expect("running").run(iters)
    }

    /// Batches completed per `run` iteration (one per submitter).
    pub fn batches_per_iter(&self) -> u64 {
        self.submitters as u64
    }

    /// Tasks per batch.
    pub fn tasks(&self) -> usize {
        self.tasks
    }

    /// The CPU time the executor's worker thread has used so far, read on the worker by a
    /// task (outside any measured window: it allocates a latch, and a box for the peers).
    pub fn worker_cpu(&self) -> Option<Duration> {
        let handle = self.handle.as_ref().expect("running");
        let nanos = Arc::new(AtomicU64::new(u64::MAX));
        let latch = Arc::new(CountdownLatch::new(1));
        {
            let nanos = Arc::clone(&nanos);
            let latch = Arc::clone(&latch);
            handle.execute(move || {
                let now = cpu::thread_time().map_or(u64::MAX, |d| d.as_nanos() as u64);
                nanos.store(now, Ordering::Release);
                latch.count_down();
            });
        }
        assert!(latch.wait_timeout(BATCH_TIMEOUT), "the worker is stuck");
        match nanos.load(Ordering::Acquire) {
            u64::MAX => None,
            n => Some(Duration::from_nanos(n)),
        }
    }

    /// Task slots in the executor's queue now, where it tells.
    pub fn queue_capacity(&self) -> Option<usize> {
        self.executor.as_ref().and_then(|e| e.queue_capacity())
    }

    /// Stops the submitters and shuts the executor down, waiting for its worker.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        drop(self.crew.take());
        drop(self.handle.take());
        if let Some(executor) = self.executor.take() {
            executor.shutdown();
        }
    }
}

impl<E: Executor> Drop for HandoffRig<E> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.stop();
        }
    }
}

impl<E: Executor> fmt::Debug for HandoffRig<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandoffRig")
            .field("executor", &E::NAME)
            .field("submitters", &self.submitters)
            .field("tasks", &self.tasks)
            .finish()
    }
}
