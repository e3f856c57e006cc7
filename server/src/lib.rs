//! Lifecycle-managed server components, each on its own single-thread executor.
//!
//! Pulsar moved eight server components onto
//! [`PulsarExecutors`](pulsar_common::executors::PulsarExecutors) with auto shutdown disabled:
//! each owns one named single-thread executor and shuts it down in its own `close`/`stop`. One
//! folder per component, plus the kit they share:
//!
//! | folder | component | Pulsar class | executor thread |
//! |---|---|---|---|
//! | `metadata/` | [`metadata::MetadataStore`] | `AbstractMetadataStore` | `metadata-store-{pool}-1` |
//! | `zookeeper/` | [`zookeeper::ZooKeeperSession`] | `PulsarZooKeeperClient` | `zk-connect-executor-{pool}-1` (+ `zk-io-{pool}-1`) |
//! | `leader/` | [`leader::LeaderService`] | `LeaderService` (functions worker) | `leader-service-{pool}-1` |
//! | `loadbalance/` | [`loadbalance::LoadManager`] | `ModularLoadManagerImpl` | `load-manager-{pool}-1` |
//! | `replication/` | [`replication::UnderreplicationManager`] | `PulsarLedgerUnderreplicationManager` | `underreplication-notification-{pool}-1` |
//! | `functions/function_instance/` | [`functions::FunctionInstance`] | `JavaInstance` | `function-instance-{pool}-1` |
//! | `functions/producer_cache/` | [`functions::ProducerCache`] | `ProducerCache` | `producer-cache-{pool}-1` |
//! | `functions/batch_source/` | [`functions::BatchSourceExecutor`] | `BatchSourceExecutor` | `batch-source-discovery-{pool}-1` |
//!
//! The three of the functions runtime sit together under `functions/` (with their error
//! types). `component/` is the kit every component uses instead of its own copy: its executor
//! (`ComponentExecutor`: made from a pool name with auto shutdown off, one close timeout and one
//! warning), the record of its threads ([`threads::ComponentThreads`]), and the one boundary
//! through which it calls user code.
//!
//! What they share, then: `close()` is idempotent, stops the executor and waits (bounded) for
//! its thread; dropping a component without closing it is reported by the executor's warning;
//! listeners and callbacks run on the component's own thread, never under one of its locks, and
//! their panics are caught and logged; each exposes its threads so tests can prove none is left
//! behind.
#![warn(rust_2018_idioms)]

mod component;
pub mod functions;
pub mod leader;
pub mod loadbalance;
pub mod metadata;
pub mod replication;
pub mod zookeeper;

pub use component::threads;
