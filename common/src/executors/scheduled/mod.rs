//! The scheduled executor: one lazily started thread for immediate, delayed and periodic tasks.
//!
//! - [`ScheduledExecutor`] (`scheduled_executor.rs`): the handle users hold; clones share one
//!   executor.
//! - `Timers` (`timers.rs`): what the worker does between batches of immediate tasks — fire
//!   the timers that fell due — as the parameter of the executor core shared with the plain
//!   executor (`ScheduledCore` is `ExecutorCore<Timers>`).
//! - `scheduled_core.rs`: the scheduled executor's own operations on that core: arm, cancel,
//!   re-arm, fire.
//! - `TimerWheel` (`timer_wheel.rs`): the delay structure, a hierarchical timing wheel whose
//!   slot lists link the entries themselves (each knows its list), so `cancel` unlinks and
//!   frees an entry in O(1) and the wheel allocates nothing per timer.
//! - `DueNowLane` (`due_now_lane.rs`): beside the wheel's levels, the timers that were due
//!   when armed, in firing order (a `schedule(Duration::ZERO, ..)` stream costs the worker one
//!   append per pass).
//! - `due_stream.rs`: whether the worker waits a moment for more zero-delay timers before it
//!   takes the producers' lock (while they stream in).
//! - `EntryBlocks` (`entry_blocks.rs`): the memory of fired entries, handed back to the
//!   producers for their next timers (a stream of fire-and-forget timers allocates nothing).
//! - `TimerEntry` (`timer_entry.rs`): one delayed or periodic task, its state machine and its
//!   outcome.
//! - [`ScheduledHandle`] (`scheduled_handle.rs`): cancel, poll or join a scheduled task.
//!
//! The design (why a wheel, what a cancel costs, the lock order, the cancel-vs-fire protocol)
//! is described in `README.md` beside this file.

mod core_share;
mod due_now_lane;
mod due_stream;
mod entry_blocks;

mod scheduled_core;
mod scheduled_executor;
mod scheduled_handle;
mod timer_entry;
mod timer_ref;
mod timer_wheel;
pub(crate) mod timers;

#[cfg(all(test, loom))]
mod loom_tests;

pub use scheduled_executor::ScheduledExecutor;
pub use scheduled_handle::ScheduledHandle;
