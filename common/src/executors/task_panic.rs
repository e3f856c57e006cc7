//! `TaskPanic`: the payload of a task's panic, kept so that the error carrying it stays `Sync`.

use crate::executors::thread_factory::panic_message;
use std::any::Any;
use std::fmt;
use std::sync::{Mutex, PoisonError};

/// The panic of a task, as [`TaskError::Panicked`](crate::executors::TaskError::Panicked)
/// carries it: the panic's message, readable through `&self`, and its payload, reachable only
/// through `&mut self` or by value.
///
/// A panic payload is a `Box<dyn Any + Send>`, which is not `Sync`: sharing `&dyn Any` between
/// threads could expose a value that is not `Sync` to two threads at once. Keeping it where
/// only an exclusive reference (or ownership) reaches it makes `TaskPanic` `Sync` all the
/// same (as tokio's `JoinError` does), so that [`TaskError`](crate::executors::TaskError)
/// converts into `Box<dyn Error + Send + Sync>` and `anyhow::Error`. The message is read out
/// of the payload once, when the panic is caught.
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::{PulsarExecutors, TaskError};
///
/// let executor = PulsarExecutors::new_single_thread_executor();
/// let failed = executor.submit(|| -> u32 { panic!("bad input") }).unwrap();
/// let Err(TaskError::Panicked(mut panic)) = failed.join() else { unreachable!() };
/// assert_eq!(panic.message(), "bad input");
/// assert_eq!(panic.downcast_mut::<&str>(), Some(&mut "bad input"));
/// // Re-raise it where it belongs: `std::panic::resume_unwind(panic.into_inner())`.
/// let payload = panic.into_inner();
/// assert_eq!(payload.downcast_ref::<&str>(), Some(&"bad input"));
/// ```
pub struct TaskPanic {
    /// Boxed: keeps `TaskError` (and every `Result<R, TaskError>`) two words of payload wide.
    inner: Box<Inner>,
}

struct Inner {
    /// The panic's message (`"<non-string panic payload>"` when it was not a string).
    message: String,
    /// The payload, behind a lock that is never taken: `Mutex<T>` is `Sync` for any `T: Send`,
    /// and `get_mut` / `into_inner` reach the value without locking. (Nothing locks it, so it
    /// is never poisoned; the poison case is handled anyway.)
    payload: Mutex<Box<dyn Any + Send>>,
}

impl TaskPanic {
    /// Wraps a caught panic's payload, reading its message.
    pub fn new(payload: Box<dyn Any + Send>) -> Self {
        let message = panic_message(payload.as_ref()).to_owned();
        Self {
            inner: Box::new(Inner {
                message,
                payload: Mutex::new(payload),
            }),
        }
    }

    /// The panic's message: the string given to `panic!`, or `"<non-string panic payload>"`.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// The payload as a `T`, if it is one.
    pub fn downcast_mut<T: Any>(&mut self) -> Option<&mut T> {
        self.payload_mut().downcast_mut::<T>()
    }

    /// The payload itself (to re-raise it with `std::panic::resume_unwind`).
    pub fn into_inner(self) -> Box<dyn Any + Send> {
        self.inner
            .payload
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The payload as a `T`, or the panic unchanged if it is not one.
    ///
    /// # Errors
    ///
    /// `self` back when the payload is not a `T`.
    pub fn downcast<T: Any>(mut self) -> Result<Box<T>, Self> {
        if self.payload_mut().is::<T>() {
            Ok(self.into_inner().downcast::<T>().expect("checked above"))
        } else {
            Err(self)
        }
    }

    fn payload_mut(&mut self) -> &mut (dyn Any + Send) {
        &mut **self
            .inner
            .payload
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for TaskPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TaskPanic").field(&self.message()).finish()
    }
}

impl fmt::Display for TaskPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn a_task_panic_is_send_and_sync_and_keeps_its_payload() {
        assert_send_sync::<TaskPanic>();
        let mut panic = TaskPanic::new(Box::new(String::from("boom")));
        assert_eq!(panic.message(), "boom");
        assert_eq!(
            panic.downcast_mut::<String>().map(|s| s.as_str()),
            Some("boom")
        );
        let panic = panic.downcast::<u32>().unwrap_err();
        assert_eq!(*panic.downcast::<String>().unwrap(), "boom");
    }

    #[test]
    fn a_non_string_payload_has_a_placeholder_message() {
        let panic = TaskPanic::new(Box::new(7u8));
        assert_eq!(panic.message(), "<non-string panic payload>");
        assert_eq!(
            format!("{panic:?}"),
            "TaskPanic(\"<non-string panic payload>\")"
        );
        assert_eq!(*panic.into_inner().downcast::<u8>().unwrap(), 7);
    }
}
