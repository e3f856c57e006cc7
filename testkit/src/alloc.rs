//! `CountingAllocator`: the global allocator of every bench binary and allocation-asserting
//! test, counting allocations and bytes (reallocation growth included) per thread, without
//! contended atomics.
//!
//! # Design
//!
//! Counting must not tax the peers that allocate per task more than it taxes us, so no two
//! threads ever write the same cache line: each thread claims its own slot of counters (one
//! `fetch_add` on its first allocation) and updates it with plain relaxed load + store, which
//! is correct because it is the slot's only writer. A [`snapshot`] sums every claimed slot.
//! Threads beyond [`SLOTS`] share one overflow slot updated with `fetch_add` (correct, slower).
//!
//! # Memory ordering
//!
//! Counters are relaxed. A snapshot taken after a synchronising event (a joined thread, a
//! latch counted down with release and awaited with acquire) sees every count its writers
//! made before that event; counts racing with the snapshot land in the next one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Threads that get a private slot; later threads share the overflow slot.
pub const SLOTS: usize = 4096;

/// Wraps the system allocator and counts, per thread, allocations, reallocations, frees and
/// bytes. Install it once per bench binary:
///
/// ```ignore
/// #[global_allocator]
/// static ALLOC: pulsar_testkit::alloc::CountingAllocator = pulsar_testkit::alloc::CountingAllocator;
/// ```
///
/// A reallocation counts as one allocation; growth adds to the bytes allocated, shrinking to
/// the bytes freed, so [`AllocStats::live_bytes`] stays exact.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAllocator;

/// One thread's counters, on its own pair of cache lines.
#[repr(align(128))]
struct Slot {
    /// `alloc`, `alloc_zeroed` and `realloc` calls.
    allocations: AtomicU64,
    /// `realloc` calls (also counted in `allocations`).
    reallocations: AtomicU64,
    /// Bytes requested by allocations plus the growth of reallocations.
    bytes_allocated: AtomicU64,
    /// `dealloc` calls.
    frees: AtomicU64,
    /// Bytes given back by frees plus the shrinkage of reallocations.
    bytes_freed: AtomicU64,
}

impl Slot {
    const fn new() -> Self {
        Self {
            allocations: AtomicU64::new(0),
            reallocations: AtomicU64::new(0),
            bytes_allocated: AtomicU64::new(0),
            frees: AtomicU64::new(0),
            bytes_freed: AtomicU64::new(0),
        }
    }
}

/// Adds `n` to a counter; `owned`: the calling thread is the counter's only writer.
#[inline(always)]
fn bump(counter: &AtomicU64, n: u64, owned: bool) {
    if owned {
        counter.store(
            counter.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    } else {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

static THREAD_SLOTS: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];
static OVERFLOW_SLOT: Slot = Slot::new();
/// Slots claimed so far (may exceed `SLOTS`: the excess threads use the overflow slot).
static CLAIMED: AtomicUsize = AtomicUsize::new(0);
/// Set by the first counted call: the allocator is installed as the global allocator.
static ACTIVE: AtomicBool = AtomicBool::new(false);

const UNCLAIMED: usize = usize::MAX;
const OVERFLOW: usize = usize::MAX - 1;

thread_local! {
    /// This thread's slot index, [`UNCLAIMED`] or [`OVERFLOW`]. Const-initialised and without
    /// a destructor, so reading it never allocates and works during thread teardown.
    static MY_SLOT: Cell<usize> = const { Cell::new(UNCLAIMED) };
}

/// The calling thread's slot and whether it owns it alone.
#[inline(always)]
fn my_slot() -> (&'static Slot, bool) {
    let index = MY_SLOT
        .try_with(|cell| {
            let mut index = cell.get();
            if index == UNCLAIMED {
                index = claim_slot();
                cell.set(index);
            }
            index
        })
        .unwrap_or(OVERFLOW);
    match THREAD_SLOTS.get(index) {
        Some(slot) => (slot, true),
        None => (&OVERFLOW_SLOT, false),
    }
}

#[cold]
fn claim_slot() -> usize {
    if !ACTIVE.load(Ordering::Relaxed) {
        ACTIVE.store(true, Ordering::Relaxed);
    }
    let index = CLAIMED.fetch_add(1, Ordering::Relaxed);
    if index < SLOTS {
        index
    } else {
        OVERFLOW
    }
}

#[inline(always)]
fn count_allocation(bytes: usize) {
    let (slot, owned) = my_slot();
    bump(&slot.allocations, 1, owned);
    bump(&slot.bytes_allocated, bytes as u64, owned);
}

#[inline(always)]
fn count_free(bytes: usize) {
    let (slot, owned) = my_slot();
    bump(&slot.frees, 1, owned);
    bump(&slot.bytes_freed, bytes as u64, owned);
}

#[inline(always)]
fn count_reallocation(old: usize, new: usize) {
    let (slot, owned) = my_slot();
    bump(&slot.allocations, 1, owned);
    bump(&slot.reallocations, 1, owned);
    if new >= old {
        bump(&slot.bytes_allocated, (new - old) as u64, owned);
    } else {
        bump(&slot.bytes_freed, (old - new) as u64, owned);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged and only
// adds counting, which neither allocates nor touches the memory handed out.
unsafe impl GlobalAlloc for CountingAllocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which `System` shares.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count_allocation(layout.size());
        }
        ptr
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count_allocation(layout.size());
        }
        ptr
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator, i.e. by `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        count_free(layout.size());
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was allocated by `System` with `layout`; the caller upholds the rest.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count_reallocation(layout.size(), new_size);
        }
        new
    }
}

/// Counts since the process started (from [`snapshot`]) or between two snapshots
/// (from [`AllocStats::since`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocStats {
    /// Allocations, reallocations included.
    pub allocations: u64,
    /// Reallocations (also counted in `allocations`).
    pub reallocations: u64,
    /// Bytes allocated, reallocation growth included.
    pub bytes_allocated: u64,
    /// Frees.
    pub frees: u64,
    /// Bytes freed, reallocation shrinkage included.
    pub bytes_freed: u64,
}

impl AllocStats {
    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &AllocStats) -> AllocStats {
        AllocStats {
            allocations: self.allocations.wrapping_sub(earlier.allocations),
            reallocations: self.reallocations.wrapping_sub(earlier.reallocations),
            bytes_allocated: self.bytes_allocated.wrapping_sub(earlier.bytes_allocated),
            frees: self.frees.wrapping_sub(earlier.frees),
            bytes_freed: self.bytes_freed.wrapping_sub(earlier.bytes_freed),
        }
    }

    /// Bytes allocated and not yet freed (negative for a window that freed older memory).
    pub fn live_bytes(&self) -> i64 {
        self.bytes_allocated as i64 - self.bytes_freed as i64
    }
}

/// Sums every thread's counters now.
pub fn snapshot() -> AllocStats {
    let claimed = CLAIMED.load(Ordering::Relaxed).min(SLOTS);
    let mut total = AllocStats::default();
    for slot in THREAD_SLOTS[..claimed].iter().chain(Some(&OVERFLOW_SLOT)) {
        total.allocations += slot.allocations.load(Ordering::Relaxed);
        total.reallocations += slot.reallocations.load(Ordering::Relaxed);
        total.bytes_allocated += slot.bytes_allocated.load(Ordering::Relaxed);
        total.frees += slot.frees.load(Ordering::Relaxed);
        total.bytes_freed += slot.bytes_freed.load(Ordering::Relaxed);
    }
    total
}

/// The calling thread's own counters now (exact even while other threads allocate; a thread
/// beyond [`SLOTS`] sees the shared overflow counters).
pub fn thread_snapshot() -> AllocStats {
    let (slot, _) = my_slot();
    AllocStats {
        allocations: slot.allocations.load(Ordering::Relaxed),
        reallocations: slot.reallocations.load(Ordering::Relaxed),
        bytes_allocated: slot.bytes_allocated.load(Ordering::Relaxed),
        frees: slot.frees.load(Ordering::Relaxed),
        bytes_freed: slot.bytes_freed.load(Ordering::Relaxed),
    }
}

/// Whether [`CountingAllocator`] is this process's global allocator (it has counted
/// something). Figures read without it would all be zero.
pub fn is_active() -> bool {
    if !ACTIVE.load(Ordering::Relaxed) {
        // One allocation proves it either way.
        drop(std::hint::black_box(Box::new(0u64)));
    }
    ACTIVE.load(Ordering::Relaxed)
}

/// Runs `f` on this thread and returns its result with what the whole process allocated
/// meanwhile (other threads included).
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, AllocStats) {
    let before = snapshot();
    let result = f();
    let after = snapshot();
    (result, after.since(&before))
}

/// Runs `f` and returns its result with what the calling thread alone allocated meanwhile.
pub fn measure_thread<R>(f: impl FnOnce() -> R) -> (R, AllocStats) {
    let before = thread_snapshot();
    let result = f();
    let after = thread_snapshot();
    (result, after.since(&before))
}
