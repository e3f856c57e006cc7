//! Client-side executor resources of a Pulsar-style messaging client.
//!
//! - [`ExecutorProvider`] / [`ScheduledExecutorProvider`]: N single-thread executors (plain or
//!   scheduled) from `pulsar_common`'s factory, picked round robin or by key — by key bytes
//!   with Murmur3, the executor index Pulsar's Java client picks for the same bytes.
//! - [`PulsarClient`] / [`ClientBuilder`]: a client's internal, listener and scheduled
//!   providers, its own or shared with other clients; `close` shuts down only its own.
//! - [`Consumer`]: a receive queue fed by [`Consumer::deliver`] (the call a connection makes),
//!   `receive`, and ordered dispatch to a [`MessageListener`] on the listener executors
//!   (per key, for Key_Shared); `close` loses no message.
//!
//! Plain hand-offs never go through a delay heap: the internal and listener pools are plain
//! single-thread executors, and only delayed or periodic work goes to the scheduled provider —
//! the split Pulsar made in apache/pulsar#16236 (a consumer's read rate went from ~265k to
//! ~1M msg/s). `microbench`'s `consumer_dispatch` bench measures it here.
//!
//! # Examples
//!
//! ```
//! use pulsar_client::{Consumer, ConsumerOptions, Message, PulsarClient, SubscriptionType};
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! let client = PulsarClient::builder().num_listener_threads(2).build()?;
//! let handled = Arc::new(AtomicUsize::new(0));
//! let counter = Arc::clone(&handled);
//! let consumer = client.new_consumer(
//!     ConsumerOptions::new("events")
//!         .subscription_type(SubscriptionType::KeyShared)
//!         .message_listener(move |_: &Consumer, _: Message| {
//!             counter.fetch_add(1, Ordering::SeqCst);
//!         }),
//! )?;
//! for i in 0..100 {
//!     consumer.deliver(Message::new(vec![1]).with_key(format!("key-{}", i % 10)))?;
//! }
//!
//! // A retry, 1 ms later, on the scheduled provider.
//! let retry = client
//!     .scheduled_executor_provider()
//!     .get_executor()
//!     .schedule(Duration::from_millis(1), || "retried")?;
//! assert_eq!(retry.join()?, "retried");
//!
//! let undelivered = client.close(); // closes the consumer, stops the client's executors
//! assert_eq!(handled.load(Ordering::SeqCst) + undelivered.len(), 100);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(unsafe_code)]
#![warn(rust_2018_idioms)]

mod client;
mod client_builder;
mod consumer;
mod error;
mod executor_index;
mod executor_provider;
mod murmur3;

pub use client::PulsarClient;
pub use client_builder::{
    ClientBuilder, EXTERNAL_POOL_NAME, INTERNAL_POOL_NAME, SCHEDULED_POOL_NAME,
};
pub use consumer::{
    Consumer, ConsumerExecutor, ConsumerExecutors, ConsumerJob, ConsumerOptions, JobRejected,
    Message, MessageListener, SubscriptionType, NONE_KEY,
};
pub use error::{
    ClientBuildError, DeliverError, InvalidThreadCount, NewConsumerError, ReceiveError,
};
pub use executor_provider::{ExecutorPool, ExecutorProvider, ScheduledExecutorProvider};
pub use murmur3::murmur3_32;
