//! `Slots<T>`: a fixed power-of-two array of maybe-initialised slots, the storage of the
//! blocking queue's two-lock ring.

use crate::sync::UnsafeCell;
use std::mem::MaybeUninit;

/// A fixed array of slots (a power of two of them), each empty or holding one `T`, indexed by
/// a wrapping counter (`index & (capacity - 1)`).
///
/// The array does not know which slots hold an item: its owner does (the queue's head and tail
/// indices), writes only empty slots, reads only full ones, and moves every item out before the
/// array is dropped (dropping `Slots` never drops a `T`). Each slot is its own cell so that a
/// producer writing one slot and a consumer reading another never touch the same cell, and so
/// that loom checks every access against the protocol's happens-before edges.
pub(crate) struct Slots<T> {
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
}

impl<T> Slots<T> {
    /// `capacity` empty slots; `capacity` must be a power of two.
    pub(crate) fn new(capacity: usize) -> Self {
        assert!(
            capacity.is_power_of_two(),
            "capacity must be a power of two"
        );
        Self {
            slots: (0..capacity)
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
        }
    }

    /// Number of slots.
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    fn slot(&self, index: usize) -> &UnsafeCell<MaybeUninit<T>> {
        // The mask keeps the index in bounds (the length is a power of two).
        &self.slots[index & (self.slots.len() - 1)]
    }

    /// Stores `item` in the slot for `index`.
    ///
    /// # Safety
    ///
    /// The slot must be empty (never written, or read out since), and no other thread may
    /// access it until this call has returned and been published to it.
    #[inline]
    pub(crate) unsafe fn write(&self, index: usize, item: T) {
        self.slot(index).with_mut(|slot| {
            // SAFETY: the caller guarantees exclusive access to the slot; overwriting an empty
            // `MaybeUninit` leaks nothing.
            unsafe { (*slot).write(item) };
        });
    }

    /// Moves the item out of the slot for `index`, leaving the slot empty.
    ///
    /// # Safety
    ///
    /// The slot must hold an item whose write happened before this call, and no other thread
    /// may access the slot during it.
    #[inline]
    pub(crate) unsafe fn read(&self, index: usize) -> T {
        self.slot(index).with_mut(|slot| {
            // SAFETY: the caller guarantees the slot is initialised and exclusively ours; the
            // owner treats it as empty from now on, so the value is moved out exactly once.
            unsafe { (*slot).assume_init_read() }
        })
    }

    /// Runs `f` on the item in the slot for `index`, in place.
    ///
    /// # Safety
    ///
    /// The slot must hold an item whose write happened before this call, and no thread may
    /// write or read it out during it.
    pub(crate) unsafe fn with_item<R>(&self, index: usize, f: impl FnOnce(&T) -> R) -> R {
        self.slot(index).with(|slot| {
            // SAFETY: the caller guarantees the slot is initialised and not mutated meanwhile.
            f(unsafe { (*slot).assume_init_ref() })
        })
    }

    /// A new array of `capacity` slots holding the `len` items that start at `head` here, each
    /// moved to the same index (`head`, `head + 1` ...: a count, not a slot number, so the
    /// owner's counts stay valid). This array is left with those slots empty.
    ///
    /// # Safety
    ///
    /// The `len` slots from `head` must hold items, and no other thread may access this array
    /// during the call. `capacity` must be a power of two of at least `len`.
    pub(crate) unsafe fn relocate(&self, head: usize, len: usize, capacity: usize) -> Slots<T> {
        debug_assert!(len <= self.capacity() && len <= capacity);
        let moved = Slots::new(capacity);
        for offset in 0..len {
            let index = head.wrapping_add(offset);
            // SAFETY: the caller guarantees slot `index` holds an item and that we are alone
            // here; the new array is local, and `len <= capacity` consecutive indices map to
            // distinct, still empty slots of it.
            unsafe { moved.write(index, self.read(index)) };
        }
        moved
    }
}
