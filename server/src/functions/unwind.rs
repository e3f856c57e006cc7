//! The one boundary where user code is called: its panics are caught here and become values.
//!
//! Functions, result consumers, producers, sources, triggerers and thread factories are user
//! code. The components call them only through [`call_user`] (never under an internal lock), so
//! a panic can neither unwind through a component's bookkeeping nor kill an executor thread
//! half-way through a protocol step.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

/// The payload of a caught panic.
pub(crate) type PanicPayload = Box<dyn Any + Send>;

/// Runs user code, catching a panic.
///
/// `AssertUnwindSafe` is sound here: after a caught panic the components drop or quarantine
/// whatever the user code touched (the record's result becomes an error; a producer is counted
/// as failed), so no broken invariant is observed afterwards.
pub(crate) fn call_user<T>(f: impl FnOnce() -> T) -> Result<T, PanicPayload> {
    panic::catch_unwind(AssertUnwindSafe(f))
}

/// Drops a user value (a future, a producer, a record) whose `Drop` may panic; a panic is
/// logged and swallowed, so the executor's bookkeeping that follows still runs.
pub(crate) fn drop_user<T>(value: T, what: &'static str) {
    if let Err(payload) = call_user(move || drop(value)) {
        tracing::error!(
            what,
            panic = pulsar_common::executors::panic_message(payload.as_ref()),
            "dropping a user value panicked; the panic was swallowed"
        );
    }
}
