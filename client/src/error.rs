//! The client's errors, one per operation; each hands back what the caller gave.

use crate::consumer::Message;
use std::error::Error;
use std::fmt;

/// An executor provider was asked for zero threads.
///
/// # Examples
///
/// ```
/// use pulsar_client::ExecutorProvider;
///
/// let error = ExecutorProvider::new(0, "pulsar-client-internal").unwrap_err();
/// assert_eq!(error.pool_name(), "pulsar-client-internal");
/// assert_eq!(
///     error.to_string(),
///     "executor pool `pulsar-client-internal` needs at least one thread, got 0"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidThreadCount {
    pool_name: String,
}

impl InvalidThreadCount {
    pub(crate) fn new(pool_name: &str) -> Self {
        Self {
            pool_name: pool_name.to_owned(),
        }
    }

    /// The pool that was asked for zero threads.
    pub fn pool_name(&self) -> &str {
        &self.pool_name
    }
}

impl fmt::Display for InvalidThreadCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "executor pool `{}` needs at least one thread, got 0",
            self.pool_name
        )
    }
}

impl Error for InvalidThreadCount {}

/// Why [`ClientBuilder::build`](crate::ClientBuilder::build) made no client.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientBuildError {
    /// Only one of the internal and external (listener) executor providers was given: they
    /// must be given together or not at all (as in Pulsar's `ClientBuilder`).
    UnpairedExecutorProviders {
        /// Whether the internal provider was the one given.
        internal_given: bool,
    },
    /// A thread count was zero.
    InvalidThreadCount(InvalidThreadCount),
}

impl fmt::Display for ClientBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientBuildError::UnpairedExecutorProviders { internal_given } => {
                let (given, missing) = if *internal_given {
                    ("internal", "external (listener)")
                } else {
                    ("external (listener)", "internal")
                };
                write!(
                    f,
                    "the {given} executor provider was given without the {missing} one: \
                     both must be given or neither"
                )
            }
            ClientBuildError::InvalidThreadCount(error) => error.fmt(f),
        }
    }
}

impl Error for ClientBuildError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            ClientBuildError::InvalidThreadCount(error) => Some(error),
            ClientBuildError::UnpairedExecutorProviders { .. } => None,
        }
    }
}

impl From<InvalidThreadCount> for ClientBuildError {
    fn from(error: InvalidThreadCount) -> Self {
        ClientBuildError::InvalidThreadCount(error)
    }
}

/// Why [`PulsarClient::new_consumer`](crate::PulsarClient::new_consumer) made no consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NewConsumerError {
    /// The client has been closed.
    ClientClosed,
}

impl fmt::Display for NewConsumerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NewConsumerError::ClientClosed => f.write_str("the client has been closed"),
        }
    }
}

impl Error for NewConsumerError {}

/// Why [`Consumer::deliver`](crate::Consumer::deliver) did not accept a message; the message
/// comes back.
///
/// `Debug` does not print the message.
#[non_exhaustive]
pub enum DeliverError {
    /// The consumer has been closed.
    Closed(Message),
}

impl DeliverError {
    /// The message that was not accepted.
    pub fn into_message(self) -> Message {
        match self {
            DeliverError::Closed(message) => message,
        }
    }
}

impl fmt::Debug for DeliverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeliverError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl fmt::Display for DeliverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeliverError::Closed(_) => {
                f.write_str("message not accepted: the consumer has been closed")
            }
        }
    }
}

impl Error for DeliverError {}

/// Why [`Consumer::receive`](crate::Consumer::receive) returned no message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReceiveError {
    /// The consumer has been closed (and every message it held was received or returned by
    /// `close`).
    Closed,
    /// The consumer has a message listener: messages go to it, not to `receive` (as in
    /// Pulsar, which refuses `receive()` when a listener is set).
    ListenerSet,
}

impl fmt::Display for ReceiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReceiveError::Closed => f.write_str("the consumer has been closed"),
            ReceiveError::ListenerSet => {
                f.write_str("cannot receive: the consumer has a message listener")
            }
        }
    }
}

impl Error for ReceiveError {}
