//! The one boundary where components call user code: a panic is caught here, logged (what
//! panicked, on which thread, with its message), and goes no further.
//!
//! User code is every listener, callback, function, result consumer, producer, source,
//! triggerer and thread factory the components are given. They call it only through this
//! module, only on their own threads (or, for ZooKeeper watch handlers, the session's I/O
//! thread), and never while holding one of their locks; so a panic can neither poison a
//! component's state, nor unwind through its bookkeeping, nor stop its executor half-way
//! through delivering an ordered sequence of events.
//!
//! Two ways through, one boundary: [`catch_user`] hands the payload back for a component that
//! turns it into an error value (a record's result, a source error); [`call_user`] drops it
//! for one that goes on (a listener). [`drop_user`] drops a value whose `Drop` is user code.

use pulsar_common::executors::panic_message;
use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

/// The payload of a caught panic.
pub(crate) type PanicPayload = Box<dyn Any + Send>;

/// Runs user code `f`; a panic is caught, logged, and its payload handed back. `what` names
/// the call for the log line (`"metadata store listener"`, `"BatchSource::discover"`).
///
/// `AssertUnwindSafe` is sound: the components hand user code only values they do not look
/// at again (an event, a snapshot, a record), and after a caught panic they drop or quarantine
/// whatever it touched (the record's result becomes an error; a producer is counted as
/// failed), so nothing half-updated is observed afterwards.
pub(crate) fn catch_user<T>(what: &'static str, f: impl FnOnce() -> T) -> Result<T, PanicPayload> {
    panic::catch_unwind(AssertUnwindSafe(f)).inspect_err(|payload| {
        tracing::error!(
            callback = what,
            thread = std::thread::current().name().unwrap_or("<unnamed>"),
            panic = panic_message(payload.as_ref()),
            "user code panicked; the component keeps running"
        );
    })
}

/// Runs user code `f` as [`catch_user`] does, for a caller that goes on after a panic: `None`
/// when `f` panicked (logged; the payload is dropped).
pub(crate) fn call_user<T>(what: &'static str, f: impl FnOnce() -> T) -> Option<T> {
    catch_user(what, f).map_err(discard).ok()
}

/// Drops a user value (a future, a producer, a record, a listener) whose `Drop` may panic; a
/// panic is logged and swallowed, so the bookkeeping that follows still runs.
pub(crate) fn drop_user<T>(value: T, what: &'static str) {
    call_user(what, move || drop(value));
}

/// Drops a panic payload, whose own `Drop` could panic in turn; that second panic is caught
/// and its payload leaked rather than risk a third.
fn discard(payload: PanicPayload) {
    if let Err(again) = panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(again);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_caught_and_its_payload_handed_back_or_dropped() {
        assert_eq!(call_user("test", || 7), Some(7));
        assert_eq!(call_user("test", || -> u8 { panic!("boom") }), None);
        let payload = catch_user("test", || -> u8 { panic!("boom") }).unwrap_err();
        assert_eq!(panic_message(payload.as_ref()), "boom");
    }

    #[test]
    fn a_value_whose_drop_panics_is_dropped_without_unwinding() {
        use std::sync::atomic::{AtomicBool, Ordering};
        static DROPPED: AtomicBool = AtomicBool::new(false);
        struct PanicsOnDrop;
        impl Drop for PanicsOnDrop {
            fn drop(&mut self) {
                DROPPED.store(true, Ordering::SeqCst);
                panic!("drop");
            }
        }
        drop_user(PanicsOnDrop, "test value");
        assert!(DROPPED.load(Ordering::SeqCst));
    }
}
