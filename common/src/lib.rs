//! Allocation-lean single-thread executors on a growable array queue.
//!
//! `pulsar-common` is the foundation of the workspace:
//!
//! - [`collections::GrowableArrayBlockingQueue`]: an unbounded FIFO blocking queue whose
//!   producers never lock, with a power-of-two capacity that grows by doubling and can be
//!   trimmed back, on recycled storage blocks (no allocation per item).
//! - [`executors::PulsarExecutors`]: single-thread executors whose worker starts lazily, runs
//!   tasks in FIFO order, stores small closures inline in the ring (no allocation per task once
//!   the ring has grown), gives memory back after a burst, and never loses or double-runs a task
//!   when shutdown races with submission.
//!
//! # Examples
//!
//! ```
//! use pulsar_common::executors::PulsarExecutors;
//! use std::time::Duration;
//!
//! let executor = PulsarExecutors::new_single_thread_executor();
//! let handle = executor.submit(|| 6 * 7).unwrap();
//! assert_eq!(handle.join().unwrap(), 42);
//!
//! executor.shutdown();
//! assert!(executor.await_termination(Duration::from_secs(10)));
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(rust_2018_idioms)]

// The growable queue's positions are `usize` counters shifted left by two bits: on a 64-bit
// target they cannot wrap in practice (2^62 puts), on a 32-bit one they would after about a
// billion puts, and the queue does not handle the wrap (its item counts would underflow).
// Until it does, a 32-bit build is refused here rather than left to misbehave at run time.
#[cfg(not(target_pointer_width = "64"))]
compile_error!(
    "pulsar-common supports 64-bit targets only: see growable_array_blocking_queue.rs (positions)"
);

pub mod collections;
// Used by `claim_fence` (Linux) and `prefetch` (x86-64), neither of which is compiled under
// loom or Miri.
#[cfg_attr(
    not(all(any(target_os = "linux", target_arch = "x86_64"), not(loom), not(miri))),
    allow(dead_code)
)]
pub(crate) mod decided_once;
pub mod executors;
pub(crate) mod idle_spin;
// Under loom the protocols lock through loom's types: only the plain locks use this one.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) mod park_lock;
pub mod pool;
pub(crate) mod prefetch;
pub(crate) mod sync;
