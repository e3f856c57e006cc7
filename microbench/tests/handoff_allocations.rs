//! Allocation per batch of the hand-off workload: deterministic figures, asserted (timing is
//! only ever read in the benches). Counted on the submitting thread and on the executor's
//! worker thread, so that tests running in parallel do not disturb each other.

use microbench::alloc::{self, AllocStats, CountingAllocator};
use microbench::executors::{
    CrossbeamExecutor, Executor, FlumeExecutor, PulsarExecutor, StdMpscExecutor, Submit,
    ThreadPoolExecutor,
};
use microbench::handoff::{latch_cost, submit_and_complete};
use microbench::latch::CountdownLatch;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

const BATCHES: u64 = 200;

/// The worker thread's own counters, read on the worker by a task.
fn worker_snapshot<H: Submit>(handle: &H) -> AllocStats {
    let slot = Arc::new(Mutex::new(AllocStats::default()));
    let latch = Arc::new(CountdownLatch::new(1));
    {
        let (slot, latch) = (Arc::clone(&slot), Arc::clone(&latch));
        handle.execute(move || {
            *slot.lock().unwrap() = alloc::thread_snapshot();
            latch.count_down();
        });
    }
    assert!(latch.wait_timeout(Duration::from_secs(10)));
    let stats = *slot.lock().unwrap();
    stats
}

/// Allocations per batch of `tasks` tasks on a warmed `E`, net of the latch: (submitting
/// thread, worker thread).
fn allocations_per_batch<E: Executor>(tasks: usize) -> (f64, f64) {
    allocations_per_batch_settled::<E>(tasks, |_| {})
}

/// As `allocations_per_batch`, with `settle` run on the executor after the warm-up.
fn allocations_per_batch_settled<E: Executor>(tasks: usize, settle: impl Fn(&E)) -> (f64, f64) {
    let executor = E::start();
    let handle = executor.handle();
    for _ in 0..50 {
        submit_and_complete(&handle, tasks); // grow the queue to fit
    }
    settle(&executor);
    let worker_before = worker_snapshot(&handle);
    let ((), submitter) = alloc::measure_thread(|| {
        for _ in 0..BATCHES {
            submit_and_complete(&handle, tasks);
        }
    });
    let worker = worker_snapshot(&handle).since(&worker_before);
    drop(handle);
    executor.shutdown();
    let latch = latch_cost();
    assert_eq!(
        latch.allocations, 0,
        "the harness allocates nothing per batch (its latch is made once per thread)"
    );
    let per_batch = |n: u64| n as f64 / BATCHES as f64;
    (
        per_batch(submitter.allocations - BATCHES * latch.allocations),
        // The probe task itself is boxed by the peers: one allocation on the submitter side,
        // none on the worker.
        per_batch(worker.allocations),
    )
}

/// Settles our executor deterministically before the measurement: (1) both of its task
/// buffers (the ring producers fill and the worker's batch, which swap storage) grow past any
/// burst the measurement can queue — a worker that kept up with the warm-up may have left one
/// of them small, to grow (allocate) later; (2) the worker parks once, since a thread's first
/// park may size parking_lot's global table of parked threads.
fn settle_ours(executor: &PulsarExecutor) {
    grow_both_buffers(executor, 1024);
    park_worker_once(executor);
}

/// Fills each task buffer with `slots` tasks while the worker is blocked on the other one.
fn grow_both_buffers(executor: &PulsarExecutor, slots: usize) {
    let handle = executor.handle();
    let blocker = || {
        let (release, blocked) = std::sync::mpsc::channel::<()>();
        let (started_tx, started) = std::sync::mpsc::channel::<()>();
        handle.execute(move || {
            started_tx.send(()).unwrap();
            blocked.recv().unwrap();
        });
        (release, started)
    };
    let fill = || {
        for _ in 0..slots {
            handle.execute(|| {});
        }
    };
    let (release_a, started_a) = blocker();
    started_a.recv().unwrap(); // the worker runs A from one buffer...
    fill(); // ...while the other grows
    let (release_b, started_b) = blocker();
    release_a.send(()).unwrap();
    started_b.recv().unwrap(); // it swapped that buffer in and runs B at its end...
    fill(); // ...while the first grows
    release_b.send(()).unwrap();
    submit_and_complete(&handle, 1); // everything before it has run
    assert!(executor.executor().queue_capacity() >= 2 * slots);
}

/// Makes the worker park once (see `settle_ours`).
fn park_worker_once(executor: &PulsarExecutor) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while executor.executor().worker_wakeups() == 0 {
        assert!(Instant::now() < deadline, "the worker never parked");
        submit_and_complete(&executor.handle(), 1);
        let idle_from = Instant::now();
        while idle_from.elapsed() < Duration::from_millis(2) {
            std::thread::yield_now(); // leave the worker idle past its spin
        }
    }
}

#[test]
fn ours_allocates_nothing_per_batch() {
    for tasks in [16, 256] {
        assert_eq!(
            allocations_per_batch_settled::<PulsarExecutor>(tasks, settle_ours),
            (0.0, 0.0),
            "K={tasks}: (submitter, worker) allocations per batch"
        );
    }
}

#[test]
fn every_peer_allocates_at_least_one_box_per_task() {
    for tasks in [16, 256] {
        let k = tasks as f64;
        assert!(allocations_per_batch::<StdMpscExecutor>(tasks).0 >= k);
        assert!(allocations_per_batch::<CrossbeamExecutor>(tasks).0 >= k);
        assert!(allocations_per_batch::<FlumeExecutor>(tasks).0 >= k);
        assert!(allocations_per_batch::<ThreadPoolExecutor>(tasks).0 >= k);
    }
}
