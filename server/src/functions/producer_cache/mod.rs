//! [`ProducerCache`]: producers cached by topic and key, with a size bound and idle expiry;
//! evicted ones are flushed and closed on the cache's own `producer-cache` thread (Pulsar's
//! functions `ProducerCache`).
//!
//! - `cache.rs`: the cache and its builder.
//! - `closer.rs`: flushing then closing evicted producers, each step with a timeout
//!   ([`ProducerCloseReport`] counts the outcomes).
//! - `producer.rs`: what a producer is ([`Producer`], [`ProducerFuture`]).

mod cache;
mod closer;
mod producer;

pub use cache::{
    ProducerCache, ProducerCacheBuilder, DEFAULT_CACHE_CLOSE_TIMEOUT, DEFAULT_IDLE_EXPIRY,
    DEFAULT_MAX_PRODUCERS, DEFAULT_OPERATION_TIMEOUT, PRODUCER_CACHE_POOL_NAME,
};
pub use closer::ProducerCloseReport;
pub use producer::{Producer, ProducerFuture};
