//! `EntryBlocks`: the memory of fired timer entries, kept for the next timers the producers arm
//! — so that a steady stream of fire-and-forget timers allocates nothing.
//!
//! # Why
//!
//! A timer's entry is allocated by the thread that arms it and, when its handle was dropped
//! before it ran, freed by the worker after it fires. With glibc's allocator that round trip
//! between two threads is the dearest part of a `schedule(Duration::ZERO, ..)` hand-off: the
//! worker's free pushes the chunk onto the arena's bin with a compare-and-swap, and the
//! producer's next allocation pops it again (a compare-and-swap on the same line, then a read
//! of the chunk's link, both lines last written on the other core). Measured on the Intel host
//! of 2026-12-06 (K=256 hand-off, 3 alternated processes x 3 rounds): the same binary ran at
//! 397 ns per task on glibc's allocator, 286 on jemalloc's and 272 on tcmalloc's (`LD_PRELOAD`),
//! where the delay heap moved from 371 to 345.
//!
//! # How
//!
//! - The worker, dropping the last reference of an entry it fired, drops the entry in place and
//!   keeps its memory: a [`Block`]. It holds the blocks under the due list's lock, which it
//!   takes for every timer anyway ([`TimerRef::release_keeping`](super::timer_ref::TimerRef)).
//! - When it next moves due timers under the queue lock, it hands them over to the producers'
//!   side, which the queue lock guards too ([`EntryBlocks::take_all_from`]).
//! - A producer arming a timer whose entry has the blocks' layout takes one under the queue
//!   lock, which it holds to arm anyway, and writes the entry into it. A lock-free hint
//!   (`Timers::kept_hint`) tells it beforehand whether to count on one or to allocate before it
//!   takes the lock, as before.
//!
//! So no lock, no read-modify-write and no allocator call is added to the path (one relaxed load
//! of the hint per arm, a relaxed store when the kept blocks run out or come back), and only
//! blocks pass between the threads: the allocator's shared lists are out of it. Measured on the same host
//! (K=256 hand-off, 5 alternated processes x 3 rounds, with the stream rule of `due_stream.rs`
//! that came with it): 366 -> 294 ns per task, 1.05x -> 0.84x the delay heap, and 1 -> 0
//! allocations per task. The cost: the block's lines come from the worker's cache, so a timer
//! armed alone pays ~0.2 us more from arming to running at the median (and less at the 90th
//! percentile; `due_stream.rs` has the table). A timer whose handle is still held when it runs
//! is freed by the handle's drop, as before, and keeps nothing: the handle's thread is not
//! the worker. The single-threaded schedule + cancel bench row measured 10-17% slower with
//! this change; one unused padded field added to the timers' state alone made it 9% slower,
//! so most of that follows the executor's memory layout (the README's latest results).
//!
//! # What is kept, and for how long
//!
//! One layout at a time (every block has the layout of the entries it held, so that the entry
//! that reuses one frees it with its own layout, as an allocation of its own type, if it is not
//! kept again): blocks of another layout are freed. At most [`KEPT_BLOCKS`] on each side. The
//! idle trim frees them, as it frees the wheel's list heads; so do `Drop` of the executor and of
//! the due list.

use crate::prefetch;
use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// Blocks each side keeps at most: the worker's (fired, not yet handed over) and the
/// producers'. 256 entries of the usual ~72 bytes: 18 KiB each.
pub(crate) const KEPT_BLOCKS: usize = 256;

/// The memory of one timer entry, owned; freed on drop unless it is kept or reused.
#[derive(Debug)]
pub(crate) struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: a `Block` owns its memory alone (no value lives in it) and frees it with the
// global allocator, which any thread may do.
#[allow(unsafe_code)]
unsafe impl Send for Block {}

impl Block {
    /// Fresh memory for a value of `layout` (not zero-sized: an entry never is).
    pub(crate) fn allocate(layout: Layout) -> Self {
        assert!(layout.size() > 0, "a timer entry is never zero-sized");
        // SAFETY: the layout's size is not zero (checked above).
        #[allow(unsafe_code)]
        let ptr = unsafe { alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(ptr) else {
            alloc::handle_alloc_error(layout);
        };
        Self { ptr, layout }
    }

    /// The memory of a value whose storage the caller owns and has dropped the value of.
    ///
    /// # Safety
    ///
    /// `ptr` was allocated by the global allocator with exactly `layout`, and nothing else will
    /// use or free it. A value that still lives in it is dropped in place right after this
    /// call, before the block is used or dropped.
    #[allow(unsafe_code)]
    pub(crate) unsafe fn from_raw(ptr: NonNull<u8>, layout: Layout) -> Self {
        Self { ptr, layout }
    }

    /// The layout the block was allocated with.
    pub(crate) fn layout(&self) -> Layout {
        self.layout
    }

    /// Gives the memory up to the caller, who now owns it (to write a value of the block's
    /// layout into, and to free it with that layout).
    pub(crate) fn into_raw(self) -> NonNull<u8> {
        let ptr = self.ptr;
        std::mem::forget(self);
        ptr
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: allocated by the global allocator with `self.layout` (`allocate`, or the
        // contract of `from_raw`), and owned by this block alone.
        #[allow(unsafe_code)]
        unsafe {
            alloc::dealloc(self.ptr.as_ptr(), self.layout);
        }
    }
}

/// Blocks of one layout, kept for reuse (module docs).
#[derive(Debug, Default)]
pub(crate) struct EntryBlocks {
    blocks: Vec<Block>,
}

impl EntryBlocks {
    /// None kept.
    pub(crate) const fn new() -> Self {
        Self { blocks: Vec::new() }
    }

    /// Blocks kept.
    pub(crate) fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether none is kept.
    pub(crate) fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The layout of the blocks kept, if any.
    fn layout(&self) -> Option<Layout> {
        self.blocks.last().map(Block::layout)
    }

    /// Keeps `block` if there is room and it has the layout of those kept (any, when none is);
    /// otherwise it is freed.
    pub(crate) fn keep(&mut self, block: Block) {
        if self.blocks.len() < KEPT_BLOCKS && self.layout().map_or(true, |l| l == block.layout) {
            self.blocks.push(block);
        }
    }

    /// A kept block of `layout`, if there is one. The block the next call would return is
    /// prefetched for a store: the worker freed it last, so its lines are in the worker's
    /// cache, and the entry is written into it under the queue lock (`prefetch.rs`).
    pub(crate) fn take(&mut self, layout: Layout) -> Option<Block> {
        if self.layout() != Some(layout) {
            return None;
        }
        let block = self.blocks.pop();
        if let Some(next) = self.blocks.last() {
            let start = next.ptr.as_ptr().cast_const();
            prefetch::for_write(start);
            prefetch::for_write(start.wrapping_add(next.layout.size() - 1));
        }
        block
    }

    /// Moves `other`'s blocks here, as [`keep`](Self::keep) would one by one, leaving `other`
    /// empty (what does not fit, or has another layout, is freed).
    pub(crate) fn take_all_from(&mut self, other: &mut EntryBlocks) {
        if self.is_empty() {
            std::mem::swap(&mut self.blocks, &mut other.blocks);
            return;
        }
        for block in other.blocks.drain(..) {
            self.keep(block);
        }
    }

    /// Frees every block kept; returns how many there were.
    pub(crate) fn free_all(&mut self) -> usize {
        let freed = self.blocks.len();
        self.blocks = Vec::new();
        freed
    }

    /// Whether any memory is held (kept blocks, or the list's own storage).
    pub(crate) fn holds_memory(&self) -> bool {
        self.blocks.capacity() > 0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, 8).unwrap()
    }

    #[test]
    fn keeps_one_layout_up_to_the_limit_and_frees_the_rest() {
        let mut kept = EntryBlocks::new();
        assert!(kept.take(layout(72)).is_none(), "none kept yet");
        kept.keep(Block::allocate(layout(72)));
        kept.keep(Block::allocate(layout(80)));
        assert_eq!(kept.len(), 1, "another layout is freed, not kept");
        assert!(kept.take(layout(80)).is_none());
        for _ in 0..KEPT_BLOCKS + 10 {
            kept.keep(Block::allocate(layout(72)));
        }
        assert_eq!(kept.len(), KEPT_BLOCKS, "at most the limit");
        let block = kept.take(layout(72)).expect("a kept block");
        assert_eq!(block.layout(), layout(72));
        assert_eq!(kept.len(), KEPT_BLOCKS - 1);
        assert_eq!(kept.free_all(), KEPT_BLOCKS - 1);
        assert!(!kept.holds_memory());
        // Empty again: the next layout is taken on.
        kept.keep(Block::allocate(layout(80)));
        assert!(kept.take(layout(80)).is_some());
    }

    #[test]
    fn a_hand_over_moves_every_block_that_fits_and_empties_the_giver() {
        let mut worker = EntryBlocks::new();
        let mut producers = EntryBlocks::new();
        for _ in 0..10 {
            worker.keep(Block::allocate(layout(64)));
        }
        producers.take_all_from(&mut worker);
        assert_eq!((producers.len(), worker.len()), (10, 0), "swapped in whole");
        for _ in 0..KEPT_BLOCKS {
            worker.keep(Block::allocate(layout(64)));
        }
        producers.take_all_from(&mut worker);
        assert_eq!(producers.len(), KEPT_BLOCKS, "topped up to the limit");
        assert_eq!(worker.len(), 0);
        worker.keep(Block::allocate(layout(96)));
        let before = producers.len();
        producers.take_all_from(&mut worker);
        assert_eq!(
            (producers.len(), worker.len()),
            (before, 0),
            "another layout is freed"
        );
    }

    /// A block written with one value, dropped in place, then reused for another of the same
    /// layout and freed by a `Box` of that type (what the timer entries do): Miri checks the
    /// accesses and that nothing leaks or is freed twice.
    #[test]
    fn a_block_carries_values_of_its_layout_one_after_another() {
        let layout = Layout::new::<[u64; 4]>();
        let block = Block::allocate(layout);
        let ptr = block.into_raw().cast::<[u64; 4]>();
        // SAFETY: the block's memory, of `[u64; 4]`'s layout, owned here.
        #[allow(unsafe_code)]
        unsafe {
            ptr.as_ptr().write([1, 2, 3, 4]);
            assert_eq!(ptr.as_ref()[3], 4);
            std::ptr::drop_in_place(ptr.as_ptr());
        }
        // SAFETY: allocated with `layout`, its value dropped, owned here alone.
        #[allow(unsafe_code)]
        let block = unsafe { Block::from_raw(ptr.cast(), layout) };
        let mut kept = EntryBlocks::new();
        kept.keep(block);
        let again = kept.take(Layout::new::<(u64, u64, u64, u64)>());
        let ptr = again
            .expect("same layout")
            .into_raw()
            .cast::<(u64, u64, u64, u64)>();
        // SAFETY: as above; the `Box` frees it with its type's layout, the block's.
        #[allow(unsafe_code)]
        let boxed = unsafe {
            ptr.as_ptr().write((5, 6, 7, 8));
            Box::from_raw(ptr.as_ptr())
        };
        assert_eq!(*boxed, (5, 6, 7, 8));
    }
}
