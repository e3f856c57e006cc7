//! Collections of the executor layer.
//!
//! - [`GrowableArrayBlockingQueue`]: unbounded FIFO blocking queue on one power-of-two ring.
//! - [`PutError`] and [`PollTimeoutError`] (`queue_error.rs`): its errors.
//!
//! The ring itself (`Ring`, crate-private) is shared with the executor, whose task queue is
//! the same growable ring behind the executor's own lock and wake-up protocol.

mod growable_array_blocking_queue;
mod queue_error;
pub(crate) mod ring;

pub use growable_array_blocking_queue::GrowableArrayBlockingQueue;
pub use queue_error::{PollTimeoutError, PutError};
