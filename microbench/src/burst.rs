//! Burst retention: what an executor still holds after a burst of queued tasks was drained
//! and it went idle, and what it burns while idle.

use crate::alloc;
use crate::cpu;
use crate::executors::{Executor, Submit};
use crate::handoff::submit_and_complete;
use crate::latch::CountdownLatch;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Tasks queued in one burst.
pub const BURST_TASKS: usize = 100_000;

/// Slots our executor keeps after its idle trim (Pulsar's minimum).
pub const TRIMMED_CAPACITY: usize = 64;

/// What one executor held around one burst. Bytes are live heap bytes of the whole process,
/// taken relative to the moment before the executor was made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retention {
    /// Started and warmed by one task, before the burst.
    pub held_before: i64,
    /// With the burst's tasks queued behind a blocked task.
    pub held_queued: i64,
    /// After the burst drained and the executor was idle for the idle period (ours: and had
    /// trimmed).
    pub held_after: i64,
    /// Wall time to run the queued burst, in ms.
    pub drain_ms: f64,
    /// Time from the end of the drain until our queue was trimmed, in ms (ours only).
    pub trimmed_after_ms: Option<f64>,
    /// Queue slots after the idle period (ours only).
    pub capacity_after: Option<usize>,
    /// Process CPU time per second of wall time while idle, in ms (0 = parked).
    pub idle_cpu_ms_per_s: Option<f64>,
}

impl Retention {
    /// Bytes the burst left behind: held after minus held before.
    pub fn residue(&self) -> i64 {
        self.held_after - self.held_before
    }

    /// Bytes per queued task at the peak of the burst.
    pub fn queued_bytes_per_task(&self, tasks: usize) -> f64 {
        (self.held_queued - self.held_before) as f64 / tasks as f64
    }
}

/// A gate a task waits on, opened by the bench.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    fn wait(&self) {
        let guard = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let _open = self
            .opened
            .wait_while(guard, |open| !*open)
            .unwrap_or_else(|e| e.into_inner());
    }

    fn open(&self) {
        *self.open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.opened.notify_all();
    }
}

/// Measures one burst of `tasks` tasks on a new `E`: the worker is held by a blocked task
/// while the burst is queued, then released; after the drain the executor is left idle for
/// `idle` (and, if it reports its queue capacity, until that is back to
/// [`TRIMMED_CAPACITY`], at most `idle` + 5 s), then the process's CPU time is read over
/// `cpu_window`.
///
/// # Panics
///
/// If the burst does not drain within 60 s.
pub fn measure<E: Executor>(tasks: usize, idle: Duration, cpu_window: Duration) -> Retention {
    let live = || alloc::snapshot().live_bytes();
    // Harness objects first, so that they are outside every difference.
    let gate = Arc::new(Gate::default());
    let done = Arc::new(CountdownLatch::new(tasks));
    let base = live();
    let executor = E::start();
    let handle = executor.handle();
    submit_and_complete(&handle, 1);
    let held_before = live() - base;

    let blocker = Arc::clone(&gate);
    handle.execute(move || blocker.wait());
    for _ in 0..tasks {
        let done = Arc::clone(&done);
        handle.execute(move || done.count_down());
    }
    let held_queued = live() - base;

    let start = Instant::now();
    gate.open();
    assert!(
        done.wait_timeout(Duration::from_secs(60)),
        "{}: the burst did not drain within 60 s",
        E::NAME
    );
    let drained = Instant::now();
    let drain_ms = (drained - start).as_secs_f64() * 1e3;

    // Idle. Waiting here is the measured condition, not synchronisation: every executor gets
    // the same idle period; ours is additionally polled until its trim shows.
    let mut trimmed_after_ms = None;
    if executor.queue_capacity().is_some() {
        let deadline = drained + idle + Duration::from_secs(5);
        while Instant::now() < deadline {
            if executor.queue_capacity().unwrap_or(0) <= TRIMMED_CAPACITY {
                trimmed_after_ms = Some(drained.elapsed().as_secs_f64() * 1e3);
                break;
            }
            thread::sleep(Duration::from_millis(2));
        }
    }
    let idle_end = drained + idle;
    let now = Instant::now();
    if now < idle_end {
        thread::sleep(idle_end - now);
    }
    let held_after = live() - base;
    let capacity_after = executor.queue_capacity();

    let cpu_before = cpu::process_time();
    let wall_before = Instant::now();
    thread::sleep(cpu_window);
    let idle_cpu_ms_per_s = match (cpu_before, cpu::process_time()) {
        (Some(before), Some(after)) => Some(
            after.saturating_sub(before).as_secs_f64() * 1e3 / wall_before.elapsed().as_secs_f64(),
        ),
        _ => None,
    };

    drop(handle);
    executor.shutdown();
    Retention {
        held_before,
        held_queued,
        held_after,
        drain_ms,
        trimmed_after_ms,
        capacity_after,
        idle_cpu_ms_per_s,
    }
}
