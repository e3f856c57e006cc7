//! Test fixtures shared by the integration tests: drop counters, latches, thread counts.
#![allow(dead_code, unused_imports)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub use pulsar_testkit::{
    block_worker_with, capture_warnings, thread_count, wait_for_thread_count_at_most, DropCounter,
    Latch, PanickingToken, LONG,
};

use pulsar_common::executors::{NamedThreadFactory, SingleThreadExecutor, ThreadFactory};
use std::any::Any;
use std::thread::JoinHandle;

/// Counts the worker bodies that returned, for the factories below.
#[derive(Clone, Default)]
pub struct WorkerExits(Arc<(Mutex<usize>, Condvar)>);

impl WorkerExits {
    /// `body`, counted here when it returns.
    pub fn counting(
        &self,
        body: Box<dyn FnOnce() + Send + 'static>,
    ) -> Box<dyn FnOnce() + Send + 'static> {
        let exits = self.clone();
        Box::new(move || {
            body();
            let (count, cv) = &*exits.0;
            *count.lock().unwrap() += 1;
            cv.notify_all();
        })
    }

    /// Waits until `n` bodies have returned; panics after `timeout`.
    pub fn wait(&self, n: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let (count, cv) = &*self.0;
        let mut finished = count.lock().unwrap();
        while *finished < n {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "only {} of {n} workers exited", *finished);
            finished = cv.wait_timeout(finished, left).unwrap().0;
        }
    }
}

/// A thread factory that counts the threads it starts, the worker bodies that returned, and
/// the task panics it hears about.
pub struct CountingFactory {
    inner: NamedThreadFactory,
    threads_started: AtomicUsize,
    panics: AtomicUsize,
    pub panic_messages: Mutex<Vec<String>>,
    finished: WorkerExits,
}

impl CountingFactory {
    pub fn new(pool_name: &str) -> Arc<Self> {
        Arc::new(Self {
            inner: NamedThreadFactory::new(pool_name),
            threads_started: AtomicUsize::new(0),
            panics: AtomicUsize::new(0),
            panic_messages: Mutex::new(Vec::new()),
            finished: WorkerExits::default(),
        })
    }

    pub fn threads_started(&self) -> usize {
        self.threads_started.load(Ordering::SeqCst)
    }

    pub fn panics(&self) -> usize {
        self.panics.load(Ordering::SeqCst)
    }

    /// Waits until `n` worker bodies have returned (the worker loop exited); panics after
    /// `timeout`.
    pub fn wait_finished(&self, n: usize, timeout: Duration) {
        self.finished.wait(n, timeout);
    }
}

impl ThreadFactory for CountingFactory {
    fn new_thread(
        &self,
        body: Box<dyn FnOnce() + Send + 'static>,
    ) -> std::io::Result<JoinHandle<()>> {
        self.threads_started.fetch_add(1, Ordering::SeqCst);
        self.inner.new_thread(self.finished.counting(body))
    }

    fn on_task_panic(&self, payload: Box<dyn Any + Send>) {
        self.panics.fetch_add(1, Ordering::SeqCst);
        let message = pulsar_common::executors::panic_message(payload.as_ref()).to_owned();
        self.panic_messages.lock().unwrap().push(message);
    }
}

/// A thread factory that can never start a thread (the thread-start failure path).
pub struct NoThreads;

impl ThreadFactory for NoThreads {
    fn new_thread(
        &self,
        _body: Box<dyn FnOnce() + Send + 'static>,
    ) -> std::io::Result<JoinHandle<()>> {
        Err(std::io::Error::other("thread limit reached"))
    }
}

/// What one call of a [`ScriptedFactory`]'s `new_thread` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Starts the thread.
    Work,
    /// Panics without starting one.
    Panic,
    /// Opens `entered`, waits for `gate` to open, then panics: lets a test act while a thread
    /// start is in progress (another producer queues a task then).
    PanicAfterGate,
    /// As `PanicAfterGate`, with `entered_again` and `gate_again`: a second start held open.
    PanicAfterSecondGate,
}

/// A thread factory that follows a script, one [`Start`] per `new_thread` call (the last one
/// repeats), and counts the task panics it hears about; its `on_task_panic` hook can itself
/// panic (with a [`PanickingToken`] payload, whose drop panics too).
pub struct ScriptedFactory {
    inner: NamedThreadFactory,
    script: Vec<Start>,
    calls: AtomicUsize,
    task_panics: AtomicUsize,
    /// Opened by a `PanicAfterGate` step when it is entered.
    pub entered: Arc<Latch>,
    /// What a `PanicAfterGate` step waits for.
    pub gate: Arc<Latch>,
    /// Opened by a `PanicAfterSecondGate` step when it is entered.
    pub entered_again: Arc<Latch>,
    /// What a `PanicAfterSecondGate` step waits for.
    pub gate_again: Arc<Latch>,
    /// When set, the hook panics with a token of this counter as payload.
    hook_panics_with: Option<DropCounter>,
    finished: WorkerExits,
}

/// The message a [`ScriptedFactory`] panics with.
pub const FACTORY_PANIC: &str = "scripted factory panics";

impl ScriptedFactory {
    pub fn new(script: &[Start]) -> Arc<Self> {
        Self::build(script, None)
    }

    /// A factory whose threads always start and whose panic hook panics with a token of
    /// `payload_drops` (a payload whose own drop panics).
    pub fn with_panicking_hook(payload_drops: &DropCounter) -> Arc<Self> {
        Self::build(&[Start::Work], Some(payload_drops.clone()))
    }

    fn build(script: &[Start], hook_panics_with: Option<DropCounter>) -> Arc<Self> {
        assert!(!script.is_empty());
        Arc::new(Self {
            inner: NamedThreadFactory::new("scripted"),
            script: script.to_vec(),
            calls: AtomicUsize::new(0),
            task_panics: AtomicUsize::new(0),
            entered: Latch::new(1),
            gate: Latch::new(1),
            entered_again: Latch::new(1),
            gate_again: Latch::new(1),
            hook_panics_with,
            finished: WorkerExits::default(),
        })
    }

    /// `new_thread` calls so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// `on_task_panic` calls so far.
    pub fn task_panics(&self) -> usize {
        self.task_panics.load(Ordering::SeqCst)
    }

    /// Waits until `n` worker bodies started by this factory have returned.
    pub fn wait_finished(&self, n: usize, timeout: Duration) {
        self.finished.wait(n, timeout);
    }
}

impl ThreadFactory for ScriptedFactory {
    fn new_thread(
        &self,
        body: Box<dyn FnOnce() + Send + 'static>,
    ) -> std::io::Result<JoinHandle<()>> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        match self.script[call.min(self.script.len() - 1)] {
            Start::Work => self.inner.new_thread(self.finished.counting(body)),
            Start::Panic => panic!("{FACTORY_PANIC}"),
            Start::PanicAfterGate => {
                self.entered.count_down();
                self.gate.wait(LONG);
                panic!("{FACTORY_PANIC}")
            }
            Start::PanicAfterSecondGate => {
                self.entered_again.count_down();
                self.gate_again.wait(LONG);
                panic!("{FACTORY_PANIC}")
            }
        }
    }

    fn on_task_panic(&self, payload: Box<dyn Any + Send>) {
        self.task_panics.fetch_add(1, Ordering::SeqCst);
        drop(payload);
        if let Some(counter) = &self.hook_panics_with {
            std::panic::panic_any(counter.panicking_token());
        }
    }
}

/// A task of a [`BatchRace`]: counts its run, carries a drop token.
pub type CountingTask = Box<dyn FnOnce() + Send>;

/// Batches offered from `submitters` threads at once, `batches` batches of `per_batch`
/// counting tasks each, while the main thread calls `shutdown_now`; `rounds` fresh executors.
pub struct BatchRace {
    pub rounds: usize,
    pub submitters: usize,
    pub batches: usize,
    pub per_batch: usize,
}

impl BatchRace {
    /// Runs the race through `execute_all` (which returns how many tasks it handed back on
    /// refusal) and `shutdown_now` (which returns how many tasks it took back). Asserts, per
    /// round: every task ran, was returned or was refused, exactly one of them; refusals are
    /// whole batches; every task's captures were dropped exactly once.
    pub fn run<E: Sync>(
        self,
        new_executor: impl Fn() -> E,
        execute_all: impl Fn(&E, Vec<CountingTask>) -> Result<(), usize> + Sync,
        shutdown_now: impl Fn(&E) -> usize,
        await_termination: impl Fn(&E) -> bool,
    ) {
        let BatchRace {
            rounds,
            submitters,
            batches,
            per_batch,
        } = self;
        let total = submitters * batches * per_batch;
        for round in 0..rounds {
            let executor = new_executor();
            let ran = Arc::new(AtomicUsize::new(0));
            let drops = DropCounter::new();
            let start = std::sync::Barrier::new(submitters + 1);
            let (returned, refused) = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..submitters)
                    .map(|_| {
                        scope.spawn(|| {
                            start.wait();
                            let mut refused = 0;
                            for _ in 0..batches {
                                let batch = (0..per_batch)
                                    .map(|_| {
                                        let (token, ran) = (drops.token(), Arc::clone(&ran));
                                        Box::new(move || {
                                            let _token = token;
                                            ran.fetch_add(1, Ordering::SeqCst);
                                        }) as CountingTask
                                    })
                                    .collect();
                                if let Err(handed_back) = execute_all(&executor, batch) {
                                    assert_eq!(handed_back, per_batch, "a batch is refused whole");
                                    refused += handed_back;
                                }
                            }
                            refused
                        })
                    })
                    .collect();
                start.wait();
                if round % 2 == 1 {
                    std::thread::yield_now();
                }
                let returned = shutdown_now(&executor);
                let refused: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
                (returned, refused)
            });
            assert!(await_termination(&executor), "round {round}");
            let ran = ran.load(Ordering::SeqCst);
            assert_eq!(
                ran + returned + refused,
                total,
                "round {round}: ran {ran} + returned {returned} + refused {refused}"
            );
            assert_eq!(drops.drops(), total, "round {round}: drops");
        }
    }
}

/// The proptest suites' configuration: 256 cases natively; under Miri 8 cases and no failure
/// file (Miri's isolation has no working directory to write one in).
pub fn proptest_config() -> proptest::test_runner::Config {
    let native = proptest::test_runner::Config::default();
    if cfg!(miri) {
        proptest::test_runner::Config {
            cases: 8,
            failure_persistence: None,
            ..native
        }
    } else {
        proptest::test_runner::Config {
            cases: 256,
            ..native
        }
    }
}

/// Occupies a single-thread executor's worker until the returned sender is used (or dropped).
pub fn block_worker(executor: &SingleThreadExecutor) -> std::sync::mpsc::Sender<()> {
    block_worker_with(|task| executor.execute(task).unwrap())
}
