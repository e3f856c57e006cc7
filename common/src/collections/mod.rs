//! Collections of the executor layer.
//!
//! - [`GrowableArrayBlockingQueue`]: unbounded FIFO blocking queue with lock-free producers.
//! - [`PutError`] and [`PollTimeoutError`] (`queue_error.rs`): its errors.
//!
//! The growable ring (`Ring`, crate-private) is the executor's task queue, behind the
//! executor's own lock and wake-up protocol.

mod growable_array_blocking_queue;
mod queue_error;
pub(crate) mod ring;

pub use growable_array_blocking_queue::GrowableArrayBlockingQueue;
pub use queue_error::{PollTimeoutError, PutError};
