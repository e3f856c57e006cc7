//! `GrowableArrayBlockingQueue`: an unbounded FIFO MPMC blocking queue on one growable ring.

use crate::collections::queue_error::{PollTimeoutError, PutError};
use crate::collections::ring::{Ring, MIN_TRIM_CAPACITY};
use crate::sync::{
    AdaptiveSpin, AtomicBool, AtomicUsize, CachePadded, Condvar, Mutex, MutexGuard, Ordering,
};
use std::collections::VecDeque;
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
/// Two locks, taken in this order when both are needed: the takers' `taken` buffer, then the
/// producers' `state` (the ring). Producers push under `state` alone. A taker pops under
/// `taken` alone while the buffer holds items; when it is empty, the taker also locks `state`
/// and moves up to 32 items (`TAKE_BATCH`) from the ring's head to the buffer. Every buffered item
/// is older than every item in the ring, and items move only in order under both locks, so the
/// queue stays FIFO across producers and takers. A backlog therefore costs the producers one
/// visit from a taker per batch instead of one per item. (Pulsar uses a head and a tail lock on
/// one array; the executor swaps its whole ring out instead, which a multi-taker queue with a
/// trim rule cannot.)
///
/// The ring's capacity holds every queued item, buffered ones included (the ring grows when
/// ring + buffer would not fit; trim counts both), so `capacity`, growth and trim read as for
/// one ring; the buffer's own 32 slots are allocated once, at the first take.
///
/// `len` (the ring's items), `taken_len` (the buffer's) and `terminated` mirror the locked
/// state so that `len`/`is_empty`/`is_terminated` never take a lock. A taker that finds the
/// queue empty first spins on those mirrors for a short, adaptive bound
/// (`sync::AdaptiveSpin`: at most tens of microseconds, shortened while spins keep failing,
/// never yielding the core), so that an item put within the spin is handed over without either
/// side making a system call. Only then does it lock, look again, count itself in `waiting`
/// under `state` and wait on `not_empty` (after letting go of `taken`, so that `drain_to`,
/// `clear` or another taker never wait for an item); `put` signals only when somebody waits,
/// so a producer makes no wake-up call while consumers keep up. The spin reads hints only:
/// whatever it sees, the taker decides under the locks, so the wake-up protocol is the
/// locks' (modelled in `tests/loom_queue.rs`, where the spin is off).
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
    /// The producers' side: the ring, the count of blocked takers, terminated.
    state: CachePadded<ProducerSide<T>>,
    /// The takers' side: items moved out of the ring's head, ahead of every item in it.
    taken: CachePadded<TakerSide<T>>,
    /// Signalled when an item arrives (only while `waiting > 0`) and on terminate.
    not_empty: Condvar,
    /// Set once by `terminate`; written under the `state` lock, read without it.
    terminated: AtomicBool,
    /// How long a taker that finds the queue empty spins on the mirrors before it waits.
    spin: AdaptiveSpin,
}

/// What producers touch, on its own cache line(s).
struct ProducerSide<T> {
    lock: Mutex<QueueState<T>>,
    /// Items in the ring; written under `lock`, read without it.
    len: AtomicUsize,
}

struct QueueState<T> {
    ring: Ring<T>,
    /// Takers blocked in `take`/`poll_timeout`.
    waiting: usize,
    terminated: bool,
}

/// What takers touch, on its own cache line(s).
struct TakerSide<T> {
    /// At most [`TAKE_BATCH`] items taken from the ring's head, oldest first.
    lock: Mutex<VecDeque<T>>,
    /// Items in the buffer; written under `lock` — and, when it grows (a refill), under the
    /// `state` lock too, so that a producer holding `state` reads an upper bound.
    len: AtomicUsize,
}

/// Items a taker moves from the ring to the takers' buffer per visit to the producers' lock.
const TAKE_BATCH: usize = 32;

type StateGuard<'a, T> = MutexGuard<'a, QueueState<T>>;

impl<T> GrowableArrayBlockingQueue<T> {
    /// An empty queue with 64 slots.
    pub fn new() -> Self {
        Self::with_capacity(MIN_TRIM_CAPACITY)
    }

    /// An empty queue with `capacity` slots, rounded up to a power of two (at least 1).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            state: CachePadded::new(ProducerSide {
                lock: Mutex::new(QueueState {
                    ring: Ring::with_capacity(capacity),
                    waiting: 0,
                    terminated: false,
                }),
                len: AtomicUsize::new(0),
            }),
            taken: CachePadded::new(TakerSide {
                lock: Mutex::new(VecDeque::new()),
                len: AtomicUsize::new(0),
            }),
            not_empty: Condvar::new(),
            terminated: AtomicBool::new(false),
            spin: AdaptiveSpin::new(),
        }
    }

    /// Appends `item` at the tail. Never blocks (the ring grows when full).
    ///
    /// # Errors
    ///
    /// Hands `item` back in a [`PutError`] (see [`PutError::into_inner`]) once the queue has
    /// been [terminated](Self::terminate).
    pub fn put(&self, item: T) -> Result<(), PutError<T>> {
        let mut state = self.state.lock.lock();
        if state.terminated {
            return Err(PutError::new(item));
        }
        let ring_len = state.ring.len();
        // The ring's capacity holds the buffered items too. Near full, count them: the buffer
        // only grows under this lock, so the value read here is an upper bound.
        if ring_len + TAKE_BATCH >= state.ring.capacity() {
            let total = ring_len + self.taken.len.load(Ordering::Relaxed);
            state.ring.grow_to_hold(total + 1);
        }
        state.ring.push_back(item);
        self.state.len.store(ring_len + 1, Ordering::Release);
        let wake = state.waiting > 0;
        drop(state);
        if wake {
            self.not_empty.notify_one();
        }
        Ok(())
    }

    /// Removes the head if there is one. Never blocks.
    pub fn poll(&self) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        let mut taken = self.taken.lock.lock();
        if let Some(item) = self.pop_buffered(&mut taken) {
            return Some(item);
        }
        let mut state = self.state.lock.lock();
        self.refill_and_pop(&mut taken, &mut state)
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
    /// the lock-free mirrors (see [`AdaptiveSpin`]), then wait on `not_empty` as a counted
    /// waiter until an item, terminate or the deadline.
    fn wait_for_item(&self, deadline: Option<Instant>) -> Result<T, PollTimeoutError> {
        if self.is_empty() && !self.terminated.load(Ordering::Relaxed) {
            let limit = deadline.map_or(Duration::MAX, |deadline| {
                deadline.saturating_duration_since(Instant::now())
            });
            self.spin.spin(
                || !self.is_empty() || self.terminated.load(Ordering::Relaxed),
                limit,
            );
        }
        loop {
            let mut taken = self.taken.lock.lock();
            if let Some(item) = self.pop_buffered(&mut taken) {
                return Ok(item);
            }
            let mut state = self.state.lock.lock();
            if let Some(item) = self.refill_and_pop(&mut taken, &mut state) {
                return Ok(item);
            }
            if state.terminated {
                return Err(PollTimeoutError::Terminated);
            }
            // Buffer and ring are empty, and no item can reach the buffer without passing
            // through the ring, whose next `put` sees this taker counted in `waiting`.
            drop(taken);
            let timeout = match deadline {
                None => None,
                Some(deadline) => {
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    if remaining.is_zero() {
                        return Err(PollTimeoutError::Timeout);
                    }
                    Some(remaining)
                }
            };
            // Woken (or timed out): let go of `state` and look again, locks in order.
            drop(self.wait_locked(state, timeout));
        }
    }

    /// Waits on `not_empty` (at most `timeout`), counted in `waiting` so that `put` notifies.
    fn wait_locked<'a>(
        &self,
        mut state: StateGuard<'a, T>,
        timeout: Option<Duration>,
    ) -> StateGuard<'a, T> {
        state.waiting += 1;
        let mut state = match timeout {
            None => self.not_empty.wait(state),
            Some(timeout) => self.not_empty.wait_timeout(state, timeout).0,
        };
        state.waiting -= 1;
        state
    }

    /// Pops the buffer's head (the `taken` lock held).
    #[inline]
    fn pop_buffered(&self, taken: &mut VecDeque<T>) -> Option<T> {
        let item = taken.pop_front()?;
        self.taken.len.store(taken.len(), Ordering::Release);
        Some(item)
    }

    /// Moves up to [`TAKE_BATCH`] items from the ring to the (empty) buffer and pops the first
    /// (both locks held).
    fn refill_and_pop(&self, taken: &mut VecDeque<T>, state: &mut QueueState<T>) -> Option<T> {
        debug_assert!(taken.is_empty(), "refilled a buffer that still holds items");
        if state.ring.is_empty() {
            return None;
        }
        if taken.capacity() == 0 {
            taken.reserve_exact(TAKE_BATCH);
        }
        state.ring.move_front_to(taken, TAKE_BATCH);
        let item = taken.pop_front();
        // The buffer's count first: a reader that sees the ring's new count (`is_empty`
        // reads it first) then sees the items in the buffer.
        self.taken.len.store(taken.len(), Ordering::Release);
        self.state.len.store(state.ring.len(), Ordering::Release);
        item
    }

    /// Moves up to `max` items, head first, to the end of `out`. Returns how many moved.
    pub fn drain_to(&self, out: &mut Vec<T>, max: usize) -> usize {
        if max == 0 {
            return 0;
        }
        let mut taken = self.taken.lock.lock();
        let buffered = max.min(taken.len());
        out.extend(taken.drain(..buffered));
        self.taken.len.store(taken.len(), Ordering::Release);
        if buffered == max {
            return max;
        }
        let mut state = self.state.lock.lock();
        let moved = state.ring.drain_to(out, max - buffered);
        self.state.len.store(state.ring.len(), Ordering::Release);
        buffered + moved
    }

    /// Number of items queued now.
    pub fn len(&self) -> usize {
        let ring = self.state.len.load(Ordering::Acquire);
        ring + self.taken.len.load(Ordering::Acquire)
    }

    /// Whether no item is queued now.
    pub fn is_empty(&self) -> bool {
        // The ring's count first: see `refill_and_pop`.
        self.state.len.load(Ordering::Acquire) == 0 && self.taken.len.load(Ordering::Acquire) == 0
    }

    /// Slots allocated now for queued items (a power of two; the takers' fixed buffer of 32
    /// slots, allocated at the first take, is not counted).
    pub fn capacity(&self) -> usize {
        self.state.lock.lock().ring.capacity()
    }

    /// Removes and drops every item (after releasing the locks, so an item's `Drop` may use the
    /// queue). The capacity stays as it is; see [`trim`](Self::trim).
    pub fn clear(&self) {
        let (buffered, removed) = {
            let mut taken = self.taken.lock.lock();
            let mut state = self.state.lock.lock();
            let buffered = std::mem::take(&mut *taken);
            self.taken.len.store(0, Ordering::Release);
            let removed = state.ring.take_all();
            self.state.len.store(0, Ordering::Release);
            (buffered, removed)
        };
        drop(buffered);
        drop(removed);
    }

    /// A consistent snapshot of the queued items, head first.
    pub fn to_vec(&self) -> Vec<T>
    where
        T: Clone,
    {
        let taken = self.taken.lock.lock();
        let state = self.state.lock.lock();
        taken.iter().chain(state.ring.iter()).cloned().collect()
    }

    /// Gives memory back after a burst, by Pulsar's rule: only when capacity > 64 and
    /// `len <= capacity / 4`, shrink to the smallest power of two >= max(64, 2 * len).
    ///
    /// Never waits for a busy lock: returns 0 then. Returns the number of slots freed.
    pub fn trim(&self) -> usize {
        let Some(taken) = self.taken.lock.try_lock() else {
            return 0;
        };
        match self.state.lock.try_lock() {
            Some(mut state) => state.ring.trim_holding(taken.len()),
            None => 0,
        }
    }

    /// Stops accepting items and wakes every blocked taker. Items already queued can still be
    /// taken; afterwards `take` returns `None` instead of blocking on an empty queue.
    pub fn terminate(&self) {
        let mut state = self.state.lock.lock();
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
