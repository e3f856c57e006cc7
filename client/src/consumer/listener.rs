//! `MessageListener`: the callback a consumer hands its messages to.

use crate::consumer::{Consumer, Message};

/// Receives a consumer's messages on a listener executor thread.
///
/// Messages of one consumer arrive in delivery order on its pinned listener executor; for a
/// Key_Shared consumer, in delivery order per routing key (messages with different keys may be
/// handled on different threads at once). A panic is caught, logged and counted
/// ([`Consumer::listener_panics`]); delivery goes on with the next message. The listener may
/// call back into the consumer (even [`Consumer::close`]).
///
/// Any `Fn(&Consumer, Message) + Send + Sync + 'static` closure is a listener.
///
/// # Examples
///
/// ```
/// use pulsar_client::{Consumer, Message, MessageListener};
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// struct Counter(AtomicUsize);
///
/// impl MessageListener for Counter {
///     fn received(&self, _consumer: &Consumer, _message: Message) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
///
/// let by_closure = |consumer: &Consumer, message: Message| {
///     println!("{}: {} bytes", consumer.name(), message.payload().len());
/// };
/// # fn is_listener(_: impl MessageListener) {}
/// # is_listener(Counter(AtomicUsize::new(0)));
/// # is_listener(by_closure);
/// ```
pub trait MessageListener: Send + Sync + 'static {
    /// Handles one message.
    fn received(&self, consumer: &Consumer, message: Message);
}

impl<F> MessageListener for F
where
    F: Fn(&Consumer, Message) + Send + Sync + 'static,
{
    fn received(&self, consumer: &Consumer, message: Message) {
        self(consumer, message)
    }
}
