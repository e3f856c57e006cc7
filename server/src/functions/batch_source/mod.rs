//! [`BatchSourceExecutor`]: drives a [`BatchSource`]: a triggerer makes discovery run on the
//! executor's own `batch-source-discovery` thread; readers prepare and read the discovered
//! tasks in order (Pulsar's `BatchSourceExecutor`).
//!
//! - `executor.rs`: the executor and its builder.
//! - `source.rs`: what a batch source is ([`BatchSource`], [`TaskEmitter`]).
//! - `push_source.rs`: a source that pushes records ([`BatchPushSource`]) adapted to it.
//! - `triggerer.rs`, `periodic_triggerer.rs`: what starts a discovery ([`OnDemandTriggerer`],
//!   [`PeriodicTriggerer`]).

mod executor;
mod periodic_triggerer;
mod push_source;
mod source;
mod triggerer;

pub use executor::{
    BatchSourceExecutor, BatchSourceExecutorBuilder, BATCH_SOURCE_DISCOVERY_POOL_NAME,
    DEFAULT_DISCOVERY_CLOSE_TIMEOUT,
};
pub use periodic_triggerer::PeriodicTriggerer;
pub use push_source::{
    BatchPushAdapter, BatchPushSource, RecordPusher, DEFAULT_PUSH_QUEUE_CAPACITY,
};
pub use source::{BatchSource, TaskEmitter};
pub use triggerer::{
    DiscoveryTrigger, DiscoveryTriggerer, OnDemandTriggerer, TriggerHandle, TriggerOutcome,
};
