//! `MetadataStoreError`: why a metadata-store operation failed (Pulsar's
//! `MetadataStoreException` family).

use crate::metadata::types::ExpectedVersion;
use std::error::Error;
use std::fmt;

/// Why a metadata-store operation failed.
///
/// Each operation's `# Errors` section lists the variants it can return.
///
/// # Examples
///
/// ```
/// use pulsar_server::metadata::{ExpectedVersion, MetadataStore, MetadataStoreError};
///
/// let store = MetadataStore::open("memory:error-doc").unwrap();
/// store.put("/a", b"1", ExpectedVersion::Absent).unwrap();
/// // A second compare-and-set create loses: the node is there.
/// let error = store.put("/a", b"2", ExpectedVersion::Absent).unwrap_err();
/// assert!(matches!(error, MetadataStoreError::BadVersion { .. }));
/// store.close();
/// assert_eq!(store.get("/a").unwrap_err(), MetadataStoreError::AlreadyClosed);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetadataStoreError {
    /// The URL given to `open` names no provider, or is malformed.
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The path is not absolute, ends with `/`, or has an empty segment.
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The node does not exist (`delete`).
    NotFound {
        /// The node.
        path: String,
    },
    /// A compare-and-set lost: the node's version is not the expected one, the node exists
    /// where [`ExpectedVersion::Absent`] was asked, or it is missing where a version was.
    BadVersion {
        /// The node.
        path: String,
        /// The version the caller expected.
        expected: ExpectedVersion,
    },
    /// The node has children and cannot be deleted.
    NotEmpty {
        /// The node.
        path: String,
    },
    /// The node's parent (or an ancestor) is ephemeral: ephemeral nodes cannot have children.
    EphemeralParent {
        /// The node that could not be created.
        path: String,
    },
    /// The store has been closed.
    AlreadyClosed,
    /// The backend cannot be reached, or the session is lost and not yet re-established; the
    /// operation may be retried.
    Unavailable {
        /// What the backend reported.
        reason: String,
    },
    /// Any other failure the backend reported.
    Backend {
        /// What the backend reported.
        reason: String,
    },
}

impl fmt::Display for MetadataStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetadataStoreError::InvalidUrl { url, reason } => {
                write!(f, "invalid metadata store URL `{url}`: {reason}")
            }
            MetadataStoreError::InvalidPath { path, reason } => {
                write!(f, "invalid metadata path `{path}`: {reason}")
            }
            MetadataStoreError::NotFound { path } => write!(f, "node `{path}` does not exist"),
            MetadataStoreError::BadVersion { path, expected } => {
                write!(f, "bad version for `{path}`: expected {expected}")
            }
            MetadataStoreError::NotEmpty { path } => write!(f, "node `{path}` has children"),
            MetadataStoreError::EphemeralParent { path } => {
                write!(f, "cannot create `{path}`: an ancestor is ephemeral")
            }
            MetadataStoreError::AlreadyClosed => f.write_str("the metadata store is closed"),
            MetadataStoreError::Unavailable { reason } => {
                write!(f, "the metadata store is unavailable: {reason}")
            }
            MetadataStoreError::Backend { reason } => {
                write!(f, "the metadata store backend failed: {reason}")
            }
        }
    }
}

impl Error for MetadataStoreError {}
