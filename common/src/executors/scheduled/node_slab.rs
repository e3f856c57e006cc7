//! `NodeSlab`: the timer wheel's node storage — pages of [`PAGE`] nodes, addressed by one
//! index, where a page that empties is freed whole.
//!
//! # Why pages
//!
//! The wheel's nodes used to live in one `Vec`, compacted by Pulsar's trim rule when at most a
//! quarter full: every live node moved to the front and its timer's header rewritten. Timers
//! mostly leave in the order they came (timeouts cancelled or fired oldest first), so the live
//! nodes were the newest, at the back: a burst of a million scheduled-then-cancelled timers
//! moved half a million nodes and wrote half a million headers (each a cache miss), about 50 ns
//! per cancel. In pages, the oldest timers' pages empty first and are freed as they empty: no
//! node moves, no header is rewritten, and the memory still goes back while the burst drains.
//! The trim rule stays as the fallback for timers that leave in scattered order (pages kept
//! alive by a few nodes each): when at most a quarter of the slots are used, the wheel packs
//! the live nodes into the fewest pages ([`NodeSlab::pack`]).
//!
//! # Layout
//!
//! Index `i` is node `i % PAGE` of page `i / PAGE`. A page is a `Vec` that grows to [`PAGE`]
//! nodes (the first page starts at 64, so a small wheel stays small); its free slots are linked
//! through their `next` field. New nodes go to the lowest page with room (a bitmap of pages with
//! room, and a hint where to start looking), so a wheel that is refilled as it drains stays
//! dense. Not thread-safe: the wheel lives under the executor's queue lock.

use crate::collections::ring::MIN_TRIM_CAPACITY;
use crate::executors::scheduled::timer_entry::Timer;
use std::ops::{Index, IndexMut};
use std::sync::Arc;

/// log2 of the nodes per page.
const PAGE_SHIFT: u32 = 10;
/// Nodes per page: 1,024 nodes of 56 bytes, 56 KiB.
pub(crate) const PAGE: usize = 1 << PAGE_SHIFT;
/// The end of a list.
pub(crate) const NIL: usize = usize::MAX;

/// One slab slot: an armed timer, or a free slot (`entry` is `None`, `next` links the page's
/// free list by index).
pub(crate) struct Node {
    pub(crate) entry: Option<Arc<dyn Timer>>,
    /// Nanoseconds from the origin to the deadline.
    pub(crate) deadline: u64,
    /// Arming order, the tie-break between equal deadlines.
    pub(crate) seq: u64,
    pub(crate) prev: usize,
    pub(crate) next: usize,
    /// The slot list the node is in: `level * SLOTS + slot`.
    pub(crate) slot: usize,
}

impl Node {
    /// The order of timers: deadline, then arming order.
    #[inline]
    pub(crate) fn key(&self) -> (u64, u64) {
        (self.deadline, self.seq)
    }
}

/// One page: up to [`PAGE`] nodes.
struct Page {
    nodes: Vec<Node>,
    /// The page's free slots (global indices), linked through `next`.
    free: usize,
    /// Armed nodes.
    live: usize,
}

impl Page {
    fn with_capacity(capacity: usize) -> Self {
        Self {
            nodes: Vec::with_capacity(capacity),
            free: NIL,
            live: 0,
        }
    }

    fn has_room(&self) -> bool {
        self.free != NIL || self.nodes.len() < PAGE
    }
}

/// The paged node storage (module docs).
#[derive(Default)]
pub(crate) struct NodeSlab {
    /// `None`: a page that emptied and was freed (its indices reusable).
    pages: Vec<Option<Page>>,
    /// Bit `p`: page `p` has room, or is freed (so a new node may go there).
    open: Vec<u64>,
    /// No page below this one is open.
    first_open: usize,
    /// Armed nodes in all pages.
    live: usize,
    /// Slots allocated in all pages.
    capacity: usize,
}

impl NodeSlab {
    /// Armed nodes (consistency checks).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Slots allocated now.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// One past the highest index any page covers (for a scan of every node).
    pub(crate) fn index_bound(&self) -> usize {
        self.pages.len() << PAGE_SHIFT
    }

    /// The node at `index`, if its page exists and holds it (armed or free).
    pub(crate) fn get(&self, index: usize) -> Option<&Node> {
        let page = self.pages.get(index >> PAGE_SHIFT)?.as_ref()?;
        page.nodes.get(index & (PAGE - 1))
    }

    /// Stores `node` (armed: its `entry` is `Some`) in the lowest page with room. Returns its
    /// index.
    pub(crate) fn insert(&mut self, node: Node) -> usize {
        debug_assert!(node.entry.is_some(), "only armed nodes are inserted");
        let page_index = self.lowest_open_page();
        if page_index == self.pages.len() {
            self.pages.push(None);
            self.set_open(page_index, true);
        }
        let page = self.pages[page_index].get_or_insert_with(|| {
            // The first page starts small; later ones are needed only by a big wheel.
            let capacity = if page_index == 0 {
                MIN_TRIM_CAPACITY
            } else {
                PAGE
            };
            self.capacity += capacity;
            Page::with_capacity(capacity)
        });
        let index = if page.free != NIL {
            let index = page.free;
            page.free = page.nodes[index & (PAGE - 1)].next;
            page.nodes[index & (PAGE - 1)] = node;
            index
        } else {
            if page.nodes.len() == page.nodes.capacity() {
                let grown = (2 * page.nodes.capacity()).clamp(MIN_TRIM_CAPACITY, PAGE);
                self.capacity += grown - page.nodes.capacity();
                page.nodes.reserve_exact(grown - page.nodes.len());
            }
            page.nodes.push(node);
            (page_index << PAGE_SHIFT) + page.nodes.len() - 1
        };
        page.live += 1;
        let full = !page.has_room();
        self.live += 1;
        if full {
            self.set_open(page_index, false);
        }
        index
    }

    /// Frees the slot at `index`, whose timer the caller has taken out (its `entry` is
    /// `None`). A page left empty is freed, unless it is the last page with nodes: that one is
    /// kept, shrunk to 64 slots, as page 0.
    pub(crate) fn release(&mut self, index: usize) {
        let page_index = index >> PAGE_SHIFT;
        let page = self.pages[page_index]
            .as_mut()
            .expect("a released node's page exists");
        debug_assert!(page.nodes[index & (PAGE - 1)].entry.is_none());
        page.nodes[index & (PAGE - 1)].next = page.free;
        page.free = index;
        page.live -= 1;
        self.live -= 1;
        let emptied = page.live == 0;
        self.set_open(page_index, true);
        if emptied {
            if self.live == 0 {
                self.reset_to_one_small_page(page_index);
            } else {
                self.free_page(page_index);
            }
        }
    }

    /// Every armed node, in index order, leaving the slab empty (one small page).
    pub(crate) fn drain_live(&mut self) -> Vec<Node> {
        let mut live = Vec::with_capacity(self.live);
        for page in self.pages.drain(..).flatten() {
            live.extend(page.nodes.into_iter().filter(|node| node.entry.is_some()));
        }
        *self = Self::default();
        live
    }

    /// Frees every page. Returns the slots freed.
    pub(crate) fn clear(&mut self) -> usize {
        let freed = self.capacity;
        *self = Self::default();
        freed
    }

    /// Moves the armed nodes into the fewest pages, in index order, node `k` (counting from 0)
    /// to index `k`. `capacity` (at least the armed nodes) bounds the first page's size; pages
    /// past the armed nodes are not made until needed. The caller has already rewritten every link and header for the new
    /// indices (see `TimerWheel::compact`).
    pub(crate) fn pack(&mut self, capacity: usize) {
        let live = self.live;
        let mut packed = Self::default();
        let mut pages = std::mem::take(&mut self.pages).into_iter().flatten();
        for page in pages.by_ref() {
            for node in page.nodes.into_iter().filter(|node| node.entry.is_some()) {
                let page_index = packed.live >> PAGE_SHIFT;
                if page_index == packed.pages.len() {
                    let size = capacity.saturating_sub(page_index << PAGE_SHIFT);
                    let size = size.clamp(MIN_TRIM_CAPACITY.min(PAGE), PAGE);
                    packed.capacity += size;
                    packed.pages.push(Some(Page::with_capacity(size)));
                }
                let page = packed.pages[page_index].as_mut().expect("just pushed");
                if page.nodes.len() == page.nodes.capacity() {
                    let grown = (2 * page.nodes.capacity()).clamp(MIN_TRIM_CAPACITY, PAGE);
                    packed.capacity += grown - page.nodes.capacity();
                    page.nodes.reserve_exact(grown - page.nodes.len());
                }
                page.nodes.push(node);
                page.live += 1;
                packed.live += 1;
            }
        }
        debug_assert_eq!(packed.live, live);
        packed.open = vec![0; packed.pages.len().div_ceil(64)];
        for page_index in 0..packed.pages.len() {
            let room = packed.pages[page_index]
                .as_ref()
                .is_some_and(Page::has_room);
            packed.set_open(page_index, room);
        }
        *self = packed;
    }

    // ---- internals ------------------------------------------------------------------------

    fn lowest_open_page(&mut self) -> usize {
        let start = self.first_open / 64;
        for (word_index, &word) in self.open.iter().enumerate().skip(start) {
            let word = if word_index == start {
                word & (u64::MAX << (self.first_open % 64))
            } else {
                word
            };
            if word != 0 {
                let page = word_index * 64 + word.trailing_zeros() as usize;
                self.first_open = page;
                return page;
            }
        }
        self.first_open = self.pages.len();
        self.pages.len()
    }

    fn set_open(&mut self, page_index: usize, open: bool) {
        let word = page_index / 64;
        if word >= self.open.len() {
            self.open.resize(word + 1, 0);
        }
        let bit = 1u64 << (page_index % 64);
        if open {
            self.open[word] |= bit;
            self.first_open = self.first_open.min(page_index);
        } else {
            self.open[word] &= !bit;
        }
    }

    /// Frees an empty page; trailing freed pages leave the page table.
    fn free_page(&mut self, page_index: usize) {
        if let Some(page) = self.pages[page_index].take() {
            self.capacity -= page.nodes.capacity();
        }
        while self.pages.last().is_some_and(Option::is_none) {
            let last = self.pages.len() - 1;
            self.set_open(last, false);
            self.pages.pop();
        }
        self.open.truncate(self.pages.len().div_ceil(64));
    }

    /// The slab's last node left: keep its (empty) page as page 0, with at most 64 slots.
    fn reset_to_one_small_page(&mut self, page_index: usize) {
        let mut page = self.pages[page_index]
            .take()
            .expect("the emptied page exists");
        page.nodes.clear();
        page.nodes.shrink_to(MIN_TRIM_CAPACITY);
        page.free = NIL;
        *self = Self::default();
        self.capacity = page.nodes.capacity();
        self.pages.push(Some(page));
        self.set_open(0, true);
    }
}

impl Index<usize> for NodeSlab {
    type Output = Node;

    #[inline]
    fn index(&self, index: usize) -> &Node {
        let page = self.pages[index >> PAGE_SHIFT]
            .as_ref()
            .expect("an index in a live page");
        &page.nodes[index & (PAGE - 1)]
    }
}

impl IndexMut<usize> for NodeSlab {
    #[inline]
    fn index_mut(&mut self, index: usize) -> &mut Node {
        let page = self.pages[index >> PAGE_SHIFT]
            .as_mut()
            .expect("an index in a live page");
        &mut page.nodes[index & (PAGE - 1)]
    }
}
