//! `GrowableArrayBlockingQueue`: an unbounded FIFO MPMC blocking queue on one growable ring
//! with a head lock and a tail lock.

use crate::collections::ring::{round_up_to_power_of_two, MIN_TRIM_CAPACITY};
use crate::collections::slots::Slots;
use crate::sync::{
    fence, AtomicBool, AtomicUsize, CachePadded, Condvar, Mutex, MutexGuard, Ordering, UnsafeCell,
    SPIN_ENABLED,
};
use std::fmt;
use std::time::{Duration, Instant};

/// The longest spin before parking, whatever parking costs.
const SPIN_MAX_NS: usize = 20_000;
/// The shortest spin; a spin this short that fails turns spinning off.
const SPIN_MIN_NS: usize = 1_000;
/// While spinning is off, every this many empty takes probe with a shortest spin, so that
/// spinning comes back when it would win again.
const SPIN_PROBE_EVERY: usize = 16;

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
/// other. Each side publishes one counter on its own cache line: the tail count (items ever
/// put) and the head count (items ever taken); an item's slot is its count modulo the
/// capacity. A producer writes its slot, then stores the tail count; a consumer reads the
/// slot, then stores the head count. Each side keeps the other's count as last seen and reads
/// it again only when that copy says the ring is full (producers) or empty (consumers), so a
/// queue with items in it costs no cache-line transfer per item between the sides. Growth and
/// trim move the items to a new array (each to its count modulo the new capacity, so the
/// counts never change) and need both locks (always tail first, then head), so nobody is
/// reading or writing a slot then.
///
/// A taker that finds the queue empty first spins for a bounded, adaptive time, polling the
/// counts with a short back-off between polls. Spinning pays only while it is shorter than
/// a park and wake-up (ski rental): takers measure what a wake-up costs (from the producer's
/// notification to the taker running: tens of microseconds on an idle VM, a few on a busy
/// machine) and never spin longer than its moving average, nor than `SPIN_MAX_NS`. Within
/// that, the budget doubles when a spin finds an item and halves when it does not; below
/// `SPIN_MIN_NS` spinning stops, except for one short probe every `SPIN_PROBE_EVERY` empty
/// takes, so that a spin that cannot win (the producer is not running: the machine is
/// oversubscribed) stops costing, and spinning comes back when it wins again. The spin never
/// yields its core (a yield to a busy thread costs a whole time slice) and an idle taker is
/// parked, not spinning. For the same reason a producer that finds the tail lock taken polls
/// it with back-off for a few microseconds before blocking, instead of the lock's own slow
/// path, which yields. To park, a taker counts itself in
/// `Head::parked` and sets `parked` under the head lock, then re-reads the tail count;
/// producers notify (under the head lock, so the notification cannot slip in before the taker
/// waits) only when they see `parked` set, so they make no wake-up call while takers keep up;
/// and `parked` is cleared once every parked taker has a notification on its way, so a burst of
/// puts into a queue whose taker is waking up sends one notification, not one per item.
///
/// ## Memory ordering
///
/// The tail count is stored with `Release` after the slot write and loaded with `Acquire`
/// before the slot read, and the head count likewise in the other direction, so a slot's
/// write happens before its read and its read before its next write; among producers (or
/// among consumers) the lock orders the rest. The lost wake-up is excluded by a `SeqCst` fence
/// on each side, between a producer's store of the tail count and its load of `parked`, and
/// between a taker's store of `parked` and its load of the tail count: at least one of the two
/// loads sees the other side's store. `terminated` is stored (`Release`) under the tail lock
/// after every accepted `put`, so a taker that loads it (`Acquire`) and then the tail count
/// sees every item that will ever be queued. A consumer that finds the queue empty also fences
/// (`SeqCst`) and looks again before it says so (`load_tail`): with the fence after every
/// `put`, that makes "put, then read my flag" against "write my flag, then find the queue
/// empty" safe for callers, as the single lock made it (the client's consumer relies on it).
/// The counts only grow (wrapping), and the head count is loaded before the tail count, so
/// `len` never sees more taken than put.
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
    /// The producers' side; its lock is held by `put`, and before the head lock by whoever
    /// needs both.
    tail: CachePadded<Side<Tail>>,
    /// The consumers' side; `not_empty` waits with its lock.
    head: CachePadded<Side<Head>>,
    /// Set while a parked taker waits without a notification on its way (mirrors
    /// `Head::parked > Head::notified`; written under the head lock, read by every `put`).
    parked: AtomicBool,
    /// Signalled (under the head lock) when an item arrives while `parked` is set, and on
    /// terminate.
    not_empty: Condvar,
    /// The storage. Its slots are accessed under the tail lock (writes at `Tail::index`) or the
    /// head lock (reads at `Head::index`); the array itself is replaced only by a thread that
    /// holds both locks.
    slots: UnsafeCell<Slots<T>>,
    /// Set once by `terminate`, under the tail lock; read without a lock.
    terminated: AtomicBool,
    /// The takers' spin heuristics, on their own cache line: takers write them, and the line
    /// above (`parked`, `slots`) is read by every `put`.
    spin: CachePadded<SpinState>,
}

/// What takers learn about spinning (heuristics: `Relaxed` everywhere).
struct SpinState {
    /// The current spin budget in nanoseconds: 0 (off) or between `SPIN_MIN_NS` and
    /// `SPIN_MAX_NS`.
    budget_ns: AtomicUsize,
    /// Empty takes that skipped the spin while it was off.
    skips: AtomicUsize,
    /// What a wake-up costs, in nanoseconds: a moving average of the time from a producer's
    /// notification to the woken taker running, which caps the spin budget.
    wake_ns: AtomicUsize,
}

/// One side of the queue: its lock, and the count it publishes to the other side.
struct Side<S> {
    lock: Mutex<S>,
    /// Items ever put (tail side) or taken (head side), wrapping; written under `lock` with
    /// `Release`, read by the other side with `Acquire`.
    count: AtomicUsize,
}

/// The state behind the tail lock.
struct Tail {
    /// The tail count (the slot the next item goes to).
    index: usize,
    /// The head count as last seen: `index - head_seen` bounds the items queued from above.
    head_seen: usize,
    /// The array's capacity (changed only under both locks).
    capacity: usize,
    /// Set by `terminate`: `put` hands items back.
    terminated: bool,
}

/// The state behind the head lock.
struct Head {
    /// The head count (the slot of the oldest item).
    index: usize,
    /// The tail count as last seen: `tail_seen - index` items are known to be published.
    tail_seen: usize,
    /// Takers parked (or about to park) on `not_empty`.
    parked: usize,
    /// Notifications sent to parked takers and not yet consumed by a taker's wake-up: while
    /// every parked taker has one on its way, producers need not notify again.
    notified: usize,
    /// When a producer last notified, for the woken taker to measure its wake-up (only while
    /// spinning is compiled in).
    notified_at: Option<Instant>,
}

// SAFETY: the queue moves `T`s between threads (so `T: Send`), and every access to the slots is
// serialised by the protocol documented on the type: writes under the tail lock, reads under the
// head lock, each slot handed from one side to the other through the counts. No `&T` is ever
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
            tail: CachePadded::new(Side {
                lock: Mutex::new(Tail {
                    index: 0,
                    head_seen: 0,
                    capacity,
                    terminated: false,
                }),
                count: AtomicUsize::new(0),
            }),
            head: CachePadded::new(Side {
                lock: Mutex::new(Head {
                    index: 0,
                    tail_seen: 0,
                    parked: 0,
                    notified: 0,
                    notified_at: None,
                }),
                count: AtomicUsize::new(0),
            }),
            parked: AtomicBool::new(false),
            not_empty: Condvar::new(),
            slots: UnsafeCell::new(Slots::new(capacity)),
            terminated: AtomicBool::new(false),
            spin: CachePadded::new(SpinState {
                budget_ns: AtomicUsize::new(SPIN_MAX_NS / 4),
                skips: AtomicUsize::new(0),
                wake_ns: AtomicUsize::new(SPIN_MAX_NS),
            }),
        }
    }

    /// Appends `item` at the tail. Never blocks (the ring grows when full).
    ///
    /// # Errors
    ///
    /// Hands `item` back as `Err(item)` once the queue has been [terminated](Self::terminate).
    pub fn put(&self, item: T) -> Result<(), T> {
        let mut tail = match self.tail.lock.try_lock() {
            Some(tail) => tail,
            None => self.lock_tail_contended(),
        };
        if tail.terminated {
            return Err(item);
        }
        if tail.index.wrapping_sub(tail.head_seen) >= tail.capacity {
            self.make_room(&mut tail);
        }
        let index = tail.index;
        // SAFETY: we hold the tail lock, so no other producer writes; the slot at the tail is
        // empty and its last read is done, because the head count we saw (`Acquire`, stored
        // with `Release` after that read) is more than `index - capacity`; consumers do not read
        // it until the store below publishes it; the array is not replaced while we hold the
        // tail lock.
        self.slots
            .with(|slots| unsafe { (*slots).write(index, item) });
        tail.index = index.wrapping_add(1);
        self.tail.count.store(tail.index, Ordering::Release);
        drop(tail);
        // Pairs with the fence in `park`: either we see `parked`, or the taker sees our item.
        fence(Ordering::SeqCst);
        if self.parked.load(Ordering::Relaxed) {
            self.wake_one();
        }
        Ok(())
    }

    /// Takes the tail lock from another producer: polls it with back-off for a few
    /// microseconds (a `put` holds it for tens of nanoseconds), then blocks. The lock's own
    /// slow path yields the core while it spins, and a yield to a busy thread costs a whole
    /// time slice; this spin does not yield.
    #[cold]
    #[inline(never)]
    fn lock_tail_contended(&self) -> MutexGuard<'_, Tail> {
        if SPIN_ENABLED {
            for step in 0..10u32 {
                for _ in 0..1u32 << step.min(6) {
                    std::hint::spin_loop();
                }
                if let Some(tail) = self.tail.lock.try_lock() {
                    return tail;
                }
            }
        }
        self.tail.lock.lock()
    }

    /// Reads the head count again, and grows the ring when it is really full.
    #[cold]
    #[inline(never)]
    fn make_room(&self, tail: &mut Tail) {
        tail.head_seen = self.head.count.load(Ordering::Acquire);
        if tail.index.wrapping_sub(tail.head_seen) < tail.capacity {
            return;
        }
        // Full: take the head lock too (tail before head), so that nobody touches a slot.
        let mut head = self.head.lock.lock();
        let capacity = tail.capacity * 2;
        self.relocate(tail, &mut head, capacity);
    }

    /// Moves every item to a new array of `capacity` slots. Needs both locks (the guard proves
    /// the head lock; the caller holds the tail lock for `tail`).
    fn relocate(&self, tail: &mut Tail, head: &mut MutexGuard<'_, Head>, capacity: usize) {
        // Both locks are held: no producer can add and no consumer can take.
        let from = head.index;
        let len = tail.index.wrapping_sub(from);
        self.slots.with_mut(|slots| {
            // SAFETY: with both locks held no other thread accesses the array or its slots
            // (every access happens under one of them, and both locks order those accesses
            // before ours); the `len` slots from the head count hold items.
            unsafe { *slots = (*slots).relocate(from, len, capacity) };
        });
        tail.capacity = capacity;
        tail.head_seen = from;
        head.tail_seen = tail.index;
    }

    /// Wakes one parked taker, unless every parked taker has a notification on its way.
    #[cold]
    fn wake_one(&self) {
        let mut head = self.head.lock.lock();
        if head.parked > head.notified {
            head.notified += 1;
            if SPIN_ENABLED {
                head.notified_at = Some(Instant::now());
            }
            self.not_empty.notify_one();
            self.update_parked(&head);
        }
    }

    /// Sets `parked` from the head lock's counts: whether a parked taker still needs a
    /// notification.
    fn update_parked(&self, head: &Head) {
        self.parked
            .store(head.parked > head.notified, Ordering::Relaxed);
    }

    /// Removes the head if there is one. Never blocks.
    pub fn poll(&self) -> Option<T> {
        // No look at `len` first: that would read the tail count, the producers' cache line,
        // on every call, where `pop_locked` reads it only when its last copy is used up.
        let mut head = self.head.lock.lock();
        self.pop_locked(&mut head, true)
    }

    /// `poll` for `take` and `poll_timeout` before they park: an empty answer here is not
    /// final (the parking path looks again, fenced), so it skips `load_tail`'s fence.
    fn try_pop(&self) -> Option<T> {
        let mut head = self.head.lock.lock();
        self.pop_locked(&mut head, false)
    }

    /// Removes the head, waiting up to `timeout` for one to arrive.
    ///
    /// Returns `None` when the timeout elapses, or at once when the queue is terminated and
    /// empty.
    pub fn poll_timeout(&self, timeout: Duration) -> Option<T> {
        if let Some(item) = self.try_pop() {
            return Some(item);
        }
        let deadline = Instant::now().checked_add(timeout);
        if SPIN_ENABLED && !timeout.is_zero() && self.spin(timeout) {
            if let Some(item) = self.try_pop() {
                return Some(item);
            }
        }
        self.park(deadline)
    }

    /// Removes the head, blocking until an item arrives.
    ///
    /// Returns `None` only once the queue is terminated and empty.
    pub fn take(&self) -> Option<T> {
        if let Some(item) = self.try_pop() {
            return Some(item);
        }
        if SPIN_ENABLED && self.spin(Duration::MAX) {
            if let Some(item) = self.try_pop() {
                return Some(item);
            }
        }
        self.park(None)
    }

    /// Spins for the current budget (at most `limit`) until an item is published or the queue
    /// is terminated; adapts the budget to the outcome. Returns whether one of them was seen.
    fn spin(&self, limit: Duration) -> bool {
        let mut budget = self.spin.budget_ns.load(Ordering::Relaxed);
        if budget == 0 {
            // Off: probe with a shortest spin now and then.
            let skips = self.spin.skips.fetch_add(1, Ordering::Relaxed);
            if skips % SPIN_PROBE_EVERY != SPIN_PROBE_EVERY - 1 {
                return false;
            }
            budget = SPIN_MIN_NS;
        }
        let allowed = Duration::from_nanos(budget as u64);
        let found = spin_with_backoff(
            || {
                // Not `is_empty`: no fence per poll.
                self.tail.count.load(Ordering::Relaxed) != self.head.count.load(Ordering::Relaxed)
                    || self.terminated.load(Ordering::Relaxed)
            },
            allowed.min(limit),
        );
        let next = if found {
            (budget * 2).min(self.spin.wake_ns.load(Ordering::Relaxed))
        } else if limit < allowed {
            budget // cut short by the caller's timeout: says nothing about spinning
        } else if budget / 2 < SPIN_MIN_NS {
            0
        } else {
            budget / 2
        };
        if next != self.spin.budget_ns.load(Ordering::Relaxed) {
            self.spin.budget_ns.store(next, Ordering::Relaxed);
        }
        found
    }

    /// Folds one wake-up's cost (from `notified_at` to now) into `wake_ns`, and keeps the spin
    /// budget under it: spinning longer than a wake-up costs cannot win (a busy machine wakes
    /// a thread in a few microseconds, an idle VM's sleeping core in tens).
    fn learn_wake_cost(&self, notified_at: Instant) {
        let sample = usize::try_from(notified_at.elapsed().as_nanos()).unwrap_or(usize::MAX);
        let average = self.spin.wake_ns.load(Ordering::Relaxed);
        let next =
            ((average / 4) * 3 + sample.min(SPIN_MAX_NS) / 4).clamp(SPIN_MIN_NS, SPIN_MAX_NS);
        self.spin.wake_ns.store(next, Ordering::Relaxed);
        if self.spin.budget_ns.load(Ordering::Relaxed) > next {
            self.spin.budget_ns.store(next, Ordering::Relaxed);
        }
    }

    /// The blocking path: under the head lock, takes an item or parks until one is published,
    /// the queue is terminated, or `deadline` passes (`None`: no deadline, as for a timeout
    /// too long for an `Instant`).
    fn park(&self, deadline: Option<Instant>) -> Option<T> {
        let mut head = self.head.lock.lock();
        loop {
            if let Some(item) = self.pop_locked(&mut head, true) {
                return Some(item);
            }
            if self.terminated.load(Ordering::Acquire) {
                // Every accepted `put` published its item before `terminated` was stored.
                return self.pop_locked(&mut head, true);
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
            // `parked > notified` now: this sets the flag.
            self.update_parked(&head);
            // Pairs with the fence in `put`: either the producer sees `parked` (and wakes us
            // under the head lock, which we hold until we wait), or we see its item here.
            fence(Ordering::SeqCst);
            let waited = self.tail.count.load(Ordering::Relaxed) == head.index;
            if waited {
                head = match remaining {
                    Some(remaining) => self.not_empty.wait_timeout(head, remaining).0,
                    None => self.not_empty.wait(head),
                };
            }
            head.parked -= 1;
            if waited {
                // Woken by a notification, a timeout or spuriously: count one notification as
                // consumed either way. Undercounting only makes producers notify once more.
                head.notified = head.notified.saturating_sub(1);
                if let Some(notified_at) = head.notified_at.take() {
                    self.learn_wake_cost(notified_at);
                }
            }
            self.update_parked(&head);
        }
    }

    /// Loads the tail count (`Acquire`). When it shows nothing after `taken` (the queue looks
    /// empty) it fences (`SeqCst`) and loads again, pairing with the fence every `put` makes
    /// after publishing: so a caller that changes a flag of its own and then finds the queue
    /// empty knows that the producer of any item it missed will see the flag (the
    /// store-buffering handshake of the client's trigger protocol), as with a single lock.
    #[inline]
    fn load_tail(&self, taken: usize) -> usize {
        let put = self.tail.count.load(Ordering::Acquire);
        if put != taken {
            return put;
        }
        fence(Ordering::SeqCst);
        self.tail.count.load(Ordering::Acquire)
    }

    /// Takes the head under the head lock, if an item is published. `fenced`: an empty answer
    /// is final (see `load_tail`).
    #[inline]
    fn pop_locked(&self, head: &mut Head, fenced: bool) -> Option<T> {
        if head.index == head.tail_seen {
            head.tail_seen = if fenced {
                self.load_tail(head.index)
            } else {
                self.tail.count.load(Ordering::Acquire)
            };
            if head.index == head.tail_seen {
                return None;
            }
        }
        let index = head.index;
        // SAFETY: we hold the head lock, so no other consumer reads; the slot holds an item
        // whose write happened before, because the tail count we saw (`Acquire`, stored with
        // `Release` after that write) is past `index`; producers do not write it again until
        // the store below frees it; the array is not replaced while we hold the head lock.
        let item = self.slots.with(|slots| unsafe { (*slots).read(index) });
        head.index = index.wrapping_add(1);
        self.head.count.store(head.index, Ordering::Release);
        Some(item)
    }

    /// Moves up to `max` items, head first, to the end of `out`. Returns how many moved.
    pub fn drain_to(&self, out: &mut Vec<T>, max: usize) -> usize {
        if max == 0 {
            return 0;
        }
        let mut head = self.head.lock.lock();
        head.tail_seen = self.load_tail(head.index);
        let from = head.index;
        let moved = max.min(head.tail_seen.wrapping_sub(from));
        out.reserve(moved);
        self.slots.with(|slots| {
            for offset in 0..moved {
                // SAFETY: as in `pop_locked`: the head lock is ours and these items were
                // published before the `Acquire` load of the tail count above.
                out.push(unsafe { (*slots).read(from.wrapping_add(offset)) });
            }
        });
        head.index = from.wrapping_add(moved);
        self.head.count.store(head.index, Ordering::Release);
        moved
    }

    /// Number of items queued now.
    pub fn len(&self) -> usize {
        // Head first: the tail count loaded after it is at least as large.
        let taken = self.head.count.load(Ordering::Acquire);
        let put = self.load_tail(taken);
        put.wrapping_sub(taken)
    }

    /// Whether no item is queued now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slots allocated now (a power of two).
    pub fn capacity(&self) -> usize {
        self.tail.lock.lock().capacity
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
        let tail = self.tail.lock.lock();
        let head = self.head.lock.lock();
        let from = head.index;
        let len = tail.index.wrapping_sub(from);
        self.slots.with(|slots| {
            (0..len)
                .map(|offset| {
                    // SAFETY: with both locks held no other thread accesses a slot, and these
                    // slots hold the queued items (published under the tail lock we hold).
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
        let Some(mut tail) = self.tail.lock.try_lock() else {
            return 0;
        };
        let Some(mut head) = self.head.lock.try_lock() else {
            return 0;
        };
        let capacity = tail.capacity;
        let len = tail.index.wrapping_sub(head.index);
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
        let mut tail = self.tail.lock.lock();
        tail.terminated = true;
        self.terminated.store(true, Ordering::Release);
        drop(tail);
        let _head = self.head.lock.lock();
        self.not_empty.notify_all();
    }

    /// Whether [`terminate`](Self::terminate) has been called.
    pub fn is_terminated(&self) -> bool {
        self.terminated.load(Ordering::Acquire)
    }
}

/// Spins until `ready()` or until `budget` has passed; returns whether `ready()` was seen.
/// Between polls it waits 1, 2, 4, then 8 spin-loop hints, so that polling a cache line the
/// producer is writing slows the producer little, while an item is still seen within a fraction
/// of a microsecond of its arrival (each hop of a ping-pong waits for the poll after it); it
/// never yields the core.
fn spin_with_backoff(mut ready: impl FnMut() -> bool, budget: Duration) -> bool {
    let start = Instant::now();
    let mut step = 0u32;
    loop {
        if ready() {
            return true;
        }
        for _ in 0..1u32 << step {
            std::hint::spin_loop();
        }
        if step < 3 {
            step += 1;
        }
        if step >= 3 && start.elapsed() >= budget {
            return ready();
        }
    }
}

impl<T> Drop for GrowableArrayBlockingQueue<T> {
    fn drop(&mut self) {
        let end = self.tail.lock.lock().index;
        let from = self.head.lock.lock().index;
        let slots = self.slots.get_mut();
        for offset in 0..end.wrapping_sub(from) {
            // SAFETY: `&mut self`: nobody else accesses the queue; the slots from the head count
            // to the tail count hold the items not yet taken, each dropped here exactly once.
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
