//! `stats()` as a specification, for both executor kinds through the `Executor` trait: exact
//! counts after 10,000 tasks with panics and rejections, counters that never go backwards
//! under a concurrent reader, tasks handed back or cancelled leave `pending`, timers count
//! like tasks, and groups sum their members. (The capacity through a burst and its trim:
//! `executor_kinds.rs`.)

mod support;

use pulsar_common::executors::{
    Executor, ExecutorGroup, ExecutorStats, PulsarExecutors, ScheduledExecutor,
    SingleThreadExecutor, TaskError,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;
use support::{CountingFactory, LONG};

/// Under Miri (~10^4 times slower) a tenth of the tasks, the same assertions.
const SCALE: usize = if cfg!(miri) { 10 } else { 1 };

/// The workload of `exact_counts_after_ten_thousand_tasks`: how many tasks of each kind, and
/// how many of those panic.
struct Workload {
    executed: usize,
    executed_panics: usize,
    submitted: usize,
    submitted_panics: usize,
    batches: usize,
    batch_len: usize,
}

impl Workload {
    /// The first task of every other batch panics.
    fn batched_panics(&self) -> usize {
        self.batches / 2
    }
}

const WORKLOAD: Workload = Workload {
    executed: 4_000 / SCALE,
    executed_panics: 400 / SCALE,
    submitted: 4_000 / SCALE,
    submitted_panics: 500 / SCALE,
    batches: 20,
    batch_len: 100 / SCALE,
};

/// Runs the workload (with a concurrent reader checking that no counter goes back), then has
/// 18 tasks refused after shutdown; returns the stats once terminated.
fn run_workload<E: Executor>(executor: &E, factory: &CountingFactory) -> ExecutorStats {
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (executor, stop) = (executor.clone(), Arc::clone(&stop));
        thread::spawn(move || assert_counters_never_go_back(&executor, &stop))
    };
    let w = &WORKLOAD;
    for i in 0..w.executed {
        let panics = i % (w.executed / w.executed_panics) == 0;
        executor
            .execute(move || assert!(!panics, "executed task {i}"))
            .unwrap();
    }
    let handles: Vec<_> = (0..w.submitted)
        .map(|i| {
            let panics = i % (w.submitted / w.submitted_panics) == 0;
            executor
                .submit(move || assert!(!panics, "submitted task {i}"))
                .unwrap()
        })
        .collect();
    for batch in 0..w.batches {
        let tasks = (0..w.batch_len).map(move |i| {
            let panics = i == 0 && batch % 2 == 0;
            move || assert!(!panics, "batched task {batch}/{i}")
        });
        executor.execute_all(tasks).unwrap();
    }
    let handle_panics = handles
        .into_iter()
        .map(|handle| handle.join())
        .filter(|outcome| matches!(outcome, Err(TaskError::Panicked(_))))
        .count();
    assert_eq!(handle_panics, w.submitted_panics);
    executor.shutdown();
    for _ in 0..5 {
        assert!(executor.execute(|| ()).is_err());
    }
    assert!(executor.execute_all((0..10).map(|_| || ())).is_err());
    for _ in 0..3 {
        assert!(executor.submit(|| ()).is_err());
    }
    assert!(executor.await_termination(LONG));
    stop.store(true, Ordering::SeqCst);
    sampler.join().unwrap();
    assert_eq!(
        factory.panics(),
        w.executed_panics + w.batched_panics(),
        "execute'd panics reach the factory's hook, submitted ones their handles"
    );
    executor.stats()
}

/// Samples `stats()` until `stop`, asserting that no counter ever decreases.
fn assert_counters_never_go_back<E: Executor>(executor: &E, stop: &AtomicBool) {
    let mut last = executor.stats();
    while !stop.load(Ordering::SeqCst) {
        let now = executor.stats();
        assert!(now.submitted >= last.submitted, "{last:?} -> {now:?}");
        assert!(now.completed >= last.completed, "{last:?} -> {now:?}");
        assert!(now.panicked >= last.panicked, "{last:?} -> {now:?}");
        assert!(now.rejected >= last.rejected, "{last:?} -> {now:?}");
        assert!(
            now.worker_wakeups >= last.worker_wakeups,
            "{last:?} -> {now:?}"
        );
        assert!(now.busy >= last.busy, "{last:?} -> {now:?}");
        assert!(now.completed <= now.submitted, "{now:?}");
        last = now;
        thread::yield_now();
    }
}

fn assert_exact_counts_after_the_workload(stats: ExecutorStats) {
    let w = &WORKLOAD;
    let total = (w.executed + w.submitted + w.batches * w.batch_len) as u64;
    assert_eq!(stats.submitted, total, "{stats:?}");
    assert_eq!(stats.completed, total, "{stats:?}");
    assert_eq!(
        stats.panicked,
        (w.executed_panics + w.submitted_panics + w.batched_panics()) as u64,
        "{stats:?}"
    );
    assert_eq!(stats.rejected, 5 + 10 + 3, "{stats:?}");
    assert_eq!(stats.pending, 0, "{stats:?}");
    assert!(stats.busy > Duration::ZERO, "{stats:?}");
}

#[test]
fn a_single_thread_executor_counts_ten_thousand_tasks_with_panics_and_rejections_exactly() {
    let factory = CountingFactory::new("stats-plain");
    let executor = SingleThreadExecutor::with_thread_factory(Arc::clone(&factory));
    assert_exact_counts_after_the_workload(run_workload(&executor, &factory));
}

#[test]
fn a_scheduled_executor_counts_ten_thousand_tasks_with_panics_and_rejections_exactly() {
    let factory = CountingFactory::new("stats-scheduled");
    let executor = ScheduledExecutor::with_thread_factory(Arc::clone(&factory));
    assert_exact_counts_after_the_workload(run_workload(&executor, &factory));
}

/// An initial capacity no allocation can hold is refused as `Vec::with_capacity` refuses it,
/// with "capacity overflow" (not an arithmetic overflow in debug builds, nor a 0-slot ring in
/// release builds). Audit of 2026-12-07.
#[test]
#[should_panic(expected = "capacity overflow")]
fn an_initial_capacity_no_allocation_can_hold_panics_with_capacity_overflow() {
    let _ = PulsarExecutors::builder()
        .initial_capacity(usize::MAX)
        .build();
}

#[test]
fn a_new_executor_reports_zero_counts_and_its_initial_capacity() {
    let plain = PulsarExecutors::builder().initial_capacity(256).build();
    let scheduled = ScheduledExecutor::builder().initial_capacity(128).build();
    for (stats, capacity) in [(plain.stats(), 256), (scheduled.stats(), 128)] {
        assert_eq!(
            (
                stats.submitted,
                stats.completed,
                stats.pending,
                stats.rejected
            ),
            (0, 0, 0, 0)
        );
        assert_eq!(stats.queue_capacity, capacity);
        assert_eq!(stats.busy, Duration::ZERO);
    }
}

#[test]
fn tasks_handed_back_by_shutdown_now_are_no_longer_pending() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = support::block_worker_with(|task| executor.execute(task).unwrap());
    for _ in 0..100 {
        executor.execute(|| ()).unwrap();
    }
    assert_eq!(
        executor.stats().pending,
        101,
        "100 queued and the one blocking"
    );
    let returned = executor.shutdown_now();
    assert_eq!(returned.len(), 100);
    release.send(()).unwrap();
    assert!(executor.await_termination(LONG));
    let stats = executor.stats();
    assert_eq!(
        (stats.submitted, stats.completed, stats.pending),
        (101, 1, 0)
    );
}

#[test]
fn cancelled_tasks_count_neither_as_completed_nor_as_pending() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = support::block_worker(&executor);
    let handles: Vec<_> = (0..100)
        .map(|i| executor.submit(move || i).unwrap())
        .collect();
    assert_eq!(
        executor.stats().pending,
        101,
        "100 queued and the one blocking"
    );
    let cancelled = handles.iter().step_by(2).filter(|h| h.cancel()).count();
    assert_eq!(cancelled, 50, "none had started");
    assert_eq!(
        executor.stats().pending,
        51,
        "cancelled at once, though still queued"
    );
    release.send(()).unwrap();
    for (i, handle) in handles.into_iter().enumerate() {
        match handle.join() {
            Ok(value) => assert_eq!((value, i % 2), (i, 1)),
            Err(error) => assert!(error.is_cancelled() && i % 2 == 0, "{i}: {error:?}"),
        }
    }
    // The worker retired the 50 cancelled entries as no-ops: not completed.
    wait_until_idle(&executor, 51);
    let stats = executor.stats();
    assert_eq!(
        (stats.submitted, stats.completed, stats.pending),
        (101, 51, 0)
    );

    // Cancelled entries handed back by `shutdown_now` count once, as handed back.
    let release = support::block_worker(&executor);
    let handles: Vec<_> = (0..10).map(|_| executor.submit(|| ()).unwrap()).collect();
    for handle in &handles[..4] {
        assert!(handle.cancel());
    }
    assert_eq!(executor.stats().pending, 7, "6 queued and the one blocking");
    drop(executor.shutdown_now());
    release.send(()).unwrap();
    assert!(executor.await_termination(LONG));
    let stats = executor.stats();
    assert_eq!(
        (stats.submitted, stats.completed, stats.pending),
        (112, 52, 0)
    );
}

/// Waits (bounded) until the worker has counted `completed` tasks: a task's handle completes
/// inside its run, a moment before the worker counts it, so the counts are exact only once the
/// worker is idle.
fn wait_until_idle<E: Executor>(executor: &E, completed: u64) {
    let deadline = std::time::Instant::now() + LONG;
    while executor.stats().completed < completed && std::time::Instant::now() < deadline {
        thread::yield_now();
    }
    assert_eq!(executor.stats().completed, completed);
}

#[test]
fn timers_count_as_tasks_and_cancelled_or_returned_ones_leave_pending() {
    let executor = ScheduledExecutor::builder()
        .pool_name("stats-timers")
        .build();
    // 100 one-shot timers due at once: submitted and completed.
    let due: Vec<_> = (0..100)
        .map(|i| executor.schedule(Duration::ZERO, move || i).unwrap())
        .collect();
    for (i, handle) in due.into_iter().enumerate() {
        assert_eq!(handle.join().unwrap(), i);
    }
    // A handle completes inside the run, just before the worker counts it.
    wait_until_idle(&executor, 100);
    // 50 far timers, cancelled: submitted, never completed, not pending.
    let far: Vec<_> = (0..50)
        .map(|_| executor.schedule(Duration::from_secs(3600), || ()).unwrap())
        .collect();
    assert_eq!(executor.stats().pending, 50, "armed timers are pending");
    for handle in &far {
        assert!(handle.cancel());
    }
    assert_eq!(executor.stats().pending, 0);
    // A periodic timer: each run counts, and so does each re-arm.
    let (ticks, ticked) = mpsc::channel();
    let periodic = executor
        .schedule_at_fixed_rate(Duration::ZERO, Duration::from_millis(1), move || {
            let _ = ticks.send(());
        })
        .unwrap();
    for _ in 0..3 {
        ticked.recv_timeout(LONG).unwrap();
    }
    periodic.cancel();
    // 10 far timers handed back by shutdown_now: submitted, returned, not pending.
    for _ in 0..10 {
        executor.schedule(Duration::from_secs(3600), || ()).unwrap();
    }
    assert_eq!(executor.shutdown_now().len(), 10);
    assert!(executor.await_termination(LONG));
    let stats = executor.stats();
    let periodic_runs = stats.completed - 100;
    assert!(periodic_runs >= 3, "{stats:?}");
    // The periodic timer was re-armed after each run, unless the cancel came during its last.
    let unaccounted = stats.submitted - stats.completed - 50 - 10;
    assert!(unaccounted <= 1, "{stats:?}");
    assert_eq!(stats.pending, 0, "{stats:?}");
    assert_eq!(stats.panicked, 0, "{stats:?}");
}

#[test]
fn a_group_sums_the_stats_of_its_executors() {
    let group = ExecutorGroup::new("stats-group", 3);
    for i in 0..300 {
        group
            .select(i % 3)
            .execute(move || assert!(i % 30 != 0))
            .unwrap();
    }
    assert!(group.shutdown_gracefully(LONG));
    assert!(group.select(0).execute(|| ()).is_err());
    let stats = group.stats();
    let members: ExecutorStats = group.executors().iter().map(Executor::stats).sum();
    assert_eq!(stats, members);
    assert_eq!(
        (
            stats.submitted,
            stats.completed,
            stats.panicked,
            stats.rejected
        ),
        (300, 300, 10, 1)
    );
    for executor in group.executors() {
        assert_eq!(executor.stats().submitted, 100);
    }
}

#[test]
fn a_group_of_scheduled_executors_is_a_group_of_executors_like_any_other() {
    let group = ExecutorGroup::from_fn("stats-scheduled-group", 2, ScheduledExecutor::new);
    let handles: Vec<_> = (0..10)
        .map(|i| group.next().schedule(Duration::ZERO, move || i).unwrap())
        .collect();
    let sum: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(sum, 45);
    assert!(group.shutdown_gracefully(LONG));
    assert_eq!(group.stats().completed, 10);
    assert_eq!(group.stats().pending, 0);
}
