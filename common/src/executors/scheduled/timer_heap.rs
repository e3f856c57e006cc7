//! `TimerHeap`: the delay structure, an indexed binary min-heap with O(log n) removal.
//!
//! Ordered by `(deadline, seq)`: entries due at the same instant fire in the order they were
//! armed. Every move writes the entry's new position into its header, so an entry can be
//! removed from the middle (a cancel) without a search. Storage follows Pulsar's trim rule:
//! when at most a quarter of the slots are used it shrinks to the smallest power of two that
//! is at least `max(64, 2 * len)`, so a burst of cancelled timers gives its memory back.
//!
//! Not thread-safe: the executor keeps it under its queue lock.

use crate::collections::ring::MIN_TRIM_CAPACITY;
use crate::executors::scheduled::timer_entry::{Timer, NOT_IN_HEAP};
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

/// One armed timer.
struct Node {
    deadline: Instant,
    /// Arming order, the tie-break between equal deadlines.
    seq: u64,
    entry: Arc<dyn Timer>,
}

impl Node {
    #[inline]
    fn key(&self) -> (Instant, u64) {
        (self.deadline, self.seq)
    }
}

/// An indexed binary min-heap of armed timers.
pub(crate) struct TimerHeap {
    nodes: Vec<Node>,
    next_seq: u64,
}

impl TimerHeap {
    /// An empty heap; it allocates on the first push.
    pub(crate) fn new() -> Self {
        Self {
            nodes: Vec::new(),
            next_seq: 0,
        }
    }

    /// Number of armed timers.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Slots allocated now.
    pub(crate) fn capacity(&self) -> usize {
        self.nodes.capacity()
    }

    /// The earliest deadline.
    pub(crate) fn peek_deadline(&self) -> Option<Instant> {
        self.nodes.first().map(|node| node.deadline)
    }

    /// Arms `entry` for `deadline`. Returns whether it became the earliest timer (the worker
    /// may then have to wake up sooner than it planned). O(log n).
    pub(crate) fn push(&mut self, deadline: Instant, entry: Arc<dyn Timer>) -> bool {
        let seq = self.next_seq;
        self.next_seq += 1;
        let index = self.nodes.len();
        entry.header().set_heap_index(index);
        self.nodes.push(Node {
            deadline,
            seq,
            entry,
        });
        self.sift_up(index) == 0
    }

    /// Removes and returns the earliest timer if it is due at `now`. O(log n).
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<Arc<dyn Timer>> {
        match self.nodes.first() {
            Some(node) if node.deadline <= now => Some(self.remove(0)),
            _ => None,
        }
    }

    /// Removes the timer at `index` (its header's `heap_index`). O(log n), then shrinks the
    /// storage by Pulsar's rule when it has become sparse.
    ///
    /// # Panics
    ///
    /// If `index` is out of bounds (a caller bug: headers are kept in step with the heap).
    pub(crate) fn remove(&mut self, index: usize) -> Arc<dyn Timer> {
        let last = self.nodes.len() - 1;
        self.nodes.swap(index, last);
        let node = self.nodes.pop().expect("index is in bounds");
        node.entry.header().set_heap_index(NOT_IN_HEAP);
        if index < self.nodes.len() {
            self.nodes[index].entry.header().set_heap_index(index);
            let moved_to = self.sift_up(index);
            if moved_to == index {
                self.sift_down(index);
            }
        }
        self.shrink_if_sparse();
        node.entry
    }

    /// Removes every timer, earliest first.
    pub(crate) fn drain_in_order(&mut self) -> Vec<Arc<dyn Timer>> {
        let mut nodes = std::mem::take(&mut self.nodes);
        nodes.sort_unstable_by_key(Node::key);
        nodes
            .into_iter()
            .map(|node| {
                node.entry.header().set_heap_index(NOT_IN_HEAP);
                node.entry
            })
            .collect()
    }

    /// Removes the timers for which `take` is true (keeping the others armed), in no particular
    /// order. O(n).
    pub(crate) fn extract(
        &mut self,
        mut take: impl FnMut(&dyn Timer) -> bool,
    ) -> Vec<Arc<dyn Timer>> {
        let mut taken = Vec::new();
        let mut kept = Vec::with_capacity(self.nodes.len());
        for node in self.nodes.drain(..) {
            if take(&*node.entry) {
                node.entry.header().set_heap_index(NOT_IN_HEAP);
                taken.push(node.entry);
            } else {
                kept.push(node);
            }
        }
        self.nodes = kept;
        // Re-establish the heap order bottom-up, O(n).
        for index in 0..self.nodes.len() {
            self.nodes[index].entry.header().set_heap_index(index);
        }
        for index in (0..self.nodes.len() / 2).rev() {
            self.sift_down(index);
        }
        self.shrink_if_sparse();
        taken
    }

    /// Pulsar's trim rule on the node storage: only when capacity > 64 and `len <= capacity/4`,
    /// shrink to the smallest power of two >= max(64, 2 * len); an empty heap above 64 slots
    /// frees its storage entirely.
    fn shrink_if_sparse(&mut self) {
        let capacity = self.nodes.capacity();
        let len = self.nodes.len();
        if len == 0 && capacity > MIN_TRIM_CAPACITY {
            self.nodes = Vec::new();
        } else if capacity > MIN_TRIM_CAPACITY && len <= capacity / 4 {
            let target = (2 * len).max(MIN_TRIM_CAPACITY).next_power_of_two();
            self.nodes.shrink_to(target);
        }
    }

    /// Frees the storage of an empty heap (an idle worker's trim). Returns the slots freed.
    pub(crate) fn release_if_empty(&mut self) -> usize {
        if !self.nodes.is_empty() {
            return 0;
        }
        let freed = self.nodes.capacity();
        self.nodes = Vec::new();
        freed
    }

    /// Moves the node at `index` up to its place; returns where it ended.
    fn sift_up(&mut self, mut index: usize) -> usize {
        while index > 0 {
            let parent = (index - 1) / 2;
            if self.nodes[index].key() >= self.nodes[parent].key() {
                break;
            }
            self.swap_nodes(index, parent);
            index = parent;
        }
        index
    }

    /// Moves the node at `index` down to its place.
    fn sift_down(&mut self, mut index: usize) {
        let len = self.nodes.len();
        loop {
            let left = 2 * index + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && self.nodes[right].key() < self.nodes[left].key() {
                right
            } else {
                left
            };
            if self.nodes[child].key() >= self.nodes[index].key() {
                break;
            }
            self.swap_nodes(index, child);
            index = child;
        }
    }

    fn swap_nodes(&mut self, a: usize, b: usize) {
        self.nodes.swap(a, b);
        self.nodes[a].entry.header().set_heap_index(a);
        self.nodes[b].entry.header().set_heap_index(b);
    }

    /// Checks the heap order and the headers' positions (tests).
    #[cfg(all(test, not(loom)))]
    fn assert_consistent(&self) {
        for (index, node) in self.nodes.iter().enumerate() {
            assert_eq!(node.entry.header().heap_index(), index);
            if index > 0 {
                assert!(self.nodes[(index - 1) / 2].key() <= node.key());
            }
        }
    }
}

impl fmt::Debug for TimerHeap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerHeap")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("next_deadline", &self.peek_deadline())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::executors::scheduled::timer_entry::{Once, Timer, TimerEntry};
    use std::time::Duration;

    fn entry(deadline: Instant) -> Arc<dyn Timer> {
        Arc::new(TimerEntry::new(Once(|| ()), deadline, None))
    }

    /// A deterministic pseudo-random sequence (xorshift), so failures reproduce.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn timers_pop_in_deadline_order_and_equal_deadlines_in_arming_order() {
        let base = Instant::now();
        let mut heap = TimerHeap::new();
        let mut armed = Vec::new();
        for (i, offset) in [5u64, 1, 3, 1, 0, 5, 2].into_iter().enumerate() {
            let e = entry(base + Duration::from_millis(offset));
            armed.push((offset, i, Arc::clone(&e)));
            heap.push(base + Duration::from_millis(offset), e);
            heap.assert_consistent();
        }
        armed.sort_by_key(|(offset, i, _)| (*offset, *i));
        let far = base + Duration::from_secs(1);
        for (_, _, expected) in armed {
            let popped = heap.pop_due(far).unwrap();
            assert!(Arc::ptr_eq(&popped, &expected));
            assert_eq!(popped.header().heap_index(), NOT_IN_HEAP);
            heap.assert_consistent();
        }
        assert!(heap.pop_due(far).is_none());
    }

    #[test]
    fn nothing_pops_before_its_deadline() {
        let base = Instant::now();
        let mut heap = TimerHeap::new();
        heap.push(base + Duration::from_millis(10), entry(base));
        assert!(heap.pop_due(base + Duration::from_millis(9)).is_none());
        assert!(heap.pop_due(base + Duration::from_millis(10)).is_some());
    }

    #[test]
    fn push_reports_a_new_earliest_timer() {
        let base = Instant::now();
        let mut heap = TimerHeap::new();
        assert!(heap.push(base + Duration::from_millis(5), entry(base)));
        assert!(!heap.push(base + Duration::from_millis(6), entry(base)));
        assert!(heap.push(base + Duration::from_millis(1), entry(base)));
    }

    #[test]
    fn removing_from_the_middle_keeps_order_and_positions() {
        let base = Instant::now();
        let mut heap = TimerHeap::new();
        let mut live = Vec::new();
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        // Each removal checks the whole heap: quadratic, so Miri gets a smaller heap.
        let timers = if cfg!(miri) { 200 } else { 2_000 };
        for _ in 0..timers {
            let deadline = base + Duration::from_micros(xorshift(&mut rng) % 10_000);
            let e = entry(deadline);
            heap.push(deadline, Arc::clone(&e));
            live.push((deadline, e));
        }
        // Remove half, chosen at random, through their headers' positions.
        for _ in 0..timers / 2 {
            let victim = (xorshift(&mut rng) as usize) % live.len();
            let (_, e) = live.swap_remove(victim);
            let removed = heap.remove(e.header().heap_index());
            assert!(Arc::ptr_eq(&removed, &e));
            heap.assert_consistent();
        }
        let mut last = base;
        let mut popped = 0;
        while let Some(e) = heap.pop_due(base + Duration::from_secs(1)) {
            let deadline = live
                .iter()
                .find(|(_, l)| Arc::ptr_eq(l, &e))
                .map(|(d, _)| *d)
                .expect("only live timers remain");
            assert!(deadline >= last);
            last = deadline;
            popped += 1;
        }
        assert_eq!(popped, timers / 2);
    }

    #[test]
    fn a_burst_of_removed_timers_gives_its_storage_back() {
        let base = Instant::now();
        let mut heap = TimerHeap::new();
        let burst: u64 = if cfg!(miri) { 1_000 } else { 10_000 };
        let entries: Vec<_> = (0..burst)
            .map(|i| {
                let e = entry(base);
                heap.push(base + Duration::from_micros(i), Arc::clone(&e));
                e
            })
            .collect();
        assert!(heap.capacity() >= burst as usize);
        for e in entries.iter().rev() {
            heap.remove(e.header().heap_index());
        }
        assert_eq!(heap.len(), 0);
        assert!(heap.capacity() <= MIN_TRIM_CAPACITY, "{}", heap.capacity());
    }

    #[test]
    fn sparse_storage_shrinks_by_pulsars_rule() {
        let base = Instant::now();
        let mut heap = TimerHeap::new();
        let entries: Vec<_> = (0..1_024u64)
            .map(|i| {
                let e = entry(base);
                heap.push(base + Duration::from_micros(i), Arc::clone(&e));
                e
            })
            .collect();
        assert_eq!(heap.capacity(), 1_024);
        // Down to 256 live (a quarter of 1,024): shrinks to 512.
        for e in &entries[256..] {
            heap.remove(e.header().heap_index());
        }
        assert_eq!(heap.len(), 256);
        assert_eq!(heap.capacity(), 512);
        heap.assert_consistent();
    }

    #[test]
    fn extract_takes_the_chosen_timers_and_keeps_the_rest_in_order() {
        let base = Instant::now();
        let mut heap = TimerHeap::new();
        for i in 0..100u64 {
            heap.push(base + Duration::from_micros(100 - i), entry(base));
        }
        let mut n = 0;
        let taken = heap.extract(|_| {
            n += 1;
            n % 3 == 0
        });
        assert_eq!(taken.len(), 33);
        assert!(taken.iter().all(|e| e.header().heap_index() == NOT_IN_HEAP));
        assert_eq!(heap.len(), 67);
        heap.assert_consistent();
    }

    #[test]
    fn drain_in_order_returns_earliest_first() {
        let base = Instant::now();
        let mut heap = TimerHeap::new();
        let late = entry(base);
        let early = entry(base);
        heap.push(base + Duration::from_millis(2), Arc::clone(&late));
        heap.push(base + Duration::from_millis(1), Arc::clone(&early));
        let drained = heap.drain_in_order();
        assert!(Arc::ptr_eq(&drained[0], &early));
        assert!(Arc::ptr_eq(&drained[1], &late));
        assert!(heap.is_empty());
    }
}
