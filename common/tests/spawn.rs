//! `SingleThreadExecutor::spawn` as a specification (issue #13 item 5; tokio's `spawn` tests
//! as the model): futures polled on the worker, woken from anywhere, queued behind the tasks
//! already queued; panics, cancels and shutdowns; and the handles (`TaskHandle`,
//! `ScheduledHandle`) awaited as futures.

mod support;

use pulsar_common::executors::{
    panic_message, NamedThreadFactory, PulsarExecutors, RejectReason, ScheduledExecutor,
    ScheduledHandle, SingleThreadExecutor, TaskError,
};
use pulsar_testkit::Token;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;
use support::{block_worker, CountingFactory, DropCounter, Latch, LONG};

/// A one-shot signal a future waits for: [`Gate::wait`] is pending until [`Gate::open`],
/// which wakes the last waker the future left. The condition variable tells the test when a
/// future has left its waker.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<GateState>, Condvar)>);

#[derive(Default)]
struct GateState {
    open: bool,
    waker: Option<Waker>,
    /// Polls of the futures waiting on this gate.
    polls: usize,
}

impl Gate {
    fn open(&self) {
        let waker = {
            let mut state = self.0 .0.lock().unwrap();
            state.open = true;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    fn polls(&self) -> usize {
        self.0 .0.lock().unwrap().polls
    }

    /// A future that resolves to `value` once the gate is open, holding `token` until dropped.
    fn wait<T: Unpin>(&self, value: T, token: Option<Token>) -> GateWait<T> {
        GateWait {
            gate: self.clone(),
            value: Some(value),
            _token: token,
        }
    }

    /// Waits (bounded) until a future polled on `executor` is waiting on the gate, its poll
    /// over (a task queued after the poll has run: FIFO).
    fn await_waiter(&self, executor: &SingleThreadExecutor) {
        self.await_waker();
        executor.submit(|| ()).unwrap().join().unwrap();
    }

    /// Waits (bounded) until a future has left its waker.
    fn await_waker(&self) {
        let (state, registered) = &*self.0;
        let state = state.lock().unwrap();
        let (state, timeout) = registered
            .wait_timeout_while(state, LONG, |state| state.waker.is_none())
            .unwrap();
        assert!(
            !timeout.timed_out() || state.waker.is_some(),
            "no future waits"
        );
    }
}

struct GateWait<T> {
    gate: Gate,
    value: Option<T>,
    _token: Option<Token>,
}

impl<T: Unpin> Future for GateWait<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut state = self.gate.0 .0.lock().unwrap();
        state.polls += 1;
        if state.open {
            drop(state);
            return Poll::Ready(self.value.take().expect("polled after Ready"));
        }
        state.waker = Some(cx.waker().clone());
        self.gate.0 .1.notify_all();
        Poll::Pending
    }
}

/// A future that runs `on_poll` at each poll, which decides the outcome.
struct PollFn<F>(F);

impl<T, F: FnMut(&mut Context<'_>) -> Poll<T> + Unpin> Future for PollFn<F> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        (self.0)(cx)
    }
}

// ---- smoke ----------------------------------------------------------------------------------

#[test]
fn a_ready_future_yields_its_output_through_the_handle() {
    let executor = PulsarExecutors::new_single_thread_executor();
    assert_eq!(executor.spawn(async { 6 * 7 }).unwrap().join().unwrap(), 42);
}

#[test]
fn a_future_is_polled_on_the_worker_thread() {
    let factory = CountingFactory::new("spawn-thread");
    let executor = PulsarExecutors::new_single_thread_executor_with(Arc::clone(&factory));
    let name = executor
        .spawn(async { thread::current().name().map(str::to_owned) })
        .unwrap()
        .join()
        .unwrap()
        .unwrap();
    assert!(name.starts_with("spawn-thread-"), "{name}");
    assert_eq!(factory.threads_started(), 1);
}

#[test]
fn a_future_woken_from_another_thread_is_polled_again_and_completes() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let gate = Gate::default();
    let handle = executor.spawn(gate.wait("opened", None)).unwrap();
    gate.await_waiter(&executor);
    assert!(!handle.is_finished());
    let opener = gate.clone();
    thread::spawn(move || opener.open()).join().unwrap();
    assert_eq!(handle.join().unwrap(), "opened");
    assert_eq!(gate.polls(), 2);
}

// ---- ordering and wake-ups ------------------------------------------------------------------

#[test]
fn a_woken_future_is_queued_behind_the_tasks_already_queued_never_polled_inside_wake() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let log = Arc::new(Mutex::new(Vec::new()));
    let release = block_worker(&executor);
    let polls = Arc::clone(&log);
    let mut first = true;
    let handle = executor
        .spawn(PollFn(move |cx: &mut Context<'_>| {
            if first {
                first = false;
                polls.lock().unwrap().push("poll 1");
                cx.waker().wake_by_ref(); // must not poll here, nor jump the queue
                polls.lock().unwrap().push("woke");
                return Poll::Pending;
            }
            polls.lock().unwrap().push("poll 2");
            Poll::Ready(())
        }))
        .unwrap();
    let task_log = Arc::clone(&log);
    executor
        .execute(move || task_log.lock().unwrap().push("task queued before the wake"))
        .unwrap();
    release.send(()).unwrap();
    handle.join().unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        ["poll 1", "woke", "task queued before the wake", "poll 2"]
    );
}

#[test]
fn many_wakes_before_the_next_poll_queue_it_once() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let gate = Gate::default();
    let handle = executor.spawn(gate.wait((), None)).unwrap();
    gate.await_waiter(&executor);
    let waker = gate.0 .0.lock().unwrap().waker.clone().unwrap();
    let release = block_worker(&executor);
    for _ in 0..100 {
        waker.wake_by_ref();
    }
    assert_eq!(executor.pending_tasks(), 1, "one queued poll");
    gate.open();
    release.send(()).unwrap();
    handle.join().unwrap();
    assert_eq!(gate.polls(), 2);
}

#[test]
fn wakes_during_a_poll_queue_one_more_poll() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let polls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&polls);
    let handle = executor
        .spawn(PollFn(move |cx: &mut Context<'_>| {
            if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                for _ in 0..100 {
                    cx.waker().wake_by_ref();
                }
                return Poll::Pending;
            }
            Poll::Ready(())
        }))
        .unwrap();
    handle.join().unwrap();
    executor.submit(|| ()).unwrap().join().unwrap();
    assert_eq!(polls.load(Ordering::SeqCst), 2);
}

#[test]
fn a_wake_after_completion_does_nothing() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let (wakers, kept) = mpsc::channel();
    let handle = executor
        .spawn(PollFn(move |cx: &mut Context<'_>| {
            wakers.send(cx.waker().clone()).unwrap();
            Poll::Ready(5)
        }))
        .unwrap();
    assert_eq!(handle.join().unwrap(), 5);
    let waker = kept.recv().unwrap();
    waker.wake_by_ref();
    waker.wake();
    assert_eq!(executor.pending_tasks(), 0);
    executor.submit(|| ()).unwrap().join().unwrap();
}

// ---- stress ---------------------------------------------------------------------------------

/// Futures in the stress test (fewer under Miri, which is slow).
const FUTURES: usize = if cfg!(miri) { 40 } else { 10_000 };

#[test]
fn ten_thousand_futures_woken_from_other_threads_each_complete_once() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let drops = DropCounter::new();
    let gates: Vec<Gate> = (0..FUTURES).map(|_| Gate::default()).collect();
    let handles: Vec<_> = gates
        .iter()
        .enumerate()
        .map(|(i, gate)| executor.spawn(gate.wait(i, Some(drops.token()))).unwrap())
        .collect();
    // Four threads open the gates, interleaved, while the worker is still polling the first
    // time: some wakes find their future waiting, some find it queued or not polled yet.
    let gates = Arc::new(gates);
    let openers: Vec<_> = (0..4)
        .map(|k| {
            let gates = Arc::clone(&gates);
            thread::spawn(move || {
                for gate in gates.iter().skip(k).step_by(4) {
                    gate.open();
                }
            })
        })
        .collect();
    for opener in openers {
        opener.join().unwrap();
    }
    let sum: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(sum, FUTURES * (FUTURES - 1) / 2, "each output exactly once");
    assert_eq!(drops.drops(), FUTURES, "each future dropped exactly once");
    for gate in gates.iter() {
        assert!((1..=2).contains(&gate.polls()), "polled once or twice");
    }
    assert_eq!(executor.pending_tasks(), 0);
}

// ---- panics ---------------------------------------------------------------------------------

#[test]
fn a_panic_in_poll_goes_to_the_handle_and_the_executor_keeps_running() {
    let factory = CountingFactory::new("spawn-panic");
    let executor = PulsarExecutors::new_single_thread_executor_with(Arc::clone(&factory));
    let drops = DropCounter::new();
    let token = drops.token();
    let handle = executor
        .spawn(async move {
            let _keep = &token;
            panic!("poll failed")
        })
        .unwrap();
    let Err(TaskError::Panicked(panic)) = handle.join() else {
        panic!("the panic must reach the handle")
    };
    assert_eq!(panic.message(), "poll failed");
    assert_eq!(drops.drops(), 1);
    assert_eq!(factory.panics(), 0, "reported to the handle, not the hook");
    assert_eq!(executor.spawn(async { 1 }).unwrap().join().unwrap(), 1);
}

// ---- cancel ---------------------------------------------------------------------------------

#[test]
fn cancel_between_polls_drops_the_future_and_a_later_wake_does_nothing() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let gate = Gate::default();
    let drops = DropCounter::new();
    let handle = executor.spawn(gate.wait((), Some(drops.token()))).unwrap();
    gate.await_waiter(&executor);
    assert!(handle.cancel());
    assert_eq!(drops.drops(), 1, "dropped by cancel");
    assert!(!handle.cancel());
    gate.open();
    assert!(matches!(handle.join(), Err(TaskError::Cancelled)));
    assert_eq!(gate.polls(), 1);
    assert_eq!(executor.pending_tasks(), 0);
}

#[test]
fn cancel_of_a_queued_future_drops_it_unpolled_and_it_is_not_pending() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let gate = Gate::default();
    let drops = DropCounter::new();
    let handle = executor.spawn(gate.wait((), Some(drops.token()))).unwrap();
    assert_eq!(executor.pending_tasks(), 1);
    assert!(handle.cancel());
    assert_eq!(drops.drops(), 1);
    assert_eq!(executor.pending_tasks(), 0);
    release.send(()).unwrap();
    assert!(handle.join().unwrap_err().is_cancelled());
    executor.submit(|| ()).unwrap().join().unwrap();
    assert_eq!(gate.polls(), 0);
}

#[test]
fn cancel_while_the_future_is_polled_returns_false() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let (polling, in_poll) = mpsc::channel();
    let (finish, go_on) = mpsc::channel::<()>();
    let handle = executor
        .spawn(PollFn(move |_: &mut Context<'_>| {
            polling.send(()).unwrap();
            go_on.recv().unwrap();
            Poll::Ready("done")
        }))
        .unwrap();
    in_poll.recv_timeout(LONG).unwrap();
    assert!(!handle.cancel());
    finish.send(()).unwrap();
    assert_eq!(handle.join().unwrap(), "done");
}

// ---- shutdown -------------------------------------------------------------------------------

#[test]
fn spawn_after_shutdown_hands_the_future_back_unpolled() {
    let executor = PulsarExecutors::new_single_thread_executor();
    executor.shutdown();
    let gate = Gate::default();
    let drops = DropCounter::new();
    let rejected = executor
        .spawn(gate.wait(3, Some(drops.token())))
        .unwrap_err();
    assert!(matches!(rejected.reason(), RejectReason::Shutdown));
    let future = rejected.into_task();
    assert_eq!(gate.polls(), 0);
    assert_eq!(drops.drops(), 0);
    drop(future);
    assert_eq!(drops.drops(), 1);
}

#[test]
fn a_wake_after_shutdown_drops_the_future_and_the_handle_yields_rejected() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let gate = Gate::default();
    let drops = DropCounter::new();
    let handle = executor.spawn(gate.wait((), Some(drops.token()))).unwrap();
    gate.await_waiter(&executor);
    executor.shutdown();
    assert!(executor.await_termination(LONG));
    assert_eq!(
        drops.drops(),
        0,
        "a waiting future is not dropped by the shutdown"
    );
    gate.open();
    assert_eq!(
        drops.drops(),
        1,
        "dropped by the wake that could not queue it"
    );
    assert!(matches!(
        handle.join(),
        Err(TaskError::Rejected(RejectReason::Shutdown))
    ));
}

#[test]
fn a_queued_poll_returned_by_shutdown_now_cancels_the_future_when_dropped() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let drops = DropCounter::new();
    let gate = Gate::default();
    let handle = executor.spawn(gate.wait((), Some(drops.token()))).unwrap();
    let returned = executor.shutdown_now();
    release.send(()).unwrap();
    assert_eq!(returned.len(), 1);
    drop(returned);
    assert_eq!(drops.drops(), 1);
    assert!(handle.join().unwrap_err().is_cancelled());
    assert_eq!(gate.polls(), 0);
}

#[test]
fn a_queued_poll_returned_by_shutdown_now_polls_the_future_when_run() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let release = block_worker(&executor);
    let handle = executor.spawn(async { "polled by the caller" }).unwrap();
    let returned = executor.shutdown_now();
    release.send(()).unwrap();
    for task in returned {
        task.run();
    }
    assert_eq!(handle.join().unwrap(), "polled by the caller");
}

// ---- handles awaited ------------------------------------------------------------------------

#[test]
fn a_spawned_future_awaits_a_task_of_its_own_executor_without_deadlock() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let same = executor.clone();
    let handle = executor
        .spawn(async move {
            // A blocking join here would be refused (WouldDeadlock); awaiting yields instead.
            let inner = same.submit(|| 20).unwrap().await.unwrap();
            let spawned = same.spawn(async { 22 }).unwrap().await.unwrap();
            inner + spawned
        })
        .unwrap();
    assert_eq!(handle.join().unwrap(), 42);
}

#[test]
fn a_scheduled_handle_is_awaited_in_a_spawned_future() {
    let executor = PulsarExecutors::new_single_thread_executor();
    let timers = ScheduledExecutor::new(NamedThreadFactory::new("spawn-timers"));
    let scheduled = timers.schedule(Duration::from_millis(5), || 6).unwrap();
    let never = timers.schedule(Duration::from_secs(3600), || 0).unwrap();
    assert!(never.cancel());
    let handle = executor
        .spawn(async move {
            let value = scheduled.await.unwrap();
            let cancelled = never.await.unwrap_err();
            (value * 7, cancelled.is_cancelled())
        })
        .unwrap();
    assert_eq!(handle.join().unwrap(), (42, true));
    timers.shutdown_now();
}

#[test]
fn a_scheduled_handle_wakes_its_awaiting_waker_when_it_fires() {
    let timers = ScheduledExecutor::new(NamedThreadFactory::new("poll-by-hand"));
    let (release, gate) = mpsc::channel::<()>();
    let mut handle = timers
        .schedule(Duration::ZERO, move || gate.recv().unwrap())
        .unwrap();
    let woken = Arc::new(CountWakes(Latch::new(1)));
    let waker = Waker::from(Arc::clone(&woken));
    let mut cx = Context::from_waker(&waker);
    assert!(Pin::new(&mut handle).poll(&mut cx).is_pending());
    release.send(()).unwrap();
    woken.0.wait(LONG);
    assert!(matches!(
        Pin::new(&mut handle).poll(&mut cx),
        Poll::Ready(Ok(()))
    ));
    timers.shutdown();
}

/// A waker left by a `Pending` poll is woken by a cancel too (the handle then reports
/// `Cancelled`), not only by the fire.
#[test]
fn a_scheduled_handle_wakes_its_awaiting_waker_when_it_is_cancelled() {
    let timers = ScheduledExecutor::new(NamedThreadFactory::new("poll-then-cancel"));
    let mut handle = timers.schedule(Duration::from_secs(3600), || 1).unwrap();
    let woken = Arc::new(CountWakes(Latch::new(1)));
    let waker = Waker::from(Arc::clone(&woken));
    let mut cx = Context::from_waker(&waker);
    assert!(Pin::new(&mut handle).poll(&mut cx).is_pending());
    assert!(handle.cancel());
    // The cancel wakes the waker before it returns: nothing left to wait for.
    woken.0.wait(Duration::ZERO);
    assert!(matches!(
        Pin::new(&mut handle).poll(&mut cx),
        Poll::Ready(Err(TaskError::Cancelled))
    ));
    timers.shutdown();
}

/// Counts its wakes down on a latch.
struct CountWakes(Arc<Latch>);

impl Wake for CountWakes {
    fn wake(self: Arc<Self>) {
        self.0.count_down();
    }
}

/// The outcome is taken once: a handle polled again after `Ready`, or joined after it, panics
/// with the reason instead of waiting for an outcome that is gone.
#[test]
fn a_scheduled_handle_used_again_after_ready_panics_instead_of_waiting_forever() {
    let timers = ScheduledExecutor::new(NamedThreadFactory::new("ready-twice"));
    let take_twice = |second: fn(ScheduledHandle<i32>)| {
        let mut handle = timers.schedule(Duration::ZERO, || 5).unwrap();
        let woken = Arc::new(CountWakes(Latch::new(1)));
        let waker = Waker::from(Arc::clone(&woken));
        let mut cx = Context::from_waker(&waker);
        let mut poll = || Pin::new(&mut handle).poll(&mut cx);
        let taken = match poll() {
            Poll::Ready(outcome) => outcome,
            Poll::Pending => {
                woken.0.wait(LONG);
                match poll() {
                    Poll::Ready(outcome) => outcome,
                    Poll::Pending => panic!("woken, yet pending"),
                }
            }
        };
        assert_eq!(taken.unwrap(), 5);
        let again = panic::catch_unwind(AssertUnwindSafe(|| second(handle)));
        let payload = again.expect_err("a second take panics");
        assert_eq!(
            panic_message(payload.as_ref()),
            "a scheduled handle polled after it returned Ready"
        );
    };
    take_twice(|mut handle| {
        let waker = Waker::from(Arc::new(CountWakes(Latch::new(1))));
        let _ = Pin::new(&mut handle).poll(&mut Context::from_waker(&waker));
    });
    take_twice(|handle| {
        let _ = handle.join();
    });
    timers.shutdown();
}
