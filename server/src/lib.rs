//! Lifecycle-managed server components, each on its own single-thread executor.
//!
//! Pulsar moved eight server components onto
//! [`PulsarExecutors`](pulsar_common::executors::PulsarExecutors) with auto shutdown disabled:
//! each owns one named single-thread executor and shuts it down in its own `close`/`stop`. The
//! three of the functions runtime are in `functions`; the five that stand on the metadata store
//! are:
//!
//! | component | Pulsar class | executor thread |
//! |---|---|---|
//! | [`metadata::MetadataStore`] | `AbstractMetadataStore` | `metadata-store-{pool}-1` |
//! | [`zookeeper::ZooKeeperSession`] | `PulsarZooKeeperClient` | `zk-connect-executor-{pool}-1` (+ `zk-io-{pool}-1`) |
//! | [`leader::LeaderService`] | `LeaderService` (functions worker) | `leader-service-{pool}-1` |
//! | [`loadbalance::LoadManager`] | `ModularLoadManagerImpl` | `load-manager-{pool}-1` |
//! | [`replication::UnderreplicationManager`] | `PulsarLedgerUnderreplicationManager` | `underreplication-notification-{pool}-1` |
//!
//! What they share: the executor is made with `auto_shutdown_on_drop = false`; `close()` is
//! idempotent, stops the executor and waits for its thread; dropping a component without closing
//! it is reported by the executor's warning; listeners and callbacks run on the component's own
//! thread, never under one of its locks, and their panics are caught; each exposes its threads
//! ([`threads::ComponentThreads`]) so tests can prove none is left behind.
#![warn(rust_2018_idioms)]

mod component;
pub mod functions;
pub mod leader;
pub mod loadbalance;
pub mod metadata;
pub mod replication;
pub mod zookeeper;

pub use component::threads;
