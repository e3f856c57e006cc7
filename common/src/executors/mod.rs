//! Executors: single-thread executors made by [`PulsarExecutors`] and what they hand out.
//!
//! - [`PulsarExecutors`] / [`SingleThreadExecutorBuilder`]: make a [`SingleThreadExecutor`];
//!   [`ScheduledExecutor::builder`] / [`ScheduledExecutorBuilder`]: a [`ScheduledExecutor`]
//!   (one [`ExecutorBuilder`] for both).
//! - [`ThreadFactory`] / [`NamedThreadFactory`]: where worker threads come from, and where
//!   panics of `execute`d tasks are reported; [`ThreadFactoryPanicked`]: a factory's panic,
//!   turned into a failed thread start.
//! - [`SingleWorkerExecutor`]: the one executor type behind both kinds —
//!   [`SingleThreadExecutor`] (kind [`NoTimers`]) and [`ScheduledExecutor`] (kind [`Timers`]).
//! - [`Executor`]: what every executor offers (both kinds implement it; groups hold any).
//! - [`ExecutorStats`]: a lock-free snapshot of an executor's counters.
//! - [`TaskHandle`] / [`TaskError`] / [`TaskPanic`]: the result of a submitted task or a
//!   spawned future (`spawn`), which the handle can also cancel.
//! - [`Task`]: a queued task handed back by `shutdown_now`.
//! - [`RejectedExecution`] / [`RejectReason`]: a refused task, handed back.
//! - [`InvokeAnyError`] / [`InvokeFailure`]: why `invoke_any` produced no value.
//!
//! The design (queue layout, lock and wake-up protocol with its memory ordering, inline task
//! storage and its safety argument, trim policy) is described in `README.md` beside this file.

mod between_batches;
mod cancelled_tasks;
mod claim_fence;
mod executor;
mod executor_builder;
mod executor_core;
mod executor_counters;
mod executor_group;
mod executor_handle;
mod executor_stats;
mod gathering;
mod invoke_any;
mod pulsar_executors;
pub(crate) mod raw_task;
mod rejected;
mod result_slot;
mod scheduled;
mod single_thread_executor;
mod single_worker_executor;
mod spawn;
mod staging;
mod submit_task;
mod task;
mod task_batch;
mod task_error;
mod task_handle;
mod task_panic;
mod thread_factory;
mod worker_lifecycle;
mod worker_loop;
mod worker_parker;

#[cfg(all(test, loom))]
mod loom_tests;

pub use between_batches::NoTimers;
pub use executor::Executor;
pub use executor_builder::{
    ExecutorBuilder, ScheduledExecutorBuilder, SingleThreadExecutorBuilder,
    DEFAULT_SCHEDULED_POOL_NAME,
};
pub use executor_group::{ExecutorGroup, ExecutorGroupBuilder};
pub use executor_stats::ExecutorStats;
pub use invoke_any::{InvokeAnyError, InvokeFailure};
pub use pulsar_executors::{PulsarExecutors, DEFAULT_IDLE_TRIM_AFTER, DEFAULT_POOL_NAME};
pub use rejected::{RejectReason, RejectedExecution};
pub use scheduled::timers::Timers;
pub use scheduled::{ScheduledExecutor, ScheduledHandle};
pub use single_thread_executor::SingleThreadExecutor;
pub use single_worker_executor::SingleWorkerExecutor;
pub use task::Task;
pub use task_error::TaskError;
pub use task_handle::TaskHandle;
pub use task_panic::TaskPanic;
pub use thread_factory::{
    panic_message, IndexedThreadFactory, NamedThreadFactory, ThreadFactory, ThreadFactoryPanicked,
};
