//! SingleThreadExecutor as a specification: lazy start, order, panics, lifecycle, shutdown
//! races, drops, and the cases of Pulsar's `PulsarExecutorsTest`.

mod support;

use pulsar_common::executors::{
    InvokeAnyError, InvokeFailure, PulsarExecutors, RejectReason, SingleThreadExecutor, TaskError,
};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;
use support::{capture_warnings, CountingFactory, DropCounter, Latch, NoThreads, LONG};

fn executor_with(factory: &Arc<CountingFactory>) -> SingleThreadExecutor {
    PulsarExecutors::new_single_thread_executor_with(Arc::clone(factory))
}

/// Occupies the worker until the returned sender is used (or dropped).
fn block_worker(executor: &SingleThreadExecutor) -> mpsc::Sender<()> {
    support::block_worker_with(|task| executor.execute(task).unwrap())
}

// ---- smoke and laziness -------------------------------------------------------------------

#[test]
fn no_thread_exists_before_the_first_accepted_task() {
    let factory = CountingFactory::new("lazy");
    let executor = executor_with(&factory);
    let clone = executor.clone();
    assert_eq!(factory.threads_started(), 0);
    assert_eq!(executor.pending_tasks(), 0);
    let _ = format!("{executor:?}");
    assert_eq!(factory.threads_started(), 0);
    clone.submit(|| ()).unwrap().join().unwrap();
    assert_eq!(factory.threads_started(), 1);
    for _ in 0..10 {
        executor.execute(|| ()).unwrap();
    }
    assert_eq!(
        factory.threads_started(),
        1,
        "one worker for the executor's lifetime"
    );
}

#[test]
fn lazy_start_then_one_hundred_tasks_run_in_submission_order() {
    let factory = CountingFactory::new("order");
    let executor = executor_with(&factory);
    assert_eq!(factory.threads_started(), 0);
    let order = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..100)
        .map(|i| {
            let order = Arc::clone(&order);
            executor
                .submit(move || order.lock().unwrap().push(i))
                .unwrap()
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..100).collect::<Vec<_>>());
}

#[test]
fn four_submitters_one_hundred_thousand_tasks_each_all_run_in_each_submitters_order() {
    const SUBMITTERS: usize = 4;
    // Under Miri (~10^4 times slower) fewer iterations, the same assertions.
    const PER_SUBMITTER: usize = if cfg!(miri) { 200 } else { 100_000 };
    let executor = PulsarExecutors::new_single_thread_executor();
    let last_seen = Arc::new(Mutex::new([None::<usize>; SUBMITTERS]));
    let violations = Arc::new(AtomicUsize::new(0));
    let latch = Latch::new(SUBMITTERS * PER_SUBMITTER);
    let start = Arc::new(Barrier::new(SUBMITTERS));
    let submitters: Vec<_> = (0..SUBMITTERS)
        .map(|s| {
            let (executor, last_seen, violations, latch, start) = (
                executor.clone(),
                Arc::clone(&last_seen),
                Arc::clone(&violations),
                Arc::clone(&latch),
                Arc::clone(&start),
            );
            thread::spawn(move || {
                start.wait();
                for i in 0..PER_SUBMITTER {
                    let (last_seen, violations, latch) = (
                        Arc::clone(&last_seen),
                        Arc::clone(&violations),
                        Arc::clone(&latch),
                    );
                    executor
                        .execute(move || {
                            let mut last = last_seen.lock().unwrap();
                            if last[s].is_some_and(|previous| previous + 1 != i)
                                || (last[s].is_none() && i != 0)
                            {
                                violations.fetch_add(1, Ordering::SeqCst);
                            }
                            last[s] = Some(i);
                            drop(last);
                            latch.count_down();
                        })
                        .unwrap();
                }
            })
        })
        .collect();
    for submitter in submitters {
        submitter.join().unwrap();
    }
    latch.wait(LONG);
    assert_eq!(violations.load(Ordering::SeqCst), 0);
}

// ---- panics -------------------------------------------------------------------------------

#[test]
fn a_panicking_task_never_stops_the_executor() {
    let factory = CountingFactory::new("panics");
    let executor = executor_with(&factory);
    let ran = Arc::new(AtomicUsize::new(0));
    let latch = Latch::new(1000);
    for i in 0..1000 {
        let (ran, latch) = (Arc::clone(&ran), Arc::clone(&latch));
        executor
            .execute(move || {
                latch.count_down();
                if i % 7 == 0 {
                    panic!("task {i} fails");
                }
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
    }
    latch.wait(LONG);
    // The last task may still be unwinding: wait for it through the executor itself.
    executor.submit(|| ()).unwrap().join().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1000 - 143);
    assert_eq!(
        factory.panics(),
        143,
        "every execute'd panic reaches the factory hook"
    );
    assert_eq!(factory.panic_messages.lock().unwrap()[1], "task 7 fails");
    assert_eq!(
        factory.threads_started(),
        1,
        "the worker survived every panic"
    );
}

#[test]
fn a_submitted_task_reports_its_panic_to_its_handle_not_the_hook() {
    let factory = CountingFactory::new("submit-panic");
    let executor = executor_with(&factory);
    let failed = executor.submit(|| -> u32 { panic!("bad") }).unwrap();
    let error = failed.join().unwrap_err();
    assert!(error.is_panic());
    assert_eq!(
        error.into_panic().unwrap().downcast_ref::<&str>(),
        Some(&"bad")
    );
    assert_eq!(executor.submit(|| 5).unwrap().join().unwrap(), 5);
    assert_eq!(factory.panics(), 0);
}

// ---- Pulsar's PulsarExecutorsTest, in Rust -------------------------------------------------

#[test]
fn invoke_all_returns_7_and_11() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let results = executor.invoke_all(vec![
        Box::new(|| 7) as Box<dyn FnOnce() -> i32 + Send>,
        Box::new(|| 11),
    ]);
    let values: Vec<i32> = results.into_iter().map(Result::unwrap).collect();
    assert_eq!(values, vec![7, 11]);
}

#[test]
fn invoke_any_skips_a_failing_task_and_returns_13() {
    let executor = PulsarExecutors::new_single_thread_executor();
    type Job = Box<dyn FnOnce() -> Result<i32, String> + Send>;
    let later_ran = Arc::new(AtomicBool::new(false));
    let later = Arc::clone(&later_ran);
    let tasks: Vec<Job> = vec![
        Box::new(|| Err("first fails".to_owned())),
        Box::new(|| Ok(13)),
        Box::new(move || {
            later.store(true, Ordering::SeqCst);
            Ok(99)
        }),
    ];
    assert_eq!(executor.invoke_any(tasks).unwrap(), 13);
    executor.submit(|| ()).unwrap().join().unwrap();
    assert!(
        !later_ran.load(Ordering::SeqCst),
        "tasks after the first success are skipped"
    );
}

#[test]
fn invoke_any_reports_every_failure_when_none_succeeds() {
    let executor = PulsarExecutors::new_single_thread_executor();
    type Job = Box<dyn FnOnce() -> Result<i32, &'static str> + Send>;
    let tasks: Vec<Job> = vec![Box::new(|| Err("a")), Box::new(|| panic!("b"))];
    match executor.invoke_any(tasks) {
        Err(InvokeAnyError::AllFailed(failures)) => {
            assert_eq!(failures.len(), 2);
            assert!(matches!(failures[0], InvokeFailure::Failed("a")));
            assert!(matches!(
                &failures[1],
                InvokeFailure::Task(TaskError::Panicked(_))
            ));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(
        executor.invoke_any(Vec::<Job>::new()),
        Err(InvokeAnyError::NoTasks)
    ));
}

#[test]
fn submit_returns_17() {
    let executor = PulsarExecutors::new_single_thread_executor();
    assert_eq!(executor.submit(|| 17).unwrap().join().unwrap(), 17);
}

#[test]
fn dropping_the_last_clone_drains_queued_tasks_without_interrupting_and_rejects_new_ones() {
    let factory = CountingFactory::new("cleanup");
    let executor = executor_with(&factory);
    let survivor = executor.clone();
    let release = block_worker(&executor);
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..10 {
        let ran = Arc::clone(&ran);
        executor
            .execute(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
    }
    drop(executor);
    assert!(!survivor.is_shutdown(), "a clone is still alive");
    drop(survivor); // the last clone: graceful shutdown, does not block on the running task
    release.send(()).unwrap();
    factory.wait_finished(1, LONG);
    assert_eq!(ran.load(Ordering::SeqCst), 10, "accepted tasks still ran");
}

#[test]
fn explicit_shutdown_drains_queued_tasks_and_rejects_new_ones() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..10 {
        let ran = Arc::clone(&ran);
        executor
            .execute(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
    }
    executor.shutdown();
    executor.shutdown(); // idempotent
    assert!(executor.is_shutdown());
    assert!(!executor.is_terminated());
    let rejected = executor.execute(|| ()).unwrap_err();
    assert!(matches!(rejected.reason(), RejectReason::Shutdown));
    assert!(matches!(
        executor.submit(|| 1).unwrap_err().reason(),
        RejectReason::Shutdown
    ));
    release.send(()).unwrap();
    assert!(executor.await_termination(LONG));
    assert!(executor.is_terminated());
    assert_eq!(ran.load(Ordering::SeqCst), 10);
}

#[test]
fn shutdown_now_returns_exactly_the_queued_task_and_it_never_runs() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let ran = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    executor
        .execute(move || flag.store(true, Ordering::SeqCst))
        .unwrap();
    let returned = executor.shutdown_now();
    assert_eq!(returned.len(), 1);
    release.send(()).unwrap();
    assert!(executor.await_termination(LONG));
    drop(returned);
    assert!(!ran.load(Ordering::SeqCst));
}

// ---- shutdown_now details -----------------------------------------------------------------

#[test]
fn shutdown_now_returns_queued_tasks_in_fifo_order_and_they_can_run_elsewhere() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let order = Arc::new(Mutex::new(Vec::new()));
    for i in 0..300 {
        let order = Arc::clone(&order);
        executor
            .execute(move || order.lock().unwrap().push(i))
            .unwrap();
    }
    assert_eq!(executor.pending_tasks(), 300);
    let tasks = executor.shutdown_now();
    assert_eq!(tasks.len(), 300);
    assert_eq!(executor.pending_tasks(), 0);
    release.send(()).unwrap();
    assert!(executor.await_termination(LONG));
    assert!(
        order.lock().unwrap().is_empty(),
        "none of them ran on the executor"
    );
    for task in tasks {
        task.run();
    }
    assert_eq!(*order.lock().unwrap(), (0..300).collect::<Vec<_>>());
}

#[test]
fn a_dropped_returned_task_cancels_its_handle() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let handle = executor.submit(|| 1).unwrap();
    let tasks = executor.shutdown_now();
    assert!(!handle.is_finished());
    drop(tasks);
    assert!(handle.is_finished());
    assert!(matches!(handle.join(), Err(TaskError::Cancelled)));
    drop(release);
}

#[test]
fn a_returned_submitted_task_run_elsewhere_completes_its_handle() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let handle = executor.submit(|| "elsewhere").unwrap();
    for task in executor.shutdown_now() {
        task.run();
    }
    assert_eq!(handle.join().unwrap(), "elsewhere");
    drop(release);
}

// ---- lifecycle ----------------------------------------------------------------------------

#[test]
fn a_never_used_executor_terminates_at_once_on_shutdown_without_a_thread() {
    let factory = CountingFactory::new("unused");
    let executor = executor_with(&factory);
    executor.shutdown();
    assert!(executor.is_terminated());
    assert!(executor.await_termination(Duration::ZERO));
    assert_eq!(factory.threads_started(), 0);
    let other = executor_with(&factory);
    assert!(other.shutdown_now().is_empty());
    assert!(other.is_terminated());
    assert_eq!(factory.threads_started(), 0);
}

#[test]
fn auto_shutdown_off_and_shut_down_by_its_owner_drops_without_a_warning() {
    let executor = PulsarExecutors::new_single_thread_executor_with_auto_shutdown(
        CountingFactory::new("tidy-component"),
        false,
    );
    executor.execute(|| ()).unwrap();
    executor.shutdown_now();
    assert!(executor.await_termination(LONG));
    let ((), warnings) = capture_warnings(|| drop(executor));
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn await_termination_times_out_while_a_task_runs() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    executor.shutdown();
    assert!(!executor.await_termination(Duration::from_millis(10)));
    release.send(()).unwrap();
    assert!(executor.await_termination(LONG));
}

#[test]
fn await_termination_on_the_worker_thread_returns_at_once() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let inner = executor.clone();
    let waited = executor
        .submit(move || inner.await_termination(Duration::from_secs(3600)))
        .unwrap()
        .join()
        .unwrap();
    assert!(!waited);
}

#[test]
fn a_thread_factory_that_fails_rejects_the_task_with_its_error_and_hands_it_back() {
    let executor = PulsarExecutors::new_single_thread_executor_with(NoThreads);
    let drops = DropCounter::new();
    let token = drops.token();
    let rejected = executor.execute(move || drop(token)).unwrap_err();
    match rejected.reason() {
        RejectReason::ThreadStartFailed(error) => {
            assert!(error.to_string().contains("thread limit"))
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(rejected.to_string().contains("could not be started"));
    assert_eq!(drops.drops(), 0, "handed back, not dropped");
    let task = rejected.into_task();
    task();
    assert_eq!(drops.drops(), 1);
    assert!(!executor.is_shutdown());
    executor.shutdown();
    assert!(executor.is_terminated());
}

// ---- nothing lost, nothing twice ----------------------------------------------------------

/// For every task offered concurrently with `shutdown_now`, exactly one of: it ran, it was
/// returned, or it was rejected — and each task's captures are dropped exactly once.
#[test]
fn execute_racing_shutdown_now_loses_nothing_and_runs_nothing_twice() {
    // Under Miri (~10^4 times slower) fewer iterations, the same assertions.
    const ROUNDS: usize = if cfg!(miri) { 10 } else { 2_000 };
    const SUBMITTERS: usize = 3;
    const PER_SUBMITTER: usize = 20;
    for round in 0..ROUNDS {
        let executor = PulsarExecutors::new_single_thread_executor();
        let ran = Arc::new(AtomicUsize::new(0));
        let rejected = Arc::new(AtomicUsize::new(0));
        let drops = DropCounter::new();
        let start = Arc::new(Barrier::new(SUBMITTERS + 1));
        let submitters: Vec<_> = (0..SUBMITTERS)
            .map(|_| {
                let (executor, ran, rejected, drops, start) = (
                    executor.clone(),
                    Arc::clone(&ran),
                    Arc::clone(&rejected),
                    drops.clone(),
                    Arc::clone(&start),
                );
                thread::spawn(move || {
                    start.wait();
                    for _ in 0..PER_SUBMITTER {
                        let ran = Arc::clone(&ran);
                        let token = drops.token();
                        if let Err(refused) = executor.execute(move || {
                            let _token = token;
                            ran.fetch_add(1, Ordering::SeqCst);
                        }) {
                            rejected.fetch_add(1, Ordering::SeqCst);
                            drop(refused);
                        }
                    }
                })
            })
            .collect();
        start.wait();
        if round % 2 == 1 {
            thread::yield_now();
        }
        let returned = executor.shutdown_now();
        for submitter in submitters {
            submitter.join().unwrap();
        }
        assert!(executor.await_termination(LONG));
        let returned_count = returned.len();
        drop(returned);
        let (ran, rejected) = (ran.load(Ordering::SeqCst), rejected.load(Ordering::SeqCst));
        assert_eq!(
            ran + returned_count + rejected,
            SUBMITTERS * PER_SUBMITTER,
            "round {round}: ran {ran} + returned {returned_count} + rejected {rejected}"
        );
        assert_eq!(
            drops.drops(),
            SUBMITTERS * PER_SUBMITTER,
            "round {round}: drops"
        );
    }
}

/// With graceful shutdown, every accepted task runs and every other one is handed back.
#[test]
fn execute_racing_shutdown_runs_every_accepted_task() {
    // Under Miri (~10^4 times slower) fewer iterations, the same assertions.
    const ROUNDS: usize = if cfg!(miri) { 10 } else { 2_000 };
    const SUBMITTERS: usize = 3;
    const PER_SUBMITTER: usize = 20;
    for round in 0..ROUNDS {
        let executor = PulsarExecutors::new_single_thread_executor();
        let ran = Arc::new(AtomicUsize::new(0));
        let accepted = Arc::new(AtomicUsize::new(0));
        let start = Arc::new(Barrier::new(SUBMITTERS + 1));
        let submitters: Vec<_> = (0..SUBMITTERS)
            .map(|_| {
                let (executor, ran, accepted, start) = (
                    executor.clone(),
                    Arc::clone(&ran),
                    Arc::clone(&accepted),
                    Arc::clone(&start),
                );
                thread::spawn(move || {
                    start.wait();
                    for _ in 0..PER_SUBMITTER {
                        let ran = Arc::clone(&ran);
                        if executor
                            .execute(move || {
                                ran.fetch_add(1, Ordering::SeqCst);
                            })
                            .is_ok()
                        {
                            accepted.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                })
            })
            .collect();
        start.wait();
        executor.shutdown();
        for submitter in submitters {
            submitter.join().unwrap();
        }
        assert!(executor.await_termination(LONG), "round {round}");
        assert_eq!(
            ran.load(Ordering::SeqCst),
            accepted.load(Ordering::SeqCst),
            "round {round}"
        );
    }
}

#[test]
fn every_task_closure_is_dropped_exactly_once_whatever_its_fate() {
    let drops = DropCounter::new();
    let executor = PulsarExecutors::new_single_thread_executor();
    let mut expected = 0;
    // Ran: 50 small (inline) and 50 large (boxed) tasks.
    for i in 0..100 {
        let token = drops.token();
        let pad = [i as u64; 6];
        if i % 2 == 0 {
            executor.execute(move || drop(token)).unwrap();
        } else {
            executor
                .execute(move || {
                    let _ = (&token, pad);
                })
                .unwrap();
        }
        expected += 1;
    }
    // Panicked.
    let token = drops.token();
    executor
        .execute(move || {
            let _t = token;
            panic!("drop me");
        })
        .unwrap();
    expected += 1;
    // Returned by shutdown_now and dropped.
    let release = block_worker(&executor);
    for _ in 0..10 {
        let token = drops.token();
        executor.execute(move || drop(token)).unwrap();
        expected += 1;
    }
    let returned = executor.shutdown_now();
    assert_eq!(returned.len(), 10);
    drop(returned);
    // Rejected and handed back, then dropped.
    let token = drops.token();
    drop(executor.execute(move || drop(token)).unwrap_err());
    expected += 1;
    release.send(()).unwrap();
    assert!(executor.await_termination(LONG));
    assert_eq!(drops.drops(), expected);
}

// ---- awaiting -----------------------------------------------------------------------------

#[test]
fn a_task_handle_can_be_awaited_as_a_future() {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Wake, Waker};

    struct ThreadWaker(thread::Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let mut future = pin!(executor.submit(|| 40 + 2).unwrap());
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    assert!(future.as_mut().poll(&mut cx).is_pending());
    release.send(()).unwrap();
    let value = loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(value) => break value,
            Poll::Pending => thread::park_timeout(Duration::from_millis(100)),
        }
    };
    assert_eq!(value.unwrap(), 42);
}

#[test]
fn join_timeout_hands_the_handle_back_on_timeout() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let handle = executor.submit(|| 9).unwrap();
    let handle = handle.join_timeout(Duration::from_millis(5)).unwrap_err();
    release.send(()).unwrap();
    assert_eq!(handle.join_timeout(LONG).ok().unwrap().unwrap(), 9);
}

// ---- memory -------------------------------------------------------------------------------

#[test]
fn debug_names_the_executor_and_its_state() {
    let executor = PulsarExecutors::builder().pool_name("debug-me").build();
    executor.submit(|| ()).unwrap().join().unwrap();
    let text = format!("{executor:?}");
    assert!(
        text.contains("debug-me-") && text.contains("running"),
        "{text}"
    );
    executor.shutdown();
    assert!(executor.await_termination(LONG));
    assert!(format!("{executor:?}").contains("terminated"));
}

// ---- idling -------------------------------------------------------------------------------

#[test]
fn producers_make_no_wake_up_call_while_the_worker_is_awake() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor); // the worker is awake, running this task
    let before = executor.worker_wakeups();
    let latch = Latch::new(1000);
    for _ in 0..1000 {
        let latch = Arc::clone(&latch);
        executor.execute(move || latch.count_down()).unwrap();
    }
    assert_eq!(
        executor.worker_wakeups(),
        before,
        "no wake-up while the worker runs a task"
    );
    release.send(()).unwrap();
    latch.wait(LONG);
}

/// The worker's scheduler state from /proc (R running, S sleeping, ...), found by name.
fn thread_state(name_prefix: &str) -> Option<char> {
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let path = entry.ok()?.path();
        let comm = std::fs::read_to_string(path.join("comm")).ok()?;
        if comm.trim_end().starts_with(name_prefix) {
            let stat = std::fs::read_to_string(path.join("stat")).ok()?;
            let after_name = &stat[stat.rfind(')')? + 2..];
            return after_name.chars().next();
        }
    }
    None
}

#[test]
#[cfg_attr(
    miri,
    ignore = "reads the OS threads' states from /proc, which Miri's threads do not have"
)]
fn an_idle_worker_parks_instead_of_spinning_and_a_parked_worker_is_woken_once() {
    let executor = PulsarExecutors::builder().pool_name("idlepark").build();
    executor.submit(|| ()).unwrap().join().unwrap();
    // A spinning or yielding worker stays runnable ('R'); a parked one sleeps ('S').
    let deadline = std::time::Instant::now() + LONG;
    let mut sleeping_samples = 0;
    while sleeping_samples < 20 && std::time::Instant::now() < deadline {
        match thread_state("idlepark-") {
            Some('S') => sleeping_samples += 1,
            _ => sleeping_samples = 0,
        }
        thread::yield_now();
    }
    assert_eq!(sleeping_samples, 20, "the idle worker never settled asleep");
    let before = executor.worker_wakeups();
    executor.submit(|| ()).unwrap().join().unwrap();
    assert_eq!(
        executor.worker_wakeups(),
        before + 1,
        "one wake-up for a parked worker"
    );
}

// ---- thread naming ------------------------------------------------------------------------

#[test]
fn a_shared_named_factory_numbers_its_threads_from_one_under_one_pool_id() {
    use pulsar_common::executors::NamedThreadFactory;
    let factory = Arc::new(NamedThreadFactory::new("pool-naming"));
    let other = NamedThreadFactory::new("pool-naming");
    assert_ne!(
        factory.pool_id(),
        other.pool_id(),
        "pool ids are process-wide"
    );
    let names: Vec<String> = (0..3)
        .map(|_| {
            let executor = PulsarExecutors::new_single_thread_executor_with(Arc::clone(&factory));
            executor
                .submit(|| thread::current().name().unwrap().to_owned())
                .unwrap()
                .join()
                .unwrap()
        })
        .collect();
    let id = factory.pool_id();
    assert_eq!(
        names,
        vec![
            format!("pool-naming-{id}-1"),
            format!("pool-naming-{id}-2"),
            format!("pool-naming-{id}-3")
        ]
    );
}

/// `shutdown_now` landing anywhere in a running batch (the claim handshake of
/// `task_batch.rs`, with whichever fence pair this platform uses): 64 tasks queued behind a
/// blocked worker run as one batch once it is released, and `shutdown_now` comes after a
/// number of them that varies with the round. Each task runs on the worker or comes back, once;
/// the ones that come back are the batch's tail, in order; every capture is dropped once.
#[test]
fn shutdown_now_racing_a_running_batch_hands_each_task_to_one_side_once() {
    // Under Miri (~10^4 times slower) fewer iterations, the same assertions.
    const ROUNDS: usize = if cfg!(miri) { 10 } else { 2_000 };
    const TASKS: usize = 64;
    for round in 0..ROUNDS {
        let executor = PulsarExecutors::new_single_thread_executor();
        let release = block_worker(&executor);
        let drops = DropCounter::new();
        let ran = Arc::new(AtomicUsize::new(0));
        let order = Arc::new(Mutex::new(Vec::new()));
        for i in 0..TASKS {
            let (token, ran, order) = (drops.token(), Arc::clone(&ran), Arc::clone(&order));
            executor
                .execute(move || {
                    let _token = token;
                    order.lock().unwrap().push(i);
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap();
        }
        release.send(()).unwrap();
        // Let the worker into the batch: wait (by spinning on its progress) until it has run
        // a number of tasks that varies with the round, then stop it.
        let after = round % (TASKS / 2);
        while ran.load(Ordering::SeqCst) < after {
            std::hint::spin_loop();
        }
        let returned = executor.shutdown_now();
        assert!(executor.await_termination(LONG));
        let ran_on_worker = ran.load(Ordering::SeqCst);
        assert_eq!(
            ran_on_worker + returned.len(),
            TASKS,
            "round {round}: ran {ran_on_worker} + returned {}",
            returned.len()
        );
        assert_eq!(
            *order.lock().unwrap(),
            (0..ran_on_worker).collect::<Vec<_>>(),
            "round {round}: the worker ran the batch's head, in order"
        );
        for task in returned {
            task.run();
        }
        assert_eq!(
            *order.lock().unwrap(),
            (0..TASKS).collect::<Vec<_>>(),
            "round {round}: the returned tasks are the batch's tail, in order"
        );
        assert_eq!(drops.drops(), TASKS, "round {round}: drops");
    }
}

#[test]
fn shutdown_now_takes_back_the_unclaimed_rest_of_the_batch_the_worker_is_running() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release_a = block_worker(&executor);
    // Queue blocker B and ten tasks behind it while the worker is busy with A, so that the
    // worker takes all eleven in one batch when A ends.
    let (release_b, blocked_b) = mpsc::channel::<()>();
    let (b_started_tx, b_started) = mpsc::channel::<()>();
    executor
        .execute(move || {
            b_started_tx.send(()).unwrap();
            let _ = blocked_b.recv();
        })
        .unwrap();
    let drops = DropCounter::new();
    let order = Arc::new(Mutex::new(Vec::new()));
    for i in 0..10 {
        let (token, order) = (drops.token(), Arc::clone(&order));
        executor
            .execute(move || {
                let _token = token;
                order.lock().unwrap().push(i);
            })
            .unwrap();
    }
    release_a.send(()).unwrap();
    b_started.recv_timeout(LONG).unwrap(); // the batch [B, 0..10] is running B
    assert_eq!(executor.pending_tasks(), 10);
    let returned = executor.shutdown_now();
    assert_eq!(returned.len(), 10);
    release_b.send(()).unwrap();
    assert!(executor.await_termination(LONG));
    assert!(
        order.lock().unwrap().is_empty(),
        "stolen tasks never ran on the worker"
    );
    assert_eq!(drops.drops(), 0);
    for task in returned {
        task.run();
    }
    assert_eq!(*order.lock().unwrap(), (0..10).collect::<Vec<_>>());
    assert_eq!(drops.drops(), 10);
}
