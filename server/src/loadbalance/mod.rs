//! [`LoadManager`]: brokers' load reports on the metadata store, a cache of them refreshed on
//! every change, and bundle placement.
//!
//! - [`LoadManager`]: Pulsar's `ModularLoadManagerImpl`: registers this broker's ephemeral load
//!   report, watches everyone's, refreshes its cache on `load-manager`, places bundles.
//! - [`LoadReport`], [`FailureDomain`]: what is stored under [`BROKERS_ROOT`] and
//!   [`FAILURE_DOMAINS_ROOT`] (JSON).
//! - [`LoadManagerError`]: why a call failed.
//!
//! `placement.rs` holds the placement rule, separate from the component so it can be read (and
//! tested) on its own.

mod error;
mod load_manager;
mod placement;
mod report;

pub use error::LoadManagerError;
pub use load_manager::LoadManager;
pub use report::{FailureDomain, LoadReport};

/// Where brokers register their load reports: `/loadbalance/brokers/<broker id>` (ephemeral).
pub const BROKERS_ROOT: &str = "/loadbalance/brokers";

/// Where failure domains are defined: `/loadbalance/failure-domains/<domain>` holds a
/// [`FailureDomain`]. (Pulsar keeps them under `/admin/clusters/<cluster>/failureDomain`.)
pub const FAILURE_DOMAINS_ROOT: &str = "/loadbalance/failure-domains";
