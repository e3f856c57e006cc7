//! Test fixtures shared by the integration tests: drop counters, latches, thread counts.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Counts how many times values carrying it were dropped.
#[derive(Clone, Default)]
pub struct DropCounter(Arc<AtomicUsize>);

impl DropCounter {
    pub fn new() -> Self {
        Self::default()
    }

    /// A value whose drop this counter counts.
    pub fn token(&self) -> Token {
        Token(Arc::clone(&self.0))
    }

    pub fn drops(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A value counted by its `DropCounter` when dropped.
#[derive(Debug)]
pub struct Token(Arc<AtomicUsize>);

impl Drop for Token {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A count-down latch: `wait` returns once `count_down` was called `n` times.
pub struct Latch {
    remaining: Mutex<usize>,
    zero: Condvar,
}

impl Latch {
    pub fn new(n: usize) -> Arc<Self> {
        Arc::new(Self {
            remaining: Mutex::new(n),
            zero: Condvar::new(),
        })
    }

    pub fn count_down(&self) {
        let mut remaining = self.remaining.lock().unwrap();
        *remaining -= 1;
        if *remaining == 0 {
            self.zero.notify_all();
        }
    }

    /// Waits for zero; panics after `timeout` so that a bug fails the test instead of hanging.
    pub fn wait(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut remaining = self.remaining.lock().unwrap();
        while *remaining > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "latch still at {} after {timeout:?}",
                *remaining
            );
            remaining = self.zero.wait_timeout(remaining, left).unwrap().0;
        }
    }
}

/// Threads of this process now (Linux: entries of /proc/self/task).
pub fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .count()
}

/// Waits (yielding, bounded) until the thread count drops to at most `expected`; returns the
/// last count seen. Exited workers leave the kernel's task list shortly after they signal
/// termination, so tests poll this condition instead of sleeping.
pub fn wait_for_thread_count_at_most(expected: usize, timeout: Duration) -> usize {
    let deadline = Instant::now() + timeout;
    loop {
        let now = thread_count();
        if now <= expected || Instant::now() >= deadline {
            return now;
        }
        std::thread::yield_now();
    }
}

pub const LONG: Duration = Duration::from_secs(30);

use pulsar_common::executors::{NamedThreadFactory, ThreadFactory};
use std::any::Any;
use std::thread::JoinHandle;

/// A thread factory that counts the threads it starts, the worker bodies that returned, and
/// the task panics it hears about.
pub struct CountingFactory {
    inner: NamedThreadFactory,
    threads_started: AtomicUsize,
    panics: AtomicUsize,
    pub panic_messages: Mutex<Vec<String>>,
    finished: Arc<(Mutex<usize>, Condvar)>,
}

impl CountingFactory {
    pub fn new(pool_name: &str) -> Arc<Self> {
        Arc::new(Self {
            inner: NamedThreadFactory::new(pool_name),
            threads_started: AtomicUsize::new(0),
            panics: AtomicUsize::new(0),
            panic_messages: Mutex::new(Vec::new()),
            finished: Arc::new((Mutex::new(0), Condvar::new())),
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
        let deadline = Instant::now() + timeout;
        let (count, cv) = &*self.finished;
        let mut finished = count.lock().unwrap();
        while *finished < n {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "only {} of {n} workers exited", *finished);
            finished = cv.wait_timeout(finished, left).unwrap().0;
        }
    }
}

impl ThreadFactory for CountingFactory {
    fn new_thread(
        &self,
        body: Box<dyn FnOnce() + Send + 'static>,
    ) -> std::io::Result<JoinHandle<()>> {
        self.threads_started.fetch_add(1, Ordering::SeqCst);
        let finished = Arc::clone(&self.finished);
        self.inner.new_thread(Box::new(move || {
            body();
            let (count, cv) = &*finished;
            *count.lock().unwrap() += 1;
            cv.notify_all();
        }))
    }

    fn on_task_panic(&self, payload: Box<dyn Any + Send>) {
        self.panics.fetch_add(1, Ordering::SeqCst);
        let message = pulsar_common::executors::panic_message(payload.as_ref()).to_owned();
        self.panic_messages.lock().unwrap().push(message);
    }
}

/// Collects the WARN and ERROR events emitted on the current thread while `f` runs, as
/// `field=value` lines.
pub fn capture_warnings<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    use std::fmt::Write as _;
    use tracing::field::{Field, Visit};
    use tracing::{span, Event, Level, Metadata, Subscriber};

    struct Capture(Arc<Mutex<Vec<String>>>);
    struct Fields(String);
    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            let _ = write!(self.0, "{}={:?} ", field.name(), value);
        }
    }
    impl Subscriber for Capture {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
            span::Id::from_u64(1)
        }
        fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
        fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
        fn event(&self, event: &Event<'_>) {
            if *event.metadata().level() <= Level::WARN {
                let mut fields = Fields(String::new());
                event.record(&mut fields);
                self.0.lock().unwrap().push(fields.0);
            }
        }
        fn enter(&self, _: &span::Id) {}
        fn exit(&self, _: &span::Id) {}
    }

    let events = Arc::new(Mutex::new(Vec::new()));
    let result = tracing::subscriber::with_default(Capture(Arc::clone(&events)), f);
    let events = events.lock().unwrap().clone();
    (result, events)
}
