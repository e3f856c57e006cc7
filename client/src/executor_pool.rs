//! `ExecutorPool`: what both executor providers share — N executors, the index math, shutdown.

use crate::error::InvalidThreadCount;
use crate::executor_index::{index_for_bytes, index_for_key, index_for_round};
use crate::provider_thread_factory::ProviderThreadFactory;
use pulsar_common::executors::{NamedThreadFactory, ScheduledExecutor, SingleThreadExecutor, Task};
use std::fmt;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long `shutdown_now` waits for each executor to terminate (Pulsar's 10 s).
pub(crate) const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// An executor a provider can hold: it can be stopped and awaited.
pub(crate) trait PoolMember: Send + Sync + 'static {
    fn shutdown_now(&self) -> Vec<Task>;
    fn await_termination(&self, timeout: Duration) -> bool;
    fn name(&self) -> String;
}

impl PoolMember for SingleThreadExecutor {
    fn shutdown_now(&self) -> Vec<Task> {
        SingleThreadExecutor::shutdown_now(self)
    }
    fn await_termination(&self, timeout: Duration) -> bool {
        SingleThreadExecutor::await_termination(self, timeout)
    }
    fn name(&self) -> String {
        SingleThreadExecutor::name(self)
    }
}

impl PoolMember for ScheduledExecutor {
    fn shutdown_now(&self) -> Vec<Task> {
        ScheduledExecutor::shutdown_now(self)
    }
    fn await_termination(&self, timeout: Duration) -> bool {
        ScheduledExecutor::await_termination(self, timeout)
    }
    fn name(&self) -> String {
        ScheduledExecutor::name(self)
    }
}

/// N executors of one kind, made once, never reconfigured.
pub(crate) struct ExecutorPool<E> {
    /// The executors, in index order; executor `i` runs on thread `{pool_name}-{pool_id}-{i+1}`.
    executors: Box<[E]>,
    pool_name: String,
    /// Calls of `get_executor` so far (round robin); wraps like Java's `int`.
    round_robin: AtomicUsize,
    /// Set by `shutdown_now` before it stops the executors.
    is_shutdown: AtomicBool,
}

impl<E: PoolMember> ExecutorPool<E> {
    /// Makes `num_threads` executors with `make`, each given the thread factory that names its
    /// thread. No thread starts here.
    pub(crate) fn new(
        num_threads: usize,
        pool_name: String,
        mut make: impl FnMut(ProviderThreadFactory) -> E,
    ) -> Result<Self, InvalidThreadCount> {
        if num_threads == 0 {
            return Err(InvalidThreadCount::new(&pool_name));
        }
        let ids = Arc::new(NamedThreadFactory::new(pool_name.clone()));
        let executors = (1..=num_threads)
            .map(|n| make(ProviderThreadFactory::new(Arc::clone(&ids), n)))
            .collect();
        Ok(Self {
            executors,
            pool_name,
            round_robin: AtomicUsize::new(0),
            is_shutdown: AtomicBool::new(false),
        })
    }

    pub(crate) fn get_executor(&self) -> &E {
        let counter = self.round_robin.fetch_add(1, Ordering::Relaxed);
        &self.executors[index_for_round(counter, self.executors.len())]
    }

    pub(crate) fn get_executor_for_key<K: Hash + ?Sized>(&self, key: &K) -> &E {
        &self.executors[index_for_key(key, self.executors.len())]
    }

    pub(crate) fn get_executor_for_bytes(&self, key: &[u8]) -> &E {
        &self.executors[index_for_bytes(key, self.executors.len())]
    }

    pub(crate) fn len(&self) -> usize {
        self.executors.len()
    }

    pub(crate) fn executors(&self) -> &[E] {
        &self.executors
    }

    pub(crate) fn pool_name(&self) -> &str {
        &self.pool_name
    }

    /// Stops every executor first (so none keeps running while another is awaited), then waits
    /// up to `timeout` for each in turn, warning with the thread's name for each that is still
    /// running a task. Returns the tasks that never started, executor by executor.
    pub(crate) fn shutdown_now(&self, timeout: Duration) -> Vec<Task> {
        self.is_shutdown.store(true, Ordering::Release);
        let mut unstarted = Vec::new();
        for executor in self.executors.iter() {
            unstarted.extend(executor.shutdown_now());
        }
        for executor in self.executors.iter() {
            if !executor.await_termination(timeout) {
                tracing::warn!(
                    pool = %self.pool_name,
                    thread = %executor.name(),
                    ?timeout,
                    "executor did not terminate in time: its thread is still running a task"
                );
            }
        }
        unstarted
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        self.is_shutdown.load(Ordering::Acquire)
    }
}

impl<E> fmt::Debug for ExecutorPool<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecutorPool")
            .field("pool_name", &self.pool_name)
            .field("threads", &self.executors.len())
            .field("is_shutdown", &self.is_shutdown.load(Ordering::Acquire))
            .finish()
    }
}
