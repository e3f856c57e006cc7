//! `FunctionInstance` (Pulsar's `JavaInstance`): sync and async results, user errors, max pending, ordering, close.

mod functions_support;

use functions_support::{thread_name, DropCounter, Token, XorShift, LONG};
use pulsar_common::executors::{NamedThreadFactory, PulsarExecutors};
use pulsar_server::functions::{
    ExecutionResult, FunctionError, FunctionInstance, FunctionOutput, ProcessError, Processed,
    ResultCompleter,
};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;

/// A function whose every result is completed by the test: it sends `(record, completer)`.
fn completable_function(
    completers: mpsc::Sender<(u32, ResultCompleter<u32>)>,
) -> impl FnMut(&u32) -> FunctionOutput<u32> + Send + 'static {
    move |n: &u32| {
        let (completer, output) = FunctionOutput::completable();
        completers.send((*n, completer)).unwrap();
        output
    }
}

/// A consumer that forwards `(record, result)` to a channel.
fn forward<R: Send + 'static, O: Send + 'static>(
    results: mpsc::Sender<(R, Result<O, FunctionError>)>,
) -> impl FnMut(ExecutionResult<R, O>) + Send + 'static {
    move |done| {
        let _ = results.send((done.record, done.result));
    }
}

/// Mirrors Pulsar's `JavaInstanceTest.testLambda`.
#[test]
fn a_sync_result_is_returned_by_process() {
    let mut instance = FunctionInstance::builder(
        |input: &String| FunctionOutput::ok(format!("{input}-lambda")),
        |_: ExecutionResult<String, String>| unreachable!("no async results"),
    )
    .build();
    match instance.process("ABC123".to_owned()).unwrap() {
        Processed::Completed(done) => {
            assert_eq!(done.record, "ABC123");
            assert_eq!(done.result.unwrap(), "ABC123-lambda");
        }
        Processed::Pending => panic!("a sync function completes at once"),
    }
    assert_eq!(instance.outstanding(), 0);
    assert!(
        instance.threads().started().is_empty(),
        "sync results start no thread"
    );
    instance.close();
}

/// Mirrors Pulsar's `JavaInstanceTest.testNullReturningFunction`: a function that returns no
/// value (Java's `null`, here `None`) completes at once with that empty result.
#[test]
fn a_sync_function_returning_nothing_yields_an_empty_result() {
    let mut instance = FunctionInstance::builder(
        |_: &String| FunctionOutput::ok(None::<String>),
        |_: ExecutionResult<String, Option<String>>| unreachable!("no async results"),
    )
    .build();
    match instance.process("ABC123".to_owned()).unwrap() {
        Processed::Completed(done) => {
            assert_eq!(done.record, "ABC123");
            assert_eq!(done.result.unwrap(), None);
        }
        Processed::Pending => panic!("a sync function completes at once"),
    }
    instance.close();
}

/// Mirrors Pulsar's `JavaInstanceTest.testAsyncFunction`.
#[test]
fn an_async_result_is_emitted_on_the_instance_thread() {
    let (tx, rx) = mpsc::channel();
    let mut instance = FunctionInstance::builder(
        |input: &String| {
            let output = format!("{input}-lambda");
            FunctionOutput::from_future(async move { Ok(output) })
        },
        move |done: ExecutionResult<String, String>| {
            tx.send((done.record, done.result.unwrap(), thread_name()))
                .unwrap();
        },
    )
    .build();
    assert!(matches!(
        instance.process("ABC123".to_owned()).unwrap(),
        Processed::Pending
    ));
    let (record, output, thread) = rx.recv_timeout(LONG).unwrap();
    assert_eq!(record, "ABC123");
    assert_eq!(output, "ABC123-lambda");
    assert!(thread.starts_with("function-instance-"), "{thread}");
    instance.close();
    assert_eq!(instance.threads().names(), [thread]);
}

/// Mirrors Pulsar's `JavaInstanceTest.testNullReturningAsyncFunction`.
#[test]
fn an_async_function_returning_nothing_emits_a_unit_result() {
    let worker =
        PulsarExecutors::new_single_thread_executor_with(NamedThreadFactory::new("test-worker"));
    let submit_to = worker.clone();
    let (tx, rx) = mpsc::channel();
    let mut instance = FunctionInstance::builder(
        move |_: &&str| FunctionOutput::from_task(submit_to.submit(|| ()).unwrap()),
        forward(tx),
    )
    .max_pending(3)
    .build();
    assert!(matches!(
        instance.process("ABC123").unwrap(),
        Processed::Pending
    ));
    let (record, result) = rx.recv_timeout(LONG).unwrap();
    assert_eq!(record, "ABC123");
    assert!(matches!(result, Ok(())));
    instance.close();
    worker.shutdown();
    assert!(worker.await_termination(LONG));
}

/// Mirrors Pulsar's `JavaInstanceTest.testUserExceptionThrowingFunction`.
#[test]
fn a_sync_user_error_is_the_records_result_and_the_instance_keeps_going() {
    let mut instance = FunctionInstance::builder(
        |n: &i32| {
            if *n < 0 {
                FunctionOutput::err("user exception")
            } else {
                FunctionOutput::ok(*n)
            }
        },
        |_| {},
    )
    .build();
    let Processed::Completed(failed) = instance.process(-1).unwrap() else {
        panic!("sync")
    };
    assert_eq!(failed.record, -1);
    match failed.result {
        Err(FunctionError::Failed(error)) => assert_eq!(error.to_string(), "user exception"),
        other => panic!("unexpected {other:?}"),
    }
    let Processed::Completed(next) = instance.process(5).unwrap() else {
        panic!("sync")
    };
    assert_eq!(next.result.unwrap(), 5);
}

/// Mirrors Pulsar's `JavaInstanceTest.testUserExceptionThrowingAsyncFunction`.
#[test]
fn an_async_user_error_is_emitted_as_the_records_result_and_the_instance_keeps_going() {
    let (tx, rx) = mpsc::channel();
    let mut instance = FunctionInstance::builder(
        |n: &i32| {
            let n = *n;
            FunctionOutput::from_future(async move {
                if n < 0 {
                    Err(FunctionError::failed("user exception"))
                } else {
                    Ok(n)
                }
            })
        },
        forward(tx),
    )
    .build();
    instance.process(-1).unwrap();
    instance.process(7).unwrap();
    let (record, result) = rx.recv_timeout(LONG).unwrap();
    assert_eq!(record, -1);
    assert_eq!(result.unwrap_err().message(), "user exception");
    let (record, result) = rx.recv_timeout(LONG).unwrap();
    assert_eq!((record, result.unwrap()), (7, 7));
}

#[test]
fn a_panicking_function_or_future_yields_a_panicked_result_and_the_instance_keeps_going() {
    let (tx, rx) = mpsc::channel();
    let mut instance = FunctionInstance::builder(
        |input: &&str| match *input {
            "panic now" => panic!("function panicked"),
            "panic later" => FunctionOutput::from_future(async { panic!("future panicked") }),
            other => {
                let other = other.to_owned();
                FunctionOutput::from_future(async move { Ok(other) })
            }
        },
        forward(tx),
    )
    .build();

    let Processed::Completed(now) = instance.process("panic now").unwrap() else {
        panic!("a panic during process completes at once")
    };
    let error = now.result.unwrap_err();
    assert!(error.is_panic());
    assert_eq!(error.message(), "function panicked");

    instance.process("panic later").unwrap();
    instance.process("fine").unwrap();
    let (record, result) = rx.recv_timeout(LONG).unwrap();
    assert_eq!(record, "panic later");
    let error = result.unwrap_err();
    assert!(error.is_panic());
    assert_eq!(error.message(), "future panicked");
    let (record, result) = rx.recv_timeout(LONG).unwrap();
    assert_eq!((record, result.unwrap()), ("fine", "fine".to_owned()));
}

#[test]
fn a_dropped_completer_yields_an_abandoned_result() {
    let (tx, rx) = mpsc::channel();
    let mut instance = FunctionInstance::builder(
        |_: &u8| {
            let (completer, output) = FunctionOutput::<u8>::completable();
            drop(completer);
            output
        },
        forward(tx),
    )
    .build();
    instance.process(1).unwrap();
    let (record, result) = rx.recv_timeout(LONG).unwrap();
    assert_eq!(record, 1);
    assert!(matches!(result, Err(FunctionError::Abandoned)));
}

#[test]
fn a_panicking_result_consumer_does_not_stop_the_instance() {
    let (tx, rx) = mpsc::channel();
    let mut instance = FunctionInstance::builder(
        |n: &u32| {
            let n = *n;
            FunctionOutput::from_future(async move { Ok(n) })
        },
        move |done: ExecutionResult<u32, u32>| {
            if done.record == 1 {
                panic!("consumer panicked");
            }
            tx.send(done.record).unwrap();
        },
    )
    .build();
    for n in 0..3 {
        instance.process(n).unwrap();
    }
    assert_eq!(rx.recv_timeout(LONG).unwrap(), 0);
    assert_eq!(rx.recv_timeout(LONG).unwrap(), 2);
    instance.close();
    assert_eq!(instance.outstanding(), 0);
}

/// Mirrors Pulsar's `JavaInstanceTest.testAsyncFunctionMaxPending`: the window fills, a record
/// beyond it is refused, and the results come out once completed.
#[test]
fn try_process_beyond_max_pending_hands_the_record_back_without_calling_the_function() {
    let (completers_tx, completers) = mpsc::channel();
    let (results_tx, results) = mpsc::channel();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let mut complete = completable_function(completers_tx);
    let mut instance = FunctionInstance::builder(
        move |n: &u32| {
            counted.fetch_add(1, Ordering::SeqCst);
            complete(n)
        },
        forward(results_tx),
    )
    .max_pending(2)
    .build();

    assert!(matches!(
        instance.try_process(0).unwrap(),
        Processed::Pending
    ));
    assert!(matches!(
        instance.try_process(1).unwrap(),
        Processed::Pending
    ));
    assert_eq!(instance.outstanding(), 2);
    match instance.try_process(2) {
        Err(ProcessError::Full(record)) => assert_eq!(record, 2),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "a rejected record is not processed"
    );

    // One result out frees one permit: the blocking `process` takes it.
    let (n, first) = completers.recv_timeout(LONG).unwrap();
    assert_eq!(n, 0);
    first.complete(Ok(0));
    assert!(matches!(instance.process(2).unwrap(), Processed::Pending));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(results.recv_timeout(LONG).unwrap().0, 0);

    for _ in 0..2 {
        let (n, completer) = completers.recv_timeout(LONG).unwrap();
        completer.complete(Ok(n));
    }
    assert_eq!(results.recv_timeout(LONG).unwrap().0, 1);
    assert_eq!(results.recv_timeout(LONG).unwrap().0, 2);
    instance.close();
    assert_eq!(instance.outstanding(), 0);
}

/// Mirrors Pulsar's `JavaInstanceTest.testAsyncFunctionMaxPendingVoidResult`: results with no
/// value fill the window like any other (the fourth record is refused while three are
/// outstanding), and every one reaches the result consumer once completed.
#[test]
fn unit_results_fill_the_pending_window_and_are_all_emitted() {
    let (completers_tx, completers) = mpsc::channel();
    let (results_tx, results) = mpsc::channel();
    let mut instance = FunctionInstance::builder(
        move |n: &u32| {
            let (completer, output) = FunctionOutput::<()>::completable();
            completers_tx.send((*n, completer)).unwrap();
            output
        },
        forward(results_tx),
    )
    .max_pending(3)
    .build();
    for n in 0..3 {
        assert!(matches!(
            instance.try_process(n).unwrap(),
            Processed::Pending
        ));
    }
    assert_eq!(instance.outstanding(), 3);
    match instance.try_process(3) {
        Err(ProcessError::Full(record)) => assert_eq!(record, 3),
        other => panic!("unexpected {other:?}"),
    }

    for _ in 0..3 {
        let (_, completer) = completers.recv_timeout(LONG).unwrap();
        completer.complete(Ok(()));
    }
    for n in 0..3 {
        let (record, result) = results.recv_timeout(LONG).unwrap();
        assert_eq!(record, n);
        assert!(matches!(result, Ok(())));
    }
    instance.close();
    assert_eq!(instance.outstanding(), 0);
}

#[test]
fn process_at_max_pending_waits_until_a_result_is_emitted() {
    let (completers_tx, completers) = mpsc::channel();
    let (results_tx, results) = mpsc::channel();
    let released = Arc::new(AtomicBool::new(false));
    let seen_release = Arc::new(Mutex::new(Vec::new()));
    let (released2, seen2) = (Arc::clone(&released), Arc::clone(&seen_release));
    let mut complete = completable_function(completers_tx);
    let mut instance = FunctionInstance::builder(
        move |n: &u32| {
            seen2
                .lock()
                .unwrap()
                .push((*n, released2.load(Ordering::SeqCst)));
            complete(n)
        },
        forward(results_tx),
    )
    .max_pending(1)
    .build();
    instance.process(0).unwrap();

    let (about_to_process, ready) = mpsc::channel();
    let driver = thread::spawn(move || {
        about_to_process.send(()).unwrap();
        let processed = instance.process(1).unwrap(); // waits for record 0's emission
        (instance, processed)
    });
    ready.recv_timeout(LONG).unwrap();
    let (n, first) = completers.recv_timeout(LONG).unwrap();
    assert_eq!(n, 0);
    released.store(true, Ordering::SeqCst);
    first.complete(Ok(0));
    let (mut instance, processed) = driver.join().unwrap();
    assert!(matches!(processed, Processed::Pending));
    assert_eq!(results.recv_timeout(LONG).unwrap().0, 0);
    assert_eq!(
        *seen_release.lock().unwrap(),
        [(0, false), (1, true)],
        "record 1 was processed only after record 0's result went out"
    );
    let (_, second) = completers.recv_timeout(LONG).unwrap();
    second.complete(Ok(1));
    assert_eq!(results.recv_timeout(LONG).unwrap().0, 1);
    instance.close();
}

#[test]
fn ten_thousand_results_completed_in_random_order_are_emitted_in_input_order() {
    const RECORDS: u32 = 10_000;
    const COMPLETING_THREADS: usize = 4;
    let (completers_tx, completers) = mpsc::channel();
    let (results_tx, results) = mpsc::channel();
    let mut instance =
        FunctionInstance::builder(completable_function(completers_tx), forward(results_tx))
            .max_pending(RECORDS as usize)
            .build();
    for n in 0..RECORDS {
        assert!(matches!(instance.process(n).unwrap(), Processed::Pending));
    }
    let mut pending: Vec<(u32, ResultCompleter<u32>)> = completers.try_iter().collect();
    assert_eq!(pending.len(), RECORDS as usize);
    XorShift::new(0x5eed).shuffle(&mut pending);
    assert!(
        pending.windows(2).filter(|w| w[0].0 > w[1].0).count() > 1_000,
        "the completion order is thoroughly shuffled"
    );

    let chunk = pending.len().div_ceil(COMPLETING_THREADS);
    let mut workers = Vec::new();
    while !pending.is_empty() {
        let batch: Vec<_> = pending.drain(..chunk.min(pending.len())).collect();
        workers.push(thread::spawn(move || {
            for (n, completer) in batch {
                completer.complete(Ok(n * 2));
            }
        }));
    }
    for expected in 0..RECORDS {
        let (record, result) = results.recv_timeout(LONG).unwrap();
        assert_eq!(record, expected);
        assert_eq!(result.unwrap(), expected * 2);
    }
    for worker in workers {
        worker.join().unwrap();
    }
    instance.close();
    assert!(results.try_recv().is_err(), "exactly one result per record");
}

#[test]
fn in_order_emission_holds_while_process_waits_at_max_pending() {
    const RECORDS: u32 = 10_000;
    const MAX_PENDING: usize = 64;
    let (completers_tx, completers) = mpsc::channel::<(u32, ResultCompleter<u32>)>();
    let (results_tx, results) = mpsc::channel();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most_in_flight = Arc::new(AtomicUsize::new(0));
    let (in_flight2, most2, in_flight3) = (
        Arc::clone(&in_flight),
        Arc::clone(&most_in_flight),
        Arc::clone(&in_flight),
    );
    let mut complete = completable_function(completers_tx);
    let mut forward_result = forward(results_tx);
    let mut instance = FunctionInstance::builder(
        move |n: &u32| {
            let now = in_flight2.fetch_add(1, Ordering::SeqCst) + 1;
            most2.fetch_max(now, Ordering::SeqCst);
            complete(n)
        },
        move |done| {
            in_flight3.fetch_sub(1, Ordering::SeqCst);
            forward_result(done);
        },
    )
    .max_pending(MAX_PENDING)
    .build();

    // Completes whatever it holds in a random order, taking new completers as they come.
    let completer = thread::spawn(move || {
        let mut rng = XorShift::new(42);
        let mut held = Vec::new();
        loop {
            held.extend(completers.try_iter());
            if held.is_empty() {
                match completers.recv() {
                    Ok(next) => held.push(next),
                    Err(_) => return, // the instance (and its function) is gone
                }
                continue;
            }
            let (n, completer) = held.swap_remove(rng.below(held.len()));
            completer.complete(Ok(n + 1));
        }
    });
    for n in 0..RECORDS {
        assert!(matches!(instance.process(n).unwrap(), Processed::Pending));
    }
    for expected in 0..RECORDS {
        let (record, result) = results.recv_timeout(LONG).unwrap();
        assert_eq!((record, result.unwrap()), (expected, expected + 1));
    }
    assert!(most_in_flight.load(Ordering::SeqCst) <= MAX_PENDING);
    drop(instance); // closes; drops the function and with it the completers' sender
    completer.join().unwrap();
}

#[test]
fn with_ordering_off_results_are_emitted_in_completion_order() {
    const RECORDS: u32 = 1_000;
    // One record more than the test completes in shuffled order. The futures are first
    // polled one at a time, in the order they were spawned, on the instance's one executor
    // thread; so once the last record's first poll has announced itself, every earlier
    // record's first poll has returned. A completion that raced a first poll still running (a
    // busy CPU can hold the worker between the announcement and the poll's return) would be
    // polled again only after the results completed meanwhile; the last record is completed
    // last, so no completion can come after it.
    const LAST: u32 = RECORDS;
    let (completers_tx, completers) = mpsc::channel();
    let (polled_tx, polled) = mpsc::channel();
    let (results_tx, results) = mpsc::channel();
    let mut complete = completable_function(completers_tx);
    let mut instance = FunctionInstance::builder(
        move |n: &u32| {
            let FunctionOutput::Async(output) = complete(n) else {
                unreachable!()
            };
            let (n, polled) = (*n, polled_tx.clone());
            let mut output = output;
            let mut announced = false;
            // Tells the test only once the first poll has registered the waker: a completion
            // before that would be seen by the poll still running (a busy CPU can hold the
            // worker between the two), which emits that result ahead of ones completed earlier.
            FunctionOutput::from_future(std::future::poll_fn(move |cx| {
                let poll = output.as_mut().poll(cx);
                if poll.is_pending() && !announced {
                    announced = true;
                    polled.send(n).unwrap();
                }
                poll
            }))
        },
        forward(results_tx),
    )
    .max_pending(RECORDS as usize + 1)
    .preserve_order(false)
    .build();
    for n in 0..=LAST {
        instance.process(n).unwrap();
    }
    for _ in 0..=LAST {
        polled.recv_timeout(LONG).unwrap();
    }
    let mut pending: Vec<(u32, ResultCompleter<u32>)> = completers.try_iter().collect();
    let last = pending.iter().position(|(n, _)| *n == LAST).unwrap();
    let last = pending.remove(last);
    XorShift::new(7).shuffle(&mut pending);
    pending.push(last);
    let completion_order: Vec<u32> = pending.iter().map(|(n, _)| *n).collect();
    for (n, completer) in pending {
        completer.complete(Ok(n));
    }
    let emitted: Vec<u32> = (0..=LAST)
        .map(|_| results.recv_timeout(LONG).unwrap().0)
        .collect();
    assert_eq!(emitted, completion_order);
    instance.close();
}

/// A record that counts its drops.
struct Record {
    n: u32,
    _token: Token,
}

#[test]
fn close_closes_the_function_then_reports_every_outstanding_record_once_in_input_order() {
    let record_drops = DropCounter::new();
    let consumer_drops = DropCounter::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let (completers_tx, completers) = mpsc::channel();

    struct Recording {
        log: Arc<Mutex<Vec<String>>>,
        completers: mpsc::Sender<(u32, ResultCompleter<u32>)>,
    }
    impl pulsar_server::functions::Function<Record, u32> for Recording {
        fn process(&mut self, record: &Record) -> FunctionOutput<u32> {
            let (completer, output) = FunctionOutput::completable();
            self.completers.send((record.n, completer)).unwrap();
            output
        }
        fn close(&mut self) -> Result<(), FunctionError> {
            self.log.lock().unwrap().push("function closed".to_owned());
            Ok(())
        }
    }

    let consumer_log = Arc::clone(&log);
    let consumer_token = consumer_drops.token();
    let mut instance = FunctionInstance::builder(
        Recording {
            log: Arc::clone(&log),
            completers: completers_tx,
        },
        move |done: ExecutionResult<Record, u32>| {
            let _keep = &consumer_token;
            let outcome = match done.result {
                Ok(value) => format!("{}: {value}", done.record.n),
                Err(error) => format!("{}: {error}", done.record.n),
            };
            consumer_log.lock().unwrap().push(outcome);
        },
    )
    .build();
    for n in 0..5 {
        let record = Record {
            n,
            _token: record_drops.token(),
        };
        assert!(matches!(
            instance.process(record).unwrap(),
            Processed::Pending
        ));
    }
    let mut held: Vec<_> = completers.try_iter().collect();
    let (_, third) = held.remove(3);
    third.complete(Ok(33)); // ready, but behind record 0

    instance.close();
    let abandoned = "the result was abandoned before it was produced";
    assert_eq!(
        *log.lock().unwrap(),
        [
            "function closed".to_owned(),
            format!("0: {abandoned}"),
            format!("1: {abandoned}"),
            format!("2: {abandoned}"),
            "3: 33".to_owned(),
            format!("4: {abandoned}"),
        ]
    );
    assert_eq!(record_drops.drops(), 5, "every record dropped exactly once");
    assert_eq!(
        consumer_drops.drops(),
        1,
        "the consumer is dropped at close"
    );
    assert_eq!(instance.outstanding(), 0);

    // Completing after close emits nothing more.
    for (_, completer) in held {
        completer.complete(Ok(0));
    }
    drop(instance);
    assert_eq!(log.lock().unwrap().len(), 6);
    assert_eq!(record_drops.drops(), 5);
}

#[test]
fn close_is_idempotent_and_later_records_come_back_as_closed() {
    let closes = Arc::new(AtomicUsize::new(0));
    struct CountsCloses(Arc<AtomicUsize>);
    impl pulsar_server::functions::Function<u32, u32> for CountsCloses {
        fn process(&mut self, n: &u32) -> FunctionOutput<u32> {
            FunctionOutput::ok(*n)
        }
        fn close(&mut self) -> Result<(), FunctionError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Err(FunctionError::failed("close failed")) // logged; the instance closes anyway
        }
    }
    let mut instance = FunctionInstance::builder(CountsCloses(Arc::clone(&closes)), |_| {}).build();
    instance.close();
    instance.close();
    assert!(instance.is_closed());
    match instance.process(9) {
        Err(error @ ProcessError::Closed(_)) => {
            assert_eq!(
                error.to_string(),
                "record not processed: the function instance is closed"
            );
            assert_eq!(error.into_record(), 9);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(
        instance.try_process(10),
        Err(ProcessError::Closed(10))
    ));
    drop(instance);
    assert_eq!(closes.load(Ordering::SeqCst), 1);
}
