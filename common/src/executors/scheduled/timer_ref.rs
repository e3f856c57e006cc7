//! `TimerRef`: a counted reference to a timer entry, the count kept in the entry's state word.
//!
//! # Why not `Arc`
//!
//! A timer has two owners for most of its life: its armed side (the wheel, the due list, or
//! the worker firing it) and its handle. With `Arc`, scheduling one and cancelling it cost
//! three locked read-modify-writes on the entry beside the state's: the handle's clone, the
//! wheel's release when cancel unlinks it, and the handle's release. Here:
//!
//! - an entry is made with both references ([`TimerRef::pair_in`]): no increment;
//! - a cancel that unlinks the entry from the wheel lets go of the wheel's reference in the
//!   same compare-and-swap that makes it `CANCELLED` ([`TimerRef::cancel_unlinked`]);
//! - a reference that finds itself the only one left (a plain load) frees the entry without
//!   a read-modify-write: no other reference exists, and none can be made without one.
//!
//! The entry also loses the `Arc`'s two counts (16 bytes). Measured on the `schedule +
//! cancel` bench row (1,000,000 timers; AMD EPYC host, 2 vCPUs, 2026-12-03; 10 alternated
//! processes x 3 rounds of each build): 218.6 -> 173.3 ns per timer, 1.63x -> 1.25x the
//! lazy-cancel heap (see the scheduled executor's `README.md`).
//!
//! # The protocol
//!
//! The count lives in the high bits of the state word (`REF_ONE` per reference); every
//! state transition is a compare-and-swap that keeps them, so a transition and a release never
//! lose each other's update. Releases are `Release`, and the release that finds the count at
//! one (by a load, or the value its decrement replaced) is `Acquire` before it frees, as in
//! `Arc`: every access any owner made happens before the free.
//!
//! A load that sees a count of one cannot be stale in the dangerous direction: the count only
//! falls (the only increment is [`Clone`], in tests, which needs a reference), so an older
//! value in the word's modification order is a larger count, which takes the slow path.

use crate::executors::scheduled::entry_blocks::Block;
use crate::executors::scheduled::timer_entry::{
    Cancellation, EntryOutcome, Timer, TimerEntry, TimerJob,
};
use std::alloc::Layout;
use std::ops::Deref;
use std::ptr::NonNull;

/// An owned, counted reference to a timer entry (`T`: the entry, `dyn Timer`, or
/// `dyn EntryOutcome<R>`). Dropping the last one frees the entry.
pub(crate) struct TimerRef<T: ?Sized + Timer> {
    entry: NonNull<T>,
}

// SAFETY: a `TimerRef` hands out `&T` (so it may be sent or shared only where `T: Sync`, which
// `Timer` requires) and may free the entry on whatever thread drops the last one (`T: Send`,
// also required by `Timer`). The count itself is atomic.
#[allow(unsafe_code)]
unsafe impl<T: ?Sized + Timer> Send for TimerRef<T> {}
// SAFETY: as above: shared, it gives only `&T`, and `T: Sync`.
#[allow(unsafe_code)]
unsafe impl<T: ?Sized + Timer> Sync for TimerRef<T> {}

impl<J: TimerJob> TimerRef<TimerEntry<J>> {
    /// A new entry with one reference (tests: the executor makes pairs, `pair_in`).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn new(entry: TimerEntry<J>) -> Self {
        Self {
            entry: NonNull::from(Box::leak(Box::new(entry))),
        }
    }

    /// A new entry with two references: the armed side's and the handle's (tests; the executor
    /// calls `pair_in` with memory it may have kept).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn pair(entry: TimerEntry<J>) -> (Self, Self) {
        let first = Self::new(entry);
        first.header().add_unshared_ref();
        let second = Self { entry: first.entry };
        (first, second)
    }

    /// A new entry for `job` with two references, written into `block` (fresh, or kept from
    /// an entry of the same layout: `entry_blocks.rs`).
    ///
    /// # Panics
    ///
    /// If the block's layout is not the entry's.
    pub(crate) fn pair_in(job: J, block: Block) -> (Self, Self) {
        assert_eq!(
            block.layout(),
            Layout::new::<TimerEntry<J>>(),
            "an entry goes into a block of its own layout"
        );
        let ptr = block.into_raw().cast::<TimerEntry<J>>();
        // SAFETY: the block's memory is this function's (`into_raw`), allocated by the global
        // allocator with the entry's layout (checked above), and holds no value: writing the
        // entry initialises it. From here the references own it, and the last one frees it as
        // a `Box<TimerEntry<J>>` would (`Drop`) or keeps it (`release_keeping`): either is
        // right for memory of this layout from the global allocator.
        #[allow(unsafe_code)]
        unsafe {
            ptr.as_ptr().write(TimerEntry::new(job));
        }
        let first = Self { entry: ptr };
        first.header().add_unshared_ref();
        (first, Self { entry: ptr })
    }

    /// The same reference, type-erased for the wheel and the worker.
    pub(crate) fn erase(self) -> TimerRef<dyn Timer> {
        let entry: NonNull<dyn Timer> = self.into_raw();
        TimerRef { entry }
    }

    /// The same reference, typed by the outcome, for the handle.
    pub(crate) fn outcome(self) -> TimerRef<dyn EntryOutcome<J::Output>> {
        let entry: NonNull<dyn EntryOutcome<J::Output>> = self.into_raw();
        TimerRef { entry }
    }
}

impl<T: ?Sized + Timer> TimerRef<T> {
    /// The raw pointer, the reference still counted (see [`from_raw`](Self::from_raw)).
    pub(crate) fn into_raw(self) -> NonNull<T> {
        let entry = self.entry;
        std::mem::forget(self);
        entry
    }

    /// A reference back from [`into_raw`](Self::into_raw).
    ///
    /// # Safety
    ///
    /// `entry` came from `into_raw` and is turned back at most once.
    #[allow(unsafe_code)]
    pub(crate) unsafe fn from_raw(entry: NonNull<T>) -> Self {
        Self { entry }
    }

    /// Whether both point to the same entry (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn ptr_eq(this: &Self, other: &Self) -> bool {
        std::ptr::addr_eq(this.entry.as_ptr(), other.entry.as_ptr())
    }

    /// References that exist now (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn ref_count(this: &Self) -> usize {
        this.header().ref_count()
    }

    /// Lets go of this reference as `drop` does, except that the last one keeps the entry's
    /// memory: it drops the entry in place and returns the memory as a [`Block`] (for the
    /// next timer of the same layout, `entry_blocks.rs`). `None` if other references remain.
    pub(crate) fn release_keeping(self) -> Option<Block> {
        let entry = self.into_raw();
        // SAFETY: this reference (turned raw just above) keeps the entry alive until its
        // release below.
        #[allow(unsafe_code)]
        let header_says_last = unsafe { entry.as_ref() }.header().release_ref();
        if !header_says_last {
            return None;
        }
        // SAFETY: the last reference (as in `Drop`): nothing else can reach the entry. It lives
        // in memory from the global allocator with its own type's layout (`new`, `pair_in`),
        // which `for_value` reads (through the vtable, for a `dyn`) before the drop. The block
        // takes the memory first, so that it is freed even if the entry's drop panics (the
        // outcome's `Drop` is user code), as a `Box`'s would be; once the drop has returned,
        // no value lives in it.
        #[allow(unsafe_code)]
        let block = unsafe {
            let layout = Layout::for_value(entry.as_ref());
            let block = Block::from_raw(entry.cast(), layout);
            std::ptr::drop_in_place(entry.as_ptr());
            block
        };
        Some(block)
    }

    /// Cancels a waiting entry that its caller has just unlinked from the wheel (which held
    /// this reference), letting go of the reference in the same step: `SCHEDULED ->
    /// CANCELLED`, one reference less. `None` (and the reference dropped as usual) if the entry
    /// was not `SCHEDULED`, which an entry in the wheel always is.
    ///
    /// The caller holds another reference (the handle it cancels through), so the entry lives
    /// on for the cancel's [`Timer::finish_cancel`].
    pub(crate) fn cancel_unlinked(self) -> Option<Cancellation> {
        let cancellation = self.header().cancel_releasing_ref()?;
        // The transition let go of this reference.
        std::mem::forget(self);
        Some(cancellation)
    }
}

impl<T: ?Sized + Timer> Deref for TimerRef<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the entry lives while a reference to it exists, and this is one.
        #[allow(unsafe_code)]
        unsafe {
            self.entry.as_ref()
        }
    }
}

impl<T: ?Sized + Timer> Drop for TimerRef<T> {
    #[inline]
    fn drop(&mut self) {
        if self.header().release_ref() {
            // SAFETY: the last reference (the release saw the count at one and synchronised
            // with every other release): nothing else can reach the entry. It lives in memory
            // from the global allocator with the layout of the type `T` was erased from (`Box`
            // in `new`, a block of that layout in `pair_in`), as a `Box` of that type would
            // own it; the vtable (for a `dyn`) drops and frees it as that type.
            #[allow(unsafe_code)]
            drop(unsafe { Box::from_raw(self.entry.as_ptr()) });
        }
    }
}

/// Another reference (tests only: the executor never needs more than the two `pair` makes).
#[cfg(test)]
impl<T: ?Sized + Timer> Clone for TimerRef<T> {
    fn clone(&self) -> Self {
        self.header().add_ref();
        Self { entry: self.entry }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::executors::scheduled::timer_entry::{Once, CANCELLED, SCHEDULED};
    use pulsar_testkit::DropCounter;

    /// An entry whose closure counts its drop in `drops`.
    fn counted(drops: &DropCounter) -> TimerEntry<Once<impl FnOnce() + Send + 'static>> {
        let token = drops.token();
        TimerEntry::new(Once(move || drop(token)))
    }

    #[test]
    fn a_pair_frees_its_entry_once_whichever_reference_goes_last() {
        for handle_first in [true, false] {
            let drops = DropCounter::new();
            let (timer, handle) = TimerRef::pair(counted(&drops));
            let (timer, handle) = (timer.erase(), handle.outcome());
            assert_eq!(TimerRef::ref_count(&timer), 2);
            assert!(std::ptr::addr_eq(&*timer, &*handle), "one entry");
            if handle_first {
                drop(handle);
                assert_eq!(drops.drops(), 0, "the timer's keeps it");
                assert_eq!(TimerRef::ref_count(&timer), 1);
                drop(timer);
            } else {
                drop(timer);
                assert_eq!(drops.drops(), 0, "the handle's keeps it");
                drop(handle);
            }
            assert_eq!(drops.drops(), 1, "freed once");
        }
    }

    #[test]
    fn raw_round_trips_keep_the_reference() {
        let drops = DropCounter::new();
        let timer = TimerRef::new(counted(&drops)).erase();
        let raw = timer.into_raw();
        assert_eq!(drops.drops(), 0);
        // SAFETY: `raw` came from `into_raw` just above and is turned back once.
        #[allow(unsafe_code)]
        let timer = unsafe { TimerRef::from_raw(raw) };
        assert_eq!(TimerRef::ref_count(&timer), 1);
        drop(timer);
        assert_eq!(drops.drops(), 1);
    }

    #[test]
    fn a_cancel_of_an_unlinked_timer_lets_go_of_its_reference_in_the_transition() {
        let drops = DropCounter::new();
        let (timer, handle) = TimerRef::pair(counted(&drops));
        let (timer, handle) = (timer.erase(), handle.outcome());
        let cancellation = timer.cancel_unlinked().expect("a waiting timer");
        assert_eq!(handle.header().state(), CANCELLED);
        assert_eq!(
            TimerRef::ref_count(&handle),
            1,
            "the wheel's reference is gone"
        );
        handle.finish_cancel(cancellation);
        assert_eq!(drops.drops(), 1, "the cancel dropped the closure");
        assert!(matches!(
            handle.wait_outcome(None),
            Some(Err(crate::executors::TaskError::Cancelled))
        ));
        // The last reference, alone: it frees without a read-modify-write (Miri checks the
        // free happens once and nothing leaks).
        drop(handle);
    }

    #[test]
    fn a_cancel_of_a_timer_no_longer_waiting_changes_nothing_and_drops_the_reference() {
        let drops = DropCounter::new();
        let (timer, handle) = TimerRef::pair(counted(&drops));
        let (timer, handle) = (timer.erase(), handle.outcome());
        let first = handle.header().try_cancel(false).expect("waiting");
        handle.finish_cancel(first);
        assert!(timer.cancel_unlinked().is_none(), "already cancelled");
        assert_eq!(TimerRef::ref_count(&handle), 1, "the reference was dropped");
        assert_eq!(handle.header().state(), CANCELLED);
        drop(handle);
        assert_eq!(drops.drops(), 1);
    }

    #[test]
    fn transitions_keep_the_count_and_the_count_keeps_the_state() {
        let (timer, handle) = TimerRef::pair(TimerEntry::new(Once(|| 7)));
        let (timer, handle) = (timer.erase(), handle.outcome());
        let extra = timer.clone();
        assert_eq!(TimerRef::ref_count(&timer), 3);
        assert_eq!(timer.header().state(), SCHEDULED);
        drop(extra);
        assert!(matches!(
            timer.fire(),
            crate::executors::scheduled::timer_entry::Fired::Done
        ));
        assert_eq!(
            TimerRef::ref_count(&timer),
            2,
            "the run kept both references"
        );
        drop(timer);
        assert_eq!(handle.wait_outcome(None).expect("done").expect("ran"), 7);
    }

    #[test]
    fn only_the_last_reference_keeps_the_memory_and_a_new_entry_reuses_it() {
        let drops = DropCounter::new();
        let (timer, handle) = TimerRef::pair(counted(&drops));
        let layout = Layout::for_value(&*timer);
        let (timer, handle) = (timer.erase(), handle.outcome());
        assert!(timer.release_keeping().is_none(), "the handle's is left");
        assert_eq!(drops.drops(), 0);
        let block = handle.release_keeping().expect("the last reference");
        assert_eq!(
            drops.drops(),
            1,
            "the entry (and its closure) dropped in place"
        );
        assert_eq!(block.layout(), layout);
        // Reused for an entry of the same layout, freed by its last reference as usual.
        let token = drops.token();
        let (timer, handle) = TimerRef::pair_in(Once(move || drop(token)), block);
        let (timer, handle) = (timer.erase(), handle.outcome());
        assert!(matches!(
            timer.fire(),
            crate::executors::scheduled::timer_entry::Fired::Done
        ));
        drop(timer);
        assert!(matches!(handle.wait_outcome(None), Some(Ok(()))));
        drop(handle);
        assert_eq!(drops.drops(), 2);
    }

    #[test]
    #[should_panic(expected = "an entry goes into a block of its own layout")]
    fn a_block_of_another_layout_is_refused() {
        let block = Block::allocate(Layout::new::<[u64; 64]>());
        let _ = TimerRef::pair_in(Once(|| ()), block);
    }

    /// The outcome's `Drop` is user code: when it panics in the keeping release, the memory is
    /// still freed (Miri's leak check and valgrind see it).
    #[test]
    fn a_panicking_outcome_drop_in_a_keeping_release_frees_the_memory() {
        struct PanicsOnDrop;
        impl Drop for PanicsOnDrop {
            fn drop(&mut self) {
                panic!("the outcome's drop panics");
            }
        }
        let (timer, handle) = TimerRef::pair(TimerEntry::new(Once(|| PanicsOnDrop)));
        let (timer, handle) = (timer.erase(), handle.outcome());
        assert!(matches!(
            timer.fire(),
            crate::executors::scheduled::timer_entry::Fired::Done
        ));
        drop(handle);
        let released =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| timer.release_keeping()));
        assert!(released.is_err(), "the drop's panic reaches the caller");
    }

    /// References let go on two threads at once, many times: each entry freed exactly once.
    #[test]
    fn references_dropped_on_two_threads_free_each_entry_once() {
        let rounds = if cfg!(miri) { 20 } else { 2_000 };
        let drops = DropCounter::new();
        for _ in 0..rounds {
            let (timer, handle) = TimerRef::pair(counted(&drops));
            let (timer, handle) = (timer.erase(), handle.outcome());
            let other = std::thread::spawn(move || drop(timer));
            drop(handle);
            other.join().unwrap();
        }
        assert_eq!(drops.drops(), rounds);
    }
}
