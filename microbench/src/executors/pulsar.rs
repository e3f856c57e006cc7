//! `pulsar`: ours, `PulsarExecutors::new_single_thread_executor` with its default settings
//! (64 initial slots, idle trim after 1 s), on a thread factory that also reports when the
//! worker thread has exited so that shutdown can wait for it.

use super::{Executor, Submit};
use crate::latch::CountdownLatch;
use pulsar_common::executors::{NamedThreadFactory, PulsarExecutors, SingleThreadExecutor};
use pulsar_common::executors::{ThreadFactory, DEFAULT_POOL_NAME};
use std::fmt;
use std::io;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Our single-thread executor, started (its lazily created worker is up).
pub struct PulsarExecutor {
    executor: SingleThreadExecutor,
    exited: Arc<ExitSignal>,
}

/// Submits to a [`PulsarExecutor`]: a clone of the `SingleThreadExecutor`.
#[derive(Clone, Debug)]
pub struct PulsarHandle(SingleThreadExecutor);

/// Set once the worker thread's body has returned (the executor's core released).
#[derive(Default)]
struct ExitSignal {
    exited: Mutex<bool>,
    changed: Condvar,
}

impl ExitSignal {
    fn set(&self) {
        *self.exited.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.changed.notify_all();
    }

    fn wait(&self, timeout: Duration) -> bool {
        let guard = self.exited.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = self
            .changed
            .wait_timeout_while(guard, timeout, |exited| !*exited)
            .unwrap_or_else(|e| e.into_inner());
        *guard
    }
}

/// The default `NamedThreadFactory`, plus the exit signal after the worker's body.
struct SignallingFactory {
    inner: NamedThreadFactory,
    exited: Arc<ExitSignal>,
}

impl ThreadFactory for SignallingFactory {
    fn new_thread(&self, body: Box<dyn FnOnce() + Send + 'static>) -> io::Result<JoinHandle<()>> {
        let exited = Arc::clone(&self.exited);
        self.inner.new_thread(Box::new(move || {
            body();
            exited.set();
        }))
    }
}

impl PulsarExecutor {
    /// The executor itself, for settings only ours has.
    pub fn executor(&self) -> &SingleThreadExecutor {
        &self.executor
    }
}

impl Executor for PulsarExecutor {
    const NAME: &'static str = "pulsar";
    type Handle = PulsarHandle;

    fn start() -> Self {
        let exited = Arc::new(ExitSignal::default());
        let executor = PulsarExecutors::new_single_thread_executor_with(SignallingFactory {
            inner: NamedThreadFactory::new(DEFAULT_POOL_NAME),
            exited: Arc::clone(&exited),
        });
        // The worker starts lazily: start it now, as the peers' workers are.
        let ran = Arc::new(CountdownLatch::new(1));
        let latch = Arc::clone(&ran);
        executor
            .execute(move || latch.count_down())
            .expect("a new executor accepts tasks");
        assert!(
            ran.wait_timeout(Duration::from_secs(10)),
            "the pulsar worker did not start"
        );
        Self { executor, exited }
    }

    fn handle(&self) -> PulsarHandle {
        PulsarHandle(self.executor.clone())
    }

    fn queue_capacity(&self) -> Option<usize> {
        Some(self.executor.queue_capacity())
    }

    fn shutdown(self) {
        self.executor.shutdown();
        drop(self.executor);
        assert!(
            self.exited.wait(Duration::from_secs(10)),
            "the pulsar worker did not exit within 10 s of shutdown"
        );
    }
}

impl Submit for PulsarHandle {
    #[inline]
    fn execute<F: FnOnce() + Send + 'static>(&self, task: F) {
        if self.0.execute(task).is_err() {
            panic!("the pulsar executor rejected a task");
        }
    }
}

impl fmt::Debug for PulsarExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PulsarExecutor")
            .field("executor", &self.executor)
            .finish_non_exhaustive()
    }
}
