//! `BatchSourceExecutor` (Pulsar's `BatchSourceExecutor`): life cycle, push life cycle, discovery errors, triggers, close during discovery.

mod functions_support;

use functions_support::{thread_name, DropCounter, Token, LONG};
use pulsar_common::executors::{NamedThreadFactory, ScheduledExecutor};
use pulsar_server::functions::{
    BatchPushAdapter, BatchPushSource, BatchSource, BatchSourceExecutor, OnDemandTriggerer,
    PeriodicTriggerer, ReadError, RecordPusher, SourceError, TaskEmitter, TriggerOutcome,
};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

/// A task: a name and how many records it yields (`name-1`, `name-2`, ...).
struct Task {
    name: String,
    records: u32,
    _token: Option<Token>,
}

fn task(name: &str, records: u32) -> Task {
    Task {
        name: name.to_owned(),
        records,
        _token: None,
    }
}

type Discover = dyn Fn(&mut TaskEmitter<'_, Task>) -> Result<(), SourceError> + Send + Sync;

/// A pull source whose discovery is a closure; it logs what it is asked to do.
struct Scripted {
    discover: Box<Discover>,
    current: Mutex<VecDeque<String>>,
    log: Arc<Mutex<Vec<String>>>,
}

impl Scripted {
    fn new(
        log: &Arc<Mutex<Vec<String>>>,
        discover: impl Fn(&mut TaskEmitter<'_, Task>) -> Result<(), SourceError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            discover: Box::new(discover),
            current: Mutex::new(VecDeque::new()),
            log: Arc::clone(log),
        }
    }

    fn note(&self, entry: String) {
        self.log.lock().unwrap().push(entry);
    }
}

impl BatchSource for Scripted {
    type Task = Task;
    type Record = String;

    fn discover(&self, emitter: &mut TaskEmitter<'_, Task>) -> Result<(), SourceError> {
        self.note(format!("discover on {}", thread_name()));
        (self.discover)(emitter)
    }

    fn prepare(&self, task: Task) -> Result<(), SourceError> {
        self.note(format!("prepare {}", task.name));
        match task.name.as_str() {
            "bad-prepare" => Err(SourceError::new("cannot open")),
            "panicking-prepare" => panic!("prepare panicked"),
            name => {
                *self.current.lock().unwrap() =
                    (1..=task.records).map(|i| format!("{name}-{i}")).collect();
                Ok(())
            }
        }
    }

    fn read_next(&self) -> Result<Option<String>, SourceError> {
        let next = self.current.lock().unwrap().pop_front();
        match next.as_deref() {
            Some(record) if record.starts_with("bad-read") => {
                Err(SourceError::new(record.to_owned()))
            }
            _ => Ok(next),
        }
    }

    fn close(&self) -> Result<(), SourceError> {
        self.note("close".to_owned());
        Ok(())
    }
}

fn entries(log: &Arc<Mutex<Vec<String>>>, prefix: &str) -> Vec<String> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|entry| entry.starts_with(prefix))
        .cloned()
        .collect()
}

/// Mirrors Pulsar's `BatchSourceExecutorTest.testLifeCycle` (and `testOpenWithRightSource`):
/// nothing is read before the first trigger, a trigger runs one discovery, its tasks' records
/// are read in order, and close closes the source once. (Each later trigger running one more
/// discovery is shown by `a_discovery_failure_is_returned_once_by_the_next_read`.)
#[test]
fn life_cycle_discovery_runs_on_the_discovery_thread_and_tasks_are_read_in_order() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let source = Scripted::new(&log, |emitter| {
        emitter.emit(task("t1", 2))?;
        emitter.emit(task("t2", 0))?; // an empty task is skipped
        emitter.emit(task("t3", 1))?;
        Ok(())
    });
    let triggerer = OnDemandTriggerer::new();
    let trigger = triggerer.handle();
    let executor = BatchSourceExecutor::builder(source, triggerer).build();
    assert!(
        executor.try_read().unwrap().is_none(),
        "nothing before discovery"
    );
    assert!(
        executor.threads().started().is_empty(),
        "no thread before the first trigger"
    );

    assert_eq!(trigger.trigger(), TriggerOutcome::Started);
    let records: Vec<String> = (0..3).map(|_| executor.read().unwrap()).collect();
    assert_eq!(records, ["t1-1", "t1-2", "t3-1"]);
    assert!(executor.try_read().unwrap().is_none());

    let discovered_on = entries(&log, "discover on ");
    assert_eq!(discovered_on.len(), 1);
    assert!(
        discovered_on[0].starts_with("discover on batch-source-discovery-"),
        "{discovered_on:?}"
    );
    assert_ne!(discovered_on[0], format!("discover on {}", thread_name()));
    assert_eq!(
        entries(&log, "prepare "),
        ["prepare t1", "prepare t2", "prepare t3"]
    );

    let threads = executor.threads();
    executor.close();
    executor.close();
    assert_eq!(
        entries(&log, "close"),
        ["close"],
        "the source is closed once"
    );
    assert!(matches!(executor.read(), Err(ReadError::Closed)));
    assert!(matches!(executor.try_read(), Err(ReadError::Closed)));
    assert_eq!(trigger.trigger(), TriggerOutcome::Inactive);
    assert!(threads.await_exit(LONG));
    assert_eq!(threads.started().len(), 1);
}

/// Each task is a number of records; each task's records are pushed from a thread of its own.
struct Pushing {
    tasks: Vec<(&'static str, u32)>,
    pushers: Arc<Mutex<Vec<thread::JoinHandle<()>>>>,
}

impl BatchPushSource for Pushing {
    type Task = (&'static str, u32);
    type Record = String;

    fn discover(&self, emitter: &mut TaskEmitter<'_, Self::Task>) -> Result<(), SourceError> {
        for task in &self.tasks {
            emitter.emit(*task)?;
        }
        Ok(())
    }

    fn prepare(
        &self,
        (name, records): Self::Task,
        pusher: RecordPusher<String>,
    ) -> Result<(), SourceError> {
        let handle = thread::spawn(move || {
            for i in 1..=records {
                if pusher.push(format!("{name}-{i}")).is_err() {
                    return; // closed
                }
            }
            if name == "failing" {
                pusher.fail(SourceError::new("truncated"));
            }
            if name == "fails-and-stops" {
                // `fail` ends the task: no `end_of_task` follows.
                pusher.fail(SourceError::new("broken"));
                return;
            }
            pusher.end_of_task();
        });
        self.pushers.lock().unwrap().push(handle);
        Ok(())
    }
}

/// Mirrors Pulsar's `BatchSourceExecutorTest.testPushLifeCycle` (and
/// `testPushOpenWithRightSource`): a push source's records, pushed from its own threads after a
/// trigger, are read in task order until close.
#[test]
fn push_life_cycle_records_pushed_from_other_threads_are_read_in_task_order() {
    let pushers = Arc::new(Mutex::new(Vec::new()));
    let source = Pushing {
        tasks: vec![("a", 3), ("empty", 0), ("failing", 1), ("b", 2)],
        pushers: Arc::clone(&pushers),
    };
    let triggerer = OnDemandTriggerer::new();
    let trigger = triggerer.handle();
    let executor = Arc::new(
        BatchSourceExecutor::builder(BatchPushAdapter::with_capacity(source, 2), triggerer).build(),
    );
    assert_eq!(trigger.trigger(), TriggerOutcome::Started);
    let read: Vec<String> = (0..4).map(|_| executor.read().unwrap()).collect();
    assert_eq!(read, ["a-1", "a-2", "a-3", "failing-1"]);
    match executor.read() {
        Err(ReadError::Read(error)) => assert_eq!(error.to_string(), "truncated"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(executor.read().unwrap(), "b-1");
    assert_eq!(executor.read().unwrap(), "b-2");

    // "b" has ended and no task is queued: this read waits, until the executor closes.
    let reader = {
        let executor = Arc::clone(&executor);
        thread::spawn(move || executor.read())
    };
    executor.close();
    assert!(matches!(reader.join().unwrap(), Err(ReadError::Closed)));
    let handles: Vec<_> = std::mem::take(&mut *pushers.lock().unwrap());
    assert_eq!(handles.len(), 4, "one pushing thread per prepared task");
    for handle in handles {
        handle.join().unwrap();
    }
}

/// A push task that ends with `fail` alone (the trait's docs: a task "ends with
/// `end_of_task` (or `fail`)"): the read after its records returns the failure, and the next
/// read moves on to the next task. (Audit of 2026-12-07: the task stayed prepared after the
/// failure, and that read waited forever for a record or end marker that never came.) An
/// `end_of_task` sent after a `fail` (the test above) does not end the next task early.
#[test]
fn a_push_task_that_fails_is_over_and_the_next_read_moves_on() {
    let pushers = Arc::new(Mutex::new(Vec::new()));
    let source = Pushing {
        tasks: vec![("fails-and-stops", 1), ("failing", 0), ("b", 2)],
        pushers: Arc::clone(&pushers),
    };
    let triggerer = OnDemandTriggerer::new();
    let trigger = triggerer.handle();
    let executor = Arc::new(
        BatchSourceExecutor::builder(BatchPushAdapter::with_capacity(source, 4), triggerer).build(),
    );
    assert_eq!(trigger.trigger(), TriggerOutcome::Started);
    let (reads, read) = mpsc::channel();
    let reader = {
        let executor = Arc::clone(&executor);
        thread::spawn(move || {
            for _ in 0..5 {
                let outcome = executor.read().map_err(|error| error.to_string());
                if reads.send(outcome).is_err() {
                    return;
                }
            }
        })
    };
    let next = || {
        read.recv_timeout(LONG)
            .expect("a read after a failed push task never returned")
    };
    assert_eq!(next(), Ok("fails-and-stops-1".to_owned()));
    assert_eq!(
        next(),
        Err("reading the current task failed: broken".to_owned())
    );
    assert_eq!(
        next(),
        Err("reading the current task failed: truncated".to_owned())
    );
    assert_eq!(
        next(),
        Ok("b-1".to_owned()),
        "the stale end marker was discarded"
    );
    assert_eq!(next(), Ok("b-2".to_owned()));
    reader.join().unwrap();
    executor.close();
    for handle in std::mem::take(&mut *pushers.lock().unwrap()) {
        handle.join().unwrap();
    }
}

/// Mirrors Pulsar's `BatchSourceExecutorTest.testDiscoveryPhaseError`: the failure reaches the
/// reader (here once, and a panic as well as an error), and a later discovery works again.
#[test]
fn a_discovery_failure_is_returned_once_by_the_next_read() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let round = AtomicUsize::new(0);
    let source = Scripted::new(&log, move |emitter| {
        match round.fetch_add(1, Ordering::SeqCst) {
            0 => Err(SourceError::new("discovery phase failed")),
            1 => panic!("discovery panicked"),
            _ => {
                emitter.emit(task("after", 1))?;
                Ok(())
            }
        }
    });
    let triggerer = OnDemandTriggerer::new();
    let trigger = triggerer.handle();
    let executor = BatchSourceExecutor::builder(source, triggerer).build();

    assert_eq!(trigger.trigger(), TriggerOutcome::Started);
    match executor.read() {
        Err(error @ ReadError::Discovery(_)) => {
            assert_eq!(
                error.to_string(),
                "discovery failed: discovery phase failed"
            )
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(executor.try_read().unwrap().is_none(), "returned once");

    // The failure is stored as discovery ends, so the next trigger starts a new one.
    assert_eq!(trigger.trigger(), TriggerOutcome::Started);
    match executor.read() {
        Err(ReadError::Discovery(error)) => {
            assert!(error.is_panic());
            assert_eq!(error.to_string(), "the source panicked: discovery panicked");
        }
        other => panic!("unexpected {other:?}"),
    }

    assert_eq!(trigger.trigger(), TriggerOutcome::Started);
    assert_eq!(executor.read().unwrap(), "after-1");
}

#[test]
fn a_failing_prepare_or_read_is_returned_and_reading_goes_on() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let source = Scripted::new(&log, |emitter| {
        emitter.emit(task("bad-prepare", 1))?;
        emitter.emit(task("panicking-prepare", 1))?;
        emitter.emit(task("bad-read", 2))?;
        emitter.emit(task("good", 1))?;
        Ok(())
    });
    let triggerer = OnDemandTriggerer::new();
    let trigger = triggerer.handle();
    let executor = BatchSourceExecutor::builder(source, triggerer).build();
    trigger.trigger();
    match executor.read() {
        Err(ReadError::Prepare(error)) => assert_eq!(error.to_string(), "cannot open"),
        other => panic!("unexpected {other:?}"),
    }
    match executor.read() {
        Err(ReadError::Prepare(error)) => assert!(error.is_panic()),
        other => panic!("unexpected {other:?}"),
    }
    // A failing read leaves the task prepared: the next read goes on with it.
    for _ in 0..2 {
        match executor.read() {
            Err(ReadError::Read(error)) => assert!(error.to_string().starts_with("bad-read-")),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(executor.read().unwrap(), "good-1");
}

#[test]
fn a_trigger_while_discovery_runs_is_dropped() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let (started_tx, started) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let source = Scripted::new(&log, move |emitter| {
        started_tx.send(()).unwrap();
        released.lock().unwrap().recv().unwrap();
        emitter.emit(task("slow", 1))?;
        Ok(())
    });
    let triggerer = OnDemandTriggerer::new();
    let trigger = triggerer.handle();
    let executor = BatchSourceExecutor::builder(source, triggerer).build();
    assert_eq!(trigger.trigger(), TriggerOutcome::Started);
    started.recv_timeout(LONG).unwrap();
    assert!(executor.is_discovering());
    assert_eq!(trigger.trigger(), TriggerOutcome::AlreadyRunning);
    release.send(()).unwrap();
    assert_eq!(executor.read().unwrap(), "slow-1");
    executor.close();
    assert_eq!(
        entries(&log, "discover on ").len(),
        1,
        "the dropped trigger ran nothing"
    );
}

/// Refuses its first thread (as an OS out of threads would), then starts them.
struct FailsFirst(std::sync::atomic::AtomicBool);

impl pulsar_common::executors::ThreadFactory for FailsFirst {
    fn new_thread(
        &self,
        body: Box<dyn FnOnce() + Send + 'static>,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        if !self.0.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Err(std::io::Error::other("no thread for now"));
        }
        std::thread::Builder::new().spawn(body)
    }
}

/// A trigger whose discovery thread could not start says so (not `Inactive`, which means
/// stopped or closed), and the next trigger starts discovery. (Audit of 2026-12-07, second
/// pass: it answered `Inactive`.)
#[test]
fn a_trigger_whose_thread_cannot_start_says_so_and_the_next_one_starts_discovery() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let source = Scripted::new(&log, |emitter| {
        emitter.emit(task("late", 1))?;
        Ok(())
    });
    let triggerer = OnDemandTriggerer::new();
    let trigger = triggerer.handle();
    let executor = BatchSourceExecutor::builder(source, triggerer)
        .thread_factory(FailsFirst(Default::default()))
        .build();
    assert_eq!(trigger.trigger(), TriggerOutcome::ThreadStartFailed);
    assert!(!executor.is_discovering());
    assert_eq!(trigger.trigger(), TriggerOutcome::Started);
    assert_eq!(executor.read().unwrap(), "late-1");
    executor.close();
}

#[test]
fn one_reader_at_a_time() {
    struct Blocking {
        inside: Mutex<mpsc::Sender<()>>,
        release: Mutex<mpsc::Receiver<()>>,
    }
    impl BatchSource for Blocking {
        type Task = ();
        type Record = &'static str;
        fn discover(&self, emitter: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> {
            emitter.emit(())?;
            Ok(())
        }
        fn prepare(&self, _: ()) -> Result<(), SourceError> {
            Ok(())
        }
        fn read_next(&self) -> Result<Option<&'static str>, SourceError> {
            self.inside.lock().unwrap().send(()).unwrap();
            self.release.lock().unwrap().recv().unwrap();
            Ok(Some("record"))
        }
    }
    let (inside_tx, inside) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let triggerer = OnDemandTriggerer::new();
    let trigger = triggerer.handle();
    let executor = Arc::new(
        BatchSourceExecutor::builder(
            Blocking {
                inside: Mutex::new(inside_tx),
                release: Mutex::new(release_rx),
            },
            triggerer,
        )
        .build(),
    );
    trigger.trigger();
    let reader = {
        let executor = Arc::clone(&executor);
        thread::spawn(move || executor.read())
    };
    inside.recv_timeout(LONG).unwrap();
    assert!(matches!(
        executor.try_read(),
        Err(ReadError::ConcurrentRead)
    ));
    assert!(matches!(executor.read(), Err(ReadError::ConcurrentRead)));
    release.send(()).unwrap();
    assert_eq!(reader.join().unwrap().unwrap(), "record");
}

#[test]
fn close_during_discovery_wakes_readers_refuses_later_emits_and_closes_the_source_after_discovery()
{
    let log = Arc::new(Mutex::new(Vec::new()));
    let (started_tx, started) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let discovery_log = Arc::clone(&log);
    let late_tasks = DropCounter::new();
    let late_token = Mutex::new(Some(late_tasks.token()));
    let source = Scripted::new(&log, move |emitter| {
        started_tx.send(()).unwrap();
        released.lock().unwrap().recv().unwrap();
        let late = Task {
            name: "late".to_owned(),
            records: 1,
            _token: late_token.lock().unwrap().take(),
        };
        let refused = emitter.emit(late).is_err();
        discovery_log
            .lock()
            .unwrap()
            .push(format!("late emit refused: {refused}"));
        Ok(())
    });
    let triggerer = OnDemandTriggerer::new();
    let trigger = triggerer.handle();
    let executor = Arc::new(BatchSourceExecutor::builder(source, triggerer).build());
    let threads = executor.threads();
    assert_eq!(trigger.trigger(), TriggerOutcome::Started);
    started.recv_timeout(LONG).unwrap();

    let reader = {
        let executor = Arc::clone(&executor);
        thread::spawn(move || executor.read())
    };
    let closer = {
        let executor = Arc::clone(&executor);
        thread::spawn(move || executor.close())
    };
    // The reader waking with `Closed` shows the close has begun; discovery is still running.
    assert!(matches!(reader.join().unwrap(), Err(ReadError::Closed)));
    assert_eq!(trigger.trigger(), TriggerOutcome::Inactive);
    release.send(()).unwrap();
    closer.join().unwrap();

    let log = log.lock().unwrap().clone();
    assert_eq!(
        log[1..],
        ["late emit refused: true".to_owned(), "close".to_owned()],
        "the source is closed after the discovery finished"
    );
    assert_eq!(
        late_tasks.drops(),
        1,
        "the refused task was handed back and dropped once"
    );
    assert!(threads.await_exit(LONG));
}

#[test]
fn close_drops_the_queued_tasks_exactly_once() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let drops = DropCounter::new();
    let (emitted_tx, emitted) = mpsc::channel();
    let tokens = Mutex::new((0..3).map(|_| drops.token()).collect::<Vec<_>>());
    let source = Scripted::new(&log, move |emitter| {
        for token in tokens.lock().unwrap().drain(..) {
            emitter.emit(Task {
                name: "queued".to_owned(),
                records: 1,
                _token: Some(token),
            })?;
        }
        emitted_tx.send(()).unwrap();
        Ok(())
    });
    let triggerer = OnDemandTriggerer::new();
    let trigger = triggerer.handle();
    let executor = BatchSourceExecutor::builder(source, triggerer).build();
    trigger.trigger();
    emitted.recv_timeout(LONG).unwrap();
    assert_eq!(executor.queued_tasks(), 3);
    executor.close();
    assert_eq!(executor.queued_tasks(), 0);
    assert_eq!(drops.drops(), 3);
    drop(executor);
    assert_eq!(drops.drops(), 3);
}

#[test]
fn a_periodic_triggerer_on_a_scheduled_executor_runs_discovery_rounds() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let round = AtomicUsize::new(0);
    let source = Scripted::new(&log, move |emitter| {
        let n = round.fetch_add(1, Ordering::SeqCst) + 1;
        emitter.emit(task(&format!("round{n}"), 1))?;
        Ok(())
    });
    let scheduler = ScheduledExecutor::new(NamedThreadFactory::new("test-scheduler"));
    let triggerer = PeriodicTriggerer::new(scheduler.clone(), Duration::from_millis(1));
    let executor = BatchSourceExecutor::builder(source, triggerer).build();
    let records: Vec<String> = (0..3).map(|_| executor.read().unwrap()).collect();
    assert_eq!(records, ["round1-1", "round2-1", "round3-1"]);
    let threads = executor.threads();
    executor.close(); // stops the timer; the shared scheduler stays up
    assert!(!scheduler.is_shutdown());
    assert_eq!(
        scheduler.armed_timers(),
        0,
        "the periodic timer was cancelled"
    );
    assert!(entries(&log, "discover on ")
        .iter()
        .all(|entry| entry.starts_with("discover on batch-source-discovery-")));
    scheduler.shutdown();
    assert!(scheduler.await_termination(LONG));
    assert!(threads.await_exit(LONG));
}
