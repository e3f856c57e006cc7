//! Test fixtures shared by the workspace's test suites (a dev-dependency only; it depends on
//! no crate of the workspace, so each suite's types stay its own).
//!
//! - [`DropCounter`] / [`Token`]: prove every value is dropped exactly once;
//!   [`PanickingToken`]: the same, for a value whose `Drop` panics.
//! - [`block_worker_with`]: occupy an executor's worker until the test lets it go.
//! - [`Latch`]: a count-down latch whose wait fails the test instead of hanging.
//! - [`thread_count`] / [`wait_for_thread_count_at_most`]: the process's threads, from /proc.
//! - [`capture_warnings`]: the WARN and ERROR `tracing` events a closure emits.
//! - [`LONG`]: the bound on waits that only expire when there is a bug.
//! - [`alloc`]: the counting global allocator (per-thread counters, snapshots) that the
//!   benches and the allocation-asserting tests install.
//! - [`zookeeper`]: throwaway ZooKeeper servers and ensembles on loopback, to kill and restart
//!   (`cargo xtask test` starts its server with it too).

pub mod alloc;
mod blocking;
mod drop_counter;
mod latch;
mod threads;
mod warnings;
pub mod zookeeper;

pub use blocking::block_worker_with;
pub use drop_counter::{DropCounter, PanickingToken, Token};
pub use latch::Latch;
pub use threads::{thread_count, wait_for_thread_count_at_most};
pub use warnings::capture_warnings;

/// Generous bound on waits that only expire when there is a bug (never a timing assertion).
pub const LONG: std::time::Duration = std::time::Duration::from_secs(30);
