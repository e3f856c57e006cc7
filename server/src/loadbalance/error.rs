//! `LoadManagerError`: why a load-manager call failed.

use crate::metadata::MetadataStoreError;

/// Why a [`LoadManager`](crate::loadbalance::LoadManager) call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadManagerError {
    /// The load manager has been stopped.
    #[error("the load manager is stopped")]
    Closed,
    /// A broker id or domain name is empty or contains `/`.
    #[error("invalid broker or domain name `{name}`: empty or contains `/`")]
    InvalidName {
        /// The name as given.
        name: String,
    },
    /// The metadata store failed.
    #[error("load manager store failure: {0}")]
    Store(#[from] MetadataStoreError),
    /// The load manager's thread could not be started (the call may be tried again).
    #[error("cannot start the load manager's thread: {reason}")]
    ThreadStart {
        /// The operating system's (or the thread factory's) error.
        reason: String,
    },
}
