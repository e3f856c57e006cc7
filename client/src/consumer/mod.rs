//! The part of a consumer that uses the executors: receive queue, `receive`, and ordered
//! listener dispatch, independent of any transport.
//!
//! - [`Consumer`] (`consumer.rs`): the handle; `deliver` is the call a connection makes.
//! - `dispatch.rs`: the listener trigger on the internal executor, routing to the lanes;
//!   `batch_top_up.rs`: when a routing pass yields its core to let a small batch grow.
//! - `lane.rs`: the messages waiting for one listener executor.
//! - [`ConsumerExecutor`] / [`ConsumerExecutors`] (`executors.rs`): where a consumer hands its
//!   work; [`ConsumerJob`] (`job.rs`): the work. A job keeps its consumer alive with a
//!   `JobTicket` (`ticket.rs`: counted per lane, not per job in the `Arc`; the client's only
//!   `unsafe` code).
//! - [`ConsumerOptions`] / [`SubscriptionType`] (`options.rs`): what a consumer is made with.
//! - [`Message`] (`message.rs`, with short payloads and keys stored inline by
//!   `inline_bytes.rs`) and [`MessageListener`] (`listener.rs`).

mod batch_top_up;
#[allow(clippy::module_inception)]
mod consumer;
mod dispatch;
mod executors;
mod inline_bytes;
mod job;
mod lane;
mod listener;
#[cfg(all(test, loom))]
mod loom_tests;
mod message;
mod options;
mod sync;
mod ticket;

pub use consumer::Consumer;
pub(crate) use consumer::ConsumerShared;
pub use executors::{ConsumerExecutor, ConsumerExecutors, JobRejected};
pub use job::ConsumerJob;
pub use listener::MessageListener;
pub use message::{Message, NONE_KEY};
pub use options::{ConsumerOptions, SubscriptionType};
