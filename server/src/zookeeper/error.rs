//! `ZooKeeperError`: why a ZooKeeper session could not be made, used or ended.

use std::error::Error;
use std::fmt;

/// Why a [`ZooKeeperSession`](crate::zookeeper::ZooKeeperSession) operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ZooKeeperError {
    /// The connect string is not `host:port[,host:port...][/chroot]`.
    InvalidConnectString {
        /// The connect string as given.
        connect_string: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The session has been closed.
    Closed,
    /// There is no session right now: the last one expired and a new one is not yet
    /// established.
    NoSession,
    /// The server did not answer within the operation timeout.
    Timeout {
        /// What was waited for.
        what: &'static str,
    },
    /// The client or the server reported an error.
    Client {
        /// What was being done.
        what: &'static str,
        /// The client's error.
        reason: String,
    },
    /// The session's threads could not be started.
    ThreadStart {
        /// The operating system's error.
        reason: String,
    },
}

impl fmt::Display for ZooKeeperError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZooKeeperError::InvalidConnectString {
                connect_string,
                reason,
            } => write!(
                f,
                "invalid ZooKeeper connect string `{connect_string}`: {reason}"
            ),
            ZooKeeperError::Closed => f.write_str("the ZooKeeper session is closed"),
            ZooKeeperError::NoSession => {
                f.write_str("the ZooKeeper session expired and is being re-established")
            }
            ZooKeeperError::Timeout { what } => write!(f, "ZooKeeper timed out: {what}"),
            ZooKeeperError::Client { what, reason } => {
                write!(f, "ZooKeeper failed: {what}: {reason}")
            }
            ZooKeeperError::ThreadStart { reason } => {
                write!(f, "cannot start the ZooKeeper session's threads: {reason}")
            }
        }
    }
}

impl Error for ZooKeeperError {}
