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
use std::time::Duration;

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
    let executor = E::start();
    let handle = executor.handle();
    for _ in 0..50 {
        submit_and_complete(&handle, tasks); // grow the queue to fit
    }
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
        latch.allocations, 1,
        "the harness allocates one latch per batch"
    );
    let per_batch = |n: u64| n as f64 / BATCHES as f64;
    (
        per_batch(submitter.allocations - BATCHES * latch.allocations),
        // The probe task itself is boxed by the peers: one allocation on the submitter side,
        // none on the worker.
        per_batch(worker.allocations),
    )
}

#[test]
fn ours_allocates_nothing_per_batch_beyond_the_latch() {
    for tasks in [16, 256] {
        assert_eq!(
            allocations_per_batch::<PulsarExecutor>(tasks),
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
