//! `ExecutorBuilder`: the settings of an executor, the same for both kinds
//! ([`SingleThreadExecutorBuilder`], [`ScheduledExecutorBuilder`]).

use crate::collections::ring::MIN_TRIM_CAPACITY;
use crate::executors::between_batches::BetweenBatches;
use crate::executors::executor_core::ExecutorCore;
use crate::executors::pulsar_executors::DEFAULT_IDLE_TRIM_AFTER;
use crate::executors::scheduled::ScheduledExecutor;
use crate::executors::single_thread_executor::SingleThreadExecutor;
use crate::executors::single_worker_executor::SingleWorkerExecutor;
use crate::executors::thread_factory::{NamedThreadFactory, ThreadFactory};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

/// The default pool name of a [`ScheduledExecutor`] built without a thread factory.
pub const DEFAULT_SCHEDULED_POOL_NAME: &str = "pulsar-scheduled-executor";

/// Settings of an executor of kind `E` ([`SingleThreadExecutor`] or [`ScheduledExecutor`]),
/// fixed once it is built. Use the aliases [`SingleThreadExecutorBuilder`] and
/// [`ScheduledExecutorBuilder`].
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::{PulsarExecutors, ScheduledExecutor};
/// use std::time::Duration;
///
/// let executor = PulsarExecutors::builder()
///     .pool_name("listener")
///     .initial_capacity(1024)
///     .idle_trim_after(Some(Duration::from_millis(200)))
///     .build();
/// assert_eq!(executor.queue_capacity(), 1024);
///
/// let timers = ScheduledExecutor::builder()
///     .pool_name("timers")
///     .auto_shutdown_on_drop(false)
///     .build();
/// assert!(!timers.auto_shutdown_on_drop());
/// # timers.shutdown();
/// ```
pub struct ExecutorBuilder<E> {
    factory: Option<Arc<dyn ThreadFactory>>,
    auto_shutdown_on_drop: bool,
    initial_capacity: usize,
    idle_trim_after: Option<Duration>,
    kind: PhantomData<fn() -> E>,
}

/// Settings of a [`SingleThreadExecutor`] (made by
/// [`PulsarExecutors::builder`](crate::executors::PulsarExecutors::builder)).
pub type SingleThreadExecutorBuilder = ExecutorBuilder<SingleThreadExecutor>;

/// Settings of a [`ScheduledExecutor`] (made by [`ScheduledExecutor::builder`]).
pub type ScheduledExecutorBuilder = ExecutorBuilder<ScheduledExecutor>;

impl<E> ExecutorBuilder<E> {
    /// The defaults: the pool's default thread factory, auto shutdown on drop, 64 slots, idle
    /// trim after 1 s.
    pub fn new() -> Self {
        Self {
            factory: None,
            auto_shutdown_on_drop: true,
            initial_capacity: MIN_TRIM_CAPACITY,
            idle_trim_after: Some(DEFAULT_IDLE_TRIM_AFTER),
            kind: PhantomData,
        }
    }

    /// The factory that makes the worker thread (default: a [`NamedThreadFactory`] for
    /// [`DEFAULT_POOL_NAME`](crate::executors::DEFAULT_POOL_NAME), or
    /// [`DEFAULT_SCHEDULED_POOL_NAME`] for a scheduled executor).
    pub fn thread_factory(mut self, factory: impl ThreadFactory) -> Self {
        self.factory = Some(Arc::new(factory));
        self
    }

    /// Shorthand for a [`NamedThreadFactory`] with this pool name.
    pub fn pool_name(self, pool_name: impl Into<String>) -> Self {
        self.thread_factory(NamedThreadFactory::new(pool_name))
    }

    /// Whether dropping the last clone shuts down without a warning (default `true`).
    pub fn auto_shutdown_on_drop(mut self, enabled: bool) -> Self {
        self.auto_shutdown_on_drop = enabled;
        self
    }

    /// Initial task slots, rounded up to a power of two (default 64). They are allocated when
    /// the executor is built.
    ///
    /// # Panics
    ///
    /// Building the executor panics with "capacity overflow", as `Vec::with_capacity` does,
    /// when the slots' bytes would exceed `isize::MAX`.
    pub fn initial_capacity(mut self, slots: usize) -> Self {
        self.initial_capacity = slots;
        self
    }

    /// How long the worker must be idle before it trims its queue back to at most 64 slots
    /// (and frees an empty timer wheel) (default 1 s); `None` never trims.
    pub fn idle_trim_after(mut self, idle: Option<Duration>) -> Self {
        self.idle_trim_after = idle;
        self
    }
}

impl<E> Default for ExecutorBuilder<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: BetweenBatches> ExecutorBuilder<SingleWorkerExecutor<K>> {
    /// Builds the executor. No thread starts until the first task (or timer) is accepted.
    pub fn build(self) -> SingleWorkerExecutor<K> {
        let factory = self
            .factory
            .unwrap_or_else(|| Arc::new(NamedThreadFactory::new(K::DEFAULT_POOL_NAME)));
        let core = ExecutorCore::new(factory, self.initial_capacity, self.idle_trim_after);
        SingleWorkerExecutor::from_core(core, self.auto_shutdown_on_drop)
    }
}

impl<E> fmt::Debug for ExecutorBuilder<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecutorBuilder")
            .field("custom_thread_factory", &self.factory.is_some())
            .field("auto_shutdown_on_drop", &self.auto_shutdown_on_drop)
            .field("initial_capacity", &self.initial_capacity)
            .field("idle_trim_after", &self.idle_trim_after)
            .finish()
    }
}
