//! `Provider`: what a metadata-store backend implements (the memory tree, ZooKeeper).
//!
//! A provider performs operations synchronously on the caller's thread and reports changes by
//! queueing [`StoreEvent`](crate::metadata::dispatcher::StoreEvent)s on the store's
//! [`Dispatcher`](crate::metadata::dispatcher::Dispatcher), in the order they happened; it never
//! calls a listener itself. Paths reaching a provider are already validated.

use crate::metadata::error::MetadataStoreError;
use crate::metadata::types::{CreateMode, ExpectedVersion, GetResult, Stat};
use crate::zookeeper::ZooKeeperSession;
use std::fmt;

pub(crate) type Result<T> = std::result::Result<T, MetadataStoreError>;

/// A metadata-store backend bound to one session.
pub(crate) trait Provider: Send + Sync + fmt::Debug {
    /// The node's value and stat, `None` if it does not exist.
    fn get(&self, path: &str) -> Result<Option<GetResult>>;

    /// Writes `value` under the version condition, creating missing ancestors (persistent,
    /// empty). Returns the node's new stat.
    fn put(
        &self,
        path: &str,
        value: &[u8],
        expected: ExpectedVersion,
        mode: CreateMode,
    ) -> Result<Stat>;

    /// Deletes a node without children under the version condition.
    fn delete(&self, path: &str, expected: ExpectedVersion) -> Result<()>;

    /// The names of the node's children, sorted; empty if the node does not exist.
    fn children(&self, path: &str) -> Result<Vec<String>>;

    /// Whether the node exists.
    fn exists(&self, path: &str) -> Result<bool>;

    /// Ends the session as an expiry would (ephemeral nodes deleted), then establishes a new
    /// one; the store hears `SessionLost`, then `SessionReestablished`.
    fn expire_session(&self) -> Result<()>;

    /// Ends the session for good: its ephemeral nodes are deleted. Idempotent.
    fn close(&self);

    /// The ZooKeeper session behind this provider, if it is the ZooKeeper provider.
    fn zookeeper_session(&self) -> Option<&ZooKeeperSession> {
        None
    }
}
