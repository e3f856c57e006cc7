//! `ExecutorPool<E>`: N executors of one kind, picked round robin or by key — Pulsar's
//! `ExecutorProvider` ([`ExecutorProvider`], single-thread executors) and
//! `ScheduledExecutorProvider` ([`ScheduledExecutorProvider`], scheduled executors) are this one
//! type over two executor kinds.

use crate::error::InvalidThreadCount;
use crate::executor_index::index_for_bytes;
use pulsar_common::executors::{
    Executor, ExecutorGroup, ExecutorStats, ScheduledExecutor, SingleThreadExecutor, Task,
};
use std::fmt;
use std::hash::Hash;
use std::time::Duration;

/// How long `shutdown_now` waits for the executors to terminate (Pulsar's 10 s).
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// N [`SingleThreadExecutor`]s made by [`PulsarExecutors`](pulsar_common::executors::PulsarExecutors) — Pulsar's `ExecutorProvider`, what a
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
///   internal clients); [`shutdown_now`](Self::shutdown_now) stops it, and so does dropping the
///   last handle to its executors (the provider's and every consumer's clones; a graceful
///   shutdown: queued tasks still run).
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
pub type ExecutorProvider = ExecutorPool<SingleThreadExecutor>;

/// N [`ScheduledExecutor`]s — Pulsar's `ScheduledExecutorProvider` (apache/pulsar#16236): the
/// home of a client's delayed and periodic work (ack timeouts, retries, chunk expiry), kept
/// apart from the internal and listener pools so that plain hand-offs never pay for a delay
/// heap.
///
/// The same type as [`ExecutorProvider`] over another executor kind: lazy threads named
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
pub type ScheduledExecutorProvider = ExecutorPool<ScheduledExecutor>;

/// N executors of kind `E`, made once, never reconfigured: the one type behind
/// [`ExecutorProvider`] and [`ScheduledExecutorProvider`] (use those names). Executor `i`
/// (0-based) runs on thread `{pool_name}-{pool_id}-{i + 1}`; no thread starts before an
/// executor's first task.
pub struct ExecutorPool<E> {
    group: ExecutorGroup<E>,
}

impl<E: Executor> ExecutorPool<E> {
    /// `num_threads` executors whose threads are named after `pool_name`. No thread starts
    /// until an executor gets its first task (or timer).
    ///
    /// # Errors
    ///
    /// [`InvalidThreadCount`] if `num_threads` is 0.
    pub fn new(
        num_threads: usize,
        pool_name: impl Into<String>,
    ) -> Result<Self, InvalidThreadCount> {
        let pool_name = pool_name.into();
        if num_threads == 0 {
            return Err(InvalidThreadCount::new(&pool_name));
        }
        Ok(Self {
            group: ExecutorGroup::from_fn(pool_name, num_threads, E::with_thread_factory),
        })
    }

    /// The next executor, round robin in index order (the executor group's `next`).
    pub fn get_executor(&self) -> &E {
        self.group.next()
    }

    /// The executor for `key`: always the same one for equal keys (the executor group's
    /// `select_for_key`: a fixed-key SipHash of the key, by mask or modulo N).
    pub fn get_executor_for_key<K: Hash + ?Sized>(&self, key: &K) -> &E {
        self.group.select_for_key(key)
    }

    /// The executor for `key` bytes: Murmur3 x86 32-bit, seed 0, masked to 31 bits, modulo N
    /// — the index Pulsar's Java client's `getExecutor(byte[])` picks for the same bytes and N.
    pub fn get_executor_for_bytes(&self, key: &[u8]) -> &E {
        &self.group.executors()[index_for_bytes(key, self.group.len())]
    }

    /// Number of executors (never 0).
    pub fn len(&self) -> usize {
        self.group.len()
    }

    /// Always `false`: a provider has at least one executor.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The executors, in index order; every `get_executor*` returns a reference into this.
    pub fn executors(&self) -> &[E] {
        self.group.executors()
    }

    /// The pool name given to [`new`](Self::new).
    pub fn pool_name(&self) -> &str {
        self.group.pool_name()
    }

    /// Stops every executor (`shutdown_now`: on scheduled executors periodic timers are
    /// cancelled and one-shot timers returned), then waits until all have terminated, at most
    /// 10 s in all (one deadline for the provider), logging a warning that names the thread of
    /// each that did not (it is still running a task: Rust cannot interrupt it). Called from a
    /// task of one of its executors, it cannot wait for that one, which terminates when the
    /// task returns (no warning is logged for it). Returns the tasks that never started,
    /// executor by executor; dropping them cancels them.
    pub fn shutdown_now(&self) -> Vec<Task> {
        self.shutdown_now_timeout(SHUTDOWN_TIMEOUT)
    }

    /// [`shutdown_now`](Self::shutdown_now) waiting up to `timeout` in all instead of 10 s.
    pub fn shutdown_now_timeout(&self, timeout: Duration) -> Vec<Task> {
        self.group.shutdown_now_within(timeout).0
    }

    /// Whether `shutdown_now` has been called.
    pub fn is_shutdown(&self) -> bool {
        self.group.is_shutdown()
    }

    /// The sum of the executors' counters (see [`ExecutorStats`]; no queue lock is taken).
    pub fn stats(&self) -> ExecutorStats {
        self.group.stats()
    }
}

impl<E: Executor> fmt::Debug for ExecutorPool<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecutorPool")
            .field("pool_name", &self.pool_name())
            .field("threads", &self.len())
            .field("is_shutdown", &self.is_shutdown())
            .finish()
    }
}
