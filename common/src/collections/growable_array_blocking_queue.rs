//! `GrowableArrayBlockingQueue`: an unbounded FIFO MPMC blocking queue on one growable ring
//! with a head lock and a tail lock.

use crate::collections::ring::{round_up_to_power_of_two, MIN_TRIM_CAPACITY};
use crate::collections::slots::Slots;
use crate::sync::{
    spin_until, AtomicBool, AtomicUsize, CachePadded, Condvar, Mutex, MutexGuard, Ordering,
    UnsafeCell, SPIN_ENABLED,
};
use std::fmt;
use std::time::{Duration, Instant};

/// Whether `take`/`poll_timeout` spin before parking: not under loom (the models explore the
/// parking paths) nor under Miri (where spinning on the clock is slow and proves nothing).
const SPIN: bool = SPIN_ENABLED && !cfg!(miri);
/// The longest spin before parking: about what parking and being woken costs, so that a spin
/// that fails at most doubles the wait it tried to avoid.
const SPIN_MAX_NS: usize = 20_000;
/// The shortest spin, kept so that a collapsed budget can find out that spinning wins again.
const SPIN_MIN_NS: usize = 1_000;

/// [`GrowableArrayBlockingQueue::state`]: set while at least one taker is parked.
const PARKED: usize = 1;
/// [`GrowableArrayBlockingQueue::state`]: one item (the length lives above the `PARKED` bit).
const ONE: usize = 2;

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
/// - [`terminate`](Self::terminate) wakes every blocked taker; afterwards `put` hands items back.
///
/// Every item is dropped exactly once: when taken out and dropped by the caller, or with the
/// queue.
///
/// # Design
///
/// As in Pulsar, producers and consumers take different locks: `put` holds the tail lock,
/// `poll`/`take`/`drain_to` the head lock, so a producer and a consumer never wait for each
/// other. They meet in one atomic word, `state`: the item count (shifted left by one) and a
/// `PARKED` bit. A producer writes its slot, then adds one item to `state`; a consumer sees the
/// count, reads the slot, then subtracts one. Growth and trim move the items to a new array and
/// need both locks (always tail first, then head), so nobody is reading or writing a slot then.
///
/// Each side keeps a lower bound of what it may use without looking at `state`: the producers
/// the free slots (`Tail::free`), the consumers the published items (`Head::ready`); each is
/// refreshed from the value the side's own read-modify-write returns, or by a load once it runs
/// out, so a side touches the shared word once per item.
///
/// A taker that finds the queue empty first spins on `state` for a bounded, adaptive time
/// (parking and being woken costs tens of microseconds, a ping-pong round trip far less): the
/// budget doubles when a spin finds an item and halves when it does not, between
/// `SPIN_MIN_NS` and `SPIN_MAX_NS`; a parked taker that was notified soon after it parked
/// raises the budget, so a collapsed budget recovers. The spin never yields its core (a yield
/// to a busy thread costs a whole time slice) and never runs while the queue is idle: an idle
/// taker is parked. Then it parks: under the head lock it counts itself in `Head::parked`
/// and sets `PARKED` with one read-modify-write that also returns the count, so either the
/// taker sees an item that arrived, or the producer's own read-modify-write sees `PARKED` and
/// notifies (taking the head lock, so the notification cannot slip in before the taker waits).
/// Producers make no wake-up call while no taker is parked.
///
/// ## Memory ordering
///
/// Every change of `state` after construction is a read-modify-write with `AcqRel`, so the
/// changes form one total order that also carries happens-before: a consumer that reads a
/// count including an item (by `Acquire` load or read-modify-write) sees the producer's write
/// of its slot, and a producer that reads a count excluding a taken item sees the consumer's
/// read of its slot done before it writes the slot again. `terminated` is stored (`Release`)
/// under the tail lock after every accepted `put`, so a taker that loads it (`Acquire`) and
/// then loads `state` sees every item that will ever be queued.
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
/// assert_eq!(queue.put(1), Err(1)); // handed back after terminate
/// ```
pub struct GrowableArrayBlockingQueue<T> {
    /// The producers' side; held by `put`, and before `head` by whoever needs both.
    tail: CachePadded<Mutex<Tail>>,
    /// The consumers' side; `not_empty` waits with this lock.
    head: CachePadded<Mutex<Head>>,
    /// Number of items published and not yet taken, times [`ONE`], plus the [`PARKED`] bit.
    ///
    /// | bits | meaning |
    /// |---|---|
    /// | 0 (`PARKED`) | at least one taker is parked on `not_empty` (mirrors `Head::parked > 0`) |
    /// | 1.. | number of items (`state >> 1`) |
    state: CachePadded<AtomicUsize>,
    /// Signalled (under the head lock) when an item arrives while `PARKED` is set, and on
    /// terminate.
    not_empty: Condvar,
    /// The storage. Its slots are accessed under the tail lock (writes at `Tail::index`) or the
    /// head lock (reads at `Head::index`); the array itself is replaced only by a thread that
    /// holds both locks.
    slots: UnsafeCell<Slots<T>>,
    /// Set once by `terminate`, under the tail lock; read without a lock.
    terminated: AtomicBool,
    /// The takers' current spin budget in nanoseconds, between `SPIN_MIN_NS` and
    /// `SPIN_MAX_NS` (a heuristic: `Relaxed` everywhere).
    spin_ns: AtomicUsize,
}

/// The state behind the tail lock.
struct Tail {
    /// Wrapping counter of the slot the next item goes to.
    index: usize,
    /// Free slots known to be free: a lower bound of `capacity - len`.
    free: usize,
    /// Set by `terminate`: `put` hands items back.
    terminated: bool,
}

/// The state behind the head lock.
struct Head {
    /// Wrapping counter of the slot the oldest item is in.
    index: usize,
    /// Items known to be published: a lower bound of `len`.
    ready: usize,
    /// Takers parked (or about to park) on `not_empty`.
    parked: usize,
    /// When a producer last notified a parked taker (only while spinning is compiled in).
    notified_at: Option<Instant>,
}

// SAFETY: the queue moves `T`s between threads (so `T: Send`), and every access to the slots is
// serialised by the protocol documented on the type: writes under the tail lock, reads under the
// head lock, each slot handed from one side to the other through `state`. No `&T` is ever
// shared between threads (`to_vec` clones under both locks), so `T: Sync` is not needed, just
// as for `Mutex<T>`.
unsafe impl<T: Send> Send for GrowableArrayBlockingQueue<T> {}
// SAFETY: as for `Send` above.
unsafe impl<T: Send> Sync for GrowableArrayBlockingQueue<T> {}

impl<T> GrowableArrayBlockingQueue<T> {
    /// An empty queue with 64 slots.
    pub fn new() -> Self {
        Self::with_capacity(MIN_TRIM_CAPACITY)
    }

    /// An empty queue with `capacity` slots, rounded up to a power of two (at least 1).
    pub fn with_capacity(capacity: usize) -> Self {
        let capacity = round_up_to_power_of_two(capacity);
        Self {
            tail: CachePadded(Mutex::new(Tail {
                index: 0,
                free: capacity,
                terminated: false,
            })),
            head: CachePadded(Mutex::new(Head {
                index: 0,
                ready: 0,
                parked: 0,
                notified_at: None,
            })),
            state: CachePadded(AtomicUsize::new(0)),
            not_empty: Condvar::new(),
            slots: UnsafeCell::new(Slots::new(capacity)),
            terminated: AtomicBool::new(false),
            spin_ns: AtomicUsize::new(SPIN_MAX_NS / 4),
        }
    }

    /// Appends `item` at the tail. Never blocks (the ring grows when full).
    ///
    /// # Errors
    ///
    /// Hands `item` back as `Err(item)` once the queue has been [terminated](Self::terminate).
    pub fn put(&self, item: T) -> Result<(), T> {
        let mut tail = self.tail.lock();
        if tail.terminated {
            return Err(item);
        }
        if tail.free == 0 {
            self.make_room(&mut tail);
        }
        let index = tail.index;
        // SAFETY: we hold the tail lock, so no other producer writes; `free > 0` was read from
        // `state` (Acquire) after the consumers' `AcqRel` decrements, so the slot at the tail
        // is empty and its last reader is done; consumers do not read it until the increment
        // below publishes it; the array is not replaced while we hold the tail lock.
        self.slots
            .with(|slots| unsafe { (*slots).write(index, item) });
        tail.index = index.wrapping_add(1);
        tail.free -= 1;
        let previous = self.state.fetch_add(ONE, Ordering::AcqRel);
        drop(tail);
        if previous & PARKED != 0 {
            self.wake_one();
        }
        Ok(())
    }

    /// Refreshes `tail.free` from `state`, growing the ring when it is really full.
    #[cold]
    #[inline(never)]
    fn make_room(&self, tail: &mut Tail) {
        let len = self.state.load(Ordering::Acquire) >> 1;
        let capacity = self.capacity_locked();
        tail.free = capacity - len;
        if tail.free > 0 {
            return;
        }
        // Full: take the head lock too (tail before head), so that nobody touches a slot.
        let mut head = self.head.lock();
        self.relocate(tail, &mut head, capacity * 2);
    }

    /// Moves every item to a new array of `capacity` slots. Needs both locks (the guards prove
    /// the head lock; the caller holds the tail lock for `tail`).
    fn relocate(&self, tail: &mut Tail, head: &mut MutexGuard<'_, Head>, capacity: usize) {
        // Both locks are held: no producer can add and no consumer can take, so `len` is exact.
        let len = self.state.load(Ordering::Acquire) >> 1;
        let from = head.index;
        self.slots.with_mut(|slots| {
            // SAFETY: with both locks held no other thread accesses the array or its slots (every
            // access happens under one of them); the `len` slots from the head hold items, each
            // published through `state`, which we just loaded with Acquire.
            unsafe { *slots = (*slots).relocate(from, len, capacity) };
        });
        head.index = 0;
        head.ready = len;
        tail.index = len;
        tail.free = capacity - len;
    }

    /// Wakes one parked taker.
    #[cold]
    fn wake_one(&self) {
        let mut head = self.head.lock();
        if SPIN {
            head.notified_at = Some(Instant::now());
        }
        self.not_empty.notify_one();
    }

    /// Removes the head if there is one. Never blocks.
    pub fn poll(&self) -> Option<T> {
        if self.state.load(Ordering::Relaxed) >> 1 == 0 {
            return None;
        }
        let mut head = self.head.lock();
        self.pop_locked(&mut head)
    }

    /// Removes the head, waiting up to `timeout` for one to arrive.
    ///
    /// Returns `None` when the timeout elapses, or at once when the queue is terminated and
    /// empty.
    pub fn poll_timeout(&self, timeout: Duration) -> Option<T> {
        if let Some(item) = self.poll() {
            return Some(item);
        }
        let deadline = Instant::now().checked_add(timeout);
        if SPIN && self.spin(timeout) {
            if let Some(item) = self.poll() {
                return Some(item);
            }
        }
        self.park(deadline)
    }

    /// Removes the head, blocking until an item arrives.
    ///
    /// Returns `None` only once the queue is terminated and empty.
    pub fn take(&self) -> Option<T> {
        if let Some(item) = self.poll() {
            return Some(item);
        }
        if SPIN && self.spin(Duration::MAX) {
            if let Some(item) = self.poll() {
                return Some(item);
            }
        }
        self.park(None)
    }

    /// Spins for the current budget (at most `limit`) until an item is published or the queue
    /// is terminated; adapts the budget to the outcome. Returns whether one of them was seen.
    fn spin(&self, limit: Duration) -> bool {
        let budget = self.spin_ns.load(Ordering::Relaxed);
        let found = spin_until(
            || {
                self.state.load(Ordering::Relaxed) >> 1 != 0
                    || self.terminated.load(Ordering::Relaxed)
            },
            Duration::from_nanos(budget as u64).min(limit),
        );
        let next = if found {
            (budget * 2).min(SPIN_MAX_NS)
        } else {
            (budget / 2).max(SPIN_MIN_NS)
        };
        if next != budget {
            self.spin_ns.store(next, Ordering::Relaxed);
        }
        found
    }

    /// Raises the spin budget when a parked taker was notified within the longest spin: a
    /// spin of that length would have found the item without parking.
    fn learn_from_park(&self, parked_at: Instant, head: &Head) {
        let Some(notified_at) = head.notified_at else {
            return;
        };
        let waited = notified_at.saturating_duration_since(parked_at);
        let waited_ns = usize::try_from(waited.as_nanos()).unwrap_or(usize::MAX);
        if waited_ns < SPIN_MAX_NS {
            let budget = self.spin_ns.load(Ordering::Relaxed);
            let next = budget.max(2 * waited_ns).min(SPIN_MAX_NS);
            if next != budget {
                self.spin_ns.store(next, Ordering::Relaxed);
            }
        }
    }

    /// The blocking path: under the head lock, takes an item or parks until one is published,
    /// the queue is terminated, or `deadline` passes (`None`: no deadline, as for a timeout
    /// too long for an `Instant`).
    fn park(&self, deadline: Option<Instant>) -> Option<T> {
        let mut head = self.head.lock();
        loop {
            if let Some(item) = self.pop_locked(&mut head) {
                return Some(item);
            }
            if self.terminated.load(Ordering::Acquire) {
                // Every accepted `put` published its item before `terminated` was stored.
                return self.pop_locked(&mut head);
            }
            let remaining = match deadline {
                Some(deadline) => {
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    if remaining.is_zero() {
                        return None;
                    }
                    Some(remaining)
                }
                None => None,
            };
            head.parked += 1;
            // One read-modify-write both announces us and reads the count: a producer either
            // published before it (we see the item) or after it (it sees `PARKED` and wakes us
            // under the head lock, which we hold until we wait).
            let previous = self.state.fetch_or(PARKED, Ordering::AcqRel);
            if previous >> 1 == 0 {
                let parked_at = SPIN.then(Instant::now);
                head.notified_at = None;
                head = match remaining {
                    Some(remaining) => self.not_empty.wait_timeout(head, remaining).0,
                    None => self.not_empty.wait(head),
                };
                if let Some(parked_at) = parked_at {
                    self.learn_from_park(parked_at, &head);
                }
            }
            head.parked -= 1;
            if head.parked == 0 {
                self.state.fetch_and(!PARKED, Ordering::AcqRel);
            }
        }
    }

    /// Takes the head under the head lock, if an item is published.
    #[inline]
    fn pop_locked(&self, head: &mut Head) -> Option<T> {
        if head.ready == 0 {
            head.ready = self.state.load(Ordering::Acquire) >> 1;
            if head.ready == 0 {
                return None;
            }
        }
        let index = head.index;
        // SAFETY: we hold the head lock, so no other consumer reads; `ready > 0` was read from
        // `state` (Acquire or AcqRel) after the producer's `AcqRel` increment for this slot, so
        // its write happened before; producers do not write it again until the decrement below
        // frees it; the array is not replaced while we hold the head lock.
        let item = self.slots.with(|slots| unsafe { (*slots).read(index) });
        head.index = index.wrapping_add(1);
        let previous = self.state.fetch_sub(ONE, Ordering::AcqRel);
        head.ready = (previous >> 1) - 1;
        Some(item)
    }

    /// Moves up to `max` items, head first, to the end of `out`. Returns how many moved.
    pub fn drain_to(&self, out: &mut Vec<T>, max: usize) -> usize {
        if max == 0 {
            return 0;
        }
        let mut head = self.head.lock();
        let len = self.state.load(Ordering::Acquire) >> 1;
        let moved = max.min(len);
        out.reserve(moved);
        let from = head.index;
        self.slots.with(|slots| {
            for offset in 0..moved {
                // SAFETY: as in `pop_locked`: the head lock is ours and the `len` items from
                // the head were published before the Acquire load above.
                out.push(unsafe { (*slots).read(from.wrapping_add(offset)) });
            }
        });
        head.index = from.wrapping_add(moved);
        if moved > 0 {
            let previous = self.state.fetch_sub(moved * ONE, Ordering::AcqRel);
            head.ready = (previous >> 1) - moved;
        }
        moved
    }

    /// Number of items queued now.
    pub fn len(&self) -> usize {
        self.state.load(Ordering::Acquire) >> 1
    }

    /// Whether no item is queued now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slots allocated now (a power of two).
    pub fn capacity(&self) -> usize {
        let _tail = self.tail.lock();
        self.capacity_locked()
    }

    /// The array's capacity; the caller holds one of the locks (the array is replaced only
    /// under both).
    fn capacity_locked(&self) -> usize {
        // SAFETY: the caller holds a lock, so no thread replaces the array meanwhile.
        self.slots.with(|slots| unsafe { (*slots).capacity() })
    }

    /// Removes and drops every item (after releasing the lock, so an item's `Drop` may use the
    /// queue). The capacity stays as it is; see [`trim`](Self::trim).
    pub fn clear(&self) {
        let mut removed = Vec::new();
        self.drain_to(&mut removed, usize::MAX);
        drop(removed);
    }

    /// A consistent snapshot of the queued items, head first.
    pub fn to_vec(&self) -> Vec<T>
    where
        T: Clone,
    {
        let _tail = self.tail.lock();
        let head = self.head.lock();
        let len = self.state.load(Ordering::Acquire) >> 1;
        let from = head.index;
        self.slots.with(|slots| {
            (0..len)
                .map(|offset| {
                    // SAFETY: with both locks held no other thread accesses a slot; the `len`
                    // items from the head were published before the Acquire load above.
                    unsafe { (*slots).with_item(from.wrapping_add(offset), T::clone) }
                })
                .collect()
        })
    }

    /// Gives memory back after a burst, by Pulsar's rule: only when capacity > 64 and
    /// `len <= capacity / 4`, shrink to the smallest power of two >= max(64, 2 * len).
    ///
    /// Never waits for a busy lock: returns 0 then. Returns the number of slots freed.
    pub fn trim(&self) -> usize {
        let Some(mut tail) = self.tail.try_lock() else {
            return 0;
        };
        let Some(mut head) = self.head.try_lock() else {
            return 0;
        };
        let capacity = self.capacity_locked();
        let len = self.state.load(Ordering::Acquire) >> 1;
        if capacity <= MIN_TRIM_CAPACITY || len > capacity / 4 {
            return 0;
        }
        let target = round_up_to_power_of_two((2 * len).max(MIN_TRIM_CAPACITY));
        if target >= capacity {
            return 0;
        }
        self.relocate(&mut tail, &mut head, target);
        capacity - target
    }

    /// Stops accepting items and wakes every blocked taker. Items already queued can still be
    /// taken; afterwards `take` returns `None` instead of blocking on an empty queue.
    pub fn terminate(&self) {
        let mut tail = self.tail.lock();
        tail.terminated = true;
        self.terminated.store(true, Ordering::Release);
        drop(tail);
        let _head = self.head.lock();
        self.not_empty.notify_all();
    }

    /// Whether [`terminate`](Self::terminate) has been called.
    pub fn is_terminated(&self) -> bool {
        self.terminated.load(Ordering::Acquire)
    }
}

impl<T> Drop for GrowableArrayBlockingQueue<T> {
    fn drop(&mut self) {
        let len = self.state.load(Ordering::Acquire) >> 1;
        let from = self.head.lock().index;
        let slots = self.slots.get_mut();
        for offset in 0..len {
            // SAFETY: `&mut self`: nobody else accesses the queue; the `len` slots from the head
            // hold the items not yet taken, each dropped here exactly once.
            drop(unsafe { slots.read(from.wrapping_add(offset)) });
        }
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
