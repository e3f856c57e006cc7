//! `ScheduledExecutorProvider`: N scheduled executors, for delayed and periodic client work.

use crate::error::InvalidThreadCount;
use crate::executor_pool::{ExecutorPool, SHUTDOWN_TIMEOUT};
use pulsar_common::executors::{ScheduledExecutor, Task};
use std::fmt;
use std::hash::Hash;
use std::time::Duration;

/// N [`ScheduledExecutor`]s — Pulsar's `ScheduledExecutorProvider` (apache/pulsar#16236): the
/// home of a client's delayed and periodic work (ack timeouts, retries, chunk expiry), kept
/// apart from the internal and listener pools so that plain hand-offs never pay for a delay
/// heap.
///
/// Same shape as [`ExecutorProvider`](crate::ExecutorProvider): lazy threads named
/// `{pool_name}-{pool_id}-{i + 1}`, round robin or keyed picking, shareable in an `Arc`,
/// stopped only by [`shutdown_now`](Self::shutdown_now).
///
/// # Examples
///
/// ```
/// use pulsar_client::ScheduledExecutorProvider;
/// use std::time::Duration;
///
/// let provider = ScheduledExecutorProvider::new(1, "pulsar-client-scheduled").unwrap();
/// let retry = provider
///     .get_executor()
///     .schedule(Duration::from_millis(1), || "retried")
///     .unwrap();
/// assert_eq!(retry.join().unwrap(), "retried");
/// provider.shutdown_now();
/// ```
pub struct ScheduledExecutorProvider {
    pool: ExecutorPool<ScheduledExecutor>,
}

impl ScheduledExecutorProvider {
    /// `num_threads` scheduled executors whose threads are named after `pool_name`. No thread
    /// starts until an executor gets its first task or timer.
    ///
    /// # Errors
    ///
    /// [`InvalidThreadCount`] if `num_threads` is 0.
    pub fn new(
        num_threads: usize,
        pool_name: impl Into<String>,
    ) -> Result<ScheduledExecutorProvider, InvalidThreadCount> {
        let pool = ExecutorPool::new(num_threads, pool_name.into(), ScheduledExecutor::new)?;
        Ok(Self { pool })
    }

    /// The next executor, round robin.
    pub fn get_executor(&self) -> &ScheduledExecutor {
        self.pool.get_executor()
    }

    /// The executor for `key`: always the same one for equal keys.
    pub fn get_executor_for_key<K: Hash + ?Sized>(&self, key: &K) -> &ScheduledExecutor {
        self.pool.get_executor_for_key(key)
    }

    /// The executor for `key` bytes: Murmur3 x86 32-bit, seed 0, masked to 31 bits, modulo N
    /// (Pulsar's index for the same bytes and N).
    pub fn get_executor_for_bytes(&self, key: &[u8]) -> &ScheduledExecutor {
        self.pool.get_executor_for_bytes(key)
    }

    /// Number of executors (never 0).
    pub fn len(&self) -> usize {
        self.pool.len()
    }

    /// Always `false`: a provider has at least one executor.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The executors, in index order; every `get_executor*` returns a reference into this.
    pub fn executors(&self) -> &[ScheduledExecutor] {
        self.pool.executors()
    }

    /// The pool name given to [`new`](Self::new).
    pub fn pool_name(&self) -> &str {
        self.pool.pool_name()
    }

    /// Stops every executor (`shutdown_now`: periodic timers cancelled, unstarted tasks and
    /// one-shot timers returned), then waits up to 10 s for each to terminate, logging a
    /// warning that names the thread of each that did not.
    pub fn shutdown_now(&self) -> Vec<Task> {
        self.pool.shutdown_now(SHUTDOWN_TIMEOUT)
    }

    /// [`shutdown_now`](Self::shutdown_now) waiting up to `timeout` per executor instead of
    /// 10 s.
    pub fn shutdown_now_timeout(&self, timeout: Duration) -> Vec<Task> {
        self.pool.shutdown_now(timeout)
    }

    /// Whether `shutdown_now` has been called.
    pub fn is_shutdown(&self) -> bool {
        self.pool.is_shutdown()
    }
}

impl fmt::Debug for ScheduledExecutorProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduledExecutorProvider")
            .field("pool_name", &self.pool_name())
            .field("threads", &self.len())
            .field("is_shutdown", &self.is_shutdown())
            .finish()
    }
}
