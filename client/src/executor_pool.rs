//! `ExecutorPool`: what both executor providers share — an [`ExecutorGroup`] plus the client's
//! rules: a clear error for zero threads, Java's index for key bytes, Pulsar's 10 s shutdown.

use crate::error::InvalidThreadCount;
use crate::executor_index::index_for_bytes;
use pulsar_common::executors::{ExecutorGroup, GroupMember, IndexedThreadFactory, Task};
use std::fmt;
use std::hash::Hash;
use std::time::Duration;

/// How long `shutdown_now` waits for the executors to terminate (Pulsar's 10 s).
pub(crate) const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// N executors of one kind in an [`ExecutorGroup`], made once, never reconfigured.
pub(crate) struct ExecutorPool<E> {
    /// Executor `i` runs on thread `{pool_name}-{pool_id}-{i + 1}`; no thread starts before
    /// an executor's first task.
    group: ExecutorGroup<E>,
}

impl<E: GroupMember> ExecutorPool<E> {
    /// Makes `num_threads` executors with `make`, each given the thread factory that names its
    /// thread. No thread starts here.
    pub(crate) fn new(
        num_threads: usize,
        pool_name: String,
        make: impl FnMut(IndexedThreadFactory) -> E,
    ) -> Result<Self, InvalidThreadCount> {
        if num_threads == 0 {
            return Err(InvalidThreadCount::new(&pool_name));
        }
        Ok(Self {
            group: ExecutorGroup::from_fn(pool_name, num_threads, make),
        })
    }

    /// Round robin over the executors in index order.
    pub(crate) fn get_executor(&self) -> &E {
        self.group.next()
    }

    pub(crate) fn get_executor_for_key<K: Hash + ?Sized>(&self, key: &K) -> &E {
        self.group.select_for_key(key)
    }

    /// Java's index for the bytes (Murmur3, masked to 31 bits, modulo N).
    pub(crate) fn get_executor_for_bytes(&self, key: &[u8]) -> &E {
        &self.group.executors()[index_for_bytes(key, self.group.len())]
    }

    pub(crate) fn len(&self) -> usize {
        self.group.len()
    }

    pub(crate) fn executors(&self) -> &[E] {
        self.group.executors()
    }

    pub(crate) fn pool_name(&self) -> &str {
        self.group.pool_name()
    }

    /// Stops every executor first (so none keeps running while another is awaited), then waits
    /// up to `timeout` for all of them, warning with the thread's name for each that is still
    /// running a task. Returns the tasks that never started, executor by executor.
    pub(crate) fn shutdown_now(&self, timeout: Duration) -> Vec<Task> {
        self.group.shutdown_now_within(timeout).0
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        self.group.is_shutdown()
    }
}

impl<E: GroupMember> fmt::Debug for ExecutorPool<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecutorPool")
            .field("group", &self.group)
            .finish()
    }
}
