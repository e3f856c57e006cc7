//! `SingleThreadExecutor::execute_all`: a batch of tasks queued under one lock acquisition —
//! order, all-or-nothing refusal, laziness, re-entrancy, panics while staging, and races with
//! both shutdowns (exact counts, every closure dropped exactly once).

mod support;

use pulsar_common::executors::{PulsarExecutors, RejectReason};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use support::{BatchRace, CountingFactory, DropCounter, NoThreads, LONG};

#[test]
fn a_batch_runs_in_order_after_the_tasks_queued_before_it_and_before_later_ones() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let log = Arc::new(Mutex::new(Vec::new()));
    let push = |i: usize| {
        let log = Arc::clone(&log);
        move || log.lock().unwrap().push(i)
    };
    executor.execute(push(0)).unwrap();
    executor.execute_all((1..=100).map(push)).unwrap();
    executor.execute(push(101)).unwrap();
    executor.execute_all((102..=110).map(push)).unwrap();
    executor.shutdown();
    assert!(executor.await_termination(LONG));
    assert_eq!(*log.lock().unwrap(), (0..=110).collect::<Vec<_>>());
}

#[test]
fn a_refused_batch_comes_back_whole_and_in_order_with_nothing_run_or_dropped() {
    let executor = PulsarExecutors::new_single_thread_executor();
    executor.shutdown();
    let drops = DropCounter::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let tasks = (0..5).map(|i| {
        let (token, log) = (drops.token(), Arc::clone(&log));
        move || {
            let _token = token;
            log.lock().unwrap().push(i);
        }
    });
    let rejected = executor.execute_all(tasks).unwrap_err();
    assert!(matches!(rejected.reason(), RejectReason::Shutdown));
    assert_eq!(drops.drops(), 0, "handed back, not dropped");
    let returned = rejected.into_task();
    assert_eq!(returned.len(), 5);
    for task in returned {
        task();
    }
    assert_eq!(*log.lock().unwrap(), [0, 1, 2, 3, 4]);
    assert_eq!(drops.drops(), 5);
}

#[test]
fn an_empty_batch_is_accepted_and_starts_no_thread() {
    let factory = CountingFactory::new("empty-batch");
    let executor = PulsarExecutors::new_single_thread_executor_with(Arc::clone(&factory));
    executor.execute_all(std::iter::empty::<fn()>()).unwrap();
    assert_eq!(factory.threads_started(), 0);
    executor.execute_all([|| ()]).unwrap();
    assert_eq!(factory.threads_started(), 1);
    executor.shutdown();
    assert!(executor.await_termination(LONG));
}

#[test]
fn a_batch_whose_thread_cannot_start_comes_back_with_the_factorys_error() {
    let executor = PulsarExecutors::new_single_thread_executor_with(NoThreads);
    let drops = DropCounter::new();
    let tokens: Vec<_> = (0..3).map(|_| drops.token()).collect();
    let rejected = executor
        .execute_all(tokens.into_iter().map(|token| move || drop(token)))
        .unwrap_err();
    assert!(matches!(
        rejected.reason(),
        RejectReason::ThreadStartFailed(error) if error.to_string().contains("thread limit")
    ));
    assert_eq!(drops.drops(), 0);
    drop(rejected);
    assert_eq!(drops.drops(), 3);
    executor.shutdown();
    assert!(executor.is_terminated());
}

#[test]
fn the_iterator_may_queue_tasks_itself_without_deadlock() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let (tx, rx) = mpsc::channel();
    let inner = executor.clone();
    let outer_tx = tx.clone();
    let tasks = (0..3).map(move |i| {
        // Staging runs before the lock is taken: queueing from here is allowed.
        let tx = outer_tx.clone();
        inner
            .execute(move || tx.send(("single", i)).unwrap())
            .unwrap();
        let tx = outer_tx.clone();
        inner
            .execute_all([move || tx.send(("nested", i)).unwrap()])
            .unwrap();
        let tx = outer_tx.clone();
        move || tx.send(("batch", i)).unwrap()
    });
    executor.execute_all(tasks).unwrap();
    drop(tx);
    executor.shutdown();
    assert!(executor.await_termination(LONG));
    let seen: Vec<_> = rx.iter().collect();
    let expected: Vec<_> = (0..3)
        .flat_map(|i| [("single", i), ("nested", i)])
        .chain((0..3).map(|i| ("batch", i)))
        .collect();
    assert_eq!(seen, expected);
}

#[test]
fn a_panicking_iterator_queues_nothing_and_drops_what_it_had_staged_once() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let drops = DropCounter::new();
    let ran = Arc::new(AtomicUsize::new(0));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let tasks = (0..10).map(|i| {
            assert!(i < 4, "the iterator fails at item {i}");
            let (token, ran) = (drops.token(), Arc::clone(&ran));
            move || {
                let _token = token;
                ran.fetch_add(1, Ordering::SeqCst);
            }
        });
        executor.execute_all(tasks)
    }));
    assert!(outcome.is_err());
    assert_eq!(drops.drops(), 4, "the four staged tasks were dropped");
    // The executor is unharmed, and this thread's staging still works.
    executor.execute_all([|| ()]).unwrap();
    executor.shutdown();
    assert!(executor.await_termination(LONG));
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(drops.drops(), 4);
}

/// Batches offered concurrently with `shutdown_now`: each batch is either refused whole, or
/// accepted whole, and then each of its tasks either ran or was returned — never both, never
/// neither; every closure is dropped exactly once.
#[test]
fn batches_racing_shutdown_now_lose_nothing_and_run_nothing_twice() {
    BatchRace {
        // Fewer rounds under Miri (~10^4 times slower), the same assertions.
        rounds: if cfg!(miri) { 5 } else { 1_000 },
        submitters: 3,
        batches: 4,
        per_batch: 8,
    }
    .run(
        PulsarExecutors::new_single_thread_executor,
        |executor, batch| {
            executor
                .execute_all(batch)
                .map_err(|rejected| rejected.into_task().len())
        },
        |executor| executor.shutdown_now().len(),
        |executor| executor.await_termination(LONG),
    );
}

/// With graceful shutdown, every task of every accepted batch runs.
#[test]
fn batches_racing_shutdown_run_every_accepted_task() {
    // Under Miri (~10^4 times slower) fewer iterations, the same assertions.
    const ROUNDS: usize = if cfg!(miri) { 5 } else { 1_000 };
    const SUBMITTERS: usize = 3;
    const PER_BATCH: usize = 8;
    for round in 0..ROUNDS {
        let executor = PulsarExecutors::new_single_thread_executor();
        let ran = Arc::new(AtomicUsize::new(0));
        let start = Arc::new(Barrier::new(SUBMITTERS + 1));
        let submitters: Vec<_> = (0..SUBMITTERS)
            .map(|_| {
                let (executor, ran, start) =
                    (executor.clone(), Arc::clone(&ran), Arc::clone(&start));
                thread::spawn(move || {
                    start.wait();
                    let mut accepted = 0;
                    for _ in 0..4 {
                        let batch = (0..PER_BATCH).map(|_| {
                            let ran = Arc::clone(&ran);
                            move || {
                                ran.fetch_add(1, Ordering::SeqCst);
                            }
                        });
                        if executor.execute_all(batch).is_ok() {
                            accepted += PER_BATCH;
                        }
                    }
                    accepted
                })
            })
            .collect();
        start.wait();
        executor.shutdown();
        let accepted: usize = submitters.into_iter().map(|s| s.join().unwrap()).sum();
        assert!(executor.await_termination(LONG), "round {round}");
        assert_eq!(ran.load(Ordering::SeqCst), accepted, "round {round}");
    }
}
