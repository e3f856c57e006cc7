//! `RawTask`: a type-erased `FnOnce()` stored inline in a 32-byte ring slot when it fits.
//!
//! # Layout
//!
//! A `RawTask` is one pointer to a static [`TaskVTable`] plus [`INLINE_WORDS`] words of
//! storage: 32 bytes on 64-bit targets. A closure whose size fits the storage and whose
//! alignment is at most a word's (an `Arc` and two `usize`, say) is moved into the storage
//! itself, so queueing it allocates nothing. A larger closure is boxed and the storage holds
//! the box's pointer. Either way the vtable knows which, and how to run or drop the value.
//!
//! # Safety argument
//!
//! The invariant, established by [`RawTask::new`] and relied on by every other function: the
//! storage holds exactly one live value of the type `vtable` was made for (the closure itself
//! for an inline vtable, a `Box` of it for a boxed one). Each consuming path — `run`,
//! `downcast`, `Drop` — moves or drops that value exactly once and then never touches the
//! storage again (`ManuallyDrop` disarms `Drop` on the paths that consume).

use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop, MaybeUninit};
use std::ptr;

/// Words of inline storage in a task slot.
pub(crate) const INLINE_WORDS: usize = 3;

type Storage = MaybeUninit<[usize; INLINE_WORDS]>;

/// How to run, drop and identify the value in a task's storage.
struct TaskVTable {
    /// Moves the closure out of the storage and calls it.
    run: unsafe fn(*mut Storage) -> JobOutcome,
    /// Drops the closure in the storage without calling it.
    drop: unsafe fn(*mut Storage),
    /// Moves the closure out of the storage into `out` (a `*mut MaybeUninit<F>`).
    take: unsafe fn(*mut Storage, *mut ()),
    /// The `TypeId` of the closure type.
    type_id: fn() -> TypeId,
    /// Whether the closure sits inline (no box).
    inline: bool,
}

/// How a job the worker ran ended, for the executor's statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobOutcome {
    /// It ran to its end.
    Completed,
    /// It panicked: a submitted job caught its own panic into its handle and says so; an
    /// `execute`d closure's panic unwinds to the worker's panic boundary, which reports it.
    Panicked,
    /// It was cancelled before it started (a submitted closure or a spawned future whose
    /// handle's `cancel` won): a no-op, counted neither as completed nor as pending.
    Cancelled,
}

/// Something a task slot can hold and run once: every `FnOnce() + Send + 'static`, plus the
/// executor's own job types (a submitted closure with its result slot), so that a rejected job
/// can be handed back with its original type.
pub(crate) trait Job: Send + 'static {
    /// Runs the job, consuming it. A job that catches its own panic returns
    /// [`JobOutcome::Panicked`]; one that panics unwinds to the caller.
    fn run(self) -> JobOutcome;
}

impl<F: FnOnce() + Send + 'static> Job for F {
    #[inline]
    fn run(self) -> JobOutcome {
        self();
        JobOutcome::Completed
    }
}

/// Whether a closure of type `F` fits in a task slot's storage.
pub(crate) const fn fits_inline<F>() -> bool {
    mem::size_of::<F>() <= mem::size_of::<Storage>()
        && mem::align_of::<F>() <= mem::align_of::<Storage>()
}

/// A type-erased, sendable [`Job`], inline when it fits.
pub(crate) struct RawTask {
    vtable: &'static TaskVTable,
    storage: Storage,
    /// Not `Sync`: nothing may look at a task from two threads.
    _not_sync: PhantomData<*mut ()>,
}

// SAFETY: `RawTask::new` only accepts `F: Send`, so the value in the storage may move to
// another thread; the vtable is a `'static` table of plain functions.
unsafe impl Send for RawTask {}

impl RawTask {
    /// Erases `f`, storing it inline when [`fits_inline::<F>()`](fits_inline).
    #[inline]
    pub(crate) fn new<F: Job>(f: F) -> Self {
        let mut storage = Storage::uninit();
        if fits_inline::<F>() {
            debug_assert!(mem::size_of::<F>() <= mem::size_of::<Storage>());
            debug_assert!(mem::align_of::<F>() <= mem::align_of::<Storage>());
            // SAFETY: `F` fits the storage in size and alignment (checked just above), and the
            // storage is fresh, so writing one `F` into it overwrites nothing live.
            unsafe { ptr::write(storage.as_mut_ptr().cast::<F>(), f) };
            Self {
                vtable: &InlineVTable::<F>::VTABLE,
                storage,
                _not_sync: PhantomData,
            }
        } else {
            let boxed: *mut F = Box::into_raw(Box::new(f));
            // SAFETY: a pointer fits in one word of the storage and has a word's alignment.
            unsafe { ptr::write(storage.as_mut_ptr().cast::<*mut F>(), boxed) };
            Self {
                vtable: &BoxedVTable::<F>::VTABLE,
                storage,
                _not_sync: PhantomData,
            }
        }
    }

    /// Runs the closure on the current thread, consuming the task. A panic in the closure
    /// propagates to the caller; the closure's captures are dropped as it unwinds.
    #[inline]
    pub(crate) fn run(self) -> JobOutcome {
        let mut task = ManuallyDrop::new(self);
        // SAFETY: by the module invariant the storage holds the value this vtable was made for;
        // `run` consumes it and `ManuallyDrop` keeps `Drop` from touching it again.
        unsafe { (task.vtable.run)(&mut task.storage) }
    }

    /// Whether the closure is stored inline (no heap allocation).
    pub(crate) fn is_inline(&self) -> bool {
        self.vtable.inline
    }

    /// Gives back the closure if it is of type `F`, else the task unchanged.
    pub(crate) fn downcast<F: Job>(self) -> Result<F, RawTask> {
        if (self.vtable.type_id)() != TypeId::of::<F>() {
            return Err(self);
        }
        let mut task = ManuallyDrop::new(self);
        let mut out = MaybeUninit::<F>::uninit();
        // SAFETY: the storage holds a value made from an `F` (the type ids match), `take`
        // moves that `F` into `out` exactly once, and `ManuallyDrop` keeps `Drop` away.
        unsafe {
            (task.vtable.take)(&mut task.storage, out.as_mut_ptr().cast::<()>());
            Ok(out.assume_init())
        }
    }
}

impl Drop for RawTask {
    fn drop(&mut self) {
        // SAFETY: by the module invariant the storage holds a live value of the vtable's type;
        // this is the only consuming path left, as `run`/`downcast` disarm `Drop`.
        unsafe { (self.vtable.drop)(&mut self.storage) }
    }
}

impl fmt::Debug for RawTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawTask")
            .field("inline", &self.vtable.inline)
            .finish_non_exhaustive()
    }
}

/// The vtable of a closure `F` stored inline.
struct InlineVTable<F>(PhantomData<F>);

impl<F: Job> InlineVTable<F> {
    const VTABLE: TaskVTable = TaskVTable {
        run: Self::run,
        drop: Self::drop,
        take: Self::take,
        type_id: TypeId::of::<F>,
        inline: true,
    };

    /// # Safety
    /// `storage` holds a live `F`, which this call consumes.
    unsafe fn run(storage: *mut Storage) -> JobOutcome {
        // SAFETY: the caller guarantees a live `F` at `storage`; reading moves it out.
        let f = unsafe { ptr::read(storage.cast::<F>()) };
        f.run()
    }

    /// # Safety
    /// `storage` holds a live `F`, which this call drops.
    unsafe fn drop(storage: *mut Storage) {
        // SAFETY: the caller guarantees a live `F` at `storage`, dropped here exactly once.
        unsafe { ptr::drop_in_place(storage.cast::<F>()) }
    }

    /// # Safety
    /// `storage` holds a live `F`, which this call moves to `out` (valid for a write of `F`).
    unsafe fn take(storage: *mut Storage, out: *mut ()) {
        // SAFETY: the caller guarantees a live `F` at `storage` and room for one at `out`.
        unsafe { ptr::write(out.cast::<F>(), ptr::read(storage.cast::<F>())) }
    }
}

/// The vtable of a closure `F` too large for the slot, stored as a `Box<F>`.
struct BoxedVTable<F>(PhantomData<F>);

impl<F: Job> BoxedVTable<F> {
    const VTABLE: TaskVTable = TaskVTable {
        run: Self::run,
        drop: Self::drop,
        take: Self::take,
        type_id: TypeId::of::<F>,
        inline: false,
    };

    /// # Safety
    /// `storage` holds a live pointer from `Box::<F>::into_raw`, which this call consumes.
    unsafe fn run(storage: *mut Storage) -> JobOutcome {
        // SAFETY: the caller guarantees the storage holds a pointer from `Box::into_raw`,
        // owned by this task; rebuilding the box takes that ownership back once.
        let f = unsafe { Box::from_raw(ptr::read(storage.cast::<*mut F>())) };
        (*f).run()
    }

    /// # Safety
    /// As for `run`; this call drops the box.
    unsafe fn drop(storage: *mut Storage) {
        // SAFETY: as in `run`: the pointer came from `Box::into_raw` and is owned here.
        drop(unsafe { Box::from_raw(ptr::read(storage.cast::<*mut F>())) });
    }

    /// # Safety
    /// As for `run`; `out` is valid for a write of `F`.
    unsafe fn take(storage: *mut Storage, out: *mut ()) {
        // SAFETY: as in `run`; `out` has room for one `F`.
        unsafe {
            let boxed = Box::from_raw(ptr::read(storage.cast::<*mut F>()));
            ptr::write(out.cast::<F>(), *boxed);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    struct DropCounter(Arc<AtomicUsize>);
    impl Drop for DropCounter {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_task_slot_is_four_words() {
        assert_eq!(mem::size_of::<RawTask>(), 4 * mem::size_of::<usize>());
    }

    #[test]
    fn an_arc_and_two_words_fit_inline() {
        let arc = Arc::new(AtomicUsize::new(0));
        let (a, b) = (1usize, 2usize);
        let task = RawTask::new(move || {
            arc.fetch_add(a + b, Ordering::SeqCst);
        });
        assert!(task.is_inline());
        task.run();
    }

    #[test]
    fn a_large_closure_is_boxed_and_still_runs_and_drops_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let ran = Arc::new(AtomicUsize::new(0));
        let big = [7u64; 8];
        let counter = DropCounter(Arc::clone(&drops));
        let ran2 = Arc::clone(&ran);
        let task = RawTask::new(move || {
            let _keep = &counter;
            ran2.fetch_add(big.iter().sum::<u64>() as usize, Ordering::SeqCst);
        });
        assert!(!task.is_inline());
        task.run();
        assert_eq!(ran.load(Ordering::SeqCst), 56);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn an_over_aligned_closure_is_boxed_even_when_it_fits_the_storage_by_size() {
        /// 16 bytes (fits the 24-byte storage), aligned to 16 (more than the storage's word).
        #[repr(align(16))]
        struct Aligned16([u8; 16]);
        /// Zero bytes, aligned to 64.
        #[repr(align(64))]
        struct Aligned64;
        assert!(mem::size_of::<Aligned16>() <= mem::size_of::<Storage>());
        assert!(mem::align_of::<Aligned16>() > mem::align_of::<Storage>());

        let value = Aligned16([3; 16]);
        let task = RawTask::new(move || {
            assert_eq!(ptr::from_ref(&value) as usize % 16, 0);
            assert_eq!(value.0, [3; 16]);
        });
        assert!(
            !task.is_inline(),
            "an inline Aligned16 would sit misaligned"
        );
        task.run();

        let marker = Aligned64;
        let task = RawTask::new(move || {
            let _keep = &marker;
        });
        assert!(
            !task.is_inline(),
            "an inline Aligned64 would sit misaligned"
        );
        drop(task);
    }

    #[test]
    fn dropping_an_unrun_task_drops_its_captures_once() {
        for big in [false, true] {
            let drops = Arc::new(AtomicUsize::new(0));
            let counter = DropCounter(Arc::clone(&drops));
            let pad = [0u64; 8];
            let task = if big {
                RawTask::new(move || {
                    let _ = (&counter, pad);
                })
            } else {
                RawTask::new(move || {
                    let _ = &counter;
                })
            };
            assert_eq!(task.is_inline(), !big);
            drop(task);
            assert_eq!(drops.load(Ordering::SeqCst), 1);
        }
    }

    #[test]
    fn a_panicking_task_drops_its_captures_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let counter = DropCounter(Arc::clone(&drops));
        let task = RawTask::new(move || {
            let _keep = &counter;
            panic!("boom");
        });
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task.run()));
        assert!(result.is_err());
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn downcast_gives_the_closure_back_only_for_its_own_type() {
        fn make(n: usize) -> impl FnOnce() + Send + 'static {
            move || assert_eq!(n, 5)
        }
        let f = make(5);
        let task = RawTask::new(f);
        let task = match task.downcast::<fn()>() {
            Ok(_) => panic!("wrong type accepted"),
            Err(task) => task,
        };
        fn same_type<F: Job>(task: RawTask, _witness: &F) -> F {
            task.downcast::<F>().ok().unwrap()
        }
        let witness = make(0);
        let f = same_type(task, &witness);
        f();
        let big = [1u64; 8];
        let g = move || assert_eq!(big.len(), 8);
        let task = RawTask::new(g);
        let g = same_type(task, &g);
        g();
    }
}
