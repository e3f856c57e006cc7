//! `Producer`: what a messaging stack implements so that a `ProducerCache` can hold, flush and close its producers.

use crate::functions::ProducerError;
use std::future::Future;
use std::pin::Pin;

/// The future of a producer operation (`send`, `flush`, `close`).
pub type ProducerFuture = Pin<Box<dyn Future<Output = Result<(), ProducerError>> + Send>>;

/// A producer of one topic, as the functions runtime uses it (Pulsar's `Producer<T>`:
/// `sendAsync`, `flushAsync`, `closeAsync`).
///
/// The methods **start** an operation and return its future; they must not block. The
/// [`ProducerCache`](crate::functions::ProducerCache) calls `flush` and then `close` on an
/// evicted producer on its own executor thread (`producer-cache`) and gives each future a
/// timeout (60 s by default); a future that never completes is dropped at the timeout. A
/// method that blocks anyway holds up the cache's closing thread, though not
/// [`ProducerCache::close`](crate::functions::ProducerCache::close), which gives up after its
/// own timeout.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{Producer, ProducerError, ProducerFuture};
/// use std::sync::Mutex;
///
/// /// Sends into a vector (a stand-in for a broker connection).
/// struct VecProducer {
///     sent: Mutex<Vec<String>>,
/// }
///
/// fn done(result: Result<(), ProducerError>) -> ProducerFuture {
///     Box::pin(std::future::ready(result))
/// }
///
/// impl Producer for VecProducer {
///     type Message = String;
///
///     fn send(&self, message: String) -> ProducerFuture {
///         self.sent.lock().unwrap().push(message);
///         done(Ok(()))
///     }
///
///     fn flush(&self) -> ProducerFuture {
///         done(Ok(()))
///     }
///
///     fn close(&self) -> ProducerFuture {
///         done(Ok(()))
///     }
/// }
///
/// let producer = VecProducer { sent: Mutex::new(Vec::new()) };
/// let _sent = producer.send("hello".to_owned());
/// assert_eq!(producer.sent.lock().unwrap().len(), 1);
/// ```
pub trait Producer: Send + Sync + 'static {
    /// What `send` takes.
    type Message;

    /// Starts sending `message`; the future completes when the message is persisted (or
    /// failed).
    fn send(&self, message: Self::Message) -> ProducerFuture;

    /// Starts flushing the messages sent so far; the future completes when they are
    /// persisted.
    fn flush(&self) -> ProducerFuture;

    /// Starts closing the producer; the future completes when it is closed. Called at most
    /// once by the cache, after `flush` finished, failed or timed out.
    fn close(&self) -> ProducerFuture;
}
