//! Test fixtures shared by the integration tests: drop counters, latches, thread counts.
#![allow(dead_code, unused_imports)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub use pulsar_testkit::{
    capture_warnings, thread_count, wait_for_thread_count_at_most, DropCounter, Latch, LONG,
};

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

/// Occupies an executor's worker until the returned sender is used (or dropped): `execute`
/// queues the blocking task (`|task| executor.execute(task).unwrap()`); this returns once the
/// worker runs it.
pub fn block_worker_with(
    execute: impl FnOnce(Box<dyn FnOnce() + Send>),
) -> std::sync::mpsc::Sender<()> {
    let (release, blocked) = std::sync::mpsc::channel::<()>();
    let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
    execute(Box::new(move || {
        started_tx.send(()).unwrap();
        let _ = blocked.recv();
    }));
    started_rx.recv_timeout(LONG).expect("worker started");
    release
}
