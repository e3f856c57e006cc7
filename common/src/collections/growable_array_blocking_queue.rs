//! `GrowableArrayBlockingQueue`: an unbounded FIFO MPMC blocking queue on one growable ring.

use crate::collections::queue_error::{PollTimeoutError, PutError};
use crate::collections::ring::{Ring, MIN_TRIM_CAPACITY};
use crate::idle_spin;
use crate::sync::{AtomicBool, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering};
use std::fmt;
use std::time::{Duration, Instant};

/// An unbounded, multi-producer multi-consumer FIFO blocking queue on one power-of-two ring
/// buffer — the Rust counterpart of Pulsar's `GrowableArrayBlockingQueue`.
///
/// - [`put`](Self::put) never blocks: when the ring is full it doubles, keeping FIFO order
///   across wrap-around. Items are stored in place, so a queue that has grown to fit its
///   workload allocates nothing per item.
/// - [`take`](Self::take) blocks until an item arrives; [`poll`](Self::poll) never blocks;
///   [`poll_timeout`](Self::poll_timeout) waits at most a given time.
/// - [`trim`](Self::trim) gives memory back after a burst, by Pulsar's rule, without ever
///   waiting for a busy lock.
/// - [`terminate`](Self::terminate) wakes every blocked taker; afterwards `put` hands items back
///   in a [`PutError`], and `poll_timeout` tells a terminated queue
///   ([`PollTimeoutError::Terminated`]) from a timeout ([`PollTimeoutError::Timeout`]).
///
/// Every item is dropped exactly once: when taken out and dropped by the caller, or with the
/// queue.
///
/// # Design
///
/// One lock guards the ring (Pulsar uses a head and a tail lock). With one ring that grows and
/// shrinks, one short critical section per operation is simpler to prove, but producer and
/// consumer contend for it (the `queue` benchmark compares it with crossbeam, flume and std).
/// The executor does not use this type's lock discipline: its worker swaps the whole ring out
/// in O(1) and claims tasks lock-free.
///
/// `len` and `terminated` mirror the locked state so that `len`/`is_empty`/`is_terminated`
/// never take the lock. A taker that finds the queue empty first spins on those two mirrors
/// for a short, adaptive bound (the crate's one spin policy, `idle_spin`: at most 50
/// microseconds while spinning wins on the taker's thread, a few microseconds with an
/// occasional full probe while it does not, never yielding the core), so that an
/// item put within the spin is handed over without either side making a system call. Only
/// then does it lock, look again, count itself in `waiting` under the lock and wait on
/// `not_empty`; `put` signals only when somebody waits, so a producer makes no wake-up call
/// while consumers keep up. The spin reads hints only: whatever it sees, the taker decides
/// under the lock, so the wake-up protocol is the lock's (modelled in `tests/loom_queue.rs`,
/// where the spin is off).
///
/// # Examples
///
/// ```
/// use pulsar_common::collections::GrowableArrayBlockingQueue;
/// use std::sync::Arc;
/// use std::thread;
///
/// let queue = Arc::new(GrowableArrayBlockingQueue::new());
/// let consumer = {
///     let queue = Arc::clone(&queue);
///     thread::spawn(move || {
///         let mut sum = 0;
///         while let Some(n) = queue.take() {
///             sum += n;
///         }
///         sum
///     })
/// };
/// for n in 1..=100 {
///     queue.put(n).unwrap();
/// }
/// queue.terminate(); // the consumer drains what is left, then `take` returns `None`
/// assert_eq!(consumer.join().unwrap(), 5050);
/// assert_eq!(queue.put(1).unwrap_err().into_inner(), 1); // handed back after terminate
/// ```
pub struct GrowableArrayBlockingQueue<T> {
    /// The ring and the count of blocked takers.
    state: Mutex<QueueState<T>>,
    /// Signalled when an item arrives (only while `waiting > 0`) and on terminate.
    not_empty: Condvar,
    /// Number of items; written under the lock, read without it.
    len: AtomicUsize,
    /// Set once by `terminate`; written under the lock, read without it.
    terminated: AtomicBool,
}

struct QueueState<T> {
    ring: Ring<T>,
    /// Takers blocked in `take`/`poll_timeout`.
    waiting: usize,
    terminated: bool,
}

impl<T> GrowableArrayBlockingQueue<T> {
    /// An empty queue with 64 slots.
    pub fn new() -> Self {
        Self::with_capacity(MIN_TRIM_CAPACITY)
    }

    /// An empty queue with `capacity` slots, rounded up to a power of two (at least 1).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            state: Mutex::new(QueueState {
                ring: Ring::with_capacity(capacity),
                waiting: 0,
                terminated: false,
            }),
            not_empty: Condvar::new(),
            len: AtomicUsize::new(0),
            terminated: AtomicBool::new(false),
        }
    }

    /// Appends `item` at the tail. Never blocks (the ring grows when full).
    ///
    /// # Errors
    ///
    /// Hands `item` back in a [`PutError`] (see [`PutError::into_inner`]) once the queue has
    /// been [terminated](Self::terminate).
    pub fn put(&self, item: T) -> Result<(), PutError<T>> {
        let mut state = self.state.lock();
        if state.terminated {
            return Err(PutError::new(item));
        }
        state.ring.push_back(item);
        self.len.store(state.ring.len(), Ordering::Release);
        let wake = state.waiting > 0;
        drop(state);
        if wake {
            self.not_empty.notify_one();
        }
        Ok(())
    }

    /// Removes the head if there is one. Never blocks.
    pub fn poll(&self) -> Option<T> {
        if self.len.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut state = self.state.lock();
        self.pop_locked(&mut state)
    }

    /// Removes the head, waiting up to `timeout` for one to arrive.
    ///
    /// # Errors
    ///
    /// [`PollTimeoutError::Timeout`] when `timeout` elapses with the queue empty;
    /// [`PollTimeoutError::Terminated`] at once when the queue is terminated and empty (items
    /// queued before [`terminate`](Self::terminate) are still returned first).
    pub fn poll_timeout(&self, timeout: Duration) -> Result<T, PollTimeoutError> {
        // A timeout too long to represent as an instant is no timeout at all.
        self.wait_for_item(Instant::now().checked_add(timeout))
    }

    /// Removes the head, blocking until an item arrives.
    ///
    /// Returns `None` only once the queue is terminated and empty.
    pub fn take(&self) -> Option<T> {
        self.wait_for_item(None).ok()
    }

    /// `take` (no deadline) and `poll_timeout`: pop if there is an item; else spin briefly on
    /// the lock-free `len`/`terminated` mirrors (`idle_spin`), then wait on
    /// `not_empty` as a counted waiter until an item, terminate or the deadline.
    fn wait_for_item(&self, deadline: Option<Instant>) -> Result<T, PollTimeoutError> {
        if self.len.load(Ordering::Relaxed) == 0 && !self.terminated.load(Ordering::Relaxed) {
            let limit = deadline.map_or(Duration::MAX, |deadline| {
                deadline.saturating_duration_since(Instant::now())
            });
            if !limit.is_zero() {
                idle_spin::spin_for_work(
                    || {
                        self.len.load(Ordering::Relaxed) != 0
                            || self.terminated.load(Ordering::Relaxed)
                    },
                    limit,
                );
            }
        }
        let mut state = self.state.lock();
        loop {
            if let Some(item) = self.pop_locked(&mut state) {
                return Ok(item);
            }
            if state.terminated {
                return Err(PollTimeoutError::Terminated);
            }
            state = match deadline {
                None => self.wait_locked(state, None),
                Some(deadline) => {
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    if remaining.is_zero() {
                        return Err(PollTimeoutError::Timeout);
                    }
                    self.wait_locked(state, Some(remaining))
                }
            };
        }
    }

    /// Waits on `not_empty` (at most `timeout`), counted in `waiting` so that `put` notifies.
    fn wait_locked<'a>(
        &self,
        mut state: MutexGuard<'a, QueueState<T>>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, QueueState<T>> {
        state.waiting += 1;
        let mut state = match timeout {
            None => self.not_empty.wait(state),
            Some(timeout) => self.not_empty.wait_timeout(state, timeout).0,
        };
        state.waiting -= 1;
        state
    }

    fn pop_locked(&self, state: &mut QueueState<T>) -> Option<T> {
        let item = state.ring.pop_front()?;
        self.len.store(state.ring.len(), Ordering::Release);
        Some(item)
    }

    /// Moves up to `max` items, head first, to the end of `out`. Returns how many moved.
    pub fn drain_to(&self, out: &mut Vec<T>, max: usize) -> usize {
        if max == 0 {
            return 0;
        }
        let mut state = self.state.lock();
        let moved = state.ring.drain_to(out, max);
        self.len.store(state.ring.len(), Ordering::Release);
        moved
    }

    /// Number of items queued now.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Whether no item is queued now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slots allocated now (a power of two).
    pub fn capacity(&self) -> usize {
        self.state.lock().ring.capacity()
    }

    /// Removes and drops every item (after releasing the lock, so an item's `Drop` may use the
    /// queue). The capacity stays as it is; see [`trim`](Self::trim).
    pub fn clear(&self) {
        let removed = {
            let mut state = self.state.lock();
            let removed = state.ring.take_all();
            self.len.store(0, Ordering::Release);
            removed
        };
        drop(removed);
    }

    /// A consistent snapshot of the queued items, head first.
    pub fn to_vec(&self) -> Vec<T>
    where
        T: Clone,
    {
        let state = self.state.lock();
        state.ring.iter().cloned().collect()
    }

    /// Gives memory back after a burst, by Pulsar's rule: only when capacity > 64 and
    /// `len <= capacity / 4`, shrink to the smallest power of two >= max(64, 2 * len).
    ///
    /// Never waits for a busy lock: returns 0 then. Returns the number of slots freed.
    pub fn trim(&self) -> usize {
        match self.state.try_lock() {
            Some(mut state) => state.ring.trim(),
            None => 0,
        }
    }

    /// Stops accepting items and wakes every blocked taker. Items already queued can still be
    /// taken; afterwards `take` returns `None` instead of blocking on an empty queue.
    pub fn terminate(&self) {
        let mut state = self.state.lock();
        state.terminated = true;
        self.terminated.store(true, Ordering::Release);
        drop(state);
        self.not_empty.notify_all();
    }

    /// Whether [`terminate`](Self::terminate) has been called.
    pub fn is_terminated(&self) -> bool {
        self.terminated.load(Ordering::Acquire)
    }
}

impl<T> Default for GrowableArrayBlockingQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for GrowableArrayBlockingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrowableArrayBlockingQueue")
            .field("len", &self.len())
            .field("terminated", &self.is_terminated())
            .finish_non_exhaustive()
    }
}
