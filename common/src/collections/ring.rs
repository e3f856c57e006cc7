//! `Ring<T>`: a growable power-of-two ring buffer with Pulsar's trim rule (not thread-safe).
//!
//! The storage is a [`VecDeque`] whose capacity this type keeps at a power of two: it grows by
//! doubling (keeping FIFO order across wrap-around, which `VecDeque` does on reallocation) and
//! shrinks only through [`Ring::trim`] / [`Ring::release`]. Using `VecDeque` keeps the ring free
//! of `unsafe`; the executor stores its tasks here, so a steady workload that refills the ring
//! every batch never reallocates once the ring has grown to fit.

use crate::prefetch;
use std::collections::VecDeque;

/// The smallest capacity [`Ring::trim`] shrinks to, and the default capacity (Pulsar's 64).
pub(crate) const MIN_TRIM_CAPACITY: usize = 64;

/// A growable FIFO ring buffer whose capacity is a power of two (or zero once released).
#[derive(Debug, Clone)]
pub(crate) struct Ring<T> {
    items: VecDeque<T>,
}

impl<T> Ring<T> {
    /// A ring with room for `capacity` items, rounded up to a power of two (at least 1).
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            items: VecDeque::with_capacity(round_up_to_power_of_two(capacity)),
        }
    }

    /// A ring with no storage yet (it allocates 64 slots on the first push).
    pub(crate) fn empty() -> Self {
        Self {
            items: VecDeque::new(),
        }
    }

    /// Appends at the tail, doubling the storage first when it is full; then prefetches, for
    /// a store, the line [`prefetch::AHEAD`] bytes past the new tail (`prefetch.rs`: the next
    /// pushes then find their slots' lines owned instead of in the consumer's cache).
    #[inline]
    pub(crate) fn push_back(&mut self, item: T) {
        let capacity = self.items.capacity();
        if self.items.len() == capacity {
            self.grow(capacity);
        }
        self.items.push_back(item);
        let (front, back) = self.items.as_slices();
        let tail = if back.is_empty() { front } else { back }
            .as_ptr_range()
            .end;
        // Near the end of the storage this points past it (the ring wraps to its start): a
        // prefetch there is a wasted hint, no access.
        prefetch::for_write(tail.cast::<u8>().wrapping_add(prefetch::AHEAD));
    }

    /// Appends `items`, in order, growing the storage at most once (to the power of two that
    /// fits them all).
    pub(crate) fn extend_exact(&mut self, items: impl ExactSizeIterator<Item = T>) {
        let needed = self.items.len() + items.len();
        if needed > self.items.capacity() {
            let target = round_up_to_power_of_two(needed.max(MIN_TRIM_CAPACITY));
            self.items.reserve_exact(target - self.items.len());
        }
        self.items.extend(items);
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, capacity: usize) {
        // From empty storage (a released ring) straight to the default size; else double.
        let additional = if capacity == 0 {
            MIN_TRIM_CAPACITY
        } else {
            capacity
        };
        self.items.reserve_exact(additional);
    }

    /// Removes the head.
    #[inline]
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        self.items.pop_front()
    }

    /// Number of items held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no item is held.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Slots allocated now.
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.items.capacity()
    }

    /// The item `index` places from the head.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        self.items.get(index)
    }

    /// Removes every item (dropping them), keeping the storage.
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.items.clear();
    }

    /// Iterates head to tail.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter()
    }

    /// Pulsar's trim rule: only when capacity > 64 and `len <= capacity / 4`, shrink to the
    /// smallest power of two >= max(64, 2 * len). Returns the slots freed.
    pub(crate) fn trim(&mut self) -> usize {
        let capacity = self.items.capacity();
        let len = self.items.len();
        if capacity <= MIN_TRIM_CAPACITY || len > capacity / 4 {
            return 0;
        }
        let target = round_up_to_power_of_two((2 * len).max(MIN_TRIM_CAPACITY));
        if target >= capacity {
            return 0;
        }
        self.items.shrink_to(target);
        capacity - self.items.capacity()
    }

    /// Frees the storage of an empty ring entirely; returns the slots freed (0 if not empty).
    pub(crate) fn release(&mut self) -> usize {
        if !self.items.is_empty() {
            return 0;
        }
        let capacity = self.items.capacity();
        self.items = VecDeque::new();
        capacity
    }

    /// Exchanges the contents (and storage) of two rings in O(1).
    #[inline]
    pub(crate) fn swap(&mut self, other: &mut Ring<T>) {
        std::mem::swap(&mut self.items, &mut other.items);
    }

    /// Consumes the ring, yielding its items head first.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn into_items(self) -> impl Iterator<Item = T> {
        self.items.into_iter()
    }
}

/// Rounds up to a power of two, treating 0 as 1 and saturating at the largest power of two a
/// `usize` holds (`next_power_of_two` would wrap to 0 above it, and a queue of capacity 0
/// could never grow).
pub(crate) fn round_up_to_power_of_two(n: usize) -> usize {
    n.max(1)
        .checked_next_power_of_two()
        .unwrap_or(1 << (usize::BITS - 1))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn ring_with(capacity: usize, head_offset: usize, len: usize) -> Ring<usize> {
        let mut ring = Ring::with_capacity(capacity);
        for i in 0..head_offset {
            ring.push_back(i);
        }
        for _ in 0..head_offset {
            ring.pop_front();
        }
        for i in 0..len {
            ring.push_back(i);
        }
        assert_eq!(ring.capacity(), capacity, "setup must not grow");
        ring
    }

    #[test]
    fn capacity_is_rounded_up_to_a_power_of_two() {
        assert_eq!(Ring::<u8>::with_capacity(0).capacity(), 1);
        assert_eq!(Ring::<u8>::with_capacity(3).capacity(), 4);
        assert_eq!(Ring::<u8>::with_capacity(64).capacity(), 64);
        assert_eq!(Ring::<u8>::with_capacity(65).capacity(), 128);
    }

    #[test]
    fn growth_doubles_and_keeps_order_across_wrap_around() {
        let mut ring = ring_with(8, 5, 8);
        ring.push_back(100);
        assert_eq!(ring.capacity(), 16);
        let items: Vec<_> = ring.into_items().collect();
        assert_eq!(items, vec![0, 1, 2, 3, 4, 5, 6, 7, 100]);
    }

    #[test]
    fn trim_follows_pulsars_examples() {
        // 1024 slots holding 150 items (wrapped) -> 512.
        let mut ring = ring_with(1024, 1000, 150);
        assert_eq!(ring.trim(), 512);
        assert_eq!(ring.capacity(), 512);
        assert_eq!(
            ring.iter().copied().collect::<Vec<_>>(),
            (0..150).collect::<Vec<_>>()
        );
        // 1024 / 1 -> 64.
        assert_eq!(ring_with(1024, 0, 1).trim(), 960);
        // 256 / 65 -> no change (65 > 256 / 4).
        assert_eq!(ring_with(256, 0, 65).trim(), 0);
        // 256 / 64 -> 128.
        let mut ring = ring_with(256, 0, 64);
        assert_eq!(ring.trim(), 128);
        assert_eq!(ring.capacity(), 128);
        // Never below 64.
        assert_eq!(ring_with(64, 0, 0).trim(), 0);
    }

    #[test]
    fn a_released_ring_grows_back_to_the_default_size() {
        let mut ring = ring_with(256, 0, 0);
        assert_eq!(ring.release(), 256);
        assert_eq!(ring.capacity(), 0);
        ring.push_back(1);
        assert_eq!(ring.capacity(), MIN_TRIM_CAPACITY);
    }
}
