//! The errors of `GrowableArrayBlockingQueue`: [`PutError`] (the item handed back) and
//! [`PollTimeoutError`] (a timeout told from a terminated queue).

use std::error::Error;
use std::fmt;

/// [`put`](super::GrowableArrayBlockingQueue::put) on a terminated queue: the item comes back.
///
/// `Debug` and `Display` do not require `T: Debug`, and the error is `Send + Sync` whenever
/// `T: Send` (it never lends out a `&T`), so it fits `Box<dyn Error + Send + Sync>` and
/// `anyhow` for any item that may cross threads.
///
/// # Examples
///
/// ```
/// use pulsar_common::collections::{GrowableArrayBlockingQueue, PutError};
///
/// let queue = GrowableArrayBlockingQueue::new();
/// queue.terminate();
/// let error: PutError<String> = queue.put("late".to_owned()).unwrap_err();
/// assert_eq!(error.to_string(), "put on a terminated queue");
/// assert_eq!(error.into_inner(), "late");
/// ```
pub struct PutError<T>(T);

impl<T> PutError<T> {
    pub(crate) fn new(item: T) -> Self {
        Self(item)
    }

    /// The item that was not queued.
    pub fn into_inner(self) -> T {
        self.0
    }
}

// SAFETY: through a shared `&PutError<T>` no code can reach the item unless `T: Sync`: the
// item is private and leaves only by value (`into_inner`); `Debug`, `Display` and `Error` do not
// read it; the impls that do read it through `&self` (`PartialEq`, `Clone`) exist only for
// `T: Sync`. Sharing a `&PutError<T>` between threads therefore never shares a `&T` of a `T`
// that is not `Sync`, and moving the error (with its item) needs `T: Send`, the bound here.
// This is the reasoning of `std::sync::Exclusive` and tokio's `SyncWrapper`.
unsafe impl<T: Send> Sync for PutError<T> {}

impl<T: PartialEq + Sync> PartialEq for PutError<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<T: Eq + Sync> Eq for PutError<T> {}

impl<T: Clone + Sync> Clone for PutError<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> fmt::Debug for PutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PutError(..)")
    }
}

impl<T> fmt::Display for PutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("put on a terminated queue")
    }
}

impl<T: Send> Error for PutError<T> {}

/// Why [`poll_timeout`](super::GrowableArrayBlockingQueue::poll_timeout) returned no item
/// (crossbeam's `RecvTimeoutError` is the model).
///
/// # Examples
///
/// ```
/// use pulsar_common::collections::{GrowableArrayBlockingQueue, PollTimeoutError};
/// use std::time::Duration;
///
/// let queue = GrowableArrayBlockingQueue::<u32>::new();
/// assert_eq!(queue.poll_timeout(Duration::from_millis(1)), Err(PollTimeoutError::Timeout));
/// queue.terminate();
/// assert_eq!(queue.poll_timeout(Duration::from_secs(60)), Err(PollTimeoutError::Terminated));
/// ```
#[derive(Debug, PartialEq, Eq, Clone, Copy, Hash)]
pub enum PollTimeoutError {
    /// The timeout elapsed with the queue empty; the queue still accepts items.
    Timeout,
    /// The queue is terminated and empty: no item will ever come.
    Terminated,
}

impl PollTimeoutError {
    /// Whether the timeout elapsed (the queue may still receive items).
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout)
    }

    /// Whether the queue is terminated and empty.
    pub fn is_terminated(&self) -> bool {
        matches!(self, Self::Terminated)
    }
}

impl fmt::Display for PollTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Timeout => "timed out waiting on an empty queue",
            Self::Terminated => "the queue is terminated and empty",
        })
    }
}

impl Error for PollTimeoutError {}
