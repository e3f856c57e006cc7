//! `ZooKeeperError`: why a ZooKeeper session could not be made, used or ended.

/// Why a [`ZooKeeperSession`](crate::zookeeper::ZooKeeperSession) operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ZooKeeperError {
    /// The connect string is not `host:port[,host:port...][/chroot]`.
    #[error("invalid ZooKeeper connect string `{connect_string}`: {reason}")]
    InvalidConnectString {
        /// The connect string as given.
        connect_string: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The session has been closed.
    #[error("the ZooKeeper session is closed")]
    Closed,
    /// There is no session right now: the last one expired and a new one is not yet
    /// established.
    #[error("the ZooKeeper session expired and is being re-established")]
    NoSession,
    /// The server did not answer within the operation timeout.
    #[error("ZooKeeper timed out: {what}")]
    Timeout {
        /// What was waited for.
        what: &'static str,
    },
    /// The client or the server reported an error.
    #[error("ZooKeeper failed: {what}: {reason}")]
    Client {
        /// What was being done.
        what: &'static str,
        /// The client's error.
        reason: String,
    },
    /// The session's threads could not be started.
    #[error("cannot start the ZooKeeper session's threads: {reason}")]
    ThreadStart {
        /// The operating system's error.
        reason: String,
    },
}
