//! Both executors against what users get wrong or what their closures do that is unusual: a
//! thread factory that panics (on every path that starts the thread: execute, execute_all,
//! submit, spawn, invoke_all/invoke_any, schedule*, the restart at shutdown), a panic hook
//! that panics, a task that joins a task or future of its own executor, over-aligned and
//! zero-sized closures, and captures that panic when dropped. Small and thread-light, so it
//! also runs under Miri.
#![cfg(not(loom))]

mod support;

use pulsar_common::executors::{
    InvokeAnyError, InvokeFailure, PulsarExecutors, RejectReason, ScheduledExecutor,
    SingleThreadExecutor, TaskError, TaskHandle, ThreadFactoryPanicked,
};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;
use support::{DropCounter, PanickingToken, ScriptedFactory, Start, FACTORY_PANIC, LONG};

fn plain(factory: &Arc<ScriptedFactory>) -> SingleThreadExecutor {
    PulsarExecutors::new_single_thread_executor_with(Arc::clone(factory))
}

fn scheduled(factory: &Arc<ScriptedFactory>) -> ScheduledExecutor {
    ScheduledExecutor::new(Arc::clone(factory))
}

/// Asserts that `reason` is a failed thread start caused by the scripted factory's panic.
fn assert_factory_panicked(reason: &RejectReason) {
    let RejectReason::ThreadStartFailed(error) = reason else {
        panic!("expected ThreadStartFailed, got {reason:?}");
    };
    let panicked = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<ThreadFactoryPanicked>())
        .expect("the io::Error wraps ThreadFactoryPanicked");
    assert_eq!(panicked.message(), FACTORY_PANIC);
}

/// A task that reports on `done` when it runs.
fn signal(done: &mpsc::Sender<&'static str>, name: &'static str) -> impl FnOnce() + Send {
    let done = done.clone();
    move || done.send(name).unwrap()
}

/// Runs `execute` (an `execute` whose lazy start the scripted factory holds at its gate) on
/// a thread of its own; returns once the factory was entered, so the start is in progress.
fn start_held_at_gate(
    factory: &ScriptedFactory,
    execute: impl FnOnce() -> Result<(), RejectReason> + Send + 'static,
) -> thread::JoinHandle<Result<(), RejectReason>> {
    let starter = thread::spawn(execute);
    factory.entered.wait(LONG);
    starter
}

/// Occupies the worker of `execute`'s executor until the returned sender is used.
fn block(execute: impl FnOnce(Box<dyn FnOnce() + Send>)) -> mpsc::Sender<()> {
    support::block_worker_with(execute)
}

// ---- a panicking thread factory is a failed start ----------------------------------------

#[test]
fn a_panicking_factory_hands_the_task_back_and_shutdown_terminates() {
    let factory = ScriptedFactory::new(&[Start::Panic]);
    let executor = plain(&factory);
    let drops = DropCounter::new();
    let token = drops.token();
    let rejected = executor.execute(move || drop(token)).unwrap_err();
    assert_factory_panicked(rejected.reason());
    assert_eq!(drops.drops(), 0, "the task comes back unrun and undropped");
    rejected.into_task()();
    assert_eq!(drops.drops(), 1);
    let submitted = executor.submit(|| 1).unwrap_err();
    assert_factory_panicked(submitted.reason());
    assert_eq!(factory.calls(), 2, "each task asked for the thread again");
    executor.shutdown();
    assert!(executor.await_termination(LONG));
    assert!(executor.is_terminated());
}

#[test]
fn after_a_panicking_start_the_next_task_starts_the_worker_and_runs() {
    let factory = ScriptedFactory::new(&[Start::Panic, Start::Work]);
    let executor = plain(&factory);
    let (done, ran) = mpsc::channel();
    let rejected = executor.execute(signal(&done, "first")).unwrap_err();
    assert_factory_panicked(rejected.reason());
    executor.execute(signal(&done, "second")).unwrap();
    assert_eq!(ran.recv_timeout(LONG).unwrap(), "second");
    assert_eq!(executor.submit(|| 3).unwrap().join().unwrap(), 3);
    assert_eq!(factory.calls(), 2);
    executor.shutdown();
    assert!(executor.await_termination(LONG));
}

#[test]
fn a_task_queued_during_a_panicking_start_runs_once_a_later_start_succeeds() {
    let factory = ScriptedFactory::new(&[Start::PanicAfterGate, Start::Work]);
    let executor = plain(&factory);
    let (done, ran) = mpsc::channel();
    let starter = start_held_at_gate(&factory, {
        let (executor, first) = (executor.clone(), signal(&done, "first"));
        move || executor.execute(first).map_err(|r| r.into_parts().1)
    });
    // The start is in progress: this task is queued behind it, not refused.
    executor.execute(signal(&done, "queued")).unwrap();
    factory.gate.count_down();
    assert_factory_panicked(&starter.join().unwrap().unwrap_err());
    assert_eq!(
        executor.pending_tasks(),
        1,
        "the queued task is still there"
    );
    executor.execute(signal(&done, "later")).unwrap();
    assert_eq!(ran.recv_timeout(LONG).unwrap(), "queued");
    assert_eq!(ran.recv_timeout(LONG).unwrap(), "later");
    executor.shutdown();
    assert!(executor.await_termination(LONG));
}

#[test]
fn a_panicking_factory_on_the_shutdown_restart_leaves_the_task_to_shutdown_now() {
    let factory = ScriptedFactory::new(&[Start::PanicAfterGate, Start::Panic]);
    let executor = plain(&factory);
    let drops = DropCounter::new();
    let starter = start_held_at_gate(&factory, {
        let executor = executor.clone();
        move || executor.execute(|| ()).map_err(|r| r.into_parts().1)
    });
    let token = drops.token();
    executor.execute(move || drop(token)).unwrap();
    factory.gate.count_down();
    assert_factory_panicked(&starter.join().unwrap().unwrap_err());
    executor.shutdown(); // retries the start for the queued task; the factory panics again
    assert_eq!(factory.calls(), 2);
    assert!(!executor.is_terminated(), "a task is still queued");
    let returned = executor.shutdown_now();
    assert_eq!(returned.len(), 1);
    assert!(executor.await_termination(LONG));
    drop(returned);
    assert_eq!(drops.drops(), 1);
}

/// A `shutdown` that comes while the lazy start is in progress cannot retry the start for the
/// task another caller queued meanwhile (the worker is `Starting`, not `NotStarted`); when that
/// start then fails, the failing caller retries it in the shutdown's place, and the task runs.
/// (Audit of 2026-12-07: the task stayed queued with no worker, and its `join` and
/// `await_termination` waited forever.)
#[test]
fn a_shutdown_during_a_start_that_fails_still_runs_the_task_queued_meanwhile() {
    let factory = ScriptedFactory::new(&[Start::PanicAfterGate, Start::Work]);
    let executor = plain(&factory);
    let starter = start_held_at_gate(&factory, {
        let executor = executor.clone();
        move || executor.execute(|| ()).map_err(|r| r.into_parts().1)
    });
    let queued = executor.submit(|| 7).unwrap();
    executor.shutdown();
    factory.gate.count_down();
    assert_factory_panicked(&starter.join().unwrap().unwrap_err());
    assert_eq!(factory.calls(), 2, "the failed start was retried once");
    match queued.join_timeout(LONG) {
        Ok(outcome) => assert_eq!(outcome.unwrap(), 7),
        Err(_) => panic!("the task queued during the failed start never ran"),
    }
    assert!(executor.await_termination(LONG));
}

/// As above, with the retry failing too: the task stays queued for `shutdown_now`, which
/// returns it and terminates the executor.
#[test]
fn a_shutdown_during_a_start_that_fails_twice_leaves_the_task_to_shutdown_now() {
    let factory = ScriptedFactory::new(&[Start::PanicAfterGate, Start::Panic]);
    let executor = plain(&factory);
    let drops = DropCounter::new();
    let starter = start_held_at_gate(&factory, {
        let executor = executor.clone();
        move || executor.execute(|| ()).map_err(|r| r.into_parts().1)
    });
    let token = drops.token();
    executor.execute(move || drop(token)).unwrap();
    executor.shutdown();
    factory.gate.count_down();
    assert_factory_panicked(&starter.join().unwrap().unwrap_err());
    assert_eq!(factory.calls(), 2);
    assert!(!executor.is_terminated(), "a task is still queued");
    let returned = executor.shutdown_now();
    assert_eq!(returned.len(), 1);
    assert!(executor.await_termination(LONG));
    drop(returned);
    assert_eq!(drops.drops(), 1);
}

/// A spawned future queued during a lazy start that fails, whose shutdown retry fails too,
/// then the last handle dropped: the future is dropped and its handle completes (cancelled).
/// (Audit of 2026-12-07, second pass: the future's poll job holds the core, so the core, and
/// the future in its queue, were never dropped, and the handle's `join` waited forever.)
#[test]
fn a_future_stranded_by_failed_starts_is_dropped_with_the_last_handle() {
    let factory = ScriptedFactory::new(&[Start::PanicAfterGate, Start::Panic]);
    let executor = plain(&factory);
    let drops = DropCounter::new();
    let starter = start_held_at_gate(&factory, {
        let executor = executor.clone();
        move || executor.execute(|| ()).map_err(|r| r.into_parts().1)
    });
    let token = drops.token();
    let handle = executor
        .spawn(async move {
            drop(token);
            1
        })
        .unwrap();
    factory.gate.count_down();
    assert_factory_panicked(&starter.join().unwrap().unwrap_err());
    drop(executor); // `shutdown` retries the start, which fails again
    assert_eq!(factory.calls(), 2);
    match handle.join_timeout(LONG) {
        Ok(outcome) => assert!(outcome.is_err(), "cancelled, never polled"),
        Err(_) => panic!("the stranded future was never dropped"),
    }
    assert_eq!(
        drops.drops(),
        1,
        "the future (and its capture) dropped once"
    );
}

/// `shutdown_now` taking the queue while `shutdown`'s retried start is in progress: when that
/// start fails, the executor (stopped, empty, workerless) terminates. (Audit of 2026-12-07:
/// it never did, and `await_termination` waited forever.)
#[test]
fn shutdown_now_racing_the_shutdown_restart_leaves_a_terminated_executor() {
    let factory = ScriptedFactory::new(&[Start::PanicAfterGate, Start::PanicAfterSecondGate]);
    let executor = plain(&factory);
    let drops = DropCounter::new();
    let starter = start_held_at_gate(&factory, {
        let executor = executor.clone();
        move || executor.execute(|| ()).map_err(|r| r.into_parts().1)
    });
    let token = drops.token();
    executor.execute(move || drop(token)).unwrap();
    factory.gate.count_down();
    assert_factory_panicked(&starter.join().unwrap().unwrap_err());
    // The task is stranded; `shutdown` retries the start for it, held open here.
    let stopper = {
        let executor = executor.clone();
        thread::spawn(move || executor.shutdown())
    };
    factory.entered_again.wait(LONG);
    let returned = executor.shutdown_now();
    assert_eq!(returned.len(), 1);
    factory.gate_again.count_down();
    stopper.join().unwrap();
    assert_eq!(factory.calls(), 2);
    assert!(
        executor.await_termination(LONG),
        "stopped, empty and workerless: terminated"
    );
    drop(returned);
    assert_eq!(drops.drops(), 1);
}

#[test]
fn a_panicking_factory_on_the_shutdown_restart_of_a_scheduled_executor_is_a_failed_start() {
    let factory = ScriptedFactory::new(&[Start::PanicAfterGate, Start::Panic]);
    let executor = scheduled(&factory);
    let starter = start_held_at_gate(&factory, {
        let executor = executor.clone();
        move || executor.execute(|| ()).map_err(|r| r.into_parts().1)
    });
    let timer = executor.schedule(Duration::from_secs(3600), || 5).unwrap();
    factory.gate.count_down();
    assert_factory_panicked(&starter.join().unwrap().unwrap_err());
    executor.shutdown(); // the armed one-shot timer asks for a worker; the factory panics
    assert_eq!(factory.calls(), 2);
    let returned = executor.shutdown_now();
    assert_eq!(returned.len(), 1, "the timer comes back as a task");
    assert!(executor.await_termination(LONG));
    drop(returned);
    assert!(matches!(timer.join(), Err(TaskError::Cancelled)));
}

#[test]
fn a_panicking_factory_hands_scheduled_and_immediate_tasks_back_and_a_retry_works() {
    let factory = ScriptedFactory::new(&[Start::Panic, Start::Panic, Start::Work]);
    let executor = scheduled(&factory);
    let rejected = executor.execute(|| ()).unwrap_err();
    assert_factory_panicked(rejected.reason());
    let rejected = executor.schedule(Duration::ZERO, || 7).unwrap_err();
    assert_factory_panicked(rejected.reason());
    assert_eq!(rejected.into_task()(), 7, "the closure comes back intact");
    assert_eq!(executor.pending_tasks(), 0);
    let handle = executor.schedule(Duration::ZERO, || 8).unwrap();
    assert_eq!(handle.join().unwrap(), 8);
    assert_eq!(factory.calls(), 3);
    executor.shutdown();
    assert!(executor.await_termination(LONG));
}

#[test]
fn a_panicking_factory_hands_back_batches_futures_and_invoked_tasks_and_a_retry_works() {
    // One failed start per path: execute_all, spawn, invoke_all (one per task), invoke_any.
    let script = [[Start::Panic; 5].as_slice(), &[Start::Work]].concat();
    let factory = ScriptedFactory::new(&script);
    let executor = plain(&factory);
    let (done, ran) = mpsc::channel();
    let batch: Vec<_> = (0..3)
        .map(|i| {
            let done = done.clone();
            move || done.send(i).unwrap()
        })
        .collect();
    let rejected = executor.execute_all(batch).unwrap_err();
    assert_factory_panicked(rejected.reason());
    for task in rejected.into_task() {
        task();
    }
    assert_eq!(
        ran.try_iter().collect::<Vec<_>>(),
        [0, 1, 2],
        "the batch came back whole"
    );

    let drops = DropCounter::new();
    let token = drops.token();
    let refused = executor
        .spawn(async move {
            drop(token);
        })
        .unwrap_err();
    assert_factory_panicked(refused.reason());
    assert_eq!(
        drops.drops(),
        0,
        "the future comes back unpolled and undropped"
    );
    drop(refused);
    assert_eq!(drops.drops(), 1);

    // Each refused task says why: the factory's panic, not a shutdown.
    let all = executor.invoke_all(vec![|| 1, || 2]);
    assert_eq!(all.len(), 2);
    for outcome in &all {
        let Err(error @ TaskError::Rejected(reason)) = outcome else {
            panic!("expected a rejection, got {outcome:?}");
        };
        assert_factory_panicked(reason);
        let message = error.to_string();
        assert!(message.contains("could not be started"), "{message}");
        let source = std::error::Error::source(error).expect("the reason is the source");
        assert!(source.downcast_ref::<RejectReason>().is_some());
    }
    let any = executor.invoke_any(vec![|| Ok::<u8, ()>(1)]);
    let Err(InvokeAnyError::AllFailed(failures)) = any else {
        panic!("expected AllFailed, got {any:?}");
    };
    let [InvokeFailure::Task(TaskError::Rejected(reason))] = &failures[..] else {
        panic!("expected one rejection, got {failures:?}");
    };
    assert_factory_panicked(reason);
    assert_eq!(executor.pending_tasks(), 0);

    assert_eq!(executor.submit(|| 9).unwrap().join().unwrap(), 9);
    assert_eq!(factory.calls(), 6, "each path asked for the thread again");
    executor.shutdown();
    assert!(executor.await_termination(LONG));
}

#[test]
fn a_scheduled_executor_whose_factory_always_panics_terminates_at_shutdown() {
    let factory = ScriptedFactory::new(&[Start::Panic]);
    let executor = scheduled(&factory);
    assert!(executor.schedule(Duration::ZERO, || ()).is_err());
    assert!(executor
        .schedule_at_fixed_rate(Duration::ZERO, Duration::from_secs(1), || ())
        .is_err());
    let rejected = executor
        .schedule_with_fixed_delay(Duration::ZERO, Duration::from_secs(1), || ())
        .unwrap_err();
    assert_factory_panicked(rejected.reason());
    assert_eq!(factory.calls(), 3);
    executor.shutdown();
    assert!(executor.await_termination(LONG));
}

#[test]
fn a_group_whose_thread_name_is_invalid_rejects_tasks_instead_of_wedging() {
    // std's thread builder panics on a name with an interior NUL: a real panicking factory.
    let group = pulsar_common::executors::ExecutorGroup::new("bad\0name", 1);
    let rejected = group.next().execute(|| ()).unwrap_err();
    assert!(matches!(
        rejected.reason(),
        RejectReason::ThreadStartFailed(_)
    ));
    group.shutdown();
    assert!(group.await_termination(LONG));
}

// ---- a panicking panic hook never kills the worker ---------------------------------------

#[test]
fn a_panic_hook_that_panics_with_a_panicking_payload_leaves_the_worker_running() {
    let payload_drops = DropCounter::new();
    let factory = ScriptedFactory::with_panicking_hook(&payload_drops);
    let executor = plain(&factory);
    executor.execute(|| panic!("task fails")).unwrap();
    assert_eq!(executor.submit(|| 2).unwrap().join().unwrap(), 2);
    assert_eq!(factory.task_panics(), 1);
    assert_eq!(
        payload_drops.drops(),
        1,
        "the hook's payload was dropped, once"
    );
    executor.shutdown();
    assert!(executor.await_termination(LONG));
    factory.wait_finished(1, LONG);
}

#[test]
fn a_panic_hook_that_panics_leaves_the_scheduled_worker_running() {
    let payload_drops = DropCounter::new();
    let factory = ScriptedFactory::with_panicking_hook(&payload_drops);
    let executor = scheduled(&factory);
    executor.execute(|| panic!("task fails")).unwrap();
    assert_eq!(
        executor
            .schedule(Duration::ZERO, || 4)
            .unwrap()
            .join()
            .unwrap(),
        4
    );
    assert_eq!(factory.task_panics(), 1);
    assert_eq!(payload_drops.drops(), 1);
    executor.shutdown();
    assert!(executor.await_termination(LONG));
}

// ---- self-join fails fast ----------------------------------------------------------------

/// Joins a task that itself joins, waiting at most [`LONG`]: a self-join that waited instead
/// of failing fast would block the outer task for good, and this fails the test instead of
/// hanging it.
fn joined_in_time<R>(outer: TaskHandle<R>) -> R {
    match outer.join_timeout(LONG) {
        Ok(outcome) => outcome.expect("the outer task completes"),
        Err(_) => panic!("the outer task is still blocked: its self-join waited"),
    }
}

#[test]
fn join_on_the_worker_of_the_tasks_own_executor_fails_fast() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let same = executor.clone();
    let (done, ran) = mpsc::channel();
    let inner_done = done.clone();
    let outer = executor
        .submit(move || {
            same.submit(move || inner_done.send("inner").unwrap())
                .unwrap()
                .join()
        })
        .unwrap();
    assert!(matches!(
        joined_in_time(outer),
        Err(TaskError::WouldDeadlock)
    ));
    assert_eq!(
        ran.recv_timeout(LONG).unwrap(),
        "inner",
        "the inner task still runs"
    );
    drop(done);
}

#[test]
fn join_timeout_on_the_worker_of_the_tasks_own_executor_fails_fast() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let same = executor.clone();
    let outer = executor
        .submit(
            move || match same.submit(|| 1).unwrap().join_timeout(LONG) {
                Ok(outcome) => outcome.map_err(|error| error.is_would_deadlock()),
                Err(_) => panic!("waited out the timeout instead of failing fast"),
            },
        )
        .unwrap();
    assert_eq!(outer.join().unwrap(), Err(true));
}

#[test]
fn a_spawned_futures_handle_joined_on_its_own_executors_worker_fails_fast() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let same = executor.clone();
    let outer = executor
        .submit(move || {
            let spawned = same.spawn(async { 3 }).unwrap();
            let refused = spawned.join().map_err(|error| error.is_would_deadlock());
            let spawned = same.spawn(async { 4 }).unwrap();
            let timed = match spawned.join_timeout(LONG) {
                Ok(outcome) => outcome.map_err(|error| error.is_would_deadlock()),
                Err(_) => panic!("waited out the timeout instead of failing fast"),
            };
            (refused, timed)
        })
        .unwrap();
    assert_eq!(joined_in_time(outer), (Err(true), Err(true)));
    executor.shutdown();
    assert!(executor.await_termination(LONG));
}

#[test]
fn a_finished_result_can_still_be_joined_on_its_own_executors_worker() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let first = executor.submit(|| 5).unwrap();
    // FIFO: `first` has run by the time this task does.
    let outer = executor.submit(move || first.join()).unwrap();
    assert_eq!(outer.join().unwrap().unwrap(), 5);
}

#[test]
fn join_on_the_worker_of_another_executor_still_waits_for_the_result() {
    let (a, b) = (
        PulsarExecutors::new_single_thread_executor(),
        PulsarExecutors::new_single_thread_executor(),
    );
    let b2 = b.clone();
    let joined = a.submit(move || b2.submit(|| 7).unwrap().join()).unwrap();
    assert_eq!(joined.join().unwrap().unwrap(), 7);
    let b3 = b.clone();
    let timed = a
        .submit(move || b3.submit(|| 8).unwrap().join_timeout(LONG).ok())
        .unwrap();
    assert_eq!(timed.join().unwrap().unwrap().unwrap(), 8);
    let timers = ScheduledExecutor::new(pulsar_common::executors::NamedThreadFactory::new("t"));
    let b4 = b.clone();
    let across = timers
        .schedule(Duration::ZERO, move || b4.submit(|| 9).unwrap().join())
        .unwrap();
    assert_eq!(across.join().unwrap().unwrap(), 9);
    timers.shutdown();
}

#[test]
fn invoke_all_and_invoke_any_on_their_own_executors_worker_fail_fast_without_running() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let same = executor.clone();
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&ran);
    let outer = executor
        .submit(move || {
            let tasks: Vec<_> = (0..3)
                .map(|_| {
                    let counted = Arc::clone(&counted);
                    move || counted.fetch_add(1, Ordering::SeqCst)
                })
                .collect();
            let all = same.invoke_all(tasks);
            let any = same.invoke_any(vec![|| Ok::<u8, ()>(1)]);
            (all, any)
        })
        .unwrap();
    let (all, any) = joined_in_time(outer);
    assert_eq!(all.len(), 3);
    assert!(all
        .iter()
        .all(|r| matches!(r, Err(TaskError::WouldDeadlock))));
    let Err(InvokeAnyError::AllFailed(failures)) = any else {
        panic!("invoke_any must fail");
    };
    assert!(matches!(
        failures[..],
        [InvokeFailure::Task(TaskError::WouldDeadlock)]
    ));
    executor.shutdown();
    assert!(executor.await_termination(LONG));
    assert_eq!(ran.load(Ordering::SeqCst), 0, "nothing was submitted");
}

#[test]
fn scheduled_join_and_join_timeout_on_the_executors_own_worker_fail_fast() {
    let executor = ScheduledExecutor::new(pulsar_common::executors::NamedThreadFactory::new("s"));
    let same = executor.clone();
    let (result, outcome) = mpsc::channel();
    executor
        .execute(move || {
            let one_shot = same.schedule(Duration::ZERO, || 1).unwrap();
            let periodic = same
                .schedule_at_fixed_rate(Duration::ZERO, Duration::from_secs(3600), || ())
                .unwrap();
            let timed = same.schedule(Duration::ZERO, || 2).unwrap();
            result
                .send((
                    one_shot.join().map_err(|e| e.is_would_deadlock()),
                    periodic.join().map_err(|e| e.is_would_deadlock()),
                    timed
                        .join_timeout(LONG)
                        .ok()
                        .map(|r| r.map_err(|e| e.is_would_deadlock())),
                ))
                .unwrap();
        })
        .unwrap();
    let (one_shot, periodic, timed) = outcome.recv_timeout(LONG).unwrap();
    assert_eq!(one_shot, Err(true));
    assert_eq!(periodic, Err(true));
    assert_eq!(timed, Some(Err(true)));
    executor.shutdown();
    assert!(executor.await_termination(LONG));
}

#[test]
fn scheduled_join_on_another_executors_worker_still_waits() {
    let timers = ScheduledExecutor::new(pulsar_common::executors::NamedThreadFactory::new("s"));
    let other = PulsarExecutors::new_single_thread_executor();
    let timers2 = timers.clone();
    let joined = other
        .submit(move || timers2.schedule(Duration::ZERO, || 6).unwrap().join())
        .unwrap();
    assert_eq!(joined.join().unwrap().unwrap(), 6);
    timers.shutdown();
    assert!(timers.await_termination(LONG));
}

// ---- unusual closures --------------------------------------------------------------------

/// A capture whose alignment is larger than a task slot's (64 vs 8 bytes).
#[repr(align(64))]
struct Aligned([u8; 64]);

impl Aligned {
    fn new() -> Self {
        let mut bytes = [0u8; 64];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = i as u8;
        }
        Aligned(bytes)
    }

    /// Checks its own address and contents; returns the sum of its bytes.
    fn check(&self) -> u32 {
        assert_eq!(
            std::ptr::from_ref(self) as usize % 64,
            0,
            "misaligned capture"
        );
        self.0.iter().map(|&b| u32::from(b)).sum()
    }
}

const ALIGNED_SUM: u32 = 63 * 64 / 2;

#[test]
fn an_over_aligned_closure_runs_and_comes_back_aligned_on_both_executors() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let value = Aligned::new();
    assert_eq!(
        executor
            .submit(move || value.check())
            .unwrap()
            .join()
            .unwrap(),
        ALIGNED_SUM
    );
    let (done, ran) = mpsc::channel();
    let value = Aligned::new();
    executor
        .execute(move || done.send(value.check()).unwrap())
        .unwrap();
    assert_eq!(ran.recv_timeout(LONG).unwrap(), ALIGNED_SUM);
    executor.shutdown();
    let value = Aligned::new();
    let rejected = executor.execute(move || assert_eq!(value.check(), ALIGNED_SUM));
    rejected.unwrap_err().into_task()();

    let timers = ScheduledExecutor::new(pulsar_common::executors::NamedThreadFactory::new("a"));
    let value = Aligned::new();
    let handle = timers
        .schedule(Duration::ZERO, move || value.check())
        .unwrap();
    assert_eq!(handle.join().unwrap(), ALIGNED_SUM);
    let (done, ran) = mpsc::channel();
    let value = Aligned::new();
    timers
        .execute(move || done.send(value.check()).unwrap())
        .unwrap();
    assert_eq!(ran.recv_timeout(LONG).unwrap(), ALIGNED_SUM);
    timers.shutdown();
    assert!(timers.await_termination(LONG));
}

#[test]
fn an_over_aligned_closure_returned_by_shutdown_now_runs_or_drops_once() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block(|task| executor.execute(task).unwrap());
    let drops = DropCounter::new();
    let (value, token) = (Aligned::new(), drops.token());
    executor
        .execute(move || {
            let _token = token;
            assert_eq!(value.check(), ALIGNED_SUM);
        })
        .unwrap();
    let (value, token) = (Aligned::new(), drops.token());
    executor
        .execute(move || {
            let _token = token;
            value.check();
        })
        .unwrap();
    let mut returned = executor.shutdown_now();
    release.send(()).unwrap();
    assert_eq!(returned.len(), 2);
    returned.remove(0).run();
    drop(returned);
    assert_eq!(drops.drops(), 2);
    assert!(executor.await_termination(LONG));
}

/// A zero-sized capture aligned to 64 bytes: it fits a task slot by size but not by
/// alignment. Its `Drop` records whether it was dropped at an aligned address: a task dropped
/// unrun drops its captures in place, wherever the task holds them.
#[repr(align(64))]
struct AlignedMarker;

static ALIGNED_MARKER_DROPS: AtomicUsize = AtomicUsize::new(0);
static MISALIGNED_MARKER_DROPS: AtomicUsize = AtomicUsize::new(0);

impl Drop for AlignedMarker {
    fn drop(&mut self) {
        let aligned = std::ptr::from_mut(self) as usize % 64 == 0;
        let counter = if aligned {
            &ALIGNED_MARKER_DROPS
        } else {
            &MISALIGNED_MARKER_DROPS
        };
        counter.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn an_over_aligned_zero_sized_capture_is_dropped_aligned_by_the_shutdown_now_caller() {
    assert_eq!(
        (
            std::mem::size_of::<AlignedMarker>(),
            std::mem::align_of::<AlignedMarker>()
        ),
        (0, 64)
    );
    const TASKS: usize = 4;
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block(|task| executor.execute(task).unwrap());
    for _ in 0..TASKS {
        let marker = AlignedMarker;
        executor
            .execute(move || {
                let _keep = &marker;
            })
            .unwrap();
    }
    let returned = executor.shutdown_now();
    assert_eq!(returned.len(), TASKS);
    drop(returned);
    release.send(()).unwrap();
    assert_eq!(ALIGNED_MARKER_DROPS.load(Ordering::SeqCst), TASKS);
    assert_eq!(
        MISALIGNED_MARKER_DROPS.load(Ordering::SeqCst),
        0,
        "a capture was stored misaligned in its task slot"
    );
    assert!(executor.await_termination(LONG));
}

static ZERO_SIZED_RUNS: AtomicUsize = AtomicUsize::new(0);

#[test]
fn a_zero_sized_closure_runs_is_handed_back_and_returns_values() {
    let zst = || {
        ZERO_SIZED_RUNS.fetch_add(1, Ordering::SeqCst);
    };
    assert_eq!(std::mem::size_of_val(&zst), 0);
    let executor = PulsarExecutors::new_single_thread_executor();
    executor.execute(zst).unwrap();
    assert_eq!(executor.submit(|| 11).unwrap().join().unwrap(), 11);
    let timers = ScheduledExecutor::new(pulsar_common::executors::NamedThreadFactory::new("z"));
    timers.execute(zst).unwrap();
    assert_eq!(
        timers
            .schedule(Duration::ZERO, || 12)
            .unwrap()
            .join()
            .unwrap(),
        12
    );
    timers.shutdown();
    assert!(timers.await_termination(LONG));
    executor.shutdown();
    assert!(executor.await_termination(LONG));
    assert_eq!(ZERO_SIZED_RUNS.load(Ordering::SeqCst), 2);
    let rejected = executor.execute(zst).unwrap_err();
    rejected.into_task()();
    let mut batch = executor.execute_all([zst, zst]).unwrap_err().into_task();
    assert_eq!(batch.len(), 2);
    batch.pop().unwrap()();
    assert_eq!(ZERO_SIZED_RUNS.load(Ordering::SeqCst), 4);
}

// ---- captures that panic when dropped ----------------------------------------------------

#[test]
fn a_capture_panicking_on_drop_is_dropped_once_by_the_shutdown_now_caller() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block(|task| executor.execute(task).unwrap());
    let drops = DropCounter::new();
    let (panicking, token) = (drops.panicking_token(), drops.token());
    executor.execute(move || drop(panicking)).unwrap();
    executor.execute(move || drop(token)).unwrap();
    let returned = executor.shutdown_now();
    assert_eq!(returned.len(), 2);
    let dropped = panic::catch_unwind(AssertUnwindSafe(move || drop(returned)));
    let payload = dropped.expect_err("the capture's panic reaches the caller that drops it");
    assert_eq!(
        payload.downcast_ref::<String>().map(String::as_str),
        Some(PanickingToken::MESSAGE)
    );
    assert_eq!(drops.drops(), 2, "both tasks dropped, each once");
    release.send(()).unwrap();
    assert!(executor.await_termination(LONG));
    assert_eq!(executor.pending_tasks(), 0);
}

#[test]
fn a_capture_panicking_on_drop_is_dropped_once_by_the_scheduled_shutdown_now_caller() {
    let executor = ScheduledExecutor::new(pulsar_common::executors::NamedThreadFactory::new("d"));
    let release = block(|task| executor.execute(task).unwrap());
    let drops = DropCounter::new();
    let panicking = drops.panicking_token();
    executor.execute(move || drop(panicking)).unwrap();
    let panicking = drops.panicking_token();
    let timer = executor
        .schedule(Duration::from_secs(3600), move || drop(panicking))
        .unwrap();
    let returned = executor.shutdown_now();
    assert_eq!(returned.len(), 2);
    for task in returned {
        assert!(panic::catch_unwind(AssertUnwindSafe(move || drop(task))).is_err());
    }
    assert_eq!(drops.drops(), 2);
    assert!(matches!(timer.join(), Err(TaskError::Cancelled)));
    release.send(()).unwrap();
    assert!(executor.await_termination(LONG));
}

#[test]
fn a_capture_panicking_on_drop_while_the_task_runs_leaves_the_executor_usable() {
    let factory = ScriptedFactory::new(&[Start::Work]);
    let executor = plain(&factory);
    let drops = DropCounter::new();
    let panicking = drops.panicking_token();
    executor.execute(move || drop(panicking)).unwrap();
    let panicking = drops.panicking_token();
    let submitted = executor.submit(move || drop(panicking)).unwrap();
    assert!(submitted.join().unwrap_err().is_panic());
    assert_eq!(executor.submit(|| 1).unwrap().join().unwrap(), 1);
    assert_eq!(drops.drops(), 2);
    assert_eq!(
        factory.task_panics(),
        1,
        "the execute'd one went to the hook"
    );
    executor.shutdown();
    assert!(executor.await_termination(LONG));
}

#[test]
fn a_capture_panicking_on_drop_is_dropped_once_by_the_executors_own_drop() {
    // A task stranded by a failed start (the factory panics, then panics again on the
    // restart at shutdown) is dropped when the executor is: once, without unwinding out of
    // the executor's `Drop`, reported to the hook.
    let factory = ScriptedFactory::new(&[Start::PanicAfterGate, Start::Panic]);
    let executor = plain(&factory);
    let drops = DropCounter::new();
    let starter = {
        let executor = executor.clone();
        thread::spawn(move || executor.execute(|| ()).is_err())
    };
    factory.entered.wait(LONG);
    let (panicking, token) = (drops.panicking_token(), drops.token());
    executor.execute(move || drop(panicking)).unwrap();
    executor.execute(move || drop(token)).unwrap();
    factory.gate.count_down();
    assert!(starter.join().unwrap());
    assert_eq!(drops.drops(), 0);
    drop(executor); // shutdown's restart fails too; the core drops the stranded tasks
    assert_eq!(drops.drops(), 2, "each stranded task dropped once");
    assert_eq!(
        factory.task_panics(),
        1,
        "the drop's panic went to the hook"
    );
    let usable = PulsarExecutors::new_single_thread_executor_with(Arc::clone(&factory));
    assert!(usable.execute(|| ()).is_err(), "the factory still panics");
}

#[test]
fn a_periodic_capture_panicking_on_drop_is_dropped_once_by_the_scheduled_executors_drop() {
    let factory = ScriptedFactory::new(&[Start::Work]);
    let executor = scheduled(&factory);
    let drops = DropCounter::new();
    let panicking = drops.panicking_token();
    let periodic = executor
        .schedule_at_fixed_rate(
            Duration::from_secs(3600),
            Duration::from_secs(1),
            move || {
                let _keep = &panicking;
            },
        )
        .unwrap();
    let other = executor
        .schedule_with_fixed_delay(Duration::from_secs(3600), Duration::from_secs(1), || ())
        .unwrap();
    drop(executor); // shutdown cancels both periodic timers, dropping their closures
    assert_eq!(drops.drops(), 1);
    assert_eq!(
        factory.task_panics(),
        1,
        "the drop's panic went to the hook"
    );
    assert!(matches!(periodic.join(), Err(TaskError::Cancelled)));
    assert!(
        matches!(other.join(), Err(TaskError::Cancelled)),
        "the timer after it was cancelled too"
    );
    factory.wait_finished(1, LONG);
}
