//! `TimerWheel`: the delay structure, a hierarchical timing wheel whose slot lists link the
//! timer entries themselves, with O(1) arm and O(1) cancel.
//!
//! Time is counted in ticks of 1,024 ns since the wheel was made. Nine levels of 64 slots
//! (6 bits of tick each, 54 bits in all: every representable deadline) hold the armed timers,
//! as in tokio's timer: a timer sits at the level of the highest tick bit in which its
//! deadline differs from `elapsed` (the last tick the wheel was advanced to), in the slot its
//! deadline falls in there. Level 0 slots are one tick wide; a level-`L` slot spans `64^L`
//! ticks and is re-distributed ("cascaded") to lower levels when `elapsed` reaches its start.
//! The lowest occupied level always holds the earliest slot, found with one rotate and one
//! `trailing_zeros` of that level's occupancy bitmap.
//!
//! Exact deadlines and order: the wheel only files timers; a level-0 slot keeps its timers
//! sorted by `(deadline, seq)` (insertion from the tail, O(1) when timers arrive in order),
//! and its head pops only once its exact deadline (in nanoseconds) has passed. So timers pop
//! in deadline order, equal deadlines in arming order, whatever path they took down, never
//! early and with no rounding lateness. (A timer armed for a tick the wheel has already
//! passed goes to the current tick's slot, sorted: it is due at once.)
//!
//! # Intrusive lists
//!
//! Each slot is a doubly linked list threaded through the entries' headers ([`WheelLinks`]:
//! the key, the previous entry's header, the next entry), as tokio's timer entries are. The
//! wheel owns one strong reference to every timer it holds, kept as the raw pointer
//! `TimerRef::into_raw` gave (in the predecessor's `next`, or in the slot's head) and turned back
//! into a `TimerRef` exactly once, when the timer is unlinked (`take`, `take_all`); each entry's
//! header records its slot list (`heap_index`), so `cancel` unlinks it in O(1) with no
//! search. So the wheel allocates nothing per timer: arming a timer allocates its entry and
//! nothing else, and a cancel frees the entry (once its handle lets go) with nothing left
//! behind to trim. (Until 2026-12-02 the lists linked nodes of a paged slab, one 56-byte node
//! per timer beside the entry, packed by Pulsar's trim rule when sparse: the schedule + cancel
//! bench spent about a fifth of its time on them and on the allocator work the slab's pages
//! caused.)
//!
//! Safety rests on three rules, each checked where the pointers are used: a linked entry is
//! alive (the wheel's reference); its links are touched only by the wheel, whose every
//! method runs under the executor's queue lock (`&mut self`); and no two references to the
//! same entry's links are in use at once (each is used within one statement or block). The
//! tests run under Miri.
//!
//! Beside the levels, a [`DueNowLane`] holds the timers that were due when armed and fall due
//! before every timer in the levels, in firing order (see `due_now_lane.rs`): the wheel pops it
//! first, and moves it into the levels on the rare arm that would break that order.
//!
//! Not thread-safe: the executor keeps it under its queue lock.

use crate::executors::scheduled::due_now_lane::{DueNowLane, LaneTimer};
use crate::executors::scheduled::timer_entry::{
    add_saturating, EntryHeader, Timer, WheelLinks, IN_DUE_LIST, NOT_IN_HEAP,
};
use crate::executors::scheduled::timer_ref::TimerRef;
use std::collections::VecDeque;
use std::fmt;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

/// Bits of tick per level.
const LEVEL_BITS: u32 = 6;
/// Slots per level.
const SLOTS: usize = 1 << LEVEL_BITS;
/// Levels: `LEVELS * LEVEL_BITS` bits of tick cover every deadline (see [`MAX_DEADLINE_NS`]).
const LEVELS: usize = 9;
/// log2 of the tick length in nanoseconds.
const TICK_SHIFT: u32 = 10;
/// Deadlines are clamped to this many nanoseconds after the origin (~292 years), so that a
/// tick fits in `LEVELS * LEVEL_BITS` bits.
const MAX_DEADLINE_NS: u64 = (1 << 63) - 1;
/// The lane keeps up to this many slots while it is empty (a stream of due-now timers would
/// otherwise free and regrow it in every burst).
const LANE_TRIM_FLOOR: usize = 1024;

/// A timer the wheel holds: the wheel's reference to the entry (`TimerRef::into_raw`).
/// The wheel's invariant: every `Linked` it stores (a slot's head, an entry's `next`) or reads
/// out of them points to a timer still linked in it, so alive; a pointer is made a `TimerRef`
/// again only by the unlink that removes it from the lists, and not used after.
type Linked = NonNull<dyn Timer>;

/// The head and tail of a slot's list.
#[derive(Clone, Copy)]
struct Slot {
    head: Option<Linked>,
    tail: Option<NonNull<EntryHeader>>,
}

const EMPTY_SLOT: Slot = Slot {
    head: None,
    tail: None,
};

/// The wheel's slot lists and per-level occupancy (bit `s` of `occupied[l]`: slot `s` of
/// level `l` is non-empty). Boxed: allocated with the first timer, freed by an idle trim.
struct Levels {
    occupied: [u64; LEVELS],
    slots: [Slot; LEVELS * SLOTS],
}

/// A hierarchical timing wheel of armed timers.
pub struct TimerWheel {
    /// Armed timers in the levels.
    len: usize,
    /// The due-when-armed timers that fire before every timer in the levels.
    lane: DueNowLane,
    levels: Option<Box<Levels>>,
    /// The tick the wheel was last advanced to: every timer due at or before it has popped.
    elapsed: u64,
    /// Tick 0.
    origin: Instant,
    next_seq: u64,
}

// SAFETY: the wheel's raw pointers are references to entries (`TimerRef<dyn Timer>`, which is
// `Send` because `Timer: Send + Sync`) and pointers into those entries' headers; the wheel
// is used by one thread at a time (it lives under the executor's queue lock).
#[allow(unsafe_code)]
unsafe impl Send for TimerWheel {}

/// Where the earliest occupied slot is, and the tick at which it must be processed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Expiration {
    level: usize,
    slot: usize,
    tick: u64,
}

/// The level a timer due at `tick` belongs to while the wheel stands at `elapsed`.
#[inline]
fn level_for(elapsed: u64, tick: u64) -> usize {
    let masked = (elapsed ^ tick) | (SLOTS as u64 - 1);
    let significant = 63 - masked.leading_zeros();
    (significant / LEVEL_BITS) as usize
}

#[inline]
fn slot_for(tick: u64, level: usize) -> usize {
    ((tick >> (level as u32 * LEVEL_BITS)) & (SLOTS as u64 - 1)) as usize
}

/// The header of a linked timer (only ever called with the wheel's own pointers, under its
/// invariant: see [`Linked`]).
#[inline]
fn header_of(timer: Linked) -> NonNull<EntryHeader> {
    // SAFETY: `timer` is linked in the wheel, which holds a strong reference to it: alive.
    #[allow(unsafe_code)]
    NonNull::from(unsafe { timer.as_ref() }.header())
}

/// The links of the entry whose header `header` is.
///
/// # Safety
///
/// The entry is linked in the wheel (so alive: the wheel holds a strong reference), the
/// caller is the wheel (under the executor's queue lock), and no other reference to the same
/// entry's links is used while the returned one is.
#[allow(unsafe_code)]
#[inline]
unsafe fn links<'a>(header: NonNull<EntryHeader>) -> &'a mut WheelLinks {
    // SAFETY: the caller's contract (alive, the queue lock's holder, no overlapping use).
    unsafe { header.as_ref().links() }
}

impl TimerWheel {
    /// An empty wheel whose tick 0 is now; it allocates on the first push. Deadlines before
    /// its creation count as due at tick 0.
    pub(crate) fn new() -> Self {
        Self {
            len: 0,
            lane: DueNowLane::default(),
            levels: None,
            elapsed: 0,
            origin: Instant::now(),
            next_seq: 0,
        }
    }

    /// Number of armed timers.
    pub(crate) fn len(&self) -> usize {
        self.len + self.lane.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0 && self.lane.is_empty()
    }

    /// Timer slots allocated now: the lane's, and the levels' list heads once allocated. None
    /// per timer in the levels: their timers are linked in place, in the entries.
    pub(crate) fn capacity(&self) -> usize {
        self.lane.capacity() + self.levels.as_ref().map_or(0, |_| LEVELS * SLOTS)
    }

    /// Nanoseconds from the origin to `instant` (0 before it; clamped far in the future).
    #[inline]
    fn nanos(&self, instant: Instant) -> u64 {
        let nanos = instant.saturating_duration_since(self.origin).as_nanos();
        u64::try_from(nanos).map_or(MAX_DEADLINE_NS, |n| n.min(MAX_DEADLINE_NS))
    }

    /// When [`take_due_into`](Self::take_due_into) (or the tests' `pop_due`) next makes
    /// progress: the earliest deadline when it is in the wheel's current tick slot (level 0),
    /// else the start of the earliest occupied slot, which has to be cascaded first (never
    /// after the earliest deadline).
    pub(crate) fn peek_deadline(&self) -> Option<Instant> {
        let nanos = self.next_due_nanos()?;
        Some(add_saturating(self.origin, Duration::from_nanos(nanos)))
    }

    /// The wheel's tick 0: [`next_due_nanos`](Self::next_due_nanos) counts from it.
    pub(crate) fn origin(&self) -> Instant {
        self.origin
    }

    /// [`peek_deadline`](Self::peek_deadline) in nanoseconds from the
    /// [`origin`](Self::origin).
    pub(crate) fn next_due_nanos(&self) -> Option<u64> {
        self.lane
            .first_deadline()
            .or_else(|| self.levels_next_due_nanos())
    }

    /// [`next_due_nanos`](Self::next_due_nanos) of the levels alone: a lower bound of their
    /// earliest deadline.
    fn levels_next_due_nanos(&self) -> Option<u64> {
        let expiration = self.next_expiration()?;
        if expiration.level == 0 {
            let levels = self.levels.as_deref()?;
            let head = levels.slots[expiration.slot].head?;
            // SAFETY: a linked timer, read under the queue lock, no other links in use.
            #[allow(unsafe_code)]
            return Some(unsafe { links(header_of(head)) }.deadline);
        }
        Some(expiration.tick << TICK_SHIFT)
    }

    /// Arms `entry` for `deadline`. Returns whether it became the earliest timer (the worker
    /// may then have to wake up sooner than it planned). O(1).
    pub(crate) fn push(&mut self, deadline: Instant, entry: TimerRef<dyn Timer>) -> bool {
        let deadline = self.nanos(deadline);
        let before = self.next_due_nanos();
        let seq = self.next_seq;
        self.next_seq += 1;
        if self
            .lane
            .last_deadline()
            .is_some_and(|last| deadline < last)
        {
            // It must fire before some of the lane: the levels order them all from now on.
            self.flush_lane();
        }
        self.insert(deadline, seq, entry);
        before.map_or(true, |before| deadline < before)
    }

    /// Arms `entry`, which was due when it was armed (its deadline is at or before the moment
    /// the caller read the clock): in the lane if that keeps its order (see `due_now_lane.rs`),
    /// else as [`push`](Self::push) does. Returns whether it became the earliest timer. O(1).
    pub(crate) fn push_due(&mut self, deadline: Instant, entry: TimerRef<dyn Timer>) -> bool {
        let nanos = self.nanos(deadline);
        let after_lane = self.lane.last_deadline().map_or(true, |last| nanos >= last);
        let before_levels = self
            .levels_next_due_nanos()
            .map_or(true, |earliest| nanos < earliest);
        if !(after_lane && before_levels) {
            return self.push(deadline, entry);
        }
        let earliest = self.lane.is_empty();
        let seq = self.next_seq;
        self.next_seq += 1;
        self.lane.push(LaneTimer {
            deadline: nanos,
            seq,
            entry,
        });
        earliest
    }

    /// Moves every timer of the lane into the levels, keeping its deadline and sequence.
    fn flush_lane(&mut self) {
        let lane: Vec<LaneTimer> = self.lane.drain().collect();
        for timer in lane {
            self.insert(timer.deadline, timer.seq, timer.entry);
        }
    }

    /// Files `entry` in the levels under `(deadline, seq)`: its key in its links, the wheel's
    /// reference to it in its slot list.
    fn insert(&mut self, deadline: u64, seq: u64, entry: TimerRef<dyn Timer>) {
        let tick = (deadline >> TICK_SHIFT).max(self.elapsed);
        let timer = entry.into_raw();
        {
            // SAFETY: the entry is now the wheel's (the reference just taken), under the
            // queue lock; no other links are in use.
            #[allow(unsafe_code)]
            let links = unsafe { links(header_of(timer)) };
            links.deadline = deadline;
            links.seq = seq;
        }
        self.len += 1;
        self.link(timer, tick);
    }

    /// Removes and returns the earliest timer if it is due at `now` (its deadline is at or
    /// before `now`), advancing the wheel (and cascading the slots it passes) as far as `now`.
    /// O(1) amortised: a timer is cascaded at most once per level. (The worker takes them all
    /// at once with [`take_due_into`](Self::take_due_into); the tests one at a time.)
    #[cfg(all(test, not(loom)))]
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<TimerRef<dyn Timer>> {
        let now_nanos = self.nanos(now);
        if let Some(timer) = self.lane.pop_due(now_nanos) {
            timer.entry.header().set_heap_index(NOT_IN_HEAP);
            return Some(timer.entry);
        }
        self.pop_levels_due(now_nanos)
    }

    /// Appends every timer due at `now` to `due`, in firing order, each marked `IN_DUE_LIST`:
    /// the lane's first (already marked: the move touches no timer), then the levels'.
    pub(crate) fn take_due_into(&mut self, now: Instant, due: &mut VecDeque<TimerRef<dyn Timer>>) {
        let now_nanos = self.nanos(now);
        while let Some(timer) = self.lane.pop_due(now_nanos) {
            due.push_back(timer.entry);
        }
        self.lane.shrink_if_empty(LANE_TRIM_FLOOR);
        while let Some(entry) = self.pop_levels_due(now_nanos) {
            entry.header().set_heap_index(IN_DUE_LIST);
            due.push_back(entry);
        }
    }

    /// Removes the timer whose header is `header` from the lane (a cancel of a timer marked
    /// `IN_DUE_LIST`, which may instead be in the worker's due list). O(lane).
    pub(crate) fn remove_from_lane(
        &mut self,
        header: *const EntryHeader,
    ) -> Option<TimerRef<dyn Timer>> {
        let removed = self.lane.remove(header)?;
        removed.header().set_heap_index(NOT_IN_HEAP);
        self.lane.shrink_if_empty(LANE_TRIM_FLOOR);
        Some(removed)
    }

    /// `pop_due` (tests only) of the levels.
    fn pop_levels_due(&mut self, now_nanos: u64) -> Option<TimerRef<dyn Timer>> {
        let now_tick = now_nanos >> TICK_SHIFT;
        loop {
            let Some(expiration) = self.next_expiration().filter(|e| e.tick <= now_tick) else {
                // Nothing is due up to `now`: the wheel may stand there (no occupied slot
                // starts at or before it, so every timer keeps its level and slot).
                self.elapsed = self.elapsed.max(now_tick);
                return None;
            };
            self.elapsed = self.elapsed.max(expiration.tick);
            let list = expiration.level * SLOTS + expiration.slot;
            if expiration.level == 0 {
                // Sorted: if the head is not due, nothing in the slot is.
                let head = self.levels().slots[list].head?;
                let header = header_of(head);
                // SAFETY: a linked timer, under the queue lock, no other links in use.
                #[allow(unsafe_code)]
                if unsafe { links(header) }.deadline > now_nanos {
                    return None;
                }
                return Some(self.take(header));
            }
            self.cascade(list);
        }
    }

    /// Removes the armed timer whose header is `header` (its `heap_index` is its slot list).
    /// O(1).
    ///
    /// # Panics
    ///
    /// If the entry is not in the levels (a caller bug: the `heap_index` says where it is).
    pub(crate) fn remove(&mut self, header: &EntryHeader) -> TimerRef<dyn Timer> {
        assert!(
            (header.heap_index() as usize) < LEVELS * SLOTS,
            "removing a timer that is not in the wheel's levels"
        );
        self.take(NonNull::from(header))
    }

    /// Removes every timer, earliest first.
    pub(crate) fn drain_in_order(&mut self) -> Vec<TimerRef<dyn Timer>> {
        let mut drained: Vec<TimerRef<dyn Timer>> = self
            .lane
            .drain()
            .map(|timer| timer.entry)
            .inspect(|entry| entry.header().set_heap_index(NOT_IN_HEAP))
            .collect();
        let mut levels: Vec<((u64, u64), TimerRef<dyn Timer>)> = Vec::with_capacity(self.len);
        self.take_all(|key, entry| levels.push((key, entry)));
        levels.sort_unstable_by_key(|(key, _)| *key);
        drained.extend(levels.into_iter().map(|(_, entry)| entry));
        drained
    }

    /// Removes the timers for which `take` is true (keeping the others armed), in no
    /// particular order. O(armed timers).
    pub(crate) fn extract(
        &mut self,
        mut take: impl FnMut(&dyn Timer) -> bool,
    ) -> Vec<TimerRef<dyn Timer>> {
        let mut taken = Vec::new();
        self.lane.extract(&mut take, &mut taken);
        let Some(levels) = self.levels.as_deref() else {
            return taken;
        };
        let mut chosen = Vec::new();
        for slot in &levels.slots {
            let mut next = slot.head;
            while let Some(timer) = next {
                // SAFETY: a linked timer (the wheel's reference keeps it alive).
                #[allow(unsafe_code)]
                let entry = unsafe { timer.as_ref() };
                if take(entry) {
                    chosen.push(header_of(timer));
                }
                // SAFETY: a linked timer, under the queue lock, no other links in use.
                #[allow(unsafe_code)]
                {
                    // SAFETY: a linked timer, under the queue lock; used in this statement only.
                    next = unsafe { links(header_of(timer)) }.next;
                }
            }
        }
        taken.extend(chosen.into_iter().map(|header| self.take(header)));
        taken
    }

    /// Frees the storage of an empty wheel (an idle worker's trim). Returns the slots freed.
    pub(crate) fn release_if_empty(&mut self) -> usize {
        if !self.is_empty() {
            return 0;
        }
        let freed = self.lane.shrink_if_empty(0);
        self.levels = None;
        freed
    }

    // ---- internals ------------------------------------------------------------------------

    fn levels(&mut self) -> &mut Levels {
        self.levels.get_or_insert_with(|| {
            Box::new(Levels {
                occupied: [0; LEVELS],
                slots: [EMPTY_SLOT; LEVELS * SLOTS],
            })
        })
    }

    /// The earliest occupied slot: the lowest occupied level's first occupied slot at or
    /// after `elapsed` (a timer at level `l` differs from `elapsed` in bits of level `l` and
    /// not above, so it is due after every timer of the levels below).
    fn next_expiration(&self) -> Option<Expiration> {
        let levels = self.levels.as_deref()?;
        for (level, &occupied) in levels.occupied.iter().enumerate() {
            if occupied == 0 {
                continue;
            }
            let shift = level as u32 * LEVEL_BITS;
            let now_slot = slot_for(self.elapsed, level);
            let slot = (occupied.rotate_right(now_slot as u32).trailing_zeros() as usize
                + now_slot)
                % SLOTS;
            let level_start = self.elapsed & !((1u64 << (shift + LEVEL_BITS)) - 1);
            let tick = level_start + ((slot as u64) << shift);
            debug_assert!(
                slot >= now_slot && (level == 0 || slot > now_slot),
                "an occupied slot is never behind the wheel"
            );
            return Some(Expiration { level, slot, tick });
        }
        None
    }

    /// Links the (unlinked) `timer` into the slot of `tick`, relative to `elapsed`; its
    /// header's `heap_index` becomes that slot list.
    #[allow(unsafe_code)]
    fn link(&mut self, timer: Linked, tick: u64) {
        let elapsed = self.elapsed;
        let level = level_for(elapsed, tick);
        let list = level * SLOTS + slot_for(tick, level);
        let header = header_of(timer);
        // SAFETY (every `links` call below): `timer` and its neighbours are linked timers,
        // kept alive by the wheel's references, and the wheel runs under the queue lock; each
        // returned reference is used within its statement, so no two are in use at once.
        // SAFETY: a linked timer, under the queue lock; used in this statement only.
        let key = unsafe { links(header) }.key();
        let slot = self.levels().slots[list];
        // Level 0 stays sorted: walk back from the tail past every later timer (usually none).
        let mut after = slot.tail;
        if level == 0 {
            while let Some(node) = after {
                // SAFETY: a linked timer, under the queue lock; used in this statement only.
                if unsafe { links(node) }.key() <= key {
                    break;
                }
                // SAFETY: a linked timer, under the queue lock; used in this statement only.
                after = unsafe { links(node) }.prev;
            }
        }
        let before = match after {
            None => slot.head,
            // SAFETY: a linked timer, under the queue lock; used in this statement only.
            Some(after) => unsafe { links(after) }.next,
        };
        {
            // SAFETY: a linked timer, under the queue lock; used in this statement only.
            let links = unsafe { links(header) };
            links.prev = after;
            links.next = before;
        }
        match after {
            None => self.levels().slots[list].head = Some(timer),
            // SAFETY: a linked timer, under the queue lock; used in this statement only.
            Some(after) => unsafe { links(after) }.next = Some(timer),
        }
        match before {
            None => self.levels().slots[list].tail = Some(header),
            // SAFETY: a linked timer, under the queue lock; used in this statement only.
            Some(before) => unsafe { links(header_of(before)) }.prev = Some(header),
        }
        // SAFETY: alive (the wheel's reference).
        unsafe { header.as_ref() }.set_heap_index(list as u16);
        self.levels().occupied[level] |= 1 << (list % SLOTS);
    }

    /// Unlinks the linked timer whose header is `header` from its slot list, returning the
    /// wheel's reference to it (the `next` of its predecessor, or its list's head).
    #[allow(unsafe_code)]
    fn unlink(&mut self, header: NonNull<EntryHeader>) -> Linked {
        // SAFETY: a linked timer (alive: the wheel's reference).
        let list = unsafe { header.as_ref() }.heap_index() as usize;
        let (prev, next) = {
            // SAFETY: a linked timer, under the queue lock; used in this statement only.
            let links = unsafe { links(header) };
            (links.prev.take(), links.next.take())
        };
        let levels = self.levels();
        let timer = match prev {
            None => std::mem::replace(&mut levels.slots[list].head, next),
            // SAFETY: a linked timer, under the queue lock; used in this statement only.
            Some(prev) => std::mem::replace(&mut unsafe { links(prev) }.next, next),
        }
        .expect("a linked timer is its predecessor's next, or its list's head");
        match next {
            None => levels.slots[list].tail = prev,
            // SAFETY: a linked timer, under the queue lock; used in this statement only.
            Some(next) => unsafe { links(header_of(next)) }.prev = prev,
        }
        if prev.is_none() && next.is_none() {
            levels.occupied[list / SLOTS] &= !(1 << (list % SLOTS));
        }
        timer
    }

    /// Unlinks the timer whose header is `header` and hands back the wheel's reference to it
    /// (marked `NOT_IN_HEAP`).
    fn take(&mut self, header: NonNull<EntryHeader>) -> TimerRef<dyn Timer> {
        let timer = self.unlink(header);
        self.len -= 1;
        // SAFETY: `timer` is the wheel's reference, made by `TimerRef::into_raw` in `insert`;
        // unlinked now, nothing else refers to it, so it becomes a `TimerRef` again once.
        #[allow(unsafe_code)]
        let entry = unsafe { TimerRef::from_raw(timer) };
        entry.header().set_heap_index(NOT_IN_HEAP);
        entry
    }

    /// Unlinks every timer of the levels, handing each (with its key) to `sink`; leaves the
    /// levels empty.
    #[allow(unsafe_code)]
    fn take_all(&mut self, mut sink: impl FnMut((u64, u64), TimerRef<dyn Timer>)) {
        let Some(levels) = self.levels.as_deref_mut() else {
            return;
        };
        for slot in &mut levels.slots {
            let mut next = std::mem::replace(slot, EMPTY_SLOT).head;
            while let Some(timer) = next {
                // SAFETY: a linked timer (alive: the wheel's reference), under the queue
                // lock; its links are used only within this block.
                let key = {
                    // SAFETY: a linked timer, under the queue lock; used in this statement only.
                    let links = unsafe { links(header_of(timer)) };
                    next = links.next.take();
                    links.prev = None;
                    links.key()
                };
                // SAFETY: the wheel's reference (`TimerRef::into_raw` in `insert`), now
                // unlinked: made a `TimerRef` again once.
                let entry = unsafe { TimerRef::from_raw(timer) };
                entry.header().set_heap_index(NOT_IN_HEAP);
                sink(key, entry);
            }
        }
        levels.occupied = [0; LEVELS];
        self.len = 0;
    }

    /// Re-distributes the timers of slot list `list` (whose start `elapsed` has reached) to
    /// the levels below.
    #[allow(unsafe_code)]
    fn cascade(&mut self, list: usize) {
        let levels = self.levels();
        let mut next = std::mem::replace(&mut levels.slots[list], EMPTY_SLOT).head;
        levels.occupied[list / SLOTS] &= !(1 << (list % SLOTS));
        while let Some(timer) = next {
            // SAFETY: a linked timer (alive: the wheel's reference), under the queue lock.
            let tick = {
                // SAFETY: a linked timer, under the queue lock; used in this statement only.
                let links = unsafe { links(header_of(timer)) };
                next = links.next.take();
                links.prev = None;
                (links.deadline >> TICK_SHIFT).max(self.elapsed)
            };
            self.link(timer, tick);
        }
    }

    /// Checks the lists, the occupancy bits, the order of level 0 and the headers' positions
    /// (tests).
    #[cfg(all(test, not(loom)))]
    #[allow(unsafe_code)]
    fn assert_consistent(&self) {
        let mut live = 0;
        let mut levels_first = None;
        if let Some(levels) = &self.levels {
            for (list, slot) in levels.slots.iter().enumerate() {
                let occupied = levels.occupied[list / SLOTS] & (1 << (list % SLOTS)) != 0;
                assert_eq!(occupied, slot.head.is_some(), "occupancy of list {list}");
                let mut prev: Option<NonNull<EntryHeader>> = None;
                let mut prev_key = None;
                let mut next = slot.head;
                while let Some(timer) = next {
                    let header = header_of(timer);
                    // SAFETY: a linked timer, read by the test that owns the wheel.
                    let links = unsafe { links(header) };
                    // SAFETY: as above.
                    assert_eq!(unsafe { header.as_ref() }.heap_index() as usize, list);
                    assert_eq!(links.prev, prev);
                    let tick = (links.deadline >> TICK_SHIFT).max(self.elapsed);
                    assert_eq!(list / SLOTS, level_for(self.elapsed, tick));
                    if list < SLOTS {
                        assert!(prev_key <= Some(links.key()), "level 0 is sorted");
                    }
                    let key = links.key();
                    levels_first =
                        Some(levels_first.map_or(key, |first: (u64, u64)| first.min(key)));
                    live += 1;
                    prev = Some(header);
                    prev_key = Some(links.key());
                    next = links.next;
                }
                assert_eq!(slot.tail, prev);
            }
        }
        assert_eq!(live, self.len);
        // The lane: sorted, marked, and before every timer of the levels.
        let mut last = None;
        for timer in self.lane.iter() {
            assert_eq!(timer.entry.header().heap_index(), IN_DUE_LIST);
            assert!(
                last <= Some((timer.deadline, timer.seq)),
                "the lane is sorted"
            );
            last = Some((timer.deadline, timer.seq));
        }
        if let (Some(last), Some(first)) = (last, levels_first) {
            assert!(last < first, "the lane fires before the levels");
        }
    }
}

impl Drop for TimerWheel {
    /// Gives back the wheel's references to the timers still armed (their closures are
    /// dropped with the last reference).
    fn drop(&mut self) {
        self.take_all(|_, entry| drop(entry));
    }
}

impl fmt::Debug for TimerWheel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerWheel")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("elapsed_ticks", &self.elapsed)
            .field("next_deadline", &self.peek_deadline())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
#[path = "timer_wheel_model.rs"]
mod model;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::executors::scheduled::timer_entry::{Once, Timer, TimerEntry};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn entry() -> TimerRef<dyn Timer> {
        TimerRef::new(TimerEntry::new(Once(|| ()))).erase()
    }

    /// An entry whose closure counts its drop in `drops`.
    fn counted(drops: &Arc<AtomicUsize>) -> TimerRef<dyn Timer> {
        struct Token(Arc<AtomicUsize>);
        impl Drop for Token {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let token = Token(Arc::clone(drops));
        TimerRef::new(TimerEntry::new(Once(move || drop(token)))).erase()
    }

    /// A deterministic pseudo-random sequence (xorshift), so failures reproduce.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// Scales a count down under Miri.
    fn scaled(count: usize) -> usize {
        if cfg!(miri) {
            (count / 20).max(10)
        } else {
            count
        }
    }

    #[test]
    fn timers_pop_in_deadline_order_and_equal_deadlines_in_arming_order() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        let mut armed = Vec::new();
        // Offsets from a tick apart to hours apart: every level, and equal deadlines.
        let offsets_us = [
            5_000u64,
            1,
            3,
            1,
            0,
            5_000,
            2,
            3_600_000_000,
            70,
            70_000,
            4_000_000,
        ];
        for (i, offset) in offsets_us.into_iter().enumerate() {
            let e = entry();
            armed.push((offset, i, TimerRef::clone(&e)));
            wheel.push(base + Duration::from_micros(offset), e);
            wheel.assert_consistent();
        }
        armed.sort_by_key(|(offset, i, _)| (*offset, *i));
        let far = base + Duration::from_secs(7200);
        for (_, _, expected) in armed {
            let popped = wheel.pop_due(far).unwrap();
            assert!(TimerRef::ptr_eq(&popped, &expected));
            assert_eq!(popped.header().heap_index(), NOT_IN_HEAP);
            wheel.assert_consistent();
        }
        assert!(wheel.pop_due(far).is_none());
        assert!(wheel.is_empty());
    }

    #[test]
    fn equal_deadlines_keep_arming_order_across_levels() {
        // One timer armed while its deadline is far (a high level), one armed for the same
        // deadline once the wheel has moved close (level 0): the first still pops first.
        let mut wheel = TimerWheel::new();
        let deadline = Instant::now() + Duration::from_millis(50);
        let first = entry();
        wheel.push(deadline, TimerRef::clone(&first));
        assert!(wheel
            .pop_due(deadline - Duration::from_micros(10))
            .is_none());
        let second = entry();
        wheel.push(deadline, TimerRef::clone(&second));
        wheel.assert_consistent();
        assert!(TimerRef::ptr_eq(&wheel.pop_due(deadline).unwrap(), &first));
        assert!(TimerRef::ptr_eq(&wheel.pop_due(deadline).unwrap(), &second));
    }

    #[test]
    fn nothing_pops_before_its_deadline() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut deadlines = Vec::new();
        for _ in 0..scaled(2_000) {
            let deadline = base + Duration::from_nanos(xorshift(&mut rng) % 50_000_000);
            wheel.push(deadline, entry());
            deadlines.push(deadline);
        }
        deadlines.sort();
        // Advance in uneven steps; everything popped at `now` has a deadline <= `now`, and
        // in order.
        let mut now = base;
        let mut popped = 0;
        while popped < deadlines.len() {
            // Longer steps under Miri: fewer consistency checks of the whole wheel.
            let step = if cfg!(miri) { 3_000_000 } else { 300_000 };
            now += Duration::from_nanos(xorshift(&mut rng) % step);
            while let Some(e) = wheel.pop_due(now) {
                let _ = e;
                assert!(deadlines[popped] <= now, "popped before its deadline");
                popped += 1;
            }
            // Whatever is left is not due yet.
            if popped < deadlines.len() {
                assert!(deadlines[popped] > now);
            }
            wheel.assert_consistent();
        }
    }

    #[test]
    fn a_timer_pops_at_its_deadline_and_not_a_nanosecond_before() {
        let mut wheel = TimerWheel::new();
        let deadline = Instant::now() + Duration::from_millis(3);
        wheel.push(deadline, entry());
        assert!(wheel.pop_due(deadline - Duration::from_nanos(1)).is_none());
        assert_eq!(
            wheel.peek_deadline(),
            Some(deadline),
            "the exact deadline once near"
        );
        assert!(wheel.pop_due(deadline).is_some());
    }

    #[test]
    fn peek_deadline_never_passes_the_earliest_deadline() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        assert!(wheel.peek_deadline().is_none());
        wheel.push(base + Duration::from_secs(3600), entry());
        let peek = wheel.peek_deadline().unwrap();
        assert!(peek <= base + Duration::from_secs(3600));
        // Walk the wheel forward through its peeks: it reaches the timer, never passes it.
        let mut steps = 0;
        loop {
            let at = wheel.peek_deadline().unwrap();
            if let Some(_e) = wheel.pop_due(at) {
                assert!(at >= base + Duration::from_secs(3600));
                break;
            }
            steps += 1;
            assert!(steps <= LEVELS, "each peek cascades one level down");
        }
    }

    #[test]
    fn push_reports_a_new_earliest_timer() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        assert!(wheel.push(base + Duration::from_millis(5), entry()));
        assert!(!wheel.push(base + Duration::from_millis(6), entry()));
        assert!(wheel.push(base + Duration::from_millis(1), entry()));
        assert!(!wheel.push(base + Duration::from_millis(1), entry()));
    }

    #[test]
    fn a_timer_armed_behind_the_wheel_is_due_at_once() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        assert!(wheel.pop_due(base + Duration::from_millis(10)).is_none());
        let late = entry();
        wheel.push(base + Duration::from_millis(1), TimerRef::clone(&late));
        assert!(TimerRef::ptr_eq(
            &wheel.pop_due(base + Duration::from_millis(10)).unwrap(),
            &late
        ));
    }

    #[test]
    fn removing_from_anywhere_keeps_order_and_positions() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        let mut live = Vec::new();
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let total = scaled(2_000);
        for _ in 0..total {
            let deadline = base + Duration::from_micros(xorshift(&mut rng) % 10_000_000);
            let e = entry();
            wheel.push(deadline, TimerRef::clone(&e));
            live.push((deadline, e));
        }
        // Remove half, chosen at random, through their headers' positions, while the wheel
        // advances.
        for step in 0..total / 2 {
            let victim = (xorshift(&mut rng) as usize) % live.len();
            let (_, e) = live.swap_remove(victim);
            let removed = wheel.remove(e.header());
            assert!(TimerRef::ptr_eq(&removed, &e));
            assert_eq!(removed.header().heap_index(), NOT_IN_HEAP);
            if step % 100 == 0 {
                let now = base + Duration::from_micros(step as u64 * 5);
                while let Some(e) = wheel.pop_due(now) {
                    let at = live
                        .iter()
                        .position(|(_, l)| TimerRef::ptr_eq(l, &e))
                        .unwrap();
                    assert!(live.swap_remove(at).0 <= now);
                }
                wheel.assert_consistent();
            }
        }
        wheel.assert_consistent();
        let mut last = base;
        let mut popped = 0;
        while let Some(e) = wheel.pop_due(base + Duration::from_secs(20)) {
            let deadline = live
                .iter()
                .find(|(_, l)| TimerRef::ptr_eq(l, &e))
                .map(|(d, _)| *d)
                .expect("only live timers remain");
            assert!(deadline >= last);
            last = deadline;
            popped += 1;
        }
        assert_eq!(popped, live.len());
    }

    /// Arms, cancels (at random and oldest first) and pops interleaved, growing to thousands of
    /// timers and draining again: the wheel stays consistent, timers pop in deadline order, and
    /// the wheel allocates nothing per timer (the entries are linked in place).
    #[test]
    fn mixed_arms_cancels_and_pops_keep_order_and_allocate_nothing_per_timer() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        let mut live: std::collections::VecDeque<(Instant, TimerRef<dyn Timer>)> =
            std::collections::VecDeque::new();
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let steps = scaled(60_000);
        let mut now = base;
        let mut peak = 0;
        for step in 0..steps {
            let growing = step < steps / 2;
            match xorshift(&mut rng) % 8 {
                // Arm: five in eight while the wheel grows, one in eight while it drains.
                0..=4 if growing || xorshift(&mut rng) % 5 == 0 => {
                    let deadline = now + Duration::from_micros(xorshift(&mut rng) % 5_000_000);
                    let e = entry();
                    wheel.push(deadline, TimerRef::clone(&e));
                    live.push_back((deadline, e));
                }
                // Cancel the oldest armed (timeouts cancelled in order).
                0..=5 if !live.is_empty() => {
                    let (_, e) = live.pop_front().expect("not empty");
                    assert!(TimerRef::ptr_eq(&wheel.remove(e.header()), &e));
                }
                // Cancel one at random.
                6 if !live.is_empty() => {
                    let victim = (xorshift(&mut rng) as usize) % live.len();
                    let (_, e) = live.remove(victim).expect("in range");
                    assert!(TimerRef::ptr_eq(&wheel.remove(e.header()), &e));
                }
                // Time passes: pop what is due, in order.
                _ => {
                    now += Duration::from_micros(xorshift(&mut rng) % 400);
                    let mut last = base;
                    while let Some(e) = wheel.pop_due(now) {
                        let at = live.iter().position(|(_, l)| TimerRef::ptr_eq(l, &e));
                        let (deadline, _) = live.remove(at.expect("armed")).expect("in range");
                        assert!(deadline <= now && deadline >= last);
                        last = deadline;
                    }
                }
            }
            assert_eq!(wheel.len(), live.len());
            peak = peak.max(wheel.len());
            // The levels' list heads at most, whatever the number of timers.
            assert!(wheel.capacity() <= LEVELS * SLOTS, "{} timers", wheel.len());
            if step % 1_000 == 0 {
                wheel.assert_consistent();
            }
        }
        wheel.assert_consistent();
        if !cfg!(miri) {
            assert!(peak >= 8_000, "the wheel held many timers at once: {peak}");
        }
        for (_, e) in live.drain(..) {
            wheel.remove(e.header());
        }
        assert!(wheel.is_empty());
        wheel.assert_consistent();
    }

    #[test]
    fn remove_frees_the_entry_at_once() {
        let mut wheel = TimerWheel::new();
        let drops = Arc::new(AtomicUsize::new(0));
        let e = counted(&drops);
        let far = Instant::now() + Duration::from_secs(3600);
        wheel.push(far, TimerRef::clone(&e));
        drop(wheel.remove(e.header()));
        assert!(wheel.is_empty());
        assert_eq!(drops.load(Ordering::SeqCst), 0, "the handle still holds it");
        drop(e);
        assert_eq!(drops.load(Ordering::SeqCst), 1, "nothing else held it");
    }

    #[test]
    fn a_burst_of_removed_timers_gives_its_storage_back() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        let drops = Arc::new(AtomicUsize::new(0));
        let total = scaled(10_000);
        let entries: Vec<_> = (0..total as u64)
            .map(|i| {
                let e = counted(&drops);
                wheel.push(base + Duration::from_micros(i), TimerRef::clone(&e));
                e
            })
            .collect();
        assert_eq!(
            wheel.capacity(),
            LEVELS * SLOTS,
            "the levels link the entries in place"
        );
        for e in entries.iter().rev() {
            wheel.remove(e.header());
        }
        assert_eq!(wheel.len(), 0);
        wheel.assert_consistent();
        drop(entries);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            total,
            "each dropped exactly once"
        );
    }

    /// A wheel dropped with timers armed gives back its reference to each: every closure is
    /// dropped exactly once, when its last reference goes.
    #[test]
    fn dropping_a_wheel_with_armed_timers_releases_each_once() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        let drops = Arc::new(AtomicUsize::new(0));
        let total = scaled(3_000);
        for i in 0..total as u64 {
            // Spread over every level, some due at once (the lane).
            let deadline = base + Duration::from_nanos(i.pow(3) % (1 << 40));
            if i % 7 == 0 {
                wheel.push_due(base, counted(&drops));
            } else {
                wheel.push(deadline, counted(&drops));
            }
        }
        let kept = counted(&drops);
        wheel.push(base + Duration::from_secs(5), TimerRef::clone(&kept));
        wheel.assert_consistent();
        drop(wheel);
        assert_eq!(drops.load(Ordering::SeqCst), total, "each dropped once");
        assert_eq!(TimerRef::ref_count(&kept), 1, "the wheel let go of it");
        drop(kept);
        assert_eq!(drops.load(Ordering::SeqCst), total + 1);
    }

    #[test]
    fn extract_takes_the_chosen_timers_and_keeps_the_rest_in_order() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        for i in 0..100u64 {
            wheel.push(base + Duration::from_micros(100 - i), entry());
        }
        let mut n = 0;
        let taken = wheel.extract(|_| {
            n += 1;
            n % 3 == 0
        });
        assert_eq!(taken.len(), 33);
        assert!(taken.iter().all(|e| e.header().heap_index() == NOT_IN_HEAP));
        assert_eq!(wheel.len(), 67);
        wheel.assert_consistent();
        let mut popped = 0;
        while wheel.pop_due(base + Duration::from_secs(1)).is_some() {
            popped += 1;
        }
        assert_eq!(popped, 67);
    }

    #[test]
    fn drain_in_order_returns_earliest_first_and_each_timer_once() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        let drops = Arc::new(AtomicUsize::new(0));
        let late = counted(&drops);
        let early = counted(&drops);
        let far = counted(&drops);
        wheel.push(base + Duration::from_millis(2), TimerRef::clone(&late));
        wheel.push(base + Duration::from_millis(1), TimerRef::clone(&early));
        wheel.push(base + Duration::from_secs(7200), TimerRef::clone(&far));
        let drained = wheel.drain_in_order();
        assert_eq!(drained.len(), 3);
        assert!(TimerRef::ptr_eq(&drained[0], &early));
        assert!(TimerRef::ptr_eq(&drained[1], &late));
        assert!(TimerRef::ptr_eq(&drained[2], &far));
        assert!(wheel.is_empty());
        assert!(wheel.peek_deadline().is_none());
        drop((drained, late, early, far));
        assert_eq!(drops.load(Ordering::SeqCst), 3);
        // Still usable.
        wheel.push(base, entry());
        assert!(wheel.pop_due(base + Duration::from_millis(1)).is_some());
    }

    #[test]
    fn a_deadline_too_far_to_represent_is_kept_and_never_due() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        let never = base + Duration::from_secs(400 * 365 * 24 * 3600);
        wheel.push(never, entry());
        wheel.assert_consistent();
        assert!(wheel
            .pop_due(base + Duration::from_secs(100 * 365 * 24 * 3600))
            .is_none());
        assert_eq!(wheel.len(), 1);
        assert_eq!(wheel.release_if_empty(), 0);
    }

    #[test]
    fn release_if_empty_frees_everything() {
        let mut wheel = TimerWheel::new();
        let e = entry();
        wheel.push(Instant::now(), TimerRef::clone(&e));
        wheel.remove(e.header());
        assert!(wheel.levels.is_some());
        wheel.release_if_empty();
        assert!(wheel.levels.is_none(), "the levels are freed");
        assert_eq!(wheel.capacity(), 0);
        assert!(wheel.peek_deadline().is_none());
    }

    // ---- the due-now lane ------------------------------------------------------------------

    /// Pops everything due by `now`, one at a time, checking the wheel after each.
    fn pop_all(wheel: &mut TimerWheel, now: Instant) -> Vec<TimerRef<dyn Timer>> {
        let mut popped = Vec::new();
        while let Some(entry) = wheel.pop_due(now) {
            wheel.assert_consistent();
            popped.push(entry);
        }
        popped
    }

    fn same(a: &TimerRef<dyn Timer>, b: &TimerRef<dyn Timer>) -> bool {
        std::ptr::eq(a.header(), b.header())
    }

    #[test]
    fn due_timers_take_the_lane_and_fire_before_the_levels_in_deadline_order() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        let at = |micros: u64| base + Duration::from_micros(micros);
        let later = entry();
        assert!(
            wheel.push(at(500), TimerRef::clone(&later)),
            "the first timer is the earliest"
        );
        let lane: Vec<_> = (0..3).map(|_| entry()).collect();
        for (i, timer) in lane.iter().enumerate() {
            // Due when armed, before the levels' earliest: into the lane, in order.
            let earliest = wheel.push_due(at(10 + i as u64), TimerRef::clone(timer));
            assert_eq!(
                earliest,
                i == 0,
                "only the first of the lane becomes the earliest"
            );
            assert_eq!(timer.header().heap_index(), IN_DUE_LIST);
        }
        wheel.assert_consistent();
        assert_eq!(wheel.len(), 4);
        assert_eq!(wheel.peek_deadline(), Some(at(10)));
        let popped = pop_all(&mut wheel, at(1_000));
        let expected: Vec<_> = lane.iter().chain([&later]).collect();
        assert_eq!(popped.len(), expected.len());
        for (popped, expected) in popped.iter().zip(expected) {
            assert!(same(popped, expected));
            assert_eq!(popped.header().heap_index(), NOT_IN_HEAP);
        }
        assert!(wheel.is_empty());
    }

    #[test]
    fn a_due_timer_that_would_fire_after_a_timer_of_the_levels_is_filed_in_the_levels() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        let at = |micros: u64| base + Duration::from_micros(micros);
        let (first, second, third) = (entry(), entry(), entry());
        wheel.push(at(100), TimerRef::clone(&second));
        // Not before the levels' earliest: the lane would fire it too early.
        assert!(!wheel.push_due(at(150), TimerRef::clone(&third)));
        assert_ne!(
            third.header().heap_index(),
            IN_DUE_LIST,
            "filed in the levels"
        );
        // Before it: the lane.
        assert!(wheel.push_due(at(50), TimerRef::clone(&first)));
        assert_eq!(first.header().heap_index(), IN_DUE_LIST);
        wheel.assert_consistent();
        let popped = pop_all(&mut wheel, at(1_000));
        assert_eq!(popped.len(), 3);
        assert!(same(&popped[0], &first) && same(&popped[1], &second) && same(&popped[2], &third));
    }

    /// Two producers that read the clock in one order and took the lock in the other, or a
    /// periodic timer catching up: a timer due before the lane's last moves the lane into the
    /// levels, which then order all of them.
    #[test]
    fn a_timer_due_before_the_lanes_last_moves_the_lane_into_the_levels() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        let at = |micros: u64| base + Duration::from_micros(micros);
        let timers: Vec<_> = (0..4).map(|_| entry()).collect();
        wheel.push_due(at(10), TimerRef::clone(&timers[0]));
        wheel.push_due(at(30), TimerRef::clone(&timers[2]));
        // Due before the lane's last: neither into the lane (out of order) nor after it.
        assert!(!wheel.push_due(at(20), TimerRef::clone(&timers[1])));
        wheel.assert_consistent();
        for timer in &timers[..3] {
            assert_ne!(
                timer.header().heap_index(),
                IN_DUE_LIST,
                "all in the levels"
            );
        }
        // An equal deadline armed later fires later, wherever it is filed.
        wheel.push(at(30), TimerRef::clone(&timers[3]));
        wheel.assert_consistent();
        let popped = pop_all(&mut wheel, at(1_000));
        assert_eq!(popped.len(), 4);
        for (popped, expected) in popped.iter().zip(&timers) {
            assert!(same(popped, expected));
        }
    }

    #[test]
    fn a_timer_of_the_lane_is_removed_at_once_and_the_others_keep_their_order() {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        let timers: Vec<_> = (0..3).map(|_| counted(&drops)).collect();
        for (i, timer) in timers.iter().enumerate() {
            wheel.push_due(
                base + Duration::from_nanos(i as u64),
                TimerRef::clone(timer),
            );
        }
        let removed = wheel
            .remove_from_lane(timers[1].header())
            .expect("in the lane");
        assert!(same(&removed, &timers[1]));
        assert_eq!(removed.header().heap_index(), NOT_IN_HEAP);
        assert!(
            wheel.remove_from_lane(timers[1].header()).is_none(),
            "removed once"
        );
        drop(removed);
        assert_eq!(wheel.len(), 2);
        wheel.assert_consistent();
        let popped = pop_all(&mut wheel, base + Duration::from_secs(1));
        assert!(same(&popped[0], &timers[0]) && same(&popped[1], &timers[2]));
        drop((popped, timers));
        assert_eq!(
            drops.load(Ordering::SeqCst),
            3,
            "every closure dropped once"
        );
    }

    /// The worker's take: the lane's timers move into the due list without their headers being
    /// rewritten (they already read `IN_DUE_LIST`), then the levels' due timers, marked.
    #[test]
    fn take_due_into_appends_the_lane_then_the_levels_due_timers() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        let at = |micros: u64| base + Duration::from_micros(micros);
        let (lane, level, not_due) = (entry(), entry(), entry());
        wheel.push(at(20), TimerRef::clone(&level));
        wheel.push(at(5_000), TimerRef::clone(&not_due));
        wheel.push_due(at(10), TimerRef::clone(&lane));
        let mut due = VecDeque::new();
        wheel.take_due_into(at(100), &mut due);
        assert_eq!(due.len(), 2);
        assert!(same(&due[0], &lane) && same(&due[1], &level));
        assert!(due
            .iter()
            .all(|entry| entry.header().heap_index() == IN_DUE_LIST));
        assert_eq!(wheel.len(), 1, "the timer not yet due stays");
        wheel.assert_consistent();
    }

    #[test]
    fn drain_extract_and_release_include_the_lane() {
        let mut wheel = TimerWheel::new();
        let base = wheel.origin();
        let at = |micros: u64| base + Duration::from_micros(micros);
        let (lane_first, lane_second, level) = (entry(), entry(), entry());
        wheel.push(at(100), TimerRef::clone(&level));
        wheel.push_due(at(1), TimerRef::clone(&lane_first));
        wheel.push_due(at(2), TimerRef::clone(&lane_second));
        let taken = wheel.extract(|timer| std::ptr::eq(timer.header(), lane_second.header()));
        assert_eq!(taken.len(), 1);
        assert_eq!(lane_second.header().heap_index(), NOT_IN_HEAP);
        wheel.assert_consistent();
        assert_eq!(wheel.release_if_empty(), 0, "not empty");
        let drained = wheel.drain_in_order();
        assert_eq!(drained.len(), 2);
        assert!(same(&drained[0], &lane_first) && same(&drained[1], &level));
        assert!(drained
            .iter()
            .all(|e| e.header().heap_index() == NOT_IN_HEAP));
        assert!(wheel.is_empty());
        assert!(
            wheel.release_if_empty() > 0,
            "the lane's and the levels' storage freed"
        );
        assert_eq!(wheel.capacity(), 0);
    }
}
