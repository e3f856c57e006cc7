//! The one boundary where the metadata-backed components call user code (listeners,
//! callbacks): a panic is caught here, logged, and goes no further.
//!
//! Components call user code only through [`call_user`], only on their own executor thread (or,
//! for ZooKeeper watch handlers, the session's I/O thread), and never while holding one of their
//! locks; so a panicking listener can neither poison a component's state nor stop its executor
//! half-way through delivering an ordered sequence of events.

use pulsar_common::executors::panic_message;
use std::panic::{self, AssertUnwindSafe};

/// Runs user code `f`, catching a panic; `what` names the callback for the log line.
///
/// Returns `None` when `f` panicked. `AssertUnwindSafe` is sound: the components hand user code
/// only values they do not look at again (an event, a snapshot), so nothing half-updated is
/// observed after a caught panic.
pub(crate) fn call_user<R>(what: &'static str, f: impl FnOnce() -> R) -> Option<R> {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => Some(value),
        Err(payload) => {
            tracing::error!(
                callback = what,
                thread = std::thread::current().name().unwrap_or("<unnamed>"),
                panic = panic_message(payload.as_ref()),
                "a callback panicked; the component keeps running"
            );
            // Dropping the payload could panic in turn (a payload with a panicking `Drop`).
            let _ = panic::catch_unwind(AssertUnwindSafe(move || drop(payload)));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_callback_yields_none_and_a_returning_one_its_value() {
        assert_eq!(call_user("test", || 7), Some(7));
        assert_eq!(call_user("test", || -> u8 { panic!("boom") }), None);
    }
}
