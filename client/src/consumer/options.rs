//! `ConsumerOptions` and `SubscriptionType`: what a consumer is made with.

use crate::consumer::MessageListener;
use std::fmt;
use std::sync::Arc;

/// How a subscription shares messages among its consumers; here it decides how a consumer
/// with a listener spreads messages over listener executors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubscriptionType {
    /// One consumer (Pulsar's default). All messages on the pinned listener executor.
    #[default]
    Exclusive,
    /// Active/standby consumers. All messages on the pinned listener executor.
    Failover,
    /// Round-robin among consumers. All messages on the pinned listener executor.
    Shared,
    /// Per-key among consumers. Each message on the listener executor chosen by its routing
    /// key ([`Message::routing_key_bytes`](crate::Message::routing_key_bytes)), so one key's
    /// messages stay in order while keys spread over threads.
    KeyShared,
}

/// What a consumer is made with.
///
/// # Examples
///
/// ```
/// use pulsar_client::{Consumer, ConsumerOptions, Message, SubscriptionType};
///
/// let options = ConsumerOptions::new("orders-sub")
///     .subscription_type(SubscriptionType::KeyShared)
///     .message_listener(|_: &Consumer, message: Message| {
///         let _ = message.key();
///     });
/// assert_eq!(options.name(), "orders-sub");
/// assert!(options.has_listener());
/// ```
#[derive(Clone)]
pub struct ConsumerOptions {
    name: String,
    subscription_type: SubscriptionType,
    listener: Option<Arc<dyn MessageListener>>,
}

impl ConsumerOptions {
    /// Options for a consumer called `name` (used in logs), `Exclusive`, without a listener.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            subscription_type: SubscriptionType::default(),
            listener: None,
        }
    }

    /// Sets the subscription type.
    pub fn subscription_type(mut self, subscription_type: SubscriptionType) -> Self {
        self.subscription_type = subscription_type;
        self
    }

    /// Sets a listener: messages then go to it instead of to `receive`.
    pub fn message_listener(mut self, listener: impl MessageListener) -> Self {
        self.listener = Some(Arc::new(listener));
        self
    }

    /// The consumer's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The subscription type.
    pub fn get_subscription_type(&self) -> SubscriptionType {
        self.subscription_type
    }

    /// Whether a listener is set.
    pub fn has_listener(&self) -> bool {
        self.listener.is_some()
    }

    pub(crate) fn into_parts(self) -> (String, SubscriptionType, Option<Arc<dyn MessageListener>>) {
        (self.name, self.subscription_type, self.listener)
    }
}

impl fmt::Debug for ConsumerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConsumerOptions")
            .field("name", &self.name)
            .field("subscription_type", &self.subscription_type)
            .field("has_listener", &self.listener.is_some())
            .finish()
    }
}
