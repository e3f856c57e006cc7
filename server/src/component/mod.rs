//! The component kit: what every server component uses to own its executor, written once.
//!
//! - [`ComponentExecutor`]: a component's single-thread executor, made from a pool name (or a
//!   user's thread factory) with auto shutdown off, the record of the threads it starts, and
//!   its close: one timeout ([`CLOSE_TIMEOUT`]) and one warning when a task outlives it.
//! - [`threads`]: [`ComponentThreads`](threads::ComponentThreads), the threads a component
//!   started and whether they ended, and the factory wrapper that records them.
//! - [`RetryTimer`](retry_timer::RetryTimer): a lazily started timer that retries a failed
//!   step some time later, one retry armed at a time (leader election, load refreshes).
//! - [`user_code`]: the one panic boundary through which components call user code
//!   (listeners, callbacks, functions, producers, sources), logging what panicked and where.
//!
//! Why one kit: the eight components each wrote their own close sequence, panic boundary and
//! thread tracker, and the copies had drifted apart (return types, timeouts, log lines). With
//! the kit a component's file shows its domain logic; what every component does the same way
//! is here.

mod executor;
pub(crate) mod retry_timer;
pub mod threads;
pub(crate) mod user_code;

pub(crate) use executor::{ComponentExecutor, CLOSE_TIMEOUT};
