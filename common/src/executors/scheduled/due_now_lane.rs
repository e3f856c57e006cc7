//! `DueNowLane`: the timers that were already due when they were armed and fall due before
//! every timer in the wheel's levels, in firing order — a FIFO beside the levels.
//!
//! # Why
//!
//! A `schedule(Duration::ZERO, ..)` stream is a hand-off through the timers: each timer is due
//! the moment it is armed. Filed in the levels, every one costs the worker a removal under the
//! producers' lock (read its node, unlink it, free its slot, rewrite its header), each a cache
//! line the producer wrote a moment ago on the other core; the producer's next `schedule` then
//! waits for that lock (measured when the crate's locks were parking_lot's: ~600,000
//! `sched_yield`s in the lock's spin per 2.5 million timers, 1.5 us per timer against the
//! delay heap's 0.9). In the lane, arming is a push and the worker takes the whole lane with
//! one append of pointers, touching no timer.
//!
//! # The invariant that keeps the wheel's order
//!
//! Every timer in the lane fires before every timer in the levels, and the lane is sorted by
//! `(deadline, seq)`: the wheel pops the lane first. [`TimerWheel`](super::timer_wheel::TimerWheel)
//! keeps it so:
//!
//! - a timer enters the lane only if it was due when armed, its deadline is not before the
//!   lane's last (`seq` grows, so equal deadlines keep arming order), and it is strictly before
//!   the levels' earliest possible deadline;
//! - a timer armed into the levels with a deadline before the lane's last (two producers that
//!   read the clock in one order and took the lock in the other; a periodic timer catching up)
//!   first moves the whole lane into the levels. That is the rare path; the levels then order
//!   everything.
//!
//! A timer in the lane has the `heap_index` `IN_DUE_LIST`, like one in the worker's due list:
//! the worker moves the lane into that list without touching the timers, and `cancel` (which
//! holds the queue lock) looks in the lane first, then in the due list.

use crate::executors::scheduled::timer_entry::{EntryHeader, Timer, IN_DUE_LIST, NOT_IN_HEAP};
use crate::executors::scheduled::timer_ref::TimerRef;
use std::collections::VecDeque;

/// A timer in the lane, with the key the wheel orders by.
pub(crate) struct LaneTimer {
    /// Nanoseconds from the wheel's origin to the deadline.
    pub(crate) deadline: u64,
    /// Arming order (the wheel's sequence).
    pub(crate) seq: u64,
    pub(crate) entry: TimerRef<dyn Timer>,
}

/// The FIFO of due-when-armed timers (module docs). Not thread-safe: it lives in the wheel,
/// under the executor's queue lock.
#[derive(Default)]
pub(crate) struct DueNowLane {
    timers: VecDeque<LaneTimer>,
}

impl DueNowLane {
    /// Timers in the lane.
    pub(crate) fn len(&self) -> usize {
        self.timers.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.timers.is_empty()
    }

    /// Slots allocated now.
    pub(crate) fn capacity(&self) -> usize {
        self.timers.capacity()
    }

    /// The first timer's deadline, in nanoseconds from the wheel's origin.
    pub(crate) fn first_deadline(&self) -> Option<u64> {
        self.timers.front().map(|timer| timer.deadline)
    }

    /// The last timer's deadline.
    pub(crate) fn last_deadline(&self) -> Option<u64> {
        self.timers.back().map(|timer| timer.deadline)
    }

    /// Appends a timer; the caller keeps the lane sorted (module docs). Marks it `IN_DUE_LIST`.
    pub(crate) fn push(&mut self, timer: LaneTimer) {
        debug_assert!(self
            .timers
            .back()
            .map_or(true, |last| (last.deadline, last.seq)
                <= (timer.deadline, timer.seq)));
        timer.entry.header().set_heap_index(IN_DUE_LIST);
        self.timers.push_back(timer);
    }

    /// Removes and returns the first timer if its deadline is at or before `now_nanos`.
    pub(crate) fn pop_due(&mut self, now_nanos: u64) -> Option<LaneTimer> {
        if self.timers.front()?.deadline > now_nanos {
            return None;
        }
        self.timers.pop_front()
    }

    /// Removes the timer whose header is `header` (a cancel), if it is here. O(lane).
    pub(crate) fn remove(&mut self, header: *const EntryHeader) -> Option<TimerRef<dyn Timer>> {
        let position = self
            .timers
            .iter()
            .position(|timer| std::ptr::eq(timer.entry.header(), header))?;
        let removed = self.timers.remove(position)?;
        Some(removed.entry)
    }

    /// Removes every timer, in firing order.
    pub(crate) fn drain(&mut self) -> std::collections::vec_deque::Drain<'_, LaneTimer> {
        self.timers.drain(..)
    }

    /// Removes the timers for which `take` is true, keeping the others in order; each taken
    /// one is marked `NOT_IN_HEAP`.
    pub(crate) fn extract(
        &mut self,
        take: &mut impl FnMut(&dyn Timer) -> bool,
        taken: &mut Vec<TimerRef<dyn Timer>>,
    ) {
        let mut kept = VecDeque::with_capacity(self.timers.len());
        for timer in self.timers.drain(..) {
            if take(&*timer.entry) {
                timer.entry.header().set_heap_index(NOT_IN_HEAP);
                taken.push(timer.entry);
            } else {
                kept.push_back(timer);
            }
        }
        self.timers = kept;
    }

    /// Gives the storage of an empty lane back if it holds more than `keep` slots. Returns
    /// the slots freed.
    pub(crate) fn shrink_if_empty(&mut self, keep: usize) -> usize {
        let capacity = self.timers.capacity();
        if !self.timers.is_empty() || capacity <= keep {
            return 0;
        }
        self.timers = VecDeque::new();
        capacity
    }

    /// The timers in order (consistency checks).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &LaneTimer> {
        self.timers.iter()
    }
}
