//! `TaskHandle::cancel` as a specification (issue #13 item 4; Java's `Future.cancel(false)`):
//! a task that has not started is withdrawn, its closure dropped by the cancel itself; a task
//! that ran or runs is not; a cancelled task counts neither as pending nor as run.

mod support;

use pulsar_common::executors::{panic_message, PulsarExecutors, TaskError};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use support::{block_worker, DropCounter, PanickingToken, LONG};

// ---- smoke ----------------------------------------------------------------------------------

#[test]
fn cancel_of_a_queued_task_drops_its_closure_before_returning_and_the_handle_yields_cancelled() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let drops = DropCounter::new();
    let token = drops.token();
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&ran);
    let handle = executor
        .submit(move || {
            let _keep = &token;
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert!(handle.cancel());
    assert_eq!(
        drops.drops(),
        1,
        "dropped by cancel, not later by the worker"
    );
    assert!(handle.is_finished());
    release.send(()).unwrap();
    assert!(matches!(handle.join(), Err(TaskError::Cancelled)));
    executor.submit(|| ()).unwrap().join().unwrap(); // the worker is past the entry
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(drops.drops(), 1);
}

#[test]
fn cancel_after_the_task_ran_returns_false_and_the_value_stays() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let handle = executor.submit(|| 7).unwrap();
    executor.submit(|| ()).unwrap().join().unwrap(); // FIFO: the first has run
    assert!(!handle.cancel());
    assert_eq!(handle.join().unwrap(), 7);
}

#[test]
fn cancel_of_a_running_task_returns_false_and_the_task_finishes() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let (started, running) = mpsc::channel();
    let (finish, go_on) = mpsc::channel::<()>();
    let handle = executor
        .submit(move || {
            started.send(()).unwrap();
            go_on.recv().unwrap();
            "finished"
        })
        .unwrap();
    running.recv_timeout(LONG).unwrap();
    assert!(!handle.cancel());
    finish.send(()).unwrap();
    assert_eq!(handle.join().unwrap(), "finished");
}

#[test]
fn a_second_cancel_returns_false() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let handle = executor.submit(|| ()).unwrap();
    assert!(handle.cancel());
    assert!(!handle.cancel());
    release.send(()).unwrap();
    assert!(handle.join().unwrap_err().is_cancelled());
}

#[test]
fn a_cancelled_handle_awaited_in_a_spawned_future_yields_cancelled() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let awaiter = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let handle = executor.submit(|| 1).unwrap();
    let awaited = awaiter
        .spawn(async move {
            let cancelled = handle.cancel();
            (cancelled, handle.await)
        })
        .unwrap();
    let (cancelled, outcome) = awaited.join().unwrap();
    assert!(cancelled);
    assert!(matches!(outcome, Err(TaskError::Cancelled)));
    release.send(()).unwrap();
}

// ---- counts ---------------------------------------------------------------------------------

#[test]
fn a_cancelled_task_counts_neither_as_pending_nor_as_run() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let ran = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..10)
        .map(|_| {
            let ran = Arc::clone(&ran);
            executor
                .submit(move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap()
        })
        .collect();
    assert_eq!(executor.pending_tasks(), 10);
    for handle in handles.iter().step_by(2) {
        assert!(handle.cancel());
    }
    assert_eq!(executor.pending_tasks(), 5);
    release.send(()).unwrap();
    let cancelled = handles
        .into_iter()
        .map(|handle| handle.join())
        .filter(|outcome| matches!(outcome, Err(TaskError::Cancelled)))
        .count();
    assert_eq!(cancelled, 5);
    assert_eq!(ran.load(Ordering::SeqCst), 5);
    assert_eq!(executor.pending_tasks(), 0);
}

#[test]
fn a_submit_whose_closure_is_too_large_for_a_task_slot_is_cancelled_all_the_same() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let drops = DropCounter::new();
    let token = drops.token();
    let big = [3u64; 16];
    let handle = executor
        .submit(move || {
            let _keep = &token;
            big.iter().sum::<u64>()
        })
        .unwrap();
    assert!(handle.cancel());
    assert_eq!(drops.drops(), 1);
    release.send(()).unwrap();
    assert!(handle.join().unwrap_err().is_cancelled());
}

// ---- shutdown -------------------------------------------------------------------------------

#[test]
fn a_task_cancelled_before_shutdown_now_comes_back_as_a_no_op() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&ran);
    let handle = executor
        .submit(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert!(handle.cancel());
    let returned = executor.shutdown_now();
    release.send(()).unwrap();
    // shutdown_now hands back every entry still queued; a cancelled one does nothing.
    assert_eq!(returned.len(), 1);
    for task in returned {
        task.run();
    }
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert!(handle.join().unwrap_err().is_cancelled());
}

#[test]
fn a_task_returned_by_shutdown_now_can_still_be_cancelled_and_then_does_not_run() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let drops = DropCounter::new();
    let token = drops.token();
    let handle = executor.submit(move || drop(token)).unwrap();
    let returned = executor.shutdown_now();
    release.send(()).unwrap();
    assert!(handle.cancel());
    assert_eq!(drops.drops(), 1);
    assert_eq!(executor.pending_tasks(), 0);
    for task in returned {
        task.run();
    }
    assert_eq!(drops.drops(), 1);
    assert!(handle.join().unwrap_err().is_cancelled());
}

#[test]
fn a_rejected_submit_hands_its_closure_back_unrun_and_undropped() {
    let executor = PulsarExecutors::new_single_thread_executor();
    executor.shutdown();
    let drops = DropCounter::new();
    let token = drops.token();
    let rejected = executor.submit(move || drop(token)).unwrap_err();
    assert_eq!(drops.drops(), 0);
    let closure = rejected.into_task();
    closure();
    assert_eq!(drops.drops(), 1);
}

// ---- stress ---------------------------------------------------------------------------------

/// Rounds of `cancel` racing the worker for one task (fewer under Miri, which is slow).
const ROUNDS: usize = if cfg!(miri) { 20 } else { 1_000 };

#[test]
fn cancel_racing_the_worker_leaves_each_task_exactly_once_run_or_cancelled_and_dropped_once() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let (mut ran_total, mut cancelled_total) = (0, 0);
    for round in 0..ROUNDS {
        let drops = DropCounter::new();
        let token = drops.token();
        let ran = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&ran);
        let both = Arc::new(Barrier::new(2));
        let worker_side = Arc::clone(&both);
        // The worker reaches the task right after this barrier, as the canceller does.
        executor
            .execute(move || {
                worker_side.wait();
            })
            .unwrap();
        let handle = executor
            .submit(move || {
                let _keep = &token;
                counted.fetch_add(1, Ordering::SeqCst);
                round
            })
            .unwrap();
        both.wait();
        let cancelled = handle.cancel();
        let outcome = handle.join();
        let ran = ran.load(Ordering::SeqCst);
        if cancelled {
            assert!(
                matches!(outcome, Err(TaskError::Cancelled)),
                "round {round}"
            );
            assert_eq!(ran, 0, "round {round}: cancelled and ran");
            cancelled_total += 1;
        } else {
            assert_eq!(outcome.unwrap(), round);
            assert_eq!(ran, 1, "round {round}: neither ran nor cancelled");
            ran_total += 1;
        }
        assert_eq!(drops.drops(), 1, "round {round}: the closure dropped once");
    }
    assert_eq!(ran_total + cancelled_total, ROUNDS);
    executor.submit(|| ()).unwrap().join().unwrap();
    assert_eq!(
        executor.pending_tasks(),
        0,
        "no cancelled entry left counted"
    );
}

#[test]
fn cancels_from_many_threads_of_many_tasks_count_each_task_once() {
    let tasks = if cfg!(miri) { 20 } else { 2_000 };
    let executor = PulsarExecutors::new_single_thread_executor();
    let drops = DropCounter::new();
    let ran = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let token = drops.token();
            let ran = Arc::clone(&ran);
            executor
                .submit(move || {
                    let _keep = &token;
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap()
        })
        .collect();
    let handles = Arc::new(handles);
    let cancellers: Vec<_> = (0..2)
        .map(|offset| {
            let handles = Arc::clone(&handles);
            thread::spawn(move || {
                // Both threads try every task, in opposite directions: each cancel is won once.
                let mut won = 0;
                let order: Vec<usize> = if offset == 0 {
                    (0..handles.len()).collect()
                } else {
                    (0..handles.len()).rev().collect()
                };
                for i in order {
                    won += usize::from(handles[i].cancel());
                }
                won
            })
        })
        .collect();
    let cancelled: usize = cancellers.into_iter().map(|c| c.join().unwrap()).sum();
    let handles = Arc::try_unwrap(handles).unwrap();
    let outcomes: Vec<_> = handles.into_iter().map(|handle| handle.join()).collect();
    let ran = ran.load(Ordering::SeqCst);
    assert_eq!(ran + cancelled, tasks);
    assert_eq!(
        outcomes.iter().filter(|o| o.is_ok()).count(),
        ran,
        "every run task has its value"
    );
    assert_eq!(drops.drops(), tasks, "every closure dropped exactly once");
    assert_eq!(executor.pending_tasks(), 0);
}

// ---- panic_on_drop --------------------------------------------------------------------------

#[test]
fn a_closure_panicking_on_drop_resolves_the_handle_and_the_panic_reaches_the_canceller() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let drops = DropCounter::new();
    let token = drops.panicking_token();
    let handle = executor.submit(move || drop(token)).unwrap();
    let cancel = panic::catch_unwind(AssertUnwindSafe(|| handle.cancel()));
    let payload = cancel.unwrap_err();
    assert_eq!(panic_message(payload.as_ref()), PanickingToken::MESSAGE);
    assert_eq!(drops.drops(), 1);
    assert!(handle.is_finished());
    release.send(()).unwrap();
    assert!(handle.join().unwrap_err().is_cancelled());
    assert_eq!(executor.submit(|| 2).unwrap().join().unwrap(), 2);
}
