//! `LeaderServiceError`: why a leader-service call failed.

use crate::metadata::MetadataStoreError;

/// Why a [`LeaderService`](crate::leader::LeaderService) call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LeaderServiceError {
    /// The service has been closed.
    #[error("the leader service is closed")]
    Closed,
    /// The metadata store failed (for `start`, an invalid election path is reported here).
    #[error("leader election failed: {0}")]
    Store(#[from] MetadataStoreError),
    /// The service's thread could not be started.
    #[error("cannot start the leader service's thread: {reason}")]
    ThreadStart {
        /// The operating system's (or the thread factory's) error.
        reason: String,
    },
}
