//! Allocation counts of the executor, deterministic and asserted: once the ring has grown to
//! fit, `execute` (or `execute_all`) of a closure capturing up to three words allocates
//! nothing, and a steady
//! workload does not reallocate per batch; `submit` allocates one cell, `spawn` two (none per
//! wake). One test per binary: the counting allocator is
//! process-wide.

use pulsar_common::executors::PulsarExecutors;
use pulsar_testkit::alloc::{self, CountingAllocator};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Allocations by every thread of the process so far (reallocations included).
fn allocations() -> usize {
    alloc::snapshot().allocations as usize
}

/// Waits (yielding, bounded; no allocation) until `counter` reaches `target`.
fn wait_for(counter: &AtomicUsize, target: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while counter.load(Ordering::Acquire) < target {
        assert!(Instant::now() < deadline, "tasks did not complete");
        std::thread::yield_now();
    }
}

#[test]
fn steady_state_execute_allocates_nothing_and_boxed_or_submitted_tasks_allocate_once() {
    const BATCH: usize = 256;
    // Under Miri (~10^4 times slower) fewer steady batches, the same zero.
    const STEADY: usize = if cfg!(miri) { 5 } else { 100 };
    let executor = PulsarExecutors::builder()
        .idle_trim_after(Some(Duration::from_secs(3600)))
        .build();
    let done = Arc::new(AtomicUsize::new(0));
    let mut expected = 0;
    let run_batch = |size: usize, expected: &mut usize| {
        for i in 0..size {
            let done = Arc::clone(&done);
            let (a, b) = (i, size); // an Arc and two words: three words of captures
            executor
                .execute(move || {
                    std::hint::black_box(a + b);
                    done.fetch_add(1, Ordering::Release);
                })
                .unwrap();
        }
        *expected += size;
        wait_for(&done, *expected);
    };
    // Warm up, deterministically: (1) grow both task buffers (the ring producers fill and the
    // worker's batch, which swap storage) past the batch size, by filling each while the worker
    // is blocked on the other; (2) let the worker park once, since a thread's first park may
    // allocate (its thread handle, on first use).
    let blocker = |expected: &mut usize| {
        let (release, blocked) = std::sync::mpsc::channel::<()>();
        let (started_tx, started) = std::sync::mpsc::channel::<()>();
        let done = Arc::clone(&done);
        executor
            .execute(move || {
                started_tx.send(()).unwrap();
                blocked.recv().unwrap();
                done.fetch_add(1, Ordering::Release);
            })
            .unwrap();
        *expected += 1;
        (release, started)
    };
    let fill = |expected: &mut usize| {
        for _ in 0..4 * BATCH {
            let done = Arc::clone(&done);
            executor
                .execute(move || {
                    done.fetch_add(1, Ordering::Release);
                })
                .unwrap();
        }
        *expected += 4 * BATCH;
    };
    let (release_a, started_a) = blocker(&mut expected);
    started_a.recv().unwrap(); // the worker runs A from one buffer...
    fill(&mut expected); // ...while the other one grows
    let (release_b, started_b) = blocker(&mut expected);
    release_a.send(()).unwrap();
    started_b.recv().unwrap(); // the worker swapped that buffer in and runs B at its end...
    fill(&mut expected); // ...while the first one grows
    release_b.send(()).unwrap();
    wait_for(&done, expected);
    assert!(executor.queue_capacity() >= 2 * 4 * BATCH);
    let deadline = Instant::now() + Duration::from_secs(60);
    while executor.worker_wakeups() == 0 {
        assert!(Instant::now() < deadline, "the worker never parked");
        run_batch(1, &mut expected);
        let idle_from = Instant::now();
        while idle_from.elapsed() < Duration::from_millis(2) {
            std::thread::yield_now(); // leave the worker idle past its spin
        }
    }

    let before = allocations();
    for _ in 0..STEADY {
        run_batch(BATCH, &mut expected);
    }
    let steady = allocations() - before;
    assert_eq!(
        steady, 0,
        "allocations in {STEADY} steady batches of {BATCH} inline tasks"
    );

    // `execute_all`: once this thread's staging buffer has grown to the batch (first call),
    // steady batches allocate nothing either.
    let run_batch_all = |size: usize, expected: &mut usize| {
        let tasks = (0..size).map(|i| {
            let done = Arc::clone(&done);
            move || {
                std::hint::black_box(i);
                done.fetch_add(1, Ordering::Release);
            }
        });
        executor.execute_all(tasks).unwrap();
        *expected += size;
        wait_for(&done, *expected);
    };
    run_batch_all(BATCH, &mut expected);
    let before = allocations();
    for _ in 0..STEADY {
        run_batch_all(BATCH, &mut expected);
    }
    assert_eq!(
        allocations() - before,
        0,
        "allocations in {STEADY} steady execute_all batches of {BATCH} inline tasks"
    );

    // A closure too large for the slot is boxed: exactly one allocation per task.
    let before = allocations();
    let target = expected + BATCH;
    for _ in 0..BATCH {
        let done = Arc::clone(&done);
        let big = [1u64; 8];
        executor
            .execute(move || {
                std::hint::black_box(big);
                done.fetch_add(1, Ordering::Release);
            })
            .unwrap();
    }
    wait_for(&done, target);
    expected = target;
    assert_eq!(allocations() - before, BATCH, "one box per large task");

    // `submit` allocates its result slot: exactly one allocation per task. One join first:
    // the first time this thread waits, the parking lot sets up its per-thread data (and may
    // grow its table), which is not the submit's.
    assert_eq!(executor.submit(|| 1).unwrap().join().unwrap(), 1);
    let before = allocations();
    let handles: Vec<_> = (0..BATCH)
        .map(|i| executor.submit(move || i).unwrap())
        .collect();
    let vec_allocations = 1;
    let sum: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(sum, BATCH * (BATCH - 1) / 2);
    assert_eq!(
        allocations() - before,
        BATCH + vec_allocations,
        "one result slot per submit"
    );

    // A closure too large for a task slot is still one allocation: it lives in the cell, the
    // queue holds the cell's pointer.
    let before = allocations();
    let handles: Vec<_> = (0..BATCH)
        .map(|i| {
            let big = [i as u64; 8];
            executor.submit(move || big.iter().sum::<u64>()).unwrap()
        })
        .collect();
    let sum: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(sum, 8 * (BATCH * (BATCH - 1) / 2) as u64);
    assert_eq!(
        allocations() - before,
        BATCH + vec_allocations,
        "one cell per submit, whatever the closure's size"
    );

    // `spawn`: the cell, and the box that pins the future at its first poll; a wake (here,
    // the future waking itself, queued again each time) allocates nothing.
    const WAKES: usize = 16;
    let before = allocations();
    let handles: Vec<_> = (0..BATCH)
        .map(|_| {
            let mut left = WAKES;
            executor
                .spawn(std::future::poll_fn(move |cx| {
                    if left == 0 {
                        return std::task::Poll::Ready(1usize);
                    }
                    left -= 1;
                    cx.waker().wake_by_ref();
                    std::task::Poll::Pending
                }))
                .unwrap()
        })
        .collect();
    let sum: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(sum, BATCH);
    assert_eq!(
        allocations() - before,
        2 * BATCH + vec_allocations,
        "two allocations per spawned future, none per wake"
    );
    let _ = expected;
}
