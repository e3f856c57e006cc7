//! `ReplicationError`: why an under-replication manager call failed.

use crate::metadata::MetadataStoreError;

/// Why an [`UnderreplicationManager`](crate::replication::UnderreplicationManager) call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplicationError {
    /// The manager has been closed.
    #[error("the under-replication manager is closed")]
    Closed,
    /// A node holds a value the manager cannot read.
    #[error("unreadable replication metadata at `{path}`: {reason}")]
    Corrupt {
        /// The node.
        path: String,
        /// What is wrong with its value.
        reason: String,
    },
    /// The metadata store failed.
    #[error("replication metadata failure: {0}")]
    Store(#[from] MetadataStoreError),
}
