//! [`FunctionInstance`], [`ProducerCache`], [`BatchSourceExecutor`]: the functions-runtime
//! components, each on its own single-thread executor from the component kit.
//!
//! Three of the eight server components that Pulsar moved onto
//! [`PulsarExecutors`](pulsar_common::executors::PulsarExecutors) with auto shutdown off come from
//! the functions runtime. Here each is transport-agnostic: functions, producers and sources are
//! traits that a messaging stack implements.
//!
//! | component | Pulsar class | executor thread | what runs on it |
//! |---|---|---|---|
//! | [`FunctionInstance`] | `JavaInstance` | `function-instance-{pool}-1` | polling async results, emitting them in input order |
//! | [`ProducerCache`] | `ProducerCache` | `producer-cache-{pool}-1` | flushing, then closing, evicted producers (with timeouts) |
//! | [`BatchSourceExecutor`] | `BatchSourceExecutor` | `batch-source-discovery-{pool}-1` | `BatchSource::discover` when a triggerer fires |
//!
//! What each component shares:
//!
//! - **One executor, owned**: the component kit's `ComponentExecutor` (auto shutdown off); the
//!   thread starts lazily, on the first task. Every builder takes a
//!   [`ThreadFactory`](pulsar_common::executors::ThreadFactory) (default: a
//!   [`NamedThreadFactory`](pulsar_common::executors::NamedThreadFactory) with the pool name
//!   above).
//! - **`close()`**: idempotent, waits (bounded) for its executor to terminate, and is called by
//!   `Drop`. After it, calls get a clear error.
//! - **`threads()`**: the [`ComponentThreads`](crate::threads::ComponentThreads) record of the
//!   threads it started, so that `close()` followed by `threads().await_exit(..)` proves that
//!   nothing is left behind.
//! - **User code** (functions, result consumers, producers, sources, triggerers) is never called
//!   under an internal lock; its panics are caught at one boundary and become error values.
//!
//! One folder per component (`function_instance/`, `producer_cache/`, `batch_source/`); their
//! error types, one per operation, are in `errors.rs`. Supporting items, by component:
//!
//! - [`FunctionInstance`]: [`Function`], [`FunctionOutput`], [`ResultCompleter`],
//!   [`ExecutionResult`], [`Processed`], [`FunctionError`], [`ProcessError`].
//! - [`ProducerCache`]: [`Producer`], [`ProducerFuture`], [`ProducerError`],
//!   [`ProducerCloseReport`], [`GetProducerError`].
//! - [`BatchSourceExecutor`]: [`BatchSource`], [`TaskEmitter`], [`BatchPushSource`],
//!   [`BatchPushAdapter`], [`RecordPusher`], [`DiscoveryTriggerer`], [`DiscoveryTrigger`],
//!   [`OnDemandTriggerer`], [`TriggerHandle`], [`PeriodicTriggerer`], [`TriggerOutcome`],
//!   [`SourceError`], [`ReadError`], [`EmitError`], [`PushError`].

mod batch_source;
mod errors;
mod function_instance;
mod producer_cache;

pub use batch_source::{
    BatchPushAdapter, BatchPushSource, BatchSource, BatchSourceExecutor,
    BatchSourceExecutorBuilder, DiscoveryTrigger, DiscoveryTriggerer, OnDemandTriggerer,
    PeriodicTriggerer, RecordPusher, TaskEmitter, TriggerHandle, TriggerOutcome,
    BATCH_SOURCE_DISCOVERY_POOL_NAME, DEFAULT_DISCOVERY_CLOSE_TIMEOUT, DEFAULT_PUSH_QUEUE_CAPACITY,
};
pub use errors::{
    EmitError, FunctionError, GetProducerError, ProcessError, ProducerError, PushError, ReadError,
    SourceError,
};
pub use function_instance::{
    AsyncOutput, ExecutionResult, Function, FunctionInstance, FunctionInstanceBuilder,
    FunctionOutput, Processed, ResultCompleter, DEFAULT_FUNCTION_CLOSE_TIMEOUT,
    DEFAULT_MAX_PENDING, FUNCTION_INSTANCE_POOL_NAME,
};
pub use producer_cache::{
    Producer, ProducerCache, ProducerCacheBuilder, ProducerCloseReport, ProducerFuture,
    DEFAULT_CACHE_CLOSE_TIMEOUT, DEFAULT_IDLE_EXPIRY, DEFAULT_MAX_PRODUCERS,
    DEFAULT_OPERATION_TIMEOUT, PRODUCER_CACHE_POOL_NAME,
};
