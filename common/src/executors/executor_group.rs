//! `ExecutorGroup`: N executors (of any [`Executor`] kind) picked round robin, by index or by
//! key.

use crate::executors::executor::Executor;
use crate::executors::executor_stats::ExecutorStats;
use crate::executors::pulsar_executors::PulsarExecutors;
use crate::executors::single_thread_executor::SingleThreadExecutor;
use crate::executors::task::Task;
use crate::executors::thread_factory::{IndexedThreadFactory, NamedThreadFactory, ThreadFactory};
use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A fixed group of executors of any [`Executor`] kind — [`SingleThreadExecutor`]s by default,
/// [`ScheduledExecutor`](crate::executors::ScheduledExecutor)s through
/// [`from_fn`](Self::from_fn) — (SOFAJRaft's `FixedThreadsExecutorGroup` of
/// `MpscSingleThreadExecutor`s): pick one round robin with [`next`](Self::next), by index with
/// [`select`](Self::select), or pin everything about one key to one executor with
/// [`select_for_key`](Self::select_for_key) — tasks for that key then run in order, on one
/// thread, without locks of their own.
///
/// - **Lazy threads**: no thread starts before an executor's first task. Executor `i`'s thread
///   is named `{pool_name}-{pool_id}-{i + 1}` — one pool id for the group, taken from one
///   [`NamedThreadFactory`] — whatever order the threads start in, so a thread dump tells
///   which executor a thread serves. (The builder can share another factory instead, or give
///   each executor its own.)
/// - **Selection**: `select(index)` masks with `len - 1` when the length is a power of two,
///   and takes the remainder otherwise.
/// - **Shutdown that cannot be stalled by one child**: [`shutdown_gracefully`] first signals
///   *every* child, then waits for all of them against *one* deadline, and reports whether
///   all terminated. (SOFAJRaft's gave each child the full timeout in turn and stopped
///   signalling the rest after the first that failed.)
///
/// [`shutdown_gracefully`]: Self::shutdown_gracefully
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::ExecutorGroup;
/// use std::sync::mpsc;
/// use std::time::Duration;
///
/// let group = ExecutorGroup::new("replicator", 4);
/// assert_eq!(group.len(), 4);
///
/// // Everything for one peer runs on one thread, in order.
/// let (results, received) = mpsc::channel();
/// for entry in 0..3 {
///     let results = results.clone();
///     group
///         .select_for_key("peer-1:8080")
///         .execute(move || results.send(entry).unwrap())
///         .unwrap();
/// }
/// let order: Vec<i32> = received.iter().take(3).collect();
/// assert_eq!(order, [0, 1, 2]);
///
/// assert!(group.shutdown_gracefully(Duration::from_secs(10)));
/// assert!(group.is_terminated());
/// ```
pub struct ExecutorGroup<E = SingleThreadExecutor> {
    /// The children, in index order.
    executors: Box<[E]>,
    /// `len - 1` when the length is a power of two (select by mask), else `None` (remainder).
    mask: Option<usize>,
    /// Round-robin cursor of `next`; wraps on overflow.
    cursor: AtomicUsize,
    pool_name: String,
}

impl ExecutorGroup {
    /// `threads` executors whose threads are named `{pool_name}-{pool_id}-{index + 1}`, with
    /// auto shutdown on drop (see [`builder`](Self::builder) for the other settings).
    ///
    /// # Panics
    ///
    /// If `threads` is 0.
    pub fn new(pool_name: impl Into<String>, threads: usize) -> Self {
        Self::builder(pool_name, threads).build()
    }

    /// A builder for a group of `threads` executors named after `pool_name`.
    pub fn builder(pool_name: impl Into<String>, threads: usize) -> ExecutorGroupBuilder {
        ExecutorGroupBuilder {
            pool_name: pool_name.into(),
            threads,
            factories: Factories::Indexed,
            auto_shutdown_on_drop: true,
            initial_capacity: None,
            idle_trim_after: None,
        }
    }
}

impl<E: Executor> ExecutorGroup<E> {
    /// A group of `threads` executors of any kind made by `make`, which gets each executor's
    /// thread factory: executor `i`'s thread is named `{pool_name}-{pool_id}-{i + 1}`, one pool
    /// id for the group. (The client's scheduled-executor provider is built this way.)
    ///
    /// # Panics
    ///
    /// If `threads` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_common::executors::{ExecutorGroup, ScheduledExecutor};
    /// use std::time::Duration;
    ///
    /// let timers = ExecutorGroup::from_fn("timers", 2, ScheduledExecutor::new);
    /// let handle = timers.next().schedule(Duration::from_millis(1), || 5).unwrap();
    /// assert_eq!(handle.join().unwrap(), 5);
    /// timers.shutdown_now();
    /// ```
    pub fn from_fn(
        pool_name: impl Into<String>,
        threads: usize,
        make: impl FnMut(IndexedThreadFactory) -> E,
    ) -> Self {
        let pool_name = pool_name.into();
        assert!(threads > 0, "an executor group needs at least one thread");
        let pool = Arc::new(NamedThreadFactory::new(pool_name.clone()));
        let executors = (1..=threads)
            .map(|n| IndexedThreadFactory::new(Arc::clone(&pool), n))
            .map(make)
            .collect();
        Self::from_parts(pool_name, executors)
    }

    fn from_parts(pool_name: String, executors: Box<[E]>) -> Self {
        let threads = executors.len();
        ExecutorGroup {
            mask: threads.is_power_of_two().then(|| threads - 1),
            executors,
            cursor: AtomicUsize::new(0),
            pool_name,
        }
    }

    /// Number of executors.
    pub fn len(&self) -> usize {
        self.executors.len()
    }

    /// Always `false`: a group has at least one executor.
    pub fn is_empty(&self) -> bool {
        self.executors.is_empty()
    }

    /// The executors, in index order (`select(i)` is `executors()[i]` for `i < len()`).
    pub fn executors(&self) -> &[E] {
        &self.executors
    }

    /// The next executor in round-robin order, starting at index 0.
    #[inline]
    pub fn next(&self) -> &E {
        self.select(self.cursor.fetch_add(1, Ordering::Relaxed))
    }

    /// The executor for `index`: `index & (len - 1)` when `len` is a power of two, else
    /// `index % len`. The same index always gives the same executor.
    #[inline]
    pub fn select(&self, index: usize) -> &E {
        &self.executors[self.index_for(index)]
    }

    /// The executor a key is pinned to: the same key (by `Hash`) always gives the same
    /// executor of this group.
    pub fn select_for_key<K: Hash + ?Sized>(&self, key: &K) -> &E {
        &self.executors[self.index_for_key(key)]
    }

    /// The index [`select_for_key`](Self::select_for_key) picks for `key`.
    pub fn index_for_key<K: Hash + ?Sized>(&self, key: &K) -> usize {
        let mut hasher = DefaultHasher::new();
        key.hash(&mut hasher);
        self.index_for(hasher.finish() as usize)
    }

    #[inline]
    fn index_for(&self, index: usize) -> usize {
        match self.mask {
            Some(mask) => index & mask,
            None => index % self.executors.len(),
        }
    }

    /// Starts a graceful shutdown of every executor (queued tasks still run). Idempotent;
    /// does not wait.
    pub fn shutdown(&self) {
        for executor in self.executors.iter() {
            executor.shutdown();
        }
    }

    /// Stops every executor and returns their queued tasks, executor by executor in index
    /// order, each oldest first. Running tasks finish.
    pub fn shutdown_now(&self) -> Vec<Task> {
        let mut tasks = Vec::new();
        for executor in self.executors.iter() {
            tasks.extend(executor.shutdown_now());
        }
        tasks
    }

    /// Stops every executor (`shutdown_now`), then waits until all have terminated or
    /// `timeout` has passed — one deadline for the whole group — logging a warning that names
    /// each executor still running a task (Rust cannot interrupt it). Returns the tasks that
    /// never started, executor by executor, and whether all terminated. Called from one of the
    /// group's own threads, that executor cannot terminate while the call waits (the result is
    /// `false`), and is not warned about: it terminates when the calling task returns.
    pub fn shutdown_now_within(&self, timeout: Duration) -> (Vec<Task>, bool) {
        let tasks = self.shutdown_now();
        let terminated = self.await_termination(timeout);
        if !terminated {
            self.warn_unterminated(timeout);
        }
        (tasks, terminated)
    }

    fn warn_unterminated(&self, timeout: Duration) {
        for executor in self.executors.iter().filter(|e| !e.is_terminated()) {
            if executor.is_current_worker() {
                // The caller is this executor's task: nothing was waited for, and the executor
                // terminates once the caller returns. Not a slow task worth a warning.
                tracing::debug!(
                    group = %self.pool_name,
                    thread = %executor.name(),
                    "executor shut down from its own thread: it terminates when the calling task returns"
                );
                continue;
            }
            tracing::warn!(
                group = %self.pool_name,
                thread = %executor.name(),
                ?timeout,
                "executor did not terminate in time: its thread is still running a task"
            );
        }
    }

    /// Signals every executor to shut down gracefully, then waits until all have terminated
    /// or `timeout` has passed — one deadline for the whole group. Returns whether all
    /// terminated. A child that does not finish in time neither stops the others from being
    /// signalled nor takes their share of the wait: they all keep shutting down.
    ///
    /// Called from one of the group's own threads, that child cannot terminate while the call
    /// waits, so the result is `false`.
    pub fn shutdown_gracefully(&self, timeout: Duration) -> bool {
        self.shutdown();
        let terminated = self.await_termination(timeout);
        if !terminated {
            self.warn_unterminated(timeout);
        }
        terminated
    }

    /// Waits until every executor has terminated, at most `timeout` in all; `true` if all have.
    pub fn await_termination(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut all = true;
        for executor in self.executors.iter() {
            let remaining = match deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                None => Duration::MAX,
            };
            // Keep going after a failure: the rest may already be done.
            all &= executor.await_termination(remaining);
        }
        all
    }

    /// Whether every executor has been shut down.
    pub fn is_shutdown(&self) -> bool {
        self.executors.iter().all(Executor::is_shutdown)
    }

    /// Whether every executor has terminated.
    pub fn is_terminated(&self) -> bool {
        self.executors.iter().all(Executor::is_terminated)
    }

    /// Tasks accepted and not yet started, over all executors.
    pub fn pending_tasks(&self) -> usize {
        self.executors.iter().map(Executor::pending_tasks).sum()
    }

    /// The sum of the executors' counters ([`Executor::stats`]: none takes a queue lock).
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_common::executors::ExecutorGroup;
    /// use std::time::Duration;
    ///
    /// let group = ExecutorGroup::new("stats", 3);
    /// for i in 0..30 {
    ///     group.next().execute(move || assert!(i % 10 != 9)).unwrap();
    /// }
    /// assert!(group.shutdown_gracefully(Duration::from_secs(10)));
    /// let stats = group.stats();
    /// assert_eq!((stats.submitted, stats.completed, stats.panicked), (30, 30, 3));
    /// ```
    pub fn stats(&self) -> ExecutorStats {
        self.executors.iter().map(Executor::stats).sum()
    }

    /// The pool name given at construction.
    pub fn pool_name(&self) -> &str {
        &self.pool_name
    }
}

impl<'a, E> IntoIterator for &'a ExecutorGroup<E> {
    type Item = &'a E;
    type IntoIter = std::slice::Iter<'a, E>;

    fn into_iter(self) -> Self::IntoIter {
        self.executors.iter()
    }
}

impl<E: Executor> fmt::Debug for ExecutorGroup<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecutorGroup")
            .field("pool_name", &self.pool_name)
            .field("len", &self.executors.len())
            .field("shutdown", &self.is_shutdown())
            .field("terminated", &self.is_terminated())
            .finish()
    }
}

/// Settings of an [`ExecutorGroup`], fixed once built.
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::ExecutorGroup;
///
/// // A component that shuts the group down in its own lifecycle turns auto shutdown off.
/// let group = ExecutorGroup::builder("io", 3)
///     .auto_shutdown_on_drop(false)
///     .initial_capacity(256)
///     .build();
/// assert!(group.executors().iter().all(|e| !e.auto_shutdown_on_drop()));
/// assert_eq!(group.executors()[0].queue_capacity(), 256);
/// group.shutdown_now();
/// ```
pub struct ExecutorGroupBuilder {
    pool_name: String,
    threads: usize,
    factories: Factories,
    auto_shutdown_on_drop: bool,
    initial_capacity: Option<usize>,
    idle_trim_after: Option<Option<Duration>>,
}

impl ExecutorGroupBuilder {
    /// One factory for every child's thread, which names them (a shared
    /// [`NamedThreadFactory`] numbers them in the order they start). Default: executor `i`'s
    /// thread is `{pool_name}-{pool_id}-{i + 1}`.
    pub fn thread_factory(mut self, factory: impl ThreadFactory) -> Self {
        self.factories = Factories::Shared(Arc::new(factory));
        self
    }

    /// A factory per child: `make(i)` is called once, at build, for executor `i`.
    pub fn thread_factory_per_executor<F: ThreadFactory>(
        mut self,
        make: impl Fn(usize) -> F + 'static,
    ) -> Self {
        self.factories = Factories::PerExecutor(Box::new(move |index| Arc::new(make(index))));
        self
    }

    /// Whether each child shuts down without a warning when its last clone (the group's) is
    /// dropped (default `true`).
    pub fn auto_shutdown_on_drop(mut self, enabled: bool) -> Self {
        self.auto_shutdown_on_drop = enabled;
        self
    }

    /// Each child's initial task slots (the executor default otherwise).
    pub fn initial_capacity(mut self, slots: usize) -> Self {
        self.initial_capacity = Some(slots);
        self
    }

    /// Each child's idle trim period (the executor default otherwise; `None` never trims).
    pub fn idle_trim_after(mut self, idle: Option<Duration>) -> Self {
        self.idle_trim_after = Some(idle);
        self
    }

    /// Builds the group. No thread starts until a child's first task.
    ///
    /// # Panics
    ///
    /// If the group was given 0 threads.
    pub fn build(self) -> ExecutorGroup {
        assert!(
            self.threads > 0,
            "an executor group needs at least one thread"
        );
        let pool = Arc::new(NamedThreadFactory::new(self.pool_name.clone()));
        let factory_for = |index: usize| -> Arc<dyn ThreadFactory> {
            match &self.factories {
                Factories::Indexed => {
                    Arc::new(IndexedThreadFactory::new(Arc::clone(&pool), index + 1))
                }
                Factories::Shared(factory) => Arc::clone(factory),
                Factories::PerExecutor(make) => make(index),
            }
        };
        let executors: Box<[SingleThreadExecutor]> = (0..self.threads)
            .map(|index| {
                let mut builder = PulsarExecutors::builder()
                    .thread_factory(factory_for(index))
                    .auto_shutdown_on_drop(self.auto_shutdown_on_drop);
                if let Some(slots) = self.initial_capacity {
                    builder = builder.initial_capacity(slots);
                }
                if let Some(idle) = self.idle_trim_after {
                    builder = builder.idle_trim_after(idle);
                }
                builder.build()
            })
            .collect();
        ExecutorGroup::from_parts(self.pool_name, executors)
    }
}

impl fmt::Debug for ExecutorGroupBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecutorGroupBuilder")
            .field("pool_name", &self.pool_name)
            .field("threads", &self.threads)
            .field("thread_factories", &self.factories)
            .field("auto_shutdown_on_drop", &self.auto_shutdown_on_drop)
            .field("initial_capacity", &self.initial_capacity)
            .field("idle_trim_after", &self.idle_trim_after)
            .finish()
    }
}

/// Where the children's threads come from.
enum Factories {
    /// Executor `i`: `{pool_name}-{pool_id}-{i + 1}`, one pool id for the group.
    Indexed,
    /// One factory shared by every child.
    Shared(Arc<dyn ThreadFactory>),
    /// A factory per child index.
    PerExecutor(Box<dyn Fn(usize) -> Arc<dyn ThreadFactory>>),
}

impl fmt::Debug for Factories {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Factories::Indexed => "indexed",
            Factories::Shared(_) => "shared",
            Factories::PerExecutor(_) => "per_executor",
        })
    }
}
