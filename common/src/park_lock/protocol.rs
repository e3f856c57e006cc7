// The park lock's protocol: `Mutex`, `MutexGuard` and `Condvar`, written once and compiled
// by `include!` into each module that supplies the names it uses (see `mod.rs`):
// `AtomicU8`, `AtomicU32` and `Ordering`; `parking` with `park`, `unpark_one` and
// `unpark_all`; `spin_hint` and `yield_hint`; `SPIN_ROUNDS` and `YIELD_ROUNDS`. The crate's
// locks (`park_lock` itself) supply std's atomics and the parking lot (or, under Miri, the
// emulated lot); the loom model supplies loom's, so that it checks these very lines. (An
// included file may hold no inner attributes or `//!` docs: the design notes are in `mod.rs`.)

use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

/// Free.
const UNLOCKED: u8 = 0;
/// Held; nobody parked.
const LOCKED: u8 = 1;
/// Held; a thread may be parked on the mutex (its unlock must unpark one).
const CONTENDED: u8 = 2;

/// A mutual-exclusion lock that spins briefly, yields only while it waits alone, then parks.
/// A panic while it is held does not poison it.
///
/// Layout: `repr(C)` keeps the lock word in front of the value, on the cache line of the
/// value's first fields. Left to reorder, rustc put the lock word after the value; for the
/// scheduled executor's queue state (the ring, then the 80-byte timer wheel) that was another
/// line, so every `execute` touched two lines the worker also writes (hand-off K=256:
/// 72.0 -> 51.4 ns per task with `repr(C)`, the plain executor's 46 unchanged).
#[repr(C)]
pub(crate) struct Mutex<T> {
    state: AtomicU8,
    /// Threads past their spin in `lock`, yielding or parked (a hint for the yield policy;
    /// wraps harmlessly past 255 waiters).
    waiters: AtomicU8,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands the value to one thread at a time (the guard), so sharing the mutex
// moves access to `T` between threads and never shares it: `T: Send` suffices, as for std's
// mutex.
#[allow(unsafe_code)]
unsafe impl<T: Send> Sync for Mutex<T> {}

/// Holds a [`Mutex`] locked; unlocks it when dropped (on any thread: the lock has no owner
/// thread).
#[must_use = "the lock is released at once if the guard is not kept"]
pub(crate) struct MutexGuard<'a, T> {
    mutex: &'a Mutex<T>,
    /// Sent and shared like the `&mut T` it stands for.
    _value: PhantomData<&'a mut T>,
}

impl<T> Mutex<T> {
    /// Locks, waiting as long as it takes.
    #[inline]
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        if !self.try_take(LOCKED) {
            self.lock_contended();
        }
        self.guard()
    }

    /// Locks if the mutex is free now.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.try_take(LOCKED).then(|| self.guard())
    }

    fn guard(&self) -> MutexGuard<'_, T> {
        MutexGuard {
            mutex: self,
            _value: PhantomData,
        }
    }

    #[cold]
    fn lock_contended(&self) {
        // 1. Spin while a running holder may let go in a moment.
        let mut round = 0;
        loop {
            match self.state.load(Ordering::Relaxed) {
                UNLOCKED => {
                    if self.try_take(LOCKED) {
                        return;
                    }
                }
                LOCKED if round < SPIN_ROUNDS => {
                    for _ in 0..1u32 << round {
                        spin_hint();
                    }
                    round += 1;
                }
                _ => break,
            }
        }
        // 2. Alone (no other thread past its spin): the holder is most likely preempted beside
        // this thread, and a yield hands it the core. Not alone: park at once, since yields by
        // many waiters hand the cores to whatever else is busy (see `mod.rs`).
        let alone = self.waiters.fetch_add(1, Ordering::Relaxed) == 0;
        let mut yields = 0;
        while alone && yields < YIELD_ROUNDS && self.waiters.load(Ordering::Relaxed) == 1 {
            yield_hint();
            yields += 1;
            if self.state.load(Ordering::Relaxed) == UNLOCKED && self.try_take(LOCKED) {
                self.waiters.fetch_sub(1, Ordering::Relaxed);
                return;
            }
        }
        // 3. Park until a swap finds it free. From here on this thread takes it as CONTENDED:
        // others may still be parked, and its unlock must look for them.
        while self.state.swap(CONTENDED, Ordering::Acquire) != UNLOCKED {
            // Sleeps only while the state is still CONTENDED (checked by the parking lot
            // against `unpark_one`): an unlock between the swap and here is not missed.
            parking::park(
                self.key(),
                || self.state.load(Ordering::Relaxed) == CONTENDED,
                None,
            );
        }
        self.waiters.fetch_sub(1, Ordering::Relaxed);
    }

    /// `UNLOCKED -> as_state`; whether it took the lock.
    #[inline]
    fn try_take(&self, as_state: u8) -> bool {
        self.state
            .compare_exchange(UNLOCKED, as_state, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Releases the lock; wakes one parked thread if there may be one.
    #[inline]
    fn unlock(&self) {
        if self.state.swap(UNLOCKED, Ordering::Release) == CONTENDED {
            parking::unpark_one(self.key());
        }
    }

    /// The mutex's parking key: the address of its state, which no other primitive parks on.
    fn key(&self) -> usize {
        std::ptr::from_ref(&self.state) as usize
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mutex").finish_non_exhaustive()
    }
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock (the acquiring swap or compare-and-swap synchronised
        // with the previous holder's releasing unlock), so no other thread touches the value
        // until the guard is dropped.
        #[allow(unsafe_code)]
        unsafe {
            &*self.mutex.value.get()
        }
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference through the guard.
        #[allow(unsafe_code)]
        unsafe {
            &mut *self.mutex.value.get()
        }
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.mutex.unlock();
    }
}

/// A condition variable used with [`Mutex`]. A notify with nobody waiting looks into the
/// parking lot and makes no system call.
#[derive(Default)]
pub(crate) struct Condvar {
    /// Bumped by every notify.
    seq: AtomicU32,
}

impl Condvar {
    /// Unlocks, sleeps until notified (or spuriously), locks again.
    pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.wait_until(guard, None).0
    }

    /// As [`wait`](Self::wait), for at most `timeout`; the flag is `true` when the wait timed
    /// out.
    pub(crate) fn wait_timeout<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Duration,
    ) -> (MutexGuard<'a, T>, bool) {
        self.wait_until(guard, Instant::now().checked_add(timeout))
    }

    fn wait_until<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        deadline: Option<Instant>,
    ) -> (MutexGuard<'a, T>, bool) {
        let mutex = guard.mutex;
        // Read before unlocking: a notify after this (made under the lock, or after the
        // notifier saw the condition change) bumps it, and the park below then does not sleep.
        let seq = self.seq.load(Ordering::Relaxed);
        drop(guard);
        let timed_out = parking::park(
            self.key(),
            || self.seq.load(Ordering::Relaxed) == seq,
            deadline,
        );
        (mutex.lock(), timed_out)
    }

    /// Wakes one waiting thread, if any.
    pub(crate) fn notify_one(&self) {
        self.seq.fetch_add(1, Ordering::Relaxed);
        parking::unpark_one(self.key());
    }

    /// Wakes every waiting thread.
    pub(crate) fn notify_all(&self) {
        self.seq.fetch_add(1, Ordering::Relaxed);
        parking::unpark_all(self.key());
    }

    /// The condition variable's parking key: the address of its sequence number.
    fn key(&self) -> usize {
        std::ptr::from_ref(&self.seq) as usize
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condvar").finish_non_exhaustive()
    }
}
