//! `ReplicationError`: why an under-replication manager call failed.

use crate::metadata::MetadataStoreError;
use std::error::Error;
use std::fmt;

/// Why an [`UnderreplicationManager`](crate::replication::UnderreplicationManager) call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplicationError {
    /// The manager has been closed.
    Closed,
    /// A node holds a value the manager cannot read.
    Corrupt {
        /// The node.
        path: String,
        /// What is wrong with its value.
        reason: String,
    },
    /// The metadata store failed.
    Store(MetadataStoreError),
}

impl fmt::Display for ReplicationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplicationError::Closed => f.write_str("the under-replication manager is closed"),
            ReplicationError::Corrupt { path, reason } => {
                write!(f, "unreadable replication metadata at `{path}`: {reason}")
            }
            ReplicationError::Store(error) => write!(f, "replication metadata failure: {error}"),
        }
    }
}

impl Error for ReplicationError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            ReplicationError::Store(error) => Some(error),
            _ => None,
        }
    }
}

impl From<MetadataStoreError> for ReplicationError {
    fn from(error: MetadataStoreError) -> Self {
        ReplicationError::Store(error)
    }
}
