//! `LoadManagerError`: why a load-manager call failed.

use crate::metadata::MetadataStoreError;
use std::error::Error;
use std::fmt;

/// Why a [`LoadManager`](crate::loadbalance::LoadManager) call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadManagerError {
    /// The load manager has been stopped.
    Closed,
    /// A broker id or domain name is empty or contains `/`.
    InvalidName {
        /// The name as given.
        name: String,
    },
    /// The metadata store failed.
    Store(MetadataStoreError),
}

impl fmt::Display for LoadManagerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadManagerError::Closed => f.write_str("the load manager is stopped"),
            LoadManagerError::InvalidName { name } => {
                write!(
                    f,
                    "invalid broker or domain name `{name}`: empty or contains `/`"
                )
            }
            LoadManagerError::Store(error) => write!(f, "load manager store failure: {error}"),
        }
    }
}

impl Error for LoadManagerError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            LoadManagerError::Store(error) => Some(error),
            _ => None,
        }
    }
}

impl From<MetadataStoreError> for LoadManagerError {
    fn from(error: MetadataStoreError) -> Self {
        LoadManagerError::Store(error)
    }
}
