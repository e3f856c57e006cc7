//! `GrowableArrayBlockingQueue`: an unbounded FIFO MPMC blocking queue on a chain of recycled slot blocks.

use crate::collections::queue_error::{PollTimeoutError, PutError};
use crate::collections::ring::{round_up_to_power_of_two, MIN_TRIM_CAPACITY};
use crate::idle_spin;
use crate::prefetch;
use crate::sync::{
    wait_step, AtomicBool, AtomicPtr, AtomicUsize, CachePadded, Condvar, Mutex, MutexGuard,
    Ordering, UnsafeCell,
};
use std::fmt;
use std::mem::MaybeUninit;
use std::ptr;
use std::time::{Duration, Instant};

/// An unbounded, multi-producer multi-consumer FIFO blocking queue with a power-of-two
/// capacity — the Rust counterpart of Pulsar's `GrowableArrayBlockingQueue`.
///
/// - [`put`](Self::put) never blocks and never takes a lock on its common path: when the items
///   exceed the capacity it doubles. Storage blocks are reused, so a queue that has grown to
///   fit its workload allocates nothing per item; a new queue allocates nothing until its
///   first `put`.
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
/// Producers never lock. The items live in a chain of blocks of 127 slots (the list
/// flavour of crossbeam-channel, with bigger blocks: `BLOCK_CAP` says why): a producer
/// reserves a position with one compare-and-swap on the tail index, writes its slot and marks
/// it written; the producer that takes a block's last slot links the next block first, so others wait only for that short step. Takers are
/// serialised by one lock (`head`), which they take per operation; it is uncontended while
/// producers keep away from it. A block that takers leave goes back to a spare list and is
/// reused, so a queue whose blocks fit its workload allocates nothing per item.
///
/// Capacity is kept as a number of slots, as Pulsar's ring has it: a power of two that doubles
/// when a `put` would exceed it and that [`trim`](Self::trim) shrinks by Pulsar's rule. The
/// blocks follow it: a taker frees (rather than keeps) a block it leaves while more blocks
/// exist than the capacity needs, and `trim` frees spare blocks down to that number, so
/// memory is capacity rounded up to whole blocks, plus two. A new queue has no block: the
/// first `put` installs the chain's first one (racing first puts install one; the others'
/// blocks go spare), so a queue that is never used allocates nothing.
///
/// Two bits of the tail index carry the rest of the state: `TERMINATED` (set once; a
/// producer's compare-and-swap fails on it, so an item is either queued before `terminate`
/// or handed back) and `WAITING` (a taker is about to block). A taker sets `WAITING` with an
/// atomic or under the `head` lock and blocks only if that same read shows no reserved item;
/// a producer's compare-and-swap clears the bit, and seeing it set, the producer takes the
/// lock and signals `not_empty`. Both are read-modify-writes of one word, so one of them sees
/// the other: no wake-up is lost. A woken taker that leaves other takers blocked sets the bit
/// again before returning. `len` is the tail minus a published copy of the head.
///
/// A taker that finds the queue empty first spins for a short, adaptive bound (the crate's one
/// spin policy, `idle_spin`) before it blocks (modelled in `tests/loom_queue.rs`, where the
/// spin is off). A blocking taker keeps off the tail's line, which every `put` writes (a
/// taker reading it between two puts made the second wait for the line): it takes what it
/// knows is there (before the tail as it last read it, or a written head slot), else spins on
/// its head slot's `written` flag, holding the `head` lock (which keeps that slot's block in
/// the chain) and reading the tail's terminated bit only every 64th poll, and reads the tail
/// only once the spin is over. On a 2-vCPU Intel Xeon VM, where a cache line takes ~90 ns from
/// core to core, one producer into a blocking taker went from ~130 to ~60 ns per item and a
/// ping-pong round trip from ~700 to ~470 ns. Other takers (`poll` too), `drain_to`, `clear`,
/// `trim` and `terminate` wait for the `head` lock while a taker spins: at most the spin's
/// bound, and `terminate` ends the spin within 64 polls (a taker of a queue already
/// terminated and empty also spins those 64 polls before it returns).
///
/// `drain_to` first reads the tail by a read-modify-write, so of it and any `put`'s
/// compare-and-swap one reads the other: either the drain sees the item, or its release makes
/// everything the drainer wrote before (a flag reset, say) visible to the producer after its
/// `put` (the consumer's trigger relies on it).
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
    /// Producers' side: the tail index and block, and the capacity.
    tail: CachePadded<Tail<T>>,
    /// Takers' side: the head, under the lock takers hold per operation.
    head: CachePadded<HeadSide<T>>,
    /// Signalled when a producer clears `WAITING`, and on terminate.
    not_empty: Condvar,
    /// Blocks no longer in the chain, kept for reuse.
    spare: Mutex<Spare<T>>,
}

/// Slots per block. A block spans `LAP` positions of the index (a power of two, so positions
/// divide by shifts); the last position of each lap means "the next block is being linked".
/// Under loom two, so that small models cross blocks.
///
/// Why 127 and not crossbeam's 31: every block costs a fixed toll that its items share. The
/// producer that takes a block's last slot fetches a spare block under the spare list's lock
/// and links it while the other producers wait; the taker that leaves a block resets it and
/// gives it back under that same lock, which the producers' side last held (the lock's line,
/// and the capacity read beside it, cross between the cores each time); and a producer
/// preempted while linking holds up the others. Measured side by side on the 2-vCPU Intel
/// Xeon host (2026-12-02, `queue` bench, alternated builds, ours ÷ crossbeam within each
/// round; 1 / 2 / 4 producers): 31 slots 0.84-1.37x / 0.91-1.48x / 0.97-1.52x (9 rounds);
/// 63 slots 0.88-1.06x / 0.72-1.03x / 0.81-1.05x (5 rounds); 127 slots 0.57-0.82x /
/// 0.58-0.97x / 0.73-1.0x (9 rounds). The ping-pong did not move. (A lock-free hand-off
/// slot for the block a taker left last, tried beside it, took 31-slot blocks with 4
/// producers from a median of ~1.25x to ~1.12x, 4 rounds each, and did nothing measurable
/// at 127 slots: not kept.) The cost is coarser memory: a block of 64-byte messages is
/// ~9 KiB, and a queue keeps up to its capacity's blocks plus two (none until its first
/// `put`).
#[cfg(not(loom))]
const BLOCK_CAP: usize = 127;
#[cfg(loom)]
const BLOCK_CAP: usize = 2;
const LAP: usize = BLOCK_CAP + 1;
/// Tail index bits below the position.
const TERMINATED: usize = 1;
const WAITING: usize = 2;
const SHIFT: usize = 2;
/// While a taker spins on its head slot, how often it also reads the tail (for `terminate`).
const POLLS_PER_TAIL_READ: u32 = 64;

/// Items before `position` (positions skip one per lap).
fn items_before(position: usize) -> usize {
    (position / LAP) * BLOCK_CAP + position % LAP
}

struct Tail<T> {
    /// `position << SHIFT | WAITING? | TERMINATED?`; positions only grow.
    index: AtomicUsize,
    /// The block that holds the tail position (written before the index moves into it). Null
    /// until the first `put` installs the chain's first block (see `install_first_block`).
    block: AtomicPtr<Block<T>>,
    /// Slots: a power of two, doubled by `put` when the items exceed it, shrunk by `trim`.
    capacity: AtomicUsize,
    /// Some past value of the head's item count (never ahead of it): lets `put` check the
    /// capacity without reading the takers' line each time.
    head_hint: AtomicUsize,
}

struct HeadSide<T> {
    lock: Mutex<Head<T>>,
    /// The head position, published after each removal (for `len` and `put`'s growth check).
    position: AtomicUsize,
    /// The chain's first block, set once by the first `put` before any position is reserved
    /// (null until then): where a taker whose head has no block yet starts.
    first: AtomicPtr<Block<T>>,
}

struct Head<T> {
    /// Position of the next item to take; never the last position of a lap.
    position: usize,
    /// The block that holds `position`; null until a taker first finds the chain's first
    /// block installed (`head_block`).
    block: *mut Block<T>,
    /// Takers blocked on `not_empty`.
    waiting: usize,
    /// The tail position as last read: items before it need no new read of the tail's line.
    seen_tail: usize,
}

struct Spare<T> {
    blocks: Vec<*mut Block<T>>,
    /// Blocks allocated now: in the chain and spare.
    total: usize,
}

struct Block<T> {
    /// The next block, linked by the producer that reserves this block's last slot.
    next: AtomicPtr<Block<T>>,
    slots: [Slot<T>; BLOCK_CAP],
}

struct Slot<T> {
    value: UnsafeCell<MaybeUninit<T>>,
    /// Set (release) once `value` is written; cleared when the block is recycled.
    written: AtomicBool,
}

impl<T> Block<T> {
    fn new() -> *mut Self {
        Box::into_raw(Box::new(Block {
            next: AtomicPtr::new(ptr::null_mut()),
            slots: std::array::from_fn(|_| Slot {
                value: UnsafeCell::new(MaybeUninit::uninit()),
                written: AtomicBool::new(false),
            }),
        }))
    }
}

/// Blocks a capacity needs: enough for `capacity` items at any offset, plus one being linked.
fn blocks_for(capacity: usize) -> usize {
    capacity.div_ceil(BLOCK_CAP) + 2
}

// SAFETY: the queue owns its items and hands each to exactly one thread, so it may be sent or
// shared whenever `T` may be sent. The raw block pointers are owned by the queue; every access
// to a slot is ordered by the `written` flag and the tail index as the design note says.
unsafe impl<T: Send> Send for GrowableArrayBlockingQueue<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for GrowableArrayBlockingQueue<T> {}

impl<T> GrowableArrayBlockingQueue<T> {
    /// An empty queue with 64 slots.
    pub fn new() -> Self {
        Self::with_capacity(MIN_TRIM_CAPACITY)
    }

    /// An empty queue with `capacity` slots, rounded up to a power of two (at least 1, at
    /// most the largest power of two a `usize` holds). It allocates nothing until the first
    /// `put`, and then only the blocks its items need.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            tail: CachePadded::new(Tail {
                index: AtomicUsize::new(0),
                block: AtomicPtr::new(ptr::null_mut()),
                capacity: AtomicUsize::new(round_up_to_power_of_two(capacity)),
                head_hint: AtomicUsize::new(0),
            }),
            head: CachePadded::new(HeadSide {
                lock: Mutex::new(Head {
                    position: 0,
                    block: ptr::null_mut(),
                    waiting: 0,
                    seen_tail: 0,
                }),
                position: AtomicUsize::new(0),
                first: AtomicPtr::new(ptr::null_mut()),
            }),
            not_empty: Condvar::new(),
            spare: Mutex::new(Spare {
                blocks: Vec::new(),
                total: 0,
            }),
        }
    }

    /// Appends `item` at the tail. Never blocks (the capacity grows when exceeded).
    ///
    /// # Errors
    ///
    /// Hands `item` back in a [`PutError`] (see [`PutError::into_inner`]) once the queue has
    /// been [terminated](Self::terminate).
    pub fn put(&self, item: T) -> Result<(), PutError<T>> {
        let mut next_block: *mut Block<T> = ptr::null_mut();
        let mut step = 0;
        let mut tail = self.tail.index.load(Ordering::Acquire);
        loop {
            if tail & TERMINATED != 0 {
                if !next_block.is_null() {
                    self.recycle(next_block);
                }
                return Err(PutError::new(item));
            }
            let position = tail >> SHIFT;
            let offset = position % LAP;
            if offset == BLOCK_CAP {
                // Another producer is linking the next block.
                wait_step(&mut step);
                tail = self.tail.index.load(Ordering::Acquire);
                continue;
            }
            if offset + 1 == BLOCK_CAP && next_block.is_null() {
                next_block = self.spare_block();
            }
            let block = self.tail.block.load(Ordering::Acquire);
            if block.is_null() {
                // The first put: no position is reserved until the first block is installed.
                self.install_first_block();
                continue;
            }
            let next = ((position + 1) << SHIFT) | (tail & TERMINATED);
            match self.tail.index.compare_exchange_weak(
                tail,
                next,
                Ordering::SeqCst,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    if offset + 1 == BLOCK_CAP {
                        self.tail.block.store(next_block, Ordering::Release);
                        // An add, not a store: `terminate` or a taker may set a bit meanwhile.
                        self.tail.index.fetch_add(1 << SHIFT, Ordering::Release);
                        // SAFETY: `block` holds `position` (the index was `tail` when we read
                        // it, and a block leaves the chain only after its last slot is taken,
                        // which is ours and not yet written), so it is alive.
                        unsafe { (*block).next.store(next_block, Ordering::Release) };
                    } else if !next_block.is_null() {
                        self.recycle(next_block);
                    }
                    self.check_capacity(items_before(position) + 1);
                    // SAFETY: as above `block` is alive; the position is ours alone, and no
                    // taker reads the slot before `written` is set.
                    unsafe {
                        let slot = &(*block).slots[offset];
                        // The next puts' slots, ahead of their stores (`prefetch.rs`); past
                        // the block's end it is a wasted hint.
                        prefetch::for_write(
                            std::ptr::from_ref(slot)
                                .cast::<u8>()
                                .wrapping_add(prefetch::AHEAD),
                        );
                        slot.value.with_mut(|value| (*value).write(item));
                        slot.written.store(true, Ordering::Release);
                    }
                    if tail & WAITING != 0 {
                        drop(self.head.lock.lock());
                        self.not_empty.notify_one();
                    }
                    return Ok(());
                }
                Err(current) => {
                    tail = current;
                    wait_step(&mut step);
                }
            }
        }
    }

    /// Installs the chain's first block (the first `put`, and any racing it): once in `first`
    /// for the takers, then in the tail for the producers, each by a compare-and-swap from
    /// null, so a racer that lost helps with the second step and no block is installed twice.
    /// `first` is set before the tail's block, which every producer reads (acquire) before
    /// it reserves a position: a taker that knows of a reserved position finds `first` set.
    #[cold]
    #[inline(never)]
    fn install_first_block(&self) {
        let new = self.spare_block();
        let first = match self.head.first.compare_exchange(
            ptr::null_mut(),
            new,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => new,
            Err(installed) => {
                self.recycle(new);
                installed
            }
        };
        // Null only until one of the racers stores `first` here: never a later block.
        let _ = self.tail.block.compare_exchange(
            ptr::null_mut(),
            first,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    /// Doubles the capacity while it is below the item count (`items` counts ours).
    #[inline]
    fn check_capacity(&self, items: usize) {
        let capacity = self.tail.capacity.load(Ordering::Relaxed);
        if items.wrapping_sub(self.tail.head_hint.load(Ordering::Relaxed)) > capacity {
            self.grow(items);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&self, items: usize) {
        let head = items_before(self.head.position.load(Ordering::Acquire));
        self.tail.head_hint.store(head, Ordering::Relaxed);
        let len = items.saturating_sub(head);
        let _ = self.tail.capacity.fetch_update(
            Ordering::Relaxed,
            Ordering::Relaxed,
            |mut capacity| {
                if capacity >= len {
                    return None;
                }
                while capacity < len {
                    capacity *= 2;
                }
                Some(capacity)
            },
        );
    }

    /// A block for the chain: a spare one, or a new one.
    fn spare_block(&self) -> *mut Block<T> {
        let mut spare = self.spare.lock();
        match spare.blocks.pop() {
            Some(block) => block,
            None => {
                spare.total += 1;
                drop(spare);
                Block::new()
            }
        }
    }

    /// Takes back a block that no thread uses (its slots unwritten, `next` null): kept while
    /// the capacity needs it, else freed.
    fn recycle(&self, block: *mut Block<T>) {
        let needed = blocks_for(self.tail.capacity.load(Ordering::Relaxed));
        let mut spare = self.spare.lock();
        if spare.total > needed {
            spare.total -= 1;
            drop(spare);
            // SAFETY: the caller hands over the only use of `block`, allocated by `Block::new`;
            // its slots hold no value.
            drop(unsafe { Box::from_raw(block) });
        } else {
            spare.blocks.push(block);
        }
    }

    /// Whether an item is reserved past the head (`tail` read after the head was).
    fn has_item(head: &Head<T>, tail: usize) -> bool {
        items_before(tail >> SHIFT) != items_before(head.position)
    }

    /// Removes the head if one is reserved, waiting for its producer to finish writing it.
    fn pop_locked(&self, head: &mut Head<T>) -> Option<T> {
        if self.reserved(head) == 0 {
            return None;
        }
        let item = self.take_reserved(head);
        self.head.position.store(head.position, Ordering::Release);
        Some(item)
    }

    /// Items reserved past the head: as last seen, or (when those are taken) the tail read now.
    fn reserved(&self, head: &mut Head<T>) -> usize {
        let mut reserved = self.known_reserved(head);
        if reserved == 0 {
            head.seen_tail = self.tail.index.load(Ordering::Acquire) >> SHIFT;
            reserved = items_before(head.seen_tail) - items_before(head.position);
        }
        reserved
    }

    /// Items known to be reserved past the head without reading the tail's line (which every
    /// `put` writes): those before the tail as last seen, or else one if the head's slot is
    /// written (a producer reserved and wrote it, so the tail is past it).
    fn known_reserved(&self, head: &mut Head<T>) -> usize {
        let reserved = items_before(head.seen_tail) - items_before(head.position);
        if reserved == 0 && !self.head_block(head).is_null() && self.head_slot_written(head) {
            head.seen_tail = head.position + 1;
            return 1;
        }
        reserved
    }

    /// The head's block, learning the chain's first block if the head has none yet. Null only
    /// while no `put` has installed it, so no position is reserved.
    #[inline]
    fn head_block(&self, head: &mut Head<T>) -> *mut Block<T> {
        if head.block.is_null() {
            head.block = self.head.first.load(Ordering::Acquire);
        }
        head.block
    }

    /// Whether the head's slot is written (its item ready to take). The head has its block
    /// (`head_block`).
    fn head_slot_written(&self, head: &Head<T>) -> bool {
        debug_assert!(!head.block.is_null());
        // SAFETY: `head.block` holds the head position and stays in the chain until its last
        // slot is taken (by a taker, under the lock we hold); `written` is an atomic.
        unsafe {
            (*head.block).slots[head.position % LAP]
                .written
                .load(Ordering::Acquire)
        }
    }

    /// Removes the head, which [`reserved`](Self::reserved) counted, waiting for its producer
    /// to finish writing it. Publishes the head position only when it leaves a block; the
    /// caller publishes it at the end.
    fn take_reserved(&self, head: &mut Head<T>) -> T {
        let offset = head.position % LAP;
        // A reserved position means the first block is installed (`install_first_block`).
        let block = self.head_block(head);
        debug_assert!(!block.is_null());
        let mut step = 0;
        // SAFETY: `block` holds the head position and stays in the chain until its last slot
        // is taken (by us, under the lock). The slot's value is moved out once `written` shows
        // its producer is done; no one touches the slot again until the block is recycled
        // (its `written` flags are cleared then) and a producer reserves it again.
        let item = unsafe {
            let slot = &(*block).slots[offset];
            while !slot.written.load(Ordering::Acquire) {
                wait_step(&mut step);
            }
            slot.value.with(|value| (*value).assume_init_read())
        };
        if offset + 1 == BLOCK_CAP {
            // SAFETY: as above; the block's producers are all done (every slot was written).
            let next = unsafe {
                loop {
                    let next = (*block).next.load(Ordering::Acquire);
                    if !next.is_null() {
                        // Reset for reuse, now that no producer touches the block (not slot by
                        // slot as items leave: the producers are writing the next slots).
                        (*block).next.store(ptr::null_mut(), Ordering::Relaxed);
                        for slot in &(*block).slots {
                            slot.written.store(false, Ordering::Relaxed);
                        }
                        break next;
                    }
                    wait_step(&mut step);
                }
            };
            head.block = next;
            head.position += 2;
            self.head.position.store(head.position, Ordering::Release);
            self.recycle(block);
        } else {
            head.position += 1;
        }
        item
    }

    /// Removes the head if there is one. Never blocks.
    pub fn poll(&self) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        let mut head = self.head.lock.lock();
        self.pop_locked(&mut head)
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

    /// `take` (no deadline) and `poll_timeout`: pop an item known to be there; else spin
    /// briefly on the head slot (`idle_spin`), then read the tail and block on `not_empty`
    /// until an item, terminate or the deadline.
    fn wait_for_item(&self, deadline: Option<Instant>) -> Result<T, PollTimeoutError> {
        let mut head = self.head.lock.lock();
        // First what is known without the tail's line, then the spin (which reads the tail
        // only every `POLLS_PER_TAIL_READ` polls), then the tail (`pop_locked`).
        if self.known_reserved(&mut head) > 0 {
            let item = self.take_reserved(&mut head);
            self.head.position.store(head.position, Ordering::Release);
            self.pass_on_waiting(&head);
            return Ok(item);
        }
        let limit = deadline.map_or(Duration::MAX, |deadline| {
            deadline.saturating_duration_since(Instant::now())
        });
        if !limit.is_zero() {
            // Spin on the head's slot, under the lock (so its block stays in the chain),
            // rather than on the tail's line: every `put` writes that line, and a taker
            // reading it between two puts makes the next one wait for it. The tail (its
            // terminated bit) is read once every `POLLS_PER_TAIL_READ` polls.
            let mut polls = 0u32;
            idle_spin::spin_for_work(
                || {
                    polls = polls.wrapping_add(1);
                    let arrived = if head.block.is_null() {
                        // Nothing was ever put: the first put installs the first block.
                        !self.head.first.load(Ordering::Acquire).is_null()
                    } else {
                        self.head_slot_written(&head)
                    };
                    arrived || (polls % POLLS_PER_TAIL_READ == 0 && self.is_terminated())
                },
                limit,
                // No yields for a timed poll: one may cost a time slice, past the deadline.
                deadline.is_none(),
            );
        }
        loop {
            if let Some(item) = self.pop_locked(&mut head) {
                self.pass_on_waiting(&head);
                return Ok(item);
            }
            let tail = self.tail.index.fetch_or(WAITING, Ordering::SeqCst);
            if Self::has_item(&head, tail) {
                continue; // reserved since `pop_locked` looked: wait for its write there
            }
            if tail & TERMINATED != 0 {
                return Err(PollTimeoutError::Terminated);
            }
            head = match deadline {
                None => self.wait_locked(head, None),
                Some(deadline) => {
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    if remaining.is_zero() {
                        return Err(PollTimeoutError::Timeout);
                    }
                    self.wait_locked(head, Some(remaining))
                }
            };
        }
    }

    /// After a taker took an item: if other takers are blocked, make sure one of them is woken
    /// by the next `put` (sets `WAITING` again), or now if an item is already there.
    fn pass_on_waiting(&self, head: &Head<T>) {
        if head.waiting > 0 {
            let tail = self.tail.index.fetch_or(WAITING, Ordering::SeqCst);
            if Self::has_item(head, tail) || tail & TERMINATED != 0 {
                self.not_empty.notify_one();
            }
        }
    }

    /// Waits on `not_empty` (at most `timeout`), counted in `waiting`.
    fn wait_locked<'a>(
        &self,
        mut head: MutexGuard<'a, Head<T>>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, Head<T>> {
        head.waiting += 1;
        let mut head = match timeout {
            None => self.not_empty.wait(head),
            Some(timeout) => self.not_empty.wait_timeout(head, timeout).0,
        };
        // How long that took tells the spin policy whether spinning could have won.
        idle_spin::note_woken();
        head.waiting -= 1;
        head
    }

    /// Moves up to `max` items, head first, to the end of `out`. Returns how many moved.
    ///
    /// Reads the tail by a read-modify-write first (see the design note).
    pub fn drain_to(&self, out: &mut Vec<T>, max: usize) -> usize {
        if max == 0 {
            return 0;
        }
        let mut head = self.head.lock.lock();
        // Reads the tail by a read-modify-write (see the design note): the latest tail, or its
        // release makes the caller's earlier writes visible to the next `put`.
        head.seen_tail = self.tail.index.fetch_add(0, Ordering::AcqRel) >> SHIFT;
        // Only what was reserved by then: chasing the producers item by item would read each
        // slot while its line is still being written.
        let moved = (items_before(head.seen_tail) - items_before(head.position)).min(max);
        out.reserve(moved);
        for _ in 0..moved {
            out.push(self.take_reserved(&mut head));
        }
        if moved > 0 {
            self.head.position.store(head.position, Ordering::Release);
            self.pass_on_waiting(&head);
        }
        moved
    }

    /// Number of items queued now (a producer's reserved item counts from its reservation).
    pub fn len(&self) -> usize {
        let head = self.head.position.load(Ordering::Acquire);
        let tail = self.tail.index.load(Ordering::Acquire) >> SHIFT;
        items_before(tail).saturating_sub(items_before(head))
    }

    /// Whether no item is queued now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slots the queue holds room for now (a power of two). While producers put concurrently
    /// with a [`trim`](Self::trim), it may read below [`len`](Self::len) for a moment: the next
    /// `put` doubles it again.
    pub fn capacity(&self) -> usize {
        self.tail.capacity.load(Ordering::Relaxed)
    }

    /// Removes and drops every item (after releasing the lock, so an item's `Drop` may use the
    /// queue). The capacity stays as it is; see [`trim`](Self::trim).
    pub fn clear(&self) {
        let mut removed = Vec::new();
        self.drain_to(&mut removed, usize::MAX);
        drop(removed);
    }

    /// A consistent snapshot of the queued items, head first.
    ///
    /// Each item is cloned under the takers' lock (which keeps its slot from being freed), so
    /// `T::clone` must not use this queue: a `take`, `poll` or `drain_to` from inside it would
    /// wait for itself, as would a `put` while a taker waits; and a slow clone holds the
    /// takers up meanwhile. A clone that panics unwinds with the lock released and the clones
    /// made so far dropped.
    pub fn to_vec(&self) -> Vec<T>
    where
        T: Clone,
    {
        let mut head = self.head.lock.lock();
        let tail = self.tail.index.load(Ordering::Acquire) >> SHIFT;
        let count = items_before(tail) - items_before(head.position);
        let mut out = Vec::with_capacity(count);
        let mut position = head.position;
        // Null only if nothing was ever put (then `count` is 0 and the loop does not run).
        let mut block = self.head_block(&mut head);
        let mut step = 0;
        while out.len() < count {
            let offset = position % LAP;
            // SAFETY: the blocks from the head's to the one holding `tail` stay in the chain
            // while we hold the lock (only takers unlink them); a slot is read only once
            // `written` shows its producer is done, and only by reference.
            unsafe {
                let slot = &(*block).slots[offset];
                while !slot.written.load(Ordering::Acquire) {
                    wait_step(&mut step);
                }
                out.push(slot.value.with(|value| (*value).assume_init_ref().clone()));
                if offset + 1 == BLOCK_CAP {
                    loop {
                        let next = (*block).next.load(Ordering::Acquire);
                        if !next.is_null() {
                            block = next;
                            break;
                        }
                        wait_step(&mut step);
                    }
                    position += 2;
                } else {
                    position += 1;
                }
            }
        }
        out
    }

    /// Gives memory back after a burst, by Pulsar's rule: only when capacity > 64 and
    /// `len <= capacity / 4`, shrink to the smallest power of two >= max(64, 2 * len), and free
    /// the spare blocks the new capacity does not need.
    ///
    /// Never waits for a busy lock: returns 0 then. Returns the number of slots freed.
    pub fn trim(&self) -> usize {
        let Some(head) = self.head.lock.try_lock() else {
            return 0;
        };
        let capacity = self.tail.capacity.load(Ordering::Relaxed);
        let len = self.len();
        if capacity <= MIN_TRIM_CAPACITY || len > capacity / 4 {
            return 0;
        }
        let target = round_up_to_power_of_two((2 * len).max(MIN_TRIM_CAPACITY));
        if target >= capacity
            || self
                .tail
                .capacity
                .compare_exchange(capacity, target, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return 0;
        }
        drop(head);
        if let Some(mut spare) = self.spare.try_lock() {
            let needed = blocks_for(target);
            let mut freed = Vec::new();
            while spare.total > needed {
                let Some(block) = spare.blocks.pop() else {
                    break;
                };
                spare.total -= 1;
                freed.push(block);
            }
            drop(spare);
            for block in freed {
                // SAFETY: spare blocks are used by no thread and hold no value.
                drop(unsafe { Box::from_raw(block) });
            }
        }
        capacity - target
    }

    /// Stops accepting items and wakes every blocked taker. Items already queued can still be
    /// taken; afterwards `take` returns `None` instead of blocking on an empty queue.
    pub fn terminate(&self) {
        self.tail.index.fetch_or(TERMINATED, Ordering::SeqCst);
        drop(self.head.lock.lock());
        self.not_empty.notify_all();
    }

    /// Whether [`terminate`](Self::terminate) has been called.
    pub fn is_terminated(&self) -> bool {
        self.tail.index.load(Ordering::Acquire) & TERMINATED != 0
    }
}

impl<T> Drop for GrowableArrayBlockingQueue<T> {
    fn drop(&mut self) {
        let mut head = self.head.lock.lock();
        let (mut position, mut block) = (head.position, self.head_block(&mut head));
        drop(head);
        let tail = self.tail.index.load(Ordering::Acquire) >> SHIFT;
        // No block: nothing was ever put, so there is no chain (only spare blocks, below).
        debug_assert!(!block.is_null() || tail == 0);
        // SAFETY: no other thread uses the queue (`&mut self`), so every reserved slot has been
        // written, and the chain from the head's block on is ours to drop item by item and
        // free block by block; spare blocks hold no value.
        unsafe {
            while position != tail {
                let offset = position % LAP;
                (*block).slots[offset]
                    .value
                    .with_mut(|value| (*value).assume_init_drop());
                if offset + 1 == BLOCK_CAP {
                    let next = (*block).next.load(Ordering::Acquire);
                    drop(Box::from_raw(block));
                    block = next;
                    position += 2;
                } else {
                    position += 1;
                }
            }
            if !block.is_null() {
                drop(Box::from_raw(block));
            }
            for spare in self.spare.lock().blocks.drain(..) {
                drop(Box::from_raw(spare));
            }
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
