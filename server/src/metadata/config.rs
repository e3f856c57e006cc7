//! `MetadataStoreConfig`: session and operation timeouts of a metadata store.

use std::time::Duration;

/// Settings of a metadata store beyond its URL.
///
/// # Examples
///
/// ```
/// use pulsar_server::metadata::MetadataStoreConfig;
/// use std::time::Duration;
///
/// let config = MetadataStoreConfig::default().with_session_timeout(Duration::from_secs(3));
/// assert_eq!(config.session_timeout, Duration::from_secs(3));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetadataStoreConfig {
    /// How long the backend keeps the session (and its ephemeral nodes) without hearing from
    /// the store (ZooKeeper negotiates it within the server's bounds). Default 30 s, Pulsar's
    /// `metadataStoreSessionTimeoutMillis`.
    pub session_timeout: Duration,
    /// How long one operation may wait for the backend before failing with
    /// [`Unavailable`](crate::metadata::MetadataStoreError::Unavailable). Default 30 s.
    pub operation_timeout: Duration,
}

impl Default for MetadataStoreConfig {
    fn default() -> Self {
        Self {
            session_timeout: Duration::from_secs(30),
            operation_timeout: Duration::from_secs(30),
        }
    }
}

impl MetadataStoreConfig {
    /// This config with `session_timeout`.
    pub fn with_session_timeout(mut self, session_timeout: Duration) -> Self {
        self.session_timeout = session_timeout;
        self
    }

    /// This config with `operation_timeout`.
    pub fn with_operation_timeout(mut self, operation_timeout: Duration) -> Self {
        self.operation_timeout = operation_timeout;
        self
    }
}
