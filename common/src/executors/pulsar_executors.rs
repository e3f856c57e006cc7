//! `PulsarExecutors`: the factory of single-thread executors (Pulsar's three overloads and a
//! builder).

use crate::executors::executor_builder::SingleThreadExecutorBuilder;
use crate::executors::single_thread_executor::SingleThreadExecutor;
use crate::executors::thread_factory::ThreadFactory;
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
    /// An executor with a [`NamedThreadFactory`](crate::executors::NamedThreadFactory) for `pulsar-executor` and auto shutdown on.
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
        SingleThreadExecutorBuilder::new()
    }
}
