//! `LeaderServiceError`: why a leader-service call failed.

use crate::metadata::MetadataStoreError;
use std::error::Error;
use std::fmt;

/// Why a [`LeaderService`](crate::leader::LeaderService) call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaderServiceError {
    /// The service has been closed.
    Closed,
    /// The metadata store failed (for `start`, an invalid election path is reported here).
    Store(MetadataStoreError),
}

impl fmt::Display for LeaderServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaderServiceError::Closed => f.write_str("the leader service is closed"),
            LeaderServiceError::Store(error) => write!(f, "leader election failed: {error}"),
        }
    }
}

impl Error for LeaderServiceError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            LeaderServiceError::Store(error) => Some(error),
            LeaderServiceError::Closed => None,
        }
    }
}

impl From<MetadataStoreError> for LeaderServiceError {
    fn from(error: MetadataStoreError) -> Self {
        LeaderServiceError::Store(error)
    }
}
