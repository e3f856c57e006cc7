//! ScheduledExecutor as a specification: lazy start, the FIFO fast path, deadlines, periodic
//! runs, cancel (prompt, exact, a million times), panics, shutdown and shutdown_now, races,
//! drops.

mod support;

use pulsar_common::executors::{
    NamedThreadFactory, RejectReason, ScheduledExecutor, ScheduledHandle, TaskError,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};
use support::{BatchRace, CountingFactory, DropCounter, Latch, NoThreads, LONG};

const HOUR: Duration = Duration::from_secs(3600);

fn executor(name: &str) -> ScheduledExecutor {
    ScheduledExecutor::new(NamedThreadFactory::new(name))
}

fn executor_with(factory: &Arc<CountingFactory>) -> ScheduledExecutor {
    ScheduledExecutor::new(Arc::clone(factory))
}

/// Occupies the worker until the returned sender is used (or dropped).
fn block_worker(executor: &ScheduledExecutor) -> mpsc::Sender<()> {
    support::block_worker_with(|task| executor.execute(task).unwrap())
}

/// Waits until every task queued so far has run (the executor is FIFO for immediate tasks).
fn drain(executor: &ScheduledExecutor) {
    let latch = Latch::new(1);
    let done = Arc::clone(&latch);
    executor.execute(move || done.count_down()).unwrap();
    latch.wait(LONG);
}

/// The name of the executor's worker thread (starting it).
fn worker_thread_name(executor: &ScheduledExecutor) -> String {
    executor
        .submit(|| thread::current().name().map(str::to_owned))
        .unwrap()
        .join()
        .unwrap()
        .expect("worker threads are named")
}

/// The order in which named closures ran.
#[derive(Default)]
struct RunOrder(Arc<Mutex<Vec<&'static str>>>);

impl RunOrder {
    /// A closure that records `name` when it runs.
    fn entry(&self, name: &'static str) -> impl FnOnce() + Send + 'static {
        let order = Arc::clone(&self.0);
        move || order.lock().unwrap().push(name)
    }

    /// The names recorded so far, in order.
    fn names(&self) -> Vec<&'static str> {
        self.0.lock().unwrap().clone()
    }
}

/// Lets time pass until `instant`: only where elapsed time is itself what a test is about
/// (deadlines), never as synchronisation.
fn let_time_pass_until(instant: Instant) {
    let now = Instant::now();
    if instant > now {
        thread::sleep(instant - now);
    }
}

// ---- smoke and laziness -------------------------------------------------------------------

#[test]
fn no_thread_exists_before_the_first_task_or_timer() {
    let factory = CountingFactory::new("lazy-scheduled");
    let executor = executor_with(&factory);
    let _ = format!("{executor:?}");
    assert_eq!(executor.pending_tasks(), 0);
    assert_eq!(factory.threads_started(), 0);
    executor
        .schedule(Duration::ZERO, || ())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(factory.threads_started(), 1);
    drain(&executor);
    assert_eq!(
        factory.threads_started(),
        1,
        "one worker for the executor's lifetime"
    );
    executor.shutdown();
    assert!(executor.await_termination(LONG));
}

#[test]
fn an_executor_never_used_terminates_on_shutdown_without_a_thread() {
    let factory = CountingFactory::new("unused-scheduled");
    let executor = executor_with(&factory);
    executor.shutdown();
    assert!(executor.is_terminated());
    assert_eq!(factory.threads_started(), 0);
}

#[test]
fn the_worker_thread_is_named_by_the_factory() {
    let executor = executor("pulsar-client-scheduled");
    let name = executor
        .schedule(Duration::ZERO, || {
            thread::current().name().unwrap().to_owned()
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(name.starts_with("pulsar-client-scheduled-"), "{name}");
    assert_eq!(executor.name(), name);
}

#[test]
fn a_thread_factory_that_fails_hands_back_the_task_or_timer_with_its_error() {
    let executor = ScheduledExecutor::new(NoThreads);
    let drops = DropCounter::new();
    let token = drops.token();
    let rejected = executor.execute(move || drop(token)).unwrap_err();
    assert!(matches!(
        rejected.reason(),
        RejectReason::ThreadStartFailed(error) if error.to_string().contains("thread limit")
    ));
    assert_eq!(drops.drops(), 0, "handed back, not dropped");
    rejected.into_task()();
    assert_eq!(drops.drops(), 1);
    let token = drops.token();
    let rejected = executor
        .schedule(Duration::from_secs(3600), move || drop(token))
        .unwrap_err();
    assert!(matches!(
        rejected.reason(),
        RejectReason::ThreadStartFailed(_)
    ));
    drop(rejected);
    assert_eq!(drops.drops(), 2);
    assert_eq!(executor.pending_tasks(), 0);
    executor.shutdown();
    assert!(
        executor.is_terminated(),
        "nothing left and no worker: terminated at once"
    );
}

// ---- the builder and the operations shared with the plain executor ----------------------

#[test]
fn the_builder_names_the_thread_after_the_pool_and_sets_the_initial_capacity() {
    let executor = ScheduledExecutor::builder()
        .pool_name("built-scheduled")
        .initial_capacity(512)
        .build();
    assert_eq!(executor.queue_capacity(), 512);
    assert!(executor.auto_shutdown_on_drop());
    let thread = worker_thread_name(&executor);
    assert!(thread.starts_with("built-scheduled-"), "{thread}");
    assert_eq!(executor.name(), thread);
    executor.shutdown();
    assert!(executor.await_termination(LONG));
}

#[test]
fn an_executor_built_without_a_factory_names_its_thread_after_the_default_scheduled_pool() {
    let executor = ScheduledExecutor::builder().build();
    let thread = worker_thread_name(&executor);
    assert!(
        thread.starts_with(pulsar_common::executors::DEFAULT_SCHEDULED_POOL_NAME),
        "{thread}"
    );
    executor.shutdown();
}

#[test]
fn submit_returns_the_value_and_reports_a_panic_to_the_handle_not_the_hook() {
    let factory = CountingFactory::new("scheduled-submit");
    let executor = executor_with(&factory);
    assert_eq!(executor.submit(|| 17).unwrap().join().unwrap(), 17);
    let failed = executor.submit(|| -> u32 { panic!("bad input") }).unwrap();
    assert!(matches!(failed.join(), Err(TaskError::Panicked(_))));
    drain(&executor);
    assert_eq!(factory.panics(), 0);
    executor.shutdown();
    let refused = executor.submit(|| 1).unwrap_err();
    assert!(matches!(refused.reason(), RejectReason::Shutdown));
    assert_eq!(refused.into_task()(), 1, "the closure comes back");
}

#[test]
fn invoke_all_and_invoke_any_take_the_fifo_path() {
    let executor = executor("scheduled-invoke");
    let all = executor.invoke_all(vec![|| 7, || 11]);
    assert_eq!(
        all.into_iter().map(Result::unwrap).collect::<Vec<_>>(),
        [7, 11]
    );
    let tasks: Vec<Box<dyn FnOnce() -> Result<u32, &'static str> + Send>> = vec![
        Box::new(|| Err("first fails")),
        Box::new(|| Ok(13)),
        Box::new(|| unreachable!("skipped after a success")),
    ];
    assert_eq!(executor.invoke_any(tasks).unwrap(), 13);
    assert!(matches!(
        executor.invoke_any(Vec::<fn() -> Result<(), ()>>::new()),
        Err(pulsar_common::executors::InvokeAnyError::NoTasks)
    ));
    executor.shutdown();
}

#[test]
fn invoke_all_on_the_executors_own_worker_refuses_at_once_instead_of_deadlocking() {
    let executor = executor("scheduled-self-invoke");
    let inner = executor.clone();
    let outcome = executor
        .submit(move || inner.invoke_all(vec![|| 1, || 2]))
        .unwrap()
        .join()
        .unwrap();
    assert!(outcome
        .iter()
        .all(|result| matches!(result, Err(TaskError::WouldDeadlock))));
    executor.shutdown();
}

// ---- the FIFO fast path -------------------------------------------------------------------

#[test]
fn immediate_tasks_run_in_submission_order() {
    let executor = executor("fifo");
    let order = Arc::new(Mutex::new(Vec::new()));
    for i in 0..100 {
        let order = Arc::clone(&order);
        executor
            .execute(move || order.lock().unwrap().push(i))
            .unwrap();
    }
    drain(&executor);
    assert_eq!(*order.lock().unwrap(), (0..100).collect::<Vec<_>>());
}

#[test]
fn immediate_tasks_never_enter_the_timer_heap() {
    let executor = executor("fast-path");
    let release = block_worker(&executor);
    for _ in 0..1_000 {
        executor.execute(|| ()).unwrap();
    }
    assert_eq!(executor.pending_tasks(), 1_000);
    assert_eq!(executor.armed_timers(), 0);
    assert_eq!(executor.timer_capacity(), 0, "the heap never allocated");
    release.send(()).unwrap();
    drain(&executor);
    assert_eq!(executor.pending_tasks(), 0);
}

#[test]
fn an_immediate_task_does_not_wait_behind_a_far_timer() {
    let executor = executor("not-behind");
    let far = executor.schedule(HOUR, || ()).unwrap();
    let latch = Latch::new(1);
    let done = Arc::clone(&latch);
    executor.execute(move || done.count_down()).unwrap();
    latch.wait(LONG);
    assert!(far.cancel());
}

/// A pass runs the tasks queued before it began ahead of the timers that were due when it
/// began (contrast with the next test: a timer falling due *during* a pass goes ahead).
#[test]
fn a_zero_delay_timer_scheduled_after_a_task_on_an_idle_executor_runs_after_it() {
    for _ in 0..if cfg!(miri) { 10 } else { 100 } {
        let executor = executor("task-then-timer");
        let order = RunOrder::default();
        let log = |name| order.entry(name);
        executor.execute(log("task")).unwrap();
        let timer = executor.schedule(Duration::ZERO, log("timer")).unwrap();
        timer.join().unwrap();
        drain(&executor);
        assert_eq!(order.names(), ["task", "timer"]);
        executor.shutdown();
        assert!(executor.await_termination(LONG));
    }
}

#[test]
fn a_timer_falling_due_during_a_batch_runs_before_the_rest_of_the_batch() {
    let executor = executor("timer-between-tasks");
    let release = block_worker(&executor);
    let order = RunOrder::default();
    let log = |name| order.entry(name);
    // The first task of the batch arms the timer and outlasts its deadline (elapsed time is
    // what this test is about), so the timer falls due during that task and never before the
    // pass began, however slowly this thread runs; the second task is queued behind it in the
    // same batch.
    let (armed, timer) = std::sync::mpsc::channel();
    let (first, timer_task, scheduler) = (log("first task"), log("timer"), executor.clone());
    executor
        .execute(move || {
            let delay = Duration::from_millis(1);
            let deadline = Instant::now() + delay;
            armed
                .send(scheduler.schedule(delay, timer_task).unwrap())
                .unwrap();
            let_time_pass_until(deadline + Duration::from_millis(1));
            first();
        })
        .unwrap();
    executor.execute(log("second task")).unwrap();
    release.send(()).unwrap();
    timer.recv().unwrap().join().unwrap();
    drain(&executor);
    assert_eq!(order.names(), ["first task", "timer", "second task"]);
}

#[test]
fn a_batch_takes_the_fast_path_in_order_and_a_refused_batch_comes_back_whole() {
    let executor = executor("batch");
    let log = Arc::new(Mutex::new(Vec::new()));
    let push = |i: usize| {
        let log = Arc::clone(&log);
        move || log.lock().unwrap().push(i)
    };
    executor.execute(push(0)).unwrap();
    executor.execute_all((1..=50).map(push)).unwrap();
    assert_eq!(
        executor.timer_capacity(),
        0,
        "the batch never touched the timer heap"
    );
    drain(&executor);
    assert_eq!(*log.lock().unwrap(), (0..=50).collect::<Vec<_>>());
    executor.shutdown();
    let drops = DropCounter::new();
    let tokens: Vec<_> = (0..3).map(|_| drops.token()).collect();
    let rejected = executor
        .execute_all(tokens.into_iter().map(|token| move || drop(token)))
        .unwrap_err();
    assert!(matches!(rejected.reason(), RejectReason::Shutdown));
    assert_eq!(drops.drops(), 0, "handed back, not dropped");
    assert_eq!(rejected.into_task().len(), 3);
    assert_eq!(drops.drops(), 3);
    assert!(executor.await_termination(LONG));
}

/// Batches offered concurrently with `shutdown_now`: refused whole, or accepted whole and then
/// each task ran or was returned; every closure dropped exactly once.
#[test]
fn batches_racing_shutdown_now_lose_nothing_and_run_nothing_twice() {
    BatchRace {
        // Fewer rounds under Miri (~10^4 times slower), the same assertions.
        rounds: if cfg!(miri) { 5 } else { 500 },
        submitters: 2,
        batches: 4,
        per_batch: 8,
    }
    .run(
        || executor("batch-race"),
        |executor, batch| {
            executor
                .execute_all(batch)
                .map_err(|rejected| rejected.into_task().len())
        },
        |executor| executor.shutdown_now().len(),
        |executor| executor.await_termination(LONG),
    );
}

// ---- deadlines ----------------------------------------------------------------------------

#[test]
fn nothing_fires_before_its_deadline() {
    let executor = executor("deadlines");
    let handles: Vec<(Instant, Duration, ScheduledHandle<Instant>)> = (0..20u64)
        .map(|i| {
            let delay = Duration::from_millis((i * 7) % 25);
            let scheduled_at = Instant::now();
            (
                scheduled_at,
                delay,
                executor.schedule(delay, Instant::now).unwrap(),
            )
        })
        .collect();
    for (scheduled_at, delay, handle) in handles {
        let ran_at = handle.join().unwrap();
        assert!(
            ran_at >= scheduled_at + delay,
            "ran {:?} early",
            (scheduled_at + delay) - ran_at
        );
    }
}

#[test]
fn timers_that_are_due_together_fire_in_deadline_order() {
    let executor = executor("deadline-order");
    let release = block_worker(&executor);
    let order = Arc::new(Mutex::new(Vec::new()));
    // Each timer's deadline is `now + delay` for some `now` during its `schedule` call: record
    // those bounds, so the expected order does not assume how fast the calls run (under
    // valgrind one call can take longer than the gap between two delays).
    let mut bounds = Vec::new();
    let mut latest = Instant::now();
    for (name, millis) in [("c", 3u64), ("a", 1), ("d", 4), ("b", 2)] {
        let order = Arc::clone(&order);
        let delay = Duration::from_millis(millis);
        let before = Instant::now();
        executor
            .schedule(delay, move || order.lock().unwrap().push(name))
            .unwrap();
        let after = Instant::now();
        bounds.push((name, before + delay, after + delay));
        latest = latest.max(after + delay);
    }
    // All four are due by now; the worker sees them together once released.
    let_time_pass_until(latest);
    release.send(()).unwrap();
    let last = executor.schedule(Duration::ZERO, || ()).unwrap();
    last.join().unwrap();
    let fired = order.lock().unwrap().clone();
    assert_eq!(fired.len(), 4);
    let bound = |name: &str| *bounds.iter().find(|(n, _, _)| *n == name).unwrap();
    for (i, earlier) in fired.iter().enumerate() {
        for later in &fired[i + 1..] {
            let (_, earlier_lo, _) = bound(earlier);
            let (_, _, later_hi) = bound(later);
            assert!(
                later_hi >= earlier_lo,
                "{later} (deadline surely before {earlier}'s) fired after it: {fired:?}"
            );
        }
    }
    // When the calls are fast (the usual case) the bounds do not overlap: a, b, c, d.
    let disjoint = bounds
        .iter()
        .all(|(_, lo, hi)| *hi - *lo < Duration::from_millis(1));
    if disjoint {
        assert_eq!(fired, ["a", "b", "c", "d"]);
    }
}

/// Deadline order holds for a zero-delay timer too: one armed after an earlier timer fell due
/// (while the worker was busy, so neither has fired) fires after it. (A zero-delay timer that
/// skipped the wheel's order would fire first.)
#[test]
fn a_zero_delay_timer_armed_after_an_earlier_timer_fell_due_fires_after_it() {
    let executor = executor("zero-delay-after-due");
    let release = block_worker(&executor);
    let order = RunOrder::default();
    let log = |name| order.entry(name);
    let delay = Duration::from_millis(1);
    let deadline = Instant::now() + delay;
    let earlier = executor.schedule(delay, log("earlier deadline")).unwrap();
    let_time_pass_until(deadline + Duration::from_millis(1));
    let zero = executor
        .schedule(Duration::ZERO, log("zero delay"))
        .unwrap();
    release.send(()).unwrap();
    earlier.join().unwrap();
    zero.join().unwrap();
    assert_eq!(order.names(), ["earlier deadline", "zero delay"]);
}

/// Zero-delay timers keep their arming order (equal or increasing deadlines), each runs
/// exactly once, and none is left behind.
#[test]
fn zero_delay_timers_fire_in_arming_order() {
    let executor = executor("zero-delay-order");
    let count = if cfg!(miri) { 50 } else { 1_000 };
    let order = Arc::new(Mutex::new(Vec::with_capacity(count)));
    let handles: Vec<_> = (0..count)
        .map(|i| {
            let order = Arc::clone(&order);
            executor
                .schedule(Duration::ZERO, move || order.lock().unwrap().push(i))
                .unwrap()
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..count).collect::<Vec<_>>());
    assert_eq!(executor.pending_tasks(), 0);
}

/// Zero-delay timers wait in the wheel's lane while the worker is busy; a cancel takes one out
/// of it at once (closure dropped, no longer pending) and the others keep their order.
#[test]
fn a_zero_delay_timer_cancelled_while_the_worker_is_busy_leaves_at_once() {
    let executor = executor("zero-delay-cancel");
    let release = block_worker(&executor);
    let order = RunOrder::default();
    let drops = DropCounter::new();
    let first = executor
        .schedule(Duration::ZERO, order.entry("first"))
        .unwrap();
    let token = drops.token();
    let cancelled = executor
        .schedule(Duration::ZERO, move || drop(token))
        .unwrap();
    let last = executor
        .schedule(Duration::ZERO, order.entry("last"))
        .unwrap();
    assert_eq!(executor.armed_timers(), 3);
    assert!(cancelled.cancel());
    assert_eq!(drops.drops(), 1, "the closure is dropped during cancel");
    assert_eq!(executor.armed_timers(), 2);
    assert_eq!(
        executor.pending_tasks(),
        2,
        "the two timers left (the blocking task runs)"
    );
    release.send(()).unwrap();
    first.join().unwrap();
    last.join().unwrap();
    assert!(matches!(cancelled.join(), Err(TaskError::Cancelled)));
    assert_eq!(order.names(), ["first", "last"]);
    assert_eq!(executor.pending_tasks(), 0);
}

/// Several threads arm zero and short delays at once (so zero-delay timers take the lane, and
/// a timer due before the lane's last moves it into the wheel's levels): every timer runs once,
/// and never after a timer whose deadline was later. Each closure knows its deadline only
/// within the interval around its `schedule` call, so the check is: for consecutive runs a, b,
/// not (b's latest possible deadline < a's earliest possible deadline).
#[test]
fn timers_armed_from_racing_threads_with_zero_and_short_delays_fire_in_deadline_order() {
    let executor = executor("racing-delays");
    let threads = 4;
    let per_thread = if cfg!(miri) { 40 } else { 2_000 };
    let ran = Arc::new(Mutex::new(Vec::with_capacity(threads * per_thread)));
    let barrier = Arc::new(Barrier::new(threads));
    let producers: Vec<_> = (0..threads)
        .map(|thread_index| {
            let (executor, ran, barrier) =
                (executor.clone(), Arc::clone(&ran), Arc::clone(&barrier));
            thread::spawn(move || {
                barrier.wait();
                let mut armed = Vec::with_capacity(per_thread);
                for i in 0..per_thread {
                    // Two in three due at once, the rest 1-20 us ahead.
                    let delay = match (i + thread_index) % 3 {
                        0 => Duration::from_micros(1 + (i % 20) as u64),
                        _ => Duration::ZERO,
                    };
                    let id = thread_index * per_thread + i;
                    let ran = Arc::clone(&ran);
                    let earliest = Instant::now() + delay;
                    let handle = executor
                        .schedule(delay, move || ran.lock().unwrap().push(id))
                        .unwrap();
                    let latest = Instant::now() + delay;
                    armed.push((id, earliest, latest, handle));
                }
                armed
            })
        })
        .collect();
    let mut bounds = vec![None; threads * per_thread];
    let mut handles = Vec::new();
    for producer in producers {
        for (id, earliest, latest, handle) in producer.join().unwrap() {
            bounds[id] = Some((earliest, latest));
            handles.push(handle);
        }
    }
    for handle in handles {
        handle.join().unwrap();
    }
    let ran = ran.lock().unwrap();
    assert_eq!(ran.len(), threads * per_thread, "every timer ran once");
    for pair in ran.windows(2) {
        let (a_earliest, _) = bounds[pair[0]].expect("armed");
        let (_, b_latest) = bounds[pair[1]].expect("armed");
        assert!(
            b_latest >= a_earliest,
            "timer {} ran after timer {}, whose deadline was later",
            pair[1],
            pair[0]
        );
    }
    assert_eq!(executor.pending_tasks(), 0);
}

#[test]
fn a_delay_too_large_to_represent_is_accepted_and_never_fires() {
    let executor = executor("huge-delay");
    let never = executor.schedule(Duration::MAX, || ()).unwrap();
    assert_eq!(executor.armed_timers(), 1);
    assert!(never.cancel());
    assert_eq!(executor.armed_timers(), 0);
}

// ---- periodic tasks -----------------------------------------------------------------------

#[test]
fn fixed_rate_runs_are_due_one_period_apart() {
    let executor = executor("fixed-rate");
    let period = Duration::from_millis(2);
    let initial = Duration::from_millis(3);
    let (tx, rx) = mpsc::channel();
    let scheduled_at = Instant::now();
    let handle = executor
        .schedule_at_fixed_rate(initial, period, move || {
            let _ = tx.send(Instant::now());
        })
        .unwrap();
    let runs: Vec<Instant> = rx.iter().take(5).collect();
    assert!(handle.cancel());
    for (k, ran_at) in runs.iter().enumerate() {
        assert!(
            *ran_at >= scheduled_at + initial + period * k as u32,
            "run {k} early"
        );
    }
    assert!(matches!(handle.join(), Err(TaskError::Cancelled)));
}

#[test]
fn fixed_delay_runs_start_one_delay_after_the_previous_run_ended() {
    let executor = executor("fixed-delay");
    let delay = Duration::from_millis(2);
    let (tx, rx) = mpsc::channel();
    let handle = executor
        .schedule_with_fixed_delay(Duration::ZERO, delay, move || {
            let started = Instant::now();
            // Each run takes a little while; the next must wait `delay` after it ends.
            while started.elapsed() < Duration::from_millis(1) {
                std::hint::spin_loop();
            }
            let _ = tx.send((started, Instant::now()));
        })
        .unwrap();
    let runs: Vec<(Instant, Instant)> = rx.iter().take(4).collect();
    assert!(handle.cancel());
    for pair in runs.windows(2) {
        let (_, previous_end) = pair[0];
        let (next_start, _) = pair[1];
        assert!(next_start >= previous_end + delay);
    }
}

#[test]
#[should_panic(expected = "must not be zero")]
fn a_zero_period_is_refused() {
    let executor = executor("zero-period");
    let _ = executor.schedule_at_fixed_rate(Duration::ZERO, Duration::ZERO, || ());
}

#[test]
fn cancelling_a_periodic_task_stops_its_future_runs_and_drops_it_once() {
    let executor = executor("periodic-cancel");
    let drops = DropCounter::new();
    let token = drops.token();
    let runs = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    let counted = Arc::clone(&runs);
    let period = Duration::from_millis(1);
    let handle = executor
        .schedule_at_fixed_rate(Duration::ZERO, period, move || {
            let _keep = &token;
            let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
            let _ = tx.send(n);
        })
        .unwrap();
    while rx.recv().unwrap() < 3 {}
    assert!(handle.cancel());
    assert!(!handle.cancel(), "a second cancel has nothing to cancel");
    assert!(handle.is_cancelled());
    // A run in progress during the cancel has finished once this drain task ran.
    drain(&executor);
    let final_runs = runs.load(Ordering::SeqCst);
    assert_eq!(drops.drops(), 1, "the closure is dropped once, by now");
    assert_eq!(executor.armed_timers(), 0);
    // Ten more periods pass: no further run.
    executor
        .schedule(period * 10, || ())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), final_runs);
    assert!(matches!(handle.join(), Err(TaskError::Cancelled)));
}

#[test]
fn a_periodic_task_can_cancel_itself_from_its_own_run() {
    let executor = executor("self-cancel");
    let slot: Arc<Mutex<Option<ScheduledHandle<()>>>> = Arc::new(Mutex::new(None));
    let runs = Arc::new(AtomicUsize::new(0));
    let (cancelled_tx, cancelled_rx) = mpsc::channel();
    let (own, counted) = (Arc::clone(&slot), Arc::clone(&runs));
    // Hold the slot until the handle is in it: a run that needs the handle waits for it.
    let mut filled = slot.lock().unwrap();
    *filled = Some(
        executor
            .schedule_at_fixed_rate(Duration::ZERO, Duration::from_millis(1), move || {
                if counted.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                    let cancelled = own.lock().unwrap().as_ref().unwrap().cancel();
                    cancelled_tx.send(cancelled).unwrap();
                }
            })
            .unwrap(),
    );
    drop(filled);
    assert!(cancelled_rx.recv_timeout(LONG).unwrap());
    drain(&executor);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "no run after the one that cancelled"
    );
    let handle = slot.lock().unwrap().take().unwrap();
    assert!(matches!(handle.join(), Err(TaskError::Cancelled)));
}

// ---- cancel -------------------------------------------------------------------------------

#[test]
fn cancel_before_the_deadline_prevents_the_run_and_frees_the_entry_at_once() {
    let executor = executor("cancel");
    let drops = DropCounter::new();
    let token = drops.token();
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&ran);
    let handle = executor
        .schedule(HOUR, move || {
            let _keep = &token;
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert_eq!(executor.pending_tasks(), 1);
    assert!(!handle.is_done());
    assert!(handle.cancel());
    // Freed during the call, not at the deadline an hour from now.
    assert_eq!(drops.drops(), 1);
    assert_eq!(executor.pending_tasks(), 0);
    assert_eq!(executor.armed_timers(), 0);
    assert!(handle.is_done() && handle.is_cancelled());
    assert!(!handle.cancel());
    assert!(matches!(handle.join(), Err(TaskError::Cancelled)));
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[test]
fn cancel_after_the_run_returns_false_and_join_still_has_the_value() {
    let executor = executor("cancel-late");
    let handle = executor.schedule(Duration::ZERO, || 7).unwrap();
    while !handle.is_done() {
        thread::yield_now();
    }
    assert!(!handle.cancel());
    assert!(!handle.is_cancelled());
    assert_eq!(handle.join().unwrap(), 7);
}

#[test]
fn a_running_one_shot_task_cannot_be_cancelled() {
    let executor = executor("cancel-running");
    let (started_tx, started) = mpsc::channel();
    let (release, blocked) = mpsc::channel::<()>();
    let handle = executor
        .schedule(Duration::ZERO, move || {
            started_tx.send(()).unwrap();
            blocked.recv().unwrap();
            "finished"
        })
        .unwrap();
    started.recv().unwrap();
    assert!(!handle.cancel());
    release.send(()).unwrap();
    assert_eq!(handle.join().unwrap(), "finished");
}

#[test]
fn a_million_scheduled_then_cancelled_timers_leave_nothing_behind() {
    // Under Miri (~10^4 times slower) fewer iterations, the same assertions.
    const TOTAL: usize = if cfg!(miri) { 1_000 } else { 1_000_000 };
    const WAVE: usize = if cfg!(miri) { 250 } else { 10_000 };
    let executor = executor("million");
    let drops = DropCounter::new();
    let mut handles = Vec::with_capacity(WAVE);
    let one = executor.schedule(HOUR, || ()).unwrap();
    let for_one_timer = executor.timer_capacity();
    assert!(one.cancel());
    let mut peak_armed = 0;
    for _ in 0..TOTAL / WAVE {
        for _ in 0..WAVE {
            let token = drops.token();
            handles.push(
                executor
                    .schedule(HOUR, move || {
                        let _keep = &token;
                    })
                    .unwrap(),
            );
        }
        peak_armed = peak_armed.max(executor.armed_timers());
        // The wheel links the entries in place: it holds no slot per timer.
        assert_eq!(executor.timer_capacity(), for_one_timer);
        for handle in handles.drain(..) {
            assert!(handle.cancel());
        }
        assert_eq!(executor.pending_tasks(), 0);
    }
    assert_eq!(drops.drops(), TOTAL, "every closure dropped, exactly once");
    assert_eq!(executor.pending_tasks(), 0);
    assert_eq!(executor.armed_timers(), 0);
    assert_eq!(peak_armed, WAVE);
    assert!(
        executor.timer_capacity() <= for_one_timer,
        "nothing more held than for one timer: {} slots",
        executor.timer_capacity()
    );
}

/// Cancels racing fires on several threads, each handle dropped on the thread that scheduled
/// it or sent to another to be dropped there: every timer ran or was cancelled, every closure
/// was dropped exactly once, and every run's output (kept in its entry, never taken) was
/// dropped exactly once, so every entry that ran was freed once, by whichever of its two references
/// (the wheel's side, the handle) went last. Guards the reference count kept in the entry's
/// state word (`timer_ref.rs`).
#[test]
fn cancels_racing_fires_on_many_threads_free_every_entry_exactly_once() {
    const THREADS: usize = 4;
    const PER_THREAD: usize = if cfg!(miri) { 30 } else { 5_000 };
    let executor = executor("cancel-fire-race");
    let closures = DropCounter::new();
    let outputs = DropCounter::new();
    let ran = Arc::new(AtomicUsize::new(0));
    let cancelled = Arc::new(AtomicUsize::new(0));
    let (elsewhere, to_drop) = mpsc::channel();
    let dropper = thread::spawn(move || to_drop.into_iter().for_each(drop));
    let start = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (executor, closures, outputs) =
                (executor.clone(), closures.clone(), outputs.clone());
            let (ran, cancelled) = (Arc::clone(&ran), Arc::clone(&cancelled));
            let (elsewhere, start) = (elsewhere.clone(), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                for i in 0..PER_THREAD {
                    let (token, output, ran) =
                        (closures.token(), outputs.token(), Arc::clone(&ran));
                    // 0 to 60 µs: some fire before their cancel, some are cancelled waiting.
                    let delay = Duration::from_micros((i % 7) as u64 * 10);
                    let handle = executor
                        .schedule(delay, move || {
                            let _keep = &token;
                            ran.fetch_add(1, Ordering::SeqCst);
                            output
                        })
                        .unwrap();
                    if i % 3 != 2 && handle.cancel() {
                        cancelled.fetch_add(1, Ordering::SeqCst);
                    }
                    if i % 2 == 0 {
                        drop(handle);
                    } else {
                        elsewhere.send(handle).unwrap();
                    }
                }
            })
        })
        .collect();
    drop(elsewhere);
    for thread in threads {
        thread.join().unwrap();
    }
    dropper.join().unwrap();
    // A graceful shutdown still runs the armed timers; then the worker holds none.
    executor.shutdown();
    assert!(executor.await_termination(LONG));
    let total = THREADS * PER_THREAD;
    let (ran, cancelled) = (ran.load(Ordering::SeqCst), cancelled.load(Ordering::SeqCst));
    assert_eq!(ran + cancelled, total, "each timer ran or was cancelled");
    assert!(
        cancelled > 0 && ran > 0,
        "both sides won some: {ran} ran, {cancelled} cancelled"
    );
    assert_eq!(
        closures.drops(),
        total,
        "every closure dropped exactly once"
    );
    // An output is dropped with its closure when the timer was cancelled, with its entry when
    // the timer ran: a leaked entry would leave one undropped, a double free drop one twice.
    assert_eq!(outputs.drops(), total, "every entry freed exactly once");
}

// ---- panics -------------------------------------------------------------------------------

#[test]
fn a_panicking_immediate_task_is_reported_to_the_factory_and_the_executor_keeps_running() {
    let factory = CountingFactory::new("panic-immediate");
    let executor = executor_with(&factory);
    executor.execute(|| panic!("immediate boom")).unwrap();
    drain(&executor);
    assert_eq!(factory.panics(), 1);
    assert_eq!(
        *factory.panic_messages.lock().unwrap(),
        vec!["immediate boom".to_owned()]
    );
}

#[test]
fn a_panicking_one_shot_task_reports_its_panic_to_its_handle() {
    let factory = CountingFactory::new("panic-one-shot");
    let executor = executor_with(&factory);
    let handle = executor
        .schedule(Duration::ZERO, || -> u32 { panic!("bad timer") })
        .unwrap();
    match handle.join() {
        Err(TaskError::Panicked(panic)) => assert_eq!(panic.message(), "bad timer"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        factory.panics(),
        0,
        "reported to the handle, not the factory"
    );
    assert_eq!(
        executor
            .schedule(Duration::ZERO, || 1)
            .unwrap()
            .join()
            .unwrap(),
        1
    );
}

#[test]
fn a_panicking_periodic_task_stops_repeating_and_reports_its_panic() {
    let executor = executor("panic-periodic");
    let drops = DropCounter::new();
    let token = drops.token();
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let period = Duration::from_millis(1);
    let handle = executor
        .schedule_at_fixed_rate(Duration::ZERO, period, move || {
            let _keep = &token;
            let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
            if n == 3 {
                panic!("run {n} failed");
            }
        })
        .unwrap();
    match handle.join() {
        Err(TaskError::Panicked(panic)) => {
            assert_eq!(*panic.downcast::<String>().unwrap(), "run 3 failed")
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(drops.drops(), 1);
    assert_eq!(executor.armed_timers(), 0);
    executor
        .schedule(period * 10, || ())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 3, "no run after the panic");
}

/// A periodic task whose run panics and whose closure's drop then panics too: the entry is made
/// final before the closure is dropped, so its handle reports the run's panic instead of
/// waiting forever, and the worker goes on (the drop's panic goes to the factory's hook).
/// (Audit of 2026-12-07: the drop's panic left the entry `RUNNING`: `join` never returned,
/// `is_done` stayed false, and a later `cancel` reported `Cancelled` for a task that had
/// panicked.)
#[test]
fn a_periodic_task_whose_run_and_then_whose_drop_panic_still_completes_its_handle() {
    struct PanicsOnDrop;
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            if !thread::panicking() {
                panic!("the closure's drop panics");
            }
        }
    }
    let factory = CountingFactory::new("panic-twice");
    let executor = executor_with(&factory);
    let bomb = PanicsOnDrop;
    let handle = executor
        .schedule_at_fixed_rate(Duration::ZERO, HOUR, move || {
            let _keep = &bomb;
            panic!("the run panics");
        })
        .unwrap();
    let handle = match handle.join_timeout(LONG) {
        Ok(Err(TaskError::Panicked(panic))) => {
            assert_eq!(panic.message(), "the run panics");
            None
        }
        Ok(other) => panic!("unexpected {other:?}"),
        Err(handle) => Some(handle),
    };
    assert!(handle.is_none(), "the handle was never completed");
    assert_eq!(
        executor
            .schedule(Duration::ZERO, || 5)
            .unwrap()
            .join()
            .unwrap(),
        5,
        "the worker goes on"
    );
    assert_eq!(factory.panics(), 1, "the drop's panic was reported");
    assert_eq!(executor.armed_timers(), 0);
}

// ---- shutdown -----------------------------------------------------------------------------

#[test]
fn shutdown_runs_queued_tasks_and_pending_one_shot_timers_but_stops_periodic_ones() {
    let executor = executor("graceful");
    let release = block_worker(&executor);
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&ran);
    executor
        .execute(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let scheduled_at = Instant::now();
    let delay = Duration::from_millis(20);
    let one_shot = executor.schedule(delay, Instant::now).unwrap();
    let periodic = executor
        .schedule_at_fixed_rate(Duration::ZERO, Duration::from_millis(1), || ())
        .unwrap();
    executor.shutdown();
    executor.shutdown(); // idempotent
    assert!(executor.is_shutdown());
    assert!(periodic.is_cancelled(), "periodic timers stop at shutdown");
    let rejected = executor.execute(|| ()).unwrap_err();
    assert!(matches!(rejected.reason(), RejectReason::Shutdown));
    release.send(()).unwrap();
    assert!(one_shot.join().unwrap() >= scheduled_at + delay);
    assert!(matches!(periodic.join(), Err(TaskError::Cancelled)));
    assert!(executor.await_termination(LONG));
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

#[test]
fn a_rejected_schedule_hands_the_closure_back() {
    let executor = executor("rejected");
    executor.shutdown();
    let rejected = executor
        .schedule(Duration::ZERO, || "handed back")
        .unwrap_err();
    assert!(matches!(rejected.reason(), RejectReason::Shutdown));
    assert_eq!((rejected.into_task())(), "handed back");
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let rejected = executor
        .schedule_with_fixed_delay(Duration::ZERO, Duration::from_millis(1), move || {
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap_err();
    let mut periodic = rejected.into_task();
    periodic();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn cancelling_the_last_timer_after_shutdown_lets_the_worker_exit_at_once() {
    let executor = executor("exit-after-cancel");
    let far = executor.schedule(HOUR, || ()).unwrap();
    executor.shutdown();
    assert!(
        !executor.is_terminated(),
        "an armed one-shot timer keeps the worker"
    );
    assert!(far.cancel());
    assert!(executor.await_termination(LONG));
}

#[test]
fn shutdown_now_returns_immediate_tasks_then_one_shot_timers_and_cancels_periodic_ones() {
    let executor = executor("shutdown-now");
    let release = block_worker(&executor);
    let order = RunOrder::default();
    let log = |name| order.entry(name);
    executor.execute(log("immediate 1")).unwrap();
    let late = executor.schedule(HOUR * 2, log("timer in 2 h")).unwrap();
    executor.execute(log("immediate 2")).unwrap();
    let soon = executor.schedule(HOUR, log("timer in 1 h")).unwrap();
    let periodic = executor.schedule_at_fixed_rate(HOUR, HOUR, || ()).unwrap();
    let tasks = executor.shutdown_now();
    release.send(()).unwrap();
    assert_eq!(tasks.len(), 4);
    assert!(periodic.is_cancelled());
    for task in tasks {
        task.run();
    }
    assert_eq!(
        order.names(),
        ["immediate 1", "immediate 2", "timer in 1 h", "timer in 2 h"]
    );
    soon.join().unwrap();
    late.join().unwrap();
    assert!(executor.await_termination(LONG));
}

#[test]
fn shutdown_now_takes_back_the_unclaimed_rest_of_the_running_batch() {
    let executor = executor("steal");
    let first = block_worker(&executor);
    // Queued behind the blocker, so the worker takes all three in one batch once released.
    let (started_tx, started) = mpsc::channel();
    let (release, blocked) = mpsc::channel::<()>();
    executor
        .execute(move || {
            started_tx.send(()).unwrap();
            let _ = blocked.recv();
        })
        .unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..2 {
        let ran = Arc::clone(&ran);
        executor
            .execute(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
    }
    first.send(()).unwrap();
    started.recv().unwrap();
    let returned = executor.shutdown_now();
    assert_eq!(
        returned.len(),
        2,
        "the two tasks behind the running one come back"
    );
    release.send(()).unwrap();
    assert!(executor.await_termination(LONG));
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    for task in returned {
        task.run();
    }
    assert_eq!(ran.load(Ordering::SeqCst), 2);
}

#[test]
fn a_timer_returned_by_shutdown_now_and_dropped_is_cancelled_once() {
    let executor = executor("dropped-return");
    let drops = DropCounter::new();
    let token = drops.token();
    let handle = executor
        .schedule(HOUR, move || {
            let _keep = &token;
        })
        .unwrap();
    let tasks = executor.shutdown_now();
    assert_eq!(tasks.len(), 1);
    assert!(!handle.is_done());
    drop(tasks);
    assert_eq!(drops.drops(), 1);
    assert!(matches!(handle.join(), Err(TaskError::Cancelled)));
    assert!(executor.await_termination(LONG));
}

#[test]
fn dropping_the_last_clone_shuts_down_gracefully_and_armed_timers_still_run() {
    let executor = executor("dropped");
    let clone = executor.clone();
    let handle = executor
        .schedule(Duration::from_millis(5), || "ran")
        .unwrap();
    let periodic = executor.schedule_at_fixed_rate(HOUR, HOUR, || ()).unwrap();
    drop(executor);
    assert!(!clone.is_shutdown(), "a clone keeps it running");
    drop(clone);
    assert_eq!(handle.join().unwrap(), "ran");
    assert!(matches!(periodic.join(), Err(TaskError::Cancelled)));
}

// ---- races --------------------------------------------------------------------------------

/// One of each kind of offer a producer makes in the shutdown races.
fn offer(
    executor: &ScheduledExecutor,
    i: usize,
    ran: &Arc<AtomicUsize>,
    drops: &DropCounter,
) -> Result<Option<ScheduledHandle<()>>, ()> {
    let ran = Arc::clone(ran);
    let token = drops.token();
    let task = move || {
        let _keep = &token;
        ran.fetch_add(1, Ordering::SeqCst);
    };
    if i % 2 == 0 {
        executor.execute(task).map(|()| None).map_err(drop)
    } else {
        let delay = Duration::from_micros((i % 5) as u64 * 50);
        executor.schedule(delay, task).map(Some).map_err(drop)
    }
}

#[test]
fn offers_racing_shutdown_now_lose_nothing_and_run_nothing_twice() {
    // Under Miri (~10^4 times slower) fewer iterations, the same assertions.
    const ROUNDS: usize = if cfg!(miri) { 5 } else { 200 };
    const PRODUCERS: usize = 3;
    const PER_PRODUCER: usize = 50;
    for _ in 0..ROUNDS {
        let executor = executor("race-now");
        let ran = Arc::new(AtomicUsize::new(0));
        let drops = DropCounter::new();
        let barrier = Arc::new(Barrier::new(PRODUCERS + 1));
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|_| {
                let (executor, ran, drops, barrier) = (
                    executor.clone(),
                    Arc::clone(&ran),
                    drops.clone(),
                    Arc::clone(&barrier),
                );
                thread::spawn(move || {
                    barrier.wait();
                    let mut accepted = 0;
                    for i in 0..PER_PRODUCER {
                        if offer(&executor, i, &ran, &drops).is_ok() {
                            accepted += 1;
                        }
                    }
                    accepted
                })
            })
            .collect();
        barrier.wait();
        let returned = executor.shutdown_now();
        let accepted: usize = producers.into_iter().map(|p| p.join().unwrap()).sum();
        assert!(executor.await_termination(LONG));
        let returned_count = returned.len();
        drop(returned);
        assert_eq!(ran.load(Ordering::SeqCst) + returned_count, accepted);
        assert_eq!(
            drops.drops(),
            PRODUCERS * PER_PRODUCER,
            "each closure dropped once"
        );
    }
}

#[test]
fn offers_racing_graceful_shutdown_run_every_accepted_task() {
    // Under Miri (~10^4 times slower) fewer iterations, the same assertions.
    const ROUNDS: usize = if cfg!(miri) { 5 } else { 200 };
    const PRODUCERS: usize = 3;
    const PER_PRODUCER: usize = 50;
    for _ in 0..ROUNDS {
        let executor = executor("race-graceful");
        let ran = Arc::new(AtomicUsize::new(0));
        let drops = DropCounter::new();
        let barrier = Arc::new(Barrier::new(PRODUCERS + 1));
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|_| {
                let (executor, ran, drops, barrier) = (
                    executor.clone(),
                    Arc::clone(&ran),
                    drops.clone(),
                    Arc::clone(&barrier),
                );
                thread::spawn(move || {
                    barrier.wait();
                    (0..PER_PRODUCER)
                        .filter(|&i| offer(&executor, i, &ran, &drops).is_ok())
                        .count()
                })
            })
            .collect();
        barrier.wait();
        executor.shutdown();
        let accepted: usize = producers.into_iter().map(|p| p.join().unwrap()).sum();
        assert!(executor.await_termination(LONG));
        assert_eq!(ran.load(Ordering::SeqCst), accepted);
        assert_eq!(drops.drops(), PRODUCERS * PER_PRODUCER);
    }
}

#[test]
fn cancel_racing_the_deadline_is_exactly_one_of_ran_or_cancelled() {
    // Under Miri (~10^4 times slower) fewer iterations, the same assertions.
    const TIMERS: usize = if cfg!(miri) { 100 } else { 20_000 };
    let executor = executor("cancel-race");
    let ran = Arc::new(AtomicUsize::new(0));
    let drops = DropCounter::new();
    let (tx, rx) = mpsc::channel::<ScheduledHandle<()>>();
    let canceller = thread::spawn(move || {
        let mut cancelled = 0;
        for handle in rx {
            if handle.cancel() {
                cancelled += 1;
                assert!(matches!(handle.join(), Err(TaskError::Cancelled)));
            } else {
                handle.join().unwrap();
            }
        }
        cancelled
    });
    for i in 0..TIMERS {
        let (ran, token) = (Arc::clone(&ran), drops.token());
        let delay = Duration::from_micros((i % 3) as u64 * 20);
        let handle = executor
            .schedule(delay, move || {
                let _keep = &token;
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        tx.send(handle).unwrap();
    }
    drop(tx);
    let cancelled = canceller.join().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst) + cancelled, TIMERS);
    assert_eq!(drops.drops(), TIMERS);
    assert_eq!(executor.pending_tasks(), 0);
    // The statistics account for every timer, including one cancelled after the worker had
    // claimed it (the worker counts that one) and one cancelled in the wheel (cancel counts it).
    // They are exact once the worker is done: a handle's join can return before the worker has
    // counted that run (it counts after the run, as Java's `completedTaskCount` does), so the
    // last run may not be counted yet when the canceller finishes.
    executor.shutdown();
    assert!(executor.await_termination(LONG));
    let stats = executor.stats();
    assert_eq!(stats.submitted, TIMERS as u64);
    assert_eq!(stats.completed, ran.load(Ordering::SeqCst) as u64);
    assert_eq!(stats.pending, 0, "{stats:?}");
}

#[test]
fn cancel_racing_periodic_runs_stops_them_and_drops_each_closure_once() {
    const TASKS: usize = 200;
    let executor = executor("periodic-race");
    let drops = DropCounter::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..TASKS)
        .map(|i| {
            let (runs, token) = (Arc::clone(&runs), drops.token());
            executor
                .schedule_at_fixed_rate(
                    Duration::from_micros((i % 7) as u64 * 30),
                    Duration::from_micros(100),
                    move || {
                        let _keep = &token;
                        runs.fetch_add(1, Ordering::SeqCst);
                    },
                )
                .unwrap()
        })
        .collect();
    for handle in &handles {
        assert!(handle.cancel());
    }
    drain(&executor);
    assert_eq!(drops.drops(), TASKS);
    assert_eq!(executor.armed_timers(), 0);
    let settled = runs.load(Ordering::SeqCst);
    executor
        .schedule(Duration::from_millis(2), || ())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), settled);
}
