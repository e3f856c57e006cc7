//! Allocation counts of the scheduled executor's timers, deterministic and asserted: once the
//! memory of fired entries circulates (`entry_blocks.rs`), a fire-and-forget timer (its handle
//! dropped before it runs) allocates nothing; a timer whose handle outlives its run allocates
//! its entry, as before. One test per binary: the counting allocator is process-wide.

use pulsar_common::executors::{NamedThreadFactory, ScheduledExecutor};
use pulsar_testkit::alloc::{self, CountingAllocator};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Allocations by every thread of the process so far (reallocations included).
fn allocations() -> usize {
    alloc::snapshot().allocations as usize
}

/// Waits (yielding, bounded; no allocation) until `done` holds.
fn wait_until(done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "the timer did not run");
        std::thread::yield_now();
    }
}

#[test]
fn fire_and_forget_timers_reuse_the_memory_of_fired_ones_and_allocate_nothing() {
    // Under Miri (~10^4 times slower) fewer timers, the same zero.
    const TIMERS: usize = if cfg!(miri) { 20 } else { 2_000 };
    let executor = ScheduledExecutor::builder()
        .thread_factory(NamedThreadFactory::new("timer-allocation"))
        .idle_trim_after(Some(Duration::from_secs(3600)))
        .build();
    // Waiting on these allocates nothing (a channel's blocking receive may: its waiter list).
    let fired = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(Barrier::new(2));
    let fire_and_forget = |i: usize, delay: Duration| {
        // The worker waits at the gate until the timer's handle is gone, so the worker's
        // reference is the entry's last when it has fired it: it keeps the memory.
        let worker_gate = Arc::clone(&gate);
        executor
            .execute(move || {
                worker_gate.wait();
            })
            .unwrap();
        let fired_by_timer = Arc::clone(&fired);
        let handle = executor
            .schedule(delay, move || fired_by_timer.store(i, Ordering::Release))
            .unwrap();
        drop(handle);
        gate.wait();
        wait_until(|| fired.load(Ordering::Acquire) == i);
    };
    // Warm up: the worker's start, its first parks, the wheel's list heads, the due list and
    // the lane grow once. The first timer's entry is kept after it fires; the second timer's
    // pass hands it over to the producers' side; from the third timer on an arm finds one.
    for i in 1..=3 {
        fire_and_forget(2 * i, Duration::ZERO);
        fire_and_forget(2 * i + 1, Duration::from_micros(1));
    }
    let before = allocations();
    for i in 10..10 + TIMERS {
        fire_and_forget(
            i,
            if i % 2 == 0 {
                Duration::ZERO
            } else {
                Duration::from_micros(50)
            },
        );
    }
    assert_eq!(
        allocations() - before,
        0,
        "a steady stream of fire-and-forget timers allocates nothing"
    );
    assert!(
        executor.timer_capacity() <= 576 + 2 * 256 + 64,
        "what is kept is bounded: {} slots",
        executor.timer_capacity()
    );

    // A handle that outlives its timer's run holds the entry: the worker's reference is not
    // the last, so nothing is kept, and once the few blocks kept above are used up each arm
    // allocates its own entry.
    let before = allocations();
    for i in 0..TIMERS {
        let handle = executor.schedule(Duration::ZERO, move || i).unwrap();
        // Waits for the run's outcome without waiting on the handle (a wait installs the
        // entry's waiters' lock, an allocation of its own).
        wait_until(|| handle.is_done());
        assert_eq!(handle.join().unwrap(), i);
    }
    let joined = allocations() - before;
    assert!(
        (TIMERS - 4..=TIMERS).contains(&joined),
        "one entry per joined timer, but for a few kept ones: {joined} for {TIMERS}"
    );
    executor.shutdown();
    assert!(executor.await_termination(Duration::from_secs(10)));
}
