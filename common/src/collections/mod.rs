//! Collections of the executor layer.
//!
//! - [`GrowableArrayBlockingQueue`]: unbounded FIFO blocking queue on one power-of-two ring,
//!   with a head lock and a tail lock (its storage, `Slots`, is crate-private).
//!
//! `Ring` (crate-private) is the executor's task queue: a growable ring with the same growth
//! and trim rules, behind the executor's own lock and wake-up protocol.

mod growable_array_blocking_queue;
pub(crate) mod ring;
mod slots;

pub use growable_array_blocking_queue::GrowableArrayBlockingQueue;
