//! `PulsarClient`: a client's executor resources, the consumers made on them, and `close`.

use crate::client_builder::ClientBuilder;
use crate::consumer::{Consumer, ConsumerExecutors, ConsumerOptions, ConsumerShared, Message};
use crate::error::NewConsumerError;
use crate::executor_provider::ExecutorProvider;
use crate::executor_provider::ScheduledExecutorProvider;
use parking_lot::Mutex;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

/// A client's executor resources and the consumers made on them (the executor side of
/// Pulsar's `PulsarClientImpl`).
///
/// - Its internal, external (listener) and scheduled [providers](crate::ExecutorProvider) are
///   either its own or shared with other clients (see [`ClientBuilder`]).
/// - [`new_consumer`](Self::new_consumer) pins the consumer's executors from them.
/// - [`close`](Self::close) closes its consumers, then shuts down exactly the providers it
///   created: clients sharing providers keep working.
///
/// Clones share one client.
///
/// # Examples
///
/// ```
/// use pulsar_client::{ConsumerOptions, Message, PulsarClient};
///
/// let client = PulsarClient::builder().build().unwrap();
/// let consumer = client.new_consumer(ConsumerOptions::new("sub")).unwrap();
/// consumer.deliver(Message::new(*b"hello")).unwrap();
/// assert_eq!(consumer.receive().unwrap().payload(), b"hello");
/// client.close();
/// assert!(consumer.is_closed());
/// assert!(client.internal_executor_provider().is_shutdown());
/// ```
#[derive(Clone)]
pub struct PulsarClient {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    internal: Arc<ExecutorProvider>,
    external: Arc<ExecutorProvider>,
    scheduled: Arc<ScheduledExecutorProvider>,
    /// Whether the client created the internal and external providers (then it shuts them
    /// down on close); they are given together or not at all.
    owns_internal_and_external: bool,
    /// Whether the client created the scheduled provider.
    owns_scheduled: bool,
    /// The consumers made by this client and not yet dropped; pruned as they go.
    consumers: Mutex<Vec<Weak<ConsumerShared>>>,
    closed: AtomicBool,
}

impl PulsarClient {
    /// A builder (thread counts, or shared providers).
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    pub(crate) fn from_resources(
        internal: Arc<ExecutorProvider>,
        external: Arc<ExecutorProvider>,
        scheduled: Arc<ScheduledExecutorProvider>,
        owns_internal_and_external: bool,
        owns_scheduled: bool,
    ) -> Self {
        Self {
            inner: Arc::new(ClientInner {
                internal,
                external,
                scheduled,
                owns_internal_and_external,
                owns_scheduled,
                consumers: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// The internal provider (consumers' triggers and other client work).
    pub fn internal_executor_provider(&self) -> &Arc<ExecutorProvider> {
        &self.inner.internal
    }

    /// The external provider (message listeners).
    pub fn external_executor_provider(&self) -> &Arc<ExecutorProvider> {
        &self.inner.external
    }

    /// The scheduled provider (delayed and periodic work).
    pub fn scheduled_executor_provider(&self) -> &Arc<ScheduledExecutorProvider> {
        &self.inner.scheduled
    }

    /// Whether the client created (and so will shut down) its internal and external providers.
    pub fn owns_internal_and_external_providers(&self) -> bool {
        self.inner.owns_internal_and_external
    }

    /// Whether the client created (and so will shut down) its scheduled provider.
    pub fn owns_scheduled_provider(&self) -> bool {
        self.inner.owns_scheduled
    }

    /// A consumer whose internal and listener executors are pinned from this client's providers
    /// (round robin), with the whole listener pool for Key_Shared.
    ///
    /// # Errors
    ///
    /// [`NewConsumerError::ClientClosed`] once the client is closed.
    pub fn new_consumer(&self, options: ConsumerOptions) -> Result<Consumer, NewConsumerError> {
        let mut consumers = self.inner.consumers.lock();
        if self.is_closed() {
            return Err(NewConsumerError::ClientClosed);
        }
        let executors =
            ConsumerExecutors::from_providers(&self.inner.internal, &self.inner.external);
        let consumer = Consumer::new(options, executors);
        consumers.retain(|weak| weak.strong_count() > 0);
        consumers.push(consumer.downgrade());
        Ok(consumer)
    }

    /// Closes the client: closes every consumer it made (and returns the messages they had not
    /// yet handed out, consumer by consumer), then shuts down the providers it created
    /// (`shutdown_now`, waiting up to 10 s for each provider's executors to terminate: up to
    /// 30 s in all for the internal, listener and scheduled providers). Providers it was given
    /// are left running. Idempotent: later calls return nothing.
    pub fn close(&self) -> Vec<Message> {
        let consumers = {
            let mut consumers = self.inner.consumers.lock();
            if self.inner.closed.swap(true, Ordering::AcqRel) {
                return Vec::new();
            }
            std::mem::take(&mut *consumers)
        };
        let mut returned = Vec::new();
        for consumer in consumers.iter().filter_map(Weak::upgrade) {
            returned.extend(Consumer::from_shared(consumer).close());
        }
        // Tasks still queued are dropped: listener jobs leave their messages in the lanes,
        // which the consumers' `close` already emptied.
        if self.inner.owns_internal_and_external {
            drop(self.inner.internal.shutdown_now());
            drop(self.inner.external.shutdown_now());
        }
        if self.inner.owns_scheduled {
            drop(self.inner.scheduled.shutdown_now());
        }
        returned
    }

    /// Whether [`close`](Self::close) has been called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }
}

impl fmt::Debug for PulsarClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PulsarClient")
            .field("internal", &self.inner.internal)
            .field("external", &self.inner.external)
            .field("scheduled", &self.inner.scheduled)
            .field(
                "owns_internal_and_external",
                &self.inner.owns_internal_and_external,
            )
            .field("owns_scheduled", &self.inner.owns_scheduled)
            .field("closed", &self.is_closed())
            .finish()
    }
}
