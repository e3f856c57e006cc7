//! `ClientBuilder`: a client's thread counts, or the shared executor providers it should use.

use crate::client::PulsarClient;
use crate::error::ClientBuildError;
use crate::executor_provider::ExecutorProvider;
use crate::executor_provider::ScheduledExecutorProvider;
use std::fmt;
use std::sync::Arc;

/// The internal pool's name (`numIoThreads` threads in Pulsar).
pub const INTERNAL_POOL_NAME: &str = "pulsar-client-internal";
/// The listener pool's name (`numListenerThreads` threads in Pulsar).
pub const EXTERNAL_POOL_NAME: &str = "pulsar-external-listener";
/// The scheduled pool's name (`numIoThreads` threads in Pulsar).
pub const SCHEDULED_POOL_NAME: &str = "pulsar-client-scheduled";

/// Builds a [`PulsarClient`]: either it creates its executor providers (internal with
/// `num_io_threads`, listener with `num_listener_threads`, scheduled with `num_io_threads`), or
/// it is given existing, shared ones (Pulsar's #12037 and #16334: brokers give one set of
/// providers to their many internal clients). The internal and external providers go together
/// or not at all; the scheduled provider may be given on its own. A client shuts down only the
/// providers it created.
///
/// # Examples
///
/// ```
/// use pulsar_client::{ClientBuildError, ExecutorProvider, PulsarClient, ScheduledExecutorProvider};
/// use std::sync::Arc;
///
/// // A client that makes its own executors.
/// let own = PulsarClient::builder().num_io_threads(2).num_listener_threads(4).build().unwrap();
/// assert_eq!(own.external_executor_provider().len(), 4);
/// own.close();
///
/// // Clients sharing one set of providers.
/// let internal = Arc::new(ExecutorProvider::new(2, "broker-client-internal").unwrap());
/// let external = Arc::new(ExecutorProvider::new(2, "broker-client-listener").unwrap());
/// let scheduled = Arc::new(ScheduledExecutorProvider::new(1, "broker-client-scheduled").unwrap());
/// let shared = PulsarClient::builder()
///     .internal_executor_provider(Arc::clone(&internal))
///     .external_executor_provider(Arc::clone(&external))
///     .scheduled_executor_provider(Arc::clone(&scheduled))
///     .build()
///     .unwrap();
/// shared.close();
/// assert!(!internal.is_shutdown(), "not the client's to stop");
///
/// // Internal without external is refused.
/// let error = PulsarClient::builder()
///     .internal_executor_provider(internal)
///     .build()
///     .unwrap_err();
/// assert_eq!(error, ClientBuildError::UnpairedExecutorProviders { internal_given: true });
/// ```
#[derive(Clone)]
pub struct ClientBuilder {
    num_io_threads: usize,
    num_listener_threads: usize,
    internal: Option<Arc<ExecutorProvider>>,
    external: Option<Arc<ExecutorProvider>>,
    scheduled: Option<Arc<ScheduledExecutorProvider>>,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self {
            num_io_threads: 1,
            num_listener_threads: 1,
            internal: None,
            external: None,
            scheduled: None,
        }
    }
}

impl ClientBuilder {
    /// Threads of the internal and scheduled pools the client creates (default 1).
    pub fn num_io_threads(mut self, threads: usize) -> Self {
        self.num_io_threads = threads;
        self
    }

    /// Threads of the listener pool the client creates (default 1).
    pub fn num_listener_threads(mut self, threads: usize) -> Self {
        self.num_listener_threads = threads;
        self
    }

    /// Use this internal provider (give the external one too).
    pub fn internal_executor_provider(mut self, provider: Arc<ExecutorProvider>) -> Self {
        self.internal = Some(provider);
        self
    }

    /// Use this external (listener) provider (give the internal one too).
    pub fn external_executor_provider(mut self, provider: Arc<ExecutorProvider>) -> Self {
        self.external = Some(provider);
        self
    }

    /// Use this scheduled provider.
    pub fn scheduled_executor_provider(mut self, provider: Arc<ScheduledExecutorProvider>) -> Self {
        self.scheduled = Some(provider);
        self
    }

    /// Builds the client, creating the providers it was not given. No thread starts here.
    ///
    /// # Errors
    ///
    /// [`ClientBuildError::UnpairedExecutorProviders`] if only one of the internal and external
    /// providers was given; [`ClientBuildError::InvalidThreadCount`] if a pool the client must
    /// create was given zero threads.
    pub fn build(self) -> Result<PulsarClient, ClientBuildError> {
        let (internal, external, owns_internal_and_external) = match (self.internal, self.external)
        {
            (Some(internal), Some(external)) => (internal, external, false),
            (None, None) => (
                Arc::new(ExecutorProvider::new(
                    self.num_io_threads,
                    INTERNAL_POOL_NAME,
                )?),
                Arc::new(ExecutorProvider::new(
                    self.num_listener_threads,
                    EXTERNAL_POOL_NAME,
                )?),
                true,
            ),
            (internal, _) => {
                return Err(ClientBuildError::UnpairedExecutorProviders {
                    internal_given: internal.is_some(),
                })
            }
        };
        let (scheduled, owns_scheduled) = match self.scheduled {
            Some(scheduled) => (scheduled, false),
            None => (
                Arc::new(ScheduledExecutorProvider::new(
                    self.num_io_threads,
                    SCHEDULED_POOL_NAME,
                )?),
                true,
            ),
        };
        Ok(PulsarClient::from_resources(
            internal,
            external,
            scheduled,
            owns_internal_and_external,
            owns_scheduled,
        ))
    }
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("num_io_threads", &self.num_io_threads)
            .field("num_listener_threads", &self.num_listener_threads)
            .field("internal", &self.internal)
            .field("external", &self.external)
            .field("scheduled", &self.scheduled)
            .finish()
    }
}
