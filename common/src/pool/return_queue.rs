//! `ReturnQueue`: a pool's bounded inbox for objects other threads give back, and its caps.
//!
//! The protocol (see `README.md` beside this file) in three rules:
//!
//! 1. **Reserve before adding.** Every object that enters the pool — onto the owner's free
//!    list or into this queue — first reserves one unit of `retained` and its bytes of
//!    `retained_bytes`, each with a compare-and-swap that fails rather than pass its cap. A
//!    failed reservation means the object is dropped, never queued: the caps hold at every
//!    instant, whatever the number of returning threads.
//! 2. **Closed is final, and checked under the lock.** A push reads `closed` and appends
//!    under one lock hold; `close` sets it and takes the items under another. So every
//!    accepted push is either drained by the owner or taken by `close`: nothing is stranded
//!    in the queue of a thread that has exited.
//! 3. **`queued` is a hint.** The owner reads it before locking, so an empty queue costs no
//!    lock; it is written under the lock, so a push that happened before (in the
//!    happens-before sense) the owner's read is seen.
//!
//! # Memory ordering
//!
//! `retained` and `retained_bytes` are counts that bound memory, not flags that publish data:
//! `Relaxed` suffices, since the objects themselves travel through the mutex (or stay on the
//! owner's thread). `queued` is stored with `Release` and loaded with `Acquire` so that a
//! non-zero reading is backed by the push that caused it; the items are still read under
//! the lock.

use crate::sync::{AtomicUsize, Mutex, Ordering};

/// Why a push was refused; the object comes back with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Taking it would pass the pool's object or byte cap.
    Full,
    /// The owner thread has exited (or its pool was released).
    Closed,
}

/// What the lock protects.
struct QueueState<T> {
    /// Returned objects with their measured bytes, oldest first.
    items: Vec<(T, usize)>,
    /// Set once by `close`; no push is accepted after it.
    closed: bool,
    /// Pushes accepted (counted under the lock, so `close` sees the final count).
    accepted: u64,
    /// Pushes refused by a cap (counted under the lock, as `accepted`).
    refused_full: u64,
}

/// A pool's cross-thread inbox and the caps on everything the pool retains.
pub(crate) struct ReturnQueue<T> {
    state: Mutex<QueueState<T>>,
    /// Mirror of `state.items.len()`, written under the lock, polled by the owner without it.
    queued: AtomicUsize,
    /// Objects the pool retains (owner's free list plus this queue); never above `max_objects`.
    retained: AtomicUsize,
    /// Bytes of those objects as measured when returned; never above `max_bytes`.
    retained_bytes: AtomicUsize,
    max_objects: usize,
    max_bytes: usize,
}

/// Counters read under the queue's lock.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct QueueCounts {
    pub(crate) queued: usize,
    pub(crate) accepted: u64,
    pub(crate) refused_full: u64,
}

/// Adds `by` to `counter` unless the sum would pass `limit`; `false` (and no change) if so.
fn add_within(counter: &AtomicUsize, by: usize, limit: usize) -> bool {
    let mut current = counter.load(Ordering::Relaxed);
    loop {
        let next = match current.checked_add(by) {
            Some(next) if next <= limit => next,
            _ => return false,
        };
        match counter.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(actual) => current = actual,
        }
    }
}

impl<T> ReturnQueue<T> {
    pub(crate) fn new(max_objects: usize, max_bytes: usize) -> Self {
        Self {
            state: Mutex::new(QueueState {
                items: Vec::new(),
                closed: false,
                accepted: 0,
                refused_full: 0,
            }),
            queued: AtomicUsize::new(0),
            retained: AtomicUsize::new(0),
            retained_bytes: AtomicUsize::new(0),
            max_objects,
            max_bytes,
        }
    }

    /// Reserves room for one object of `bytes`; `false` if a cap would be passed.
    pub(crate) fn try_reserve(&self, bytes: usize) -> bool {
        if !add_within(&self.retained, 1, self.max_objects) {
            return false;
        }
        if bytes > 0 && !add_within(&self.retained_bytes, bytes, self.max_bytes) {
            // A concurrent reservation may see this transient unit and refuse: refusing is
            // always allowed (the pool is a cache), passing a cap never is.
            self.retained.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Reserves `bytes` more bytes for an object already counted; `false` if the byte cap
    /// would be passed.
    pub(crate) fn try_reserve_bytes(&self, bytes: usize) -> bool {
        bytes == 0 || add_within(&self.retained_bytes, bytes, self.max_bytes)
    }

    /// Gives back the reservation of `objects` objects totalling `bytes`.
    pub(crate) fn release(&self, objects: usize, bytes: usize) {
        if objects > 0 {
            self.retained.fetch_sub(objects, Ordering::Relaxed);
        }
        if bytes > 0 {
            self.retained_bytes.fetch_sub(bytes, Ordering::Relaxed);
        }
    }

    /// Queues an object returned by another thread.
    ///
    /// # Errors
    ///
    /// The object and [`Refused::Closed`] once the owner has closed the queue, or
    /// [`Refused::Full`] when a cap would be passed. The caller drops it, outside the lock.
    pub(crate) fn push(&self, value: T, bytes: usize) -> Result<(), (T, Refused)> {
        let mut state = self.state.lock();
        if state.closed {
            return Err((value, Refused::Closed));
        }
        if !self.try_reserve(bytes) {
            state.refused_full += 1;
            return Err((value, Refused::Full));
        }
        // Within the cap (just reserved), so its storage never grows past the cap either.
        crate::pool::thread_pool::push_within(&mut state.items, (value, bytes), self.max_objects);
        state.accepted += 1;
        self.queued.store(state.items.len(), Ordering::Release);
        Ok(())
    }

    /// Owner only: hands every queued object, oldest first, to `sink` (which keeps it: the
    /// reservations stay, the objects are still retained). Returns how many; takes no lock
    /// when none are queued. `sink` runs under the lock and must not run user code.
    pub(crate) fn drain_with(&self, mut sink: impl FnMut(T, usize)) -> usize {
        if self.queued.load(Ordering::Acquire) == 0 {
            return 0;
        }
        let mut state = self.state.lock();
        let moved = state.items.len();
        for (value, bytes) in state.items.drain(..) {
            sink(value, bytes);
        }
        self.queued.store(0, Ordering::Release);
        moved
    }

    /// Owner only, once: refuses every later push and returns what is queued. The caller
    /// releases the reservations and drops the objects, outside the lock.
    pub(crate) fn close(&self) -> Vec<(T, usize)> {
        let mut state = self.state.lock();
        state.closed = true;
        self.queued.store(0, Ordering::Release);
        std::mem::take(&mut state.items)
    }

    /// Objects and bytes retained now (free list plus queue).
    pub(crate) fn retained(&self) -> (usize, usize) {
        (
            self.retained.load(Ordering::Relaxed),
            self.retained_bytes.load(Ordering::Relaxed),
        )
    }

    /// The counters kept under the lock.
    pub(crate) fn counts(&self) -> QueueCounts {
        let state = self.state.lock();
        QueueCounts {
            queued: state.items.len(),
            accepted: state.accepted,
            refused_full: state.refused_full,
        }
    }

    /// The object cap.
    pub(crate) fn max_objects(&self) -> usize {
        self.max_objects
    }

    /// The byte cap.
    pub(crate) fn max_bytes(&self) -> usize {
        self.max_bytes
    }
}
