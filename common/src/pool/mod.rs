//! Pooled buffers: per-thread object pools and the byte containers built on them.
//!
//! - [`Recycler`] / [`RecyclerBuilder`] / [`Pooled`]: per-thread pools with bounded
//!   cross-thread return, object and byte caps, a reset hook, and release on thread exit.
//! - [`RecyclerStats`] / [`ThreadPoolStats`]: what a recycler and one thread's pool report.
//! - [`AdaptiveBufAllocator`] / [`AdaptiveHandle`]: predicts the next buffer size from
//!   recent ones, over [`SIZE_TABLE`].
//! - [`ByteBufferCollector`] / [`CollectorPoolConfig`]: a pooled, geometrically growing byte
//!   buffer for assembling one message.
//! - [`RecyclableByteBufferList`] / [`ListPoolConfig`]: a pooled list of `Bytes` slices (the
//!   zero-copy alternative).
//!
//! The design (the cross-thread return protocol and its memory ordering, how the caps hold,
//! what happens when a thread exits or a recycler is dropped) is described in `README.md`
//! beside this file.

mod adaptive_buf_allocator;
mod byte_buffer_collector;
mod pooled;
mod recyclable_byte_buffer_list;
mod recycler;
pub(crate) mod return_queue;
mod shared;
mod size_table;
mod stats;
mod thread_pool;
mod thread_slots;

#[cfg(all(test, loom))]
mod loom_tests;

/// `bytes::Bytes`, re-exported: the slice type of [`RecyclableByteBufferList`], so callers
/// can fill a list without depending on `bytes` themselves.
pub use bytes::Bytes;

pub use adaptive_buf_allocator::{AdaptiveBufAllocator, AdaptiveHandle};
pub use byte_buffer_collector::{ByteBufferCollector, CollectorPoolConfig};
pub use pooled::Pooled;
pub use recyclable_byte_buffer_list::{ListPoolConfig, RecyclableByteBufferList};
pub use recycler::{Recycler, RecyclerBuilder, DEFAULT_MAX_OBJECTS_PER_THREAD};
pub use size_table::{SIZE_TABLE, SIZE_TABLE_LEN};
pub use stats::{RecyclerStats, ThreadPoolStats};
