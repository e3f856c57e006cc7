//! `ExecutorProvider`: N single-thread executors from the factory, picked round robin or by key.

use crate::error::InvalidThreadCount;
use crate::executor_pool::{ExecutorPool, SHUTDOWN_TIMEOUT};
use pulsar_common::executors::{PulsarExecutors, SingleThreadExecutor, Task};
use std::fmt;
use std::hash::Hash;
use std::time::Duration;

/// N [`SingleThreadExecutor`]s made by [`PulsarExecutors`] — Pulsar's `ExecutorProvider`, what a
/// client's internal and listener pools are.
///
/// - **Lazy**: a provider that is never used starts no thread; each executor starts its one
///   thread on its first task.
/// - **Names**: executor `i` (0-based) runs on thread `{pool_name}-{pool_id}-{i + 1}`, `pool_id`
///   being unique in the process per provider.
/// - **Picking**: [`get_executor`](Self::get_executor) round robin (to pin a component to one
///   executor for its lifetime); [`get_executor_for_bytes`](Self::get_executor_for_bytes) by
///   Murmur3 of the key bytes — the index Pulsar's Java client picks for the same bytes and
///   the same N; [`get_executor_for_key`](Self::get_executor_for_key) for any `Hash` key. Every
///   `get_executor*` returns a reference into [`executors`](Self::executors).
/// - **Sharing**: wrap it in an `Arc` to give one set of executors to many clients (a broker's
///   internal clients); only [`shutdown_now`](Self::shutdown_now) stops it.
///
/// # Examples
///
/// ```
/// use pulsar_client::ExecutorProvider;
/// use std::sync::mpsc;
///
/// let provider = ExecutorProvider::new(4, "pulsar-external-listener").unwrap();
/// assert_eq!(provider.len(), 4);
///
/// // One key always lands on one executor: its tasks run in order, on one thread.
/// let (tx, rx) = mpsc::channel();
/// for i in 0..3 {
///     let tx = tx.clone();
///     provider
///         .get_executor_for_bytes(b"order-17")
///         .execute(move || tx.send(i).unwrap())
///         .unwrap();
/// }
/// assert_eq!(rx.iter().take(3).collect::<Vec<_>>(), [0, 1, 2]);
///
/// provider.shutdown_now();
/// assert!(provider.is_shutdown());
/// ```
pub struct ExecutorProvider {
    pool: ExecutorPool<SingleThreadExecutor>,
}

impl ExecutorProvider {
    /// `num_threads` executors whose threads are named after `pool_name`. No thread starts
    /// until an executor gets its first task.
    ///
    /// # Errors
    ///
    /// [`InvalidThreadCount`] if `num_threads` is 0.
    pub fn new(
        num_threads: usize,
        pool_name: impl Into<String>,
    ) -> Result<ExecutorProvider, InvalidThreadCount> {
        let pool = ExecutorPool::new(num_threads, pool_name.into(), |factory| {
            PulsarExecutors::builder().thread_factory(factory).build()
        })?;
        Ok(Self { pool })
    }

    /// The next executor, round robin in index order (the executor group's `next`).
    pub fn get_executor(&self) -> &SingleThreadExecutor {
        self.pool.get_executor()
    }

    /// The executor for `key`: always the same one for equal keys (the executor group's
    /// `select_for_key`: a fixed-key SipHash of the key, by mask or modulo N).
    pub fn get_executor_for_key<K: Hash + ?Sized>(&self, key: &K) -> &SingleThreadExecutor {
        self.pool.get_executor_for_key(key)
    }

    /// The executor for `key` bytes: Murmur3 x86 32-bit, seed 0, masked to 31 bits, modulo N
    /// — the index Pulsar's Java client's `getExecutor(byte[])` picks for the same bytes and N.
    pub fn get_executor_for_bytes(&self, key: &[u8]) -> &SingleThreadExecutor {
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
    pub fn executors(&self) -> &[SingleThreadExecutor] {
        self.pool.executors()
    }

    /// The pool name given to [`new`](Self::new).
    pub fn pool_name(&self) -> &str {
        self.pool.pool_name()
    }

    /// Stops every executor (`shutdown_now`), then waits up to 10 s for each to terminate,
    /// logging a warning that names the thread of each that did not (it is still running a
    /// task: Rust cannot interrupt it). Returns the tasks that never started, executor by
    /// executor; dropping them cancels them.
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

impl fmt::Debug for ExecutorProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecutorProvider")
            .field("pool_name", &self.pool_name())
            .field("threads", &self.len())
            .field("is_shutdown", &self.is_shutdown())
            .finish()
    }
}
