//! `ComponentExecutor`: a component's own single-thread executor, the threads it starts, and
//! its close.

use crate::component::threads::ComponentThreads;
use pulsar_common::executors::{
    NamedThreadFactory, PulsarExecutors, SingleThreadExecutor, ThreadFactory,
};
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

/// How long closing a component waits for the task its executor is running (a listener, a
/// callback, a refresh, a connect attempt) before it warns and goes on.
pub(crate) const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

/// A component's single-thread executor and the record of the threads it starts.
///
/// Made with auto shutdown off (Pulsar's `PulsarExecutors` with `autoShutdownOnDrop = false`):
/// the component shuts it down in its own `close`, and a component dropped without closing is
/// reported by the executor's own "dropped without shutdown" warning. The thread starts on the
/// first task. It dereferences to the [`SingleThreadExecutor`], so the component queues work
/// with `execute` / `submit` as before.
pub(crate) struct ComponentExecutor {
    executor: SingleThreadExecutor,
    threads: ComponentThreads,
}

impl ComponentExecutor {
    /// An executor whose thread is named `{pool_name}-{pool_id}-1`.
    pub(crate) fn new(pool_name: &str) -> Self {
        Self::recorded_in(pool_name, ComponentThreads::new())
    }

    /// As [`new`](Self::new), with the thread recorded in `threads`, which already holds the
    /// component's other threads (the ZooKeeper session's I/O thread).
    pub(crate) fn recorded_in(pool_name: &str, threads: ComponentThreads) -> Self {
        Self::with_threads(Arc::new(NamedThreadFactory::new(pool_name)), threads)
    }

    /// An executor whose thread comes from `factory` (a builder's user-given one), or, when
    /// there is none, is named `{pool_name}-{pool_id}-1`.
    pub(crate) fn with_factory_or_named(
        factory: Option<Arc<dyn ThreadFactory>>,
        pool_name: &str,
    ) -> Self {
        let factory = factory.unwrap_or_else(|| Arc::new(NamedThreadFactory::new(pool_name)));
        Self::with_threads(factory, ComponentThreads::new())
    }

    /// An executor whose thread comes from `factory` and is recorded in `threads`.
    fn with_threads(factory: Arc<dyn ThreadFactory>, threads: ComponentThreads) -> Self {
        let executor = PulsarExecutors::new_single_thread_executor_with_auto_shutdown(
            threads.tracking(factory),
            false,
        );
        Self { executor, threads }
    }

    /// The threads this executor (and whatever shares its record) started.
    pub(crate) fn threads(&self) -> ComponentThreads {
        self.threads.clone()
    }

    /// Stops the executor at once: queued tasks are dropped unrun (`shutdown_now`), then waits
    /// up to [`CLOSE_TIMEOUT`] for the task running now; `running` names it for the warning
    /// (`"a leadership callback"`). Called from the executor's own thread it returns at once.
    /// `true` if the executor terminated.
    pub(crate) fn close_now(&self, running: &str) -> bool {
        drop(self.executor.shutdown_now());
        self.await_close(CLOSE_TIMEOUT, running)
    }

    /// Stops the executor after the tasks already queued (`shutdown`), waiting up to `timeout`
    /// for them; `running` names what may still run, for the warning. `true` if the executor
    /// terminated.
    pub(crate) fn close_after_queued(&self, timeout: Duration, running: &str) -> bool {
        self.executor.shutdown();
        self.await_close(timeout, running)
    }

    /// The one warning path: waits up to `timeout` and says so when the executor outlives it.
    fn await_close(&self, timeout: Duration, running: &str) -> bool {
        let terminated = self.executor.await_termination(timeout);
        // On the executor's own thread (a close from one of its tasks) nothing was waited for:
        // the executor terminates when that task returns, which is no slow task to warn about.
        if !terminated && !self.executor.is_current_worker() {
            tracing::warn!(
                executor = %self.executor.name(),
                ?timeout,
                "{running} is still running {timeout:?} after close"
            );
        }
        terminated
    }
}

impl Deref for ComponentExecutor {
    type Target = SingleThreadExecutor;

    fn deref(&self) -> &SingleThreadExecutor {
        &self.executor
    }
}

impl fmt::Debug for ComponentExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.executor, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_executor_thread_is_recorded_and_gone_after_close() {
        let executor = ComponentExecutor::new("kit-test");
        executor.submit(|| ()).unwrap().join().unwrap();
        let threads = executor.threads();
        let started = threads.started();
        assert_eq!(started.len(), 1);
        assert!(started[0].name.starts_with("kit-test-"));
        assert_eq!(threads.live_count(), 1);

        assert!(executor.close_now("a test task"));
        assert!(threads.await_exit(CLOSE_TIMEOUT));
        assert_eq!(threads.live_count(), 0);
    }

    #[test]
    fn close_after_queued_runs_the_queued_tasks_first() {
        let executor = ComponentExecutor::new("kit-queued");
        let (sender, receiver) = std::sync::mpsc::channel();
        for n in 0..3 {
            let sender = sender.clone();
            executor.execute(move || sender.send(n).unwrap()).unwrap();
        }
        assert!(executor.close_after_queued(CLOSE_TIMEOUT, "a test task"));
        assert_eq!(receiver.try_iter().collect::<Vec<_>>(), vec![0, 1, 2]);
    }
}
