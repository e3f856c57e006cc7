//! `PulsarExecutors`: the factory of single-thread executors (Pulsar's three overloads and a
//! builder).

use crate::collections::ring::MIN_TRIM_CAPACITY;
use crate::executors::executor_core::ExecutorCore;
use crate::executors::single_thread_executor::SingleThreadExecutor;
use crate::executors::thread_factory::{NamedThreadFactory, ThreadFactory};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The pool name of executors made without a thread factory.
pub const DEFAULT_POOL_NAME: &str = "pulsar-executor";

/// How long a worker must be idle before it trims its queue, by default.
pub const DEFAULT_IDLE_TRIM_AFTER: Duration = Duration::from_secs(1);

/// Makes [`SingleThreadExecutor`]s: Pulsar's `PulsarExecutors.newSingleThreadExecutor`
/// overloads, plus a [builder](Self::builder) for the settings Java does not have.
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::{NamedThreadFactory, PulsarExecutors};
/// use std::time::Duration;
///
/// // A component that manages its own lifecycle turns auto shutdown off and closes it itself.
/// let executor = PulsarExecutors::new_single_thread_executor_with_auto_shutdown(
///     NamedThreadFactory::new("metadata-store"),
///     false,
/// );
/// executor.execute(|| {}).unwrap();
/// executor.shutdown_now();
/// assert!(executor.await_termination(Duration::from_secs(10)));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct PulsarExecutors;

impl PulsarExecutors {
    /// An executor with a [`NamedThreadFactory`] for `pulsar-executor` and auto shutdown on.
    pub fn new_single_thread_executor() -> SingleThreadExecutor {
        Self::builder().build()
    }

    /// An executor whose worker comes from `factory`, with auto shutdown on.
    pub fn new_single_thread_executor_with(factory: impl ThreadFactory) -> SingleThreadExecutor {
        Self::builder().thread_factory(factory).build()
    }

    /// An executor whose worker comes from `factory`; `auto_shutdown_on_drop = false` is for
    /// components that shut their executor down in their own lifecycle.
    pub fn new_single_thread_executor_with_auto_shutdown(
        factory: impl ThreadFactory,
        auto_shutdown_on_drop: bool,
    ) -> SingleThreadExecutor {
        Self::builder()
            .thread_factory(factory)
            .auto_shutdown_on_drop(auto_shutdown_on_drop)
            .build()
    }

    /// A builder for every setting.
    pub fn builder() -> SingleThreadExecutorBuilder {
        SingleThreadExecutorBuilder::default()
    }
}

/// Settings of a [`SingleThreadExecutor`], fixed once it is built.
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::PulsarExecutors;
/// use std::time::Duration;
///
/// let executor = PulsarExecutors::builder()
///     .pool_name("listener")
///     .initial_capacity(1024)
///     .idle_trim_after(Some(Duration::from_millis(200)))
///     .build();
/// assert_eq!(executor.queue_capacity(), 1024);
/// ```
pub struct SingleThreadExecutorBuilder {
    factory: Option<Arc<dyn ThreadFactory>>,
    auto_shutdown_on_drop: bool,
    initial_capacity: usize,
    idle_trim_after: Option<Duration>,
}

impl Default for SingleThreadExecutorBuilder {
    fn default() -> Self {
        Self {
            factory: None,
            auto_shutdown_on_drop: true,
            initial_capacity: MIN_TRIM_CAPACITY,
            idle_trim_after: Some(DEFAULT_IDLE_TRIM_AFTER),
        }
    }
}

impl SingleThreadExecutorBuilder {
    /// The factory that makes the worker thread (default: `NamedThreadFactory` for
    /// `pulsar-executor`).
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

    /// Initial task slots, rounded up to a power of two (default 64).
    pub fn initial_capacity(mut self, slots: usize) -> Self {
        self.initial_capacity = slots;
        self
    }

    /// How long the worker must be idle before it trims its queue back to at most 64 slots
    /// (default 1 s); `None` never trims.
    pub fn idle_trim_after(mut self, idle: Option<Duration>) -> Self {
        self.idle_trim_after = idle;
        self
    }

    /// Builds the executor. No thread starts until the first task is accepted.
    pub fn build(self) -> SingleThreadExecutor {
        let factory = self
            .factory
            .unwrap_or_else(|| Arc::new(NamedThreadFactory::new(DEFAULT_POOL_NAME)));
        let core = ExecutorCore::new(factory, self.initial_capacity, self.idle_trim_after);
        SingleThreadExecutor::from_core(core, self.auto_shutdown_on_drop)
    }
}

impl fmt::Debug for SingleThreadExecutorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SingleThreadExecutorBuilder")
            .field("custom_thread_factory", &self.factory.is_some())
            .field("auto_shutdown_on_drop", &self.auto_shutdown_on_drop)
            .field("initial_capacity", &self.initial_capacity)
            .field("idle_trim_after", &self.idle_trim_after)
            .finish()
    }
}
