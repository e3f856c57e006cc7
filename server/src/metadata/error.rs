//! `MetadataStoreError`: why a metadata-store operation failed (Pulsar's
//! `MetadataStoreException` family).

use crate::metadata::types::ExpectedVersion;

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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataStoreError {
    /// The URL given to `open` names no provider, or is malformed.
    #[error("invalid metadata store URL `{url}`: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The path is not absolute, ends with `/`, or has an empty segment.
    #[error("invalid metadata path `{path}`: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The node does not exist (`delete`).
    #[error("node `{path}` does not exist")]
    NotFound {
        /// The node.
        path: String,
    },
    /// A compare-and-set lost: the node's version is not the expected one, the node exists
    /// where [`ExpectedVersion::Absent`] was asked, or it is missing where a version was.
    #[error("bad version for `{path}`: expected {expected}")]
    BadVersion {
        /// The node.
        path: String,
        /// The version the caller expected.
        expected: ExpectedVersion,
    },
    /// The node has children and cannot be deleted.
    #[error("node `{path}` has children")]
    NotEmpty {
        /// The node.
        path: String,
    },
    /// The node's parent (or an ancestor) is ephemeral: ephemeral nodes cannot have children.
    #[error("cannot create `{path}`: an ancestor is ephemeral")]
    EphemeralParent {
        /// The node that could not be created.
        path: String,
    },
    /// The store has been closed.
    #[error("the metadata store is closed")]
    AlreadyClosed,
    /// The backend cannot be reached, or the session is lost and not yet re-established; the
    /// operation may be retried.
    #[error("the metadata store is unavailable: {reason}")]
    Unavailable {
        /// What the backend reported.
        reason: String,
    },
    /// Any other failure the backend reported.
    #[error("the metadata store backend failed: {reason}")]
    Backend {
        /// What the backend reported.
        reason: String,
    },
}
