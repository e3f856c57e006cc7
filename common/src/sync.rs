//! The synchronisation primitives of the concurrency core, switched to loom's under `cfg(loom)`.
//!
//! Every `Mutex`, `Condvar`, `Arc` and atomic that takes part in a protocol of this crate comes
//! from here, so that the loom models (`cargo xtask test` runs them with `--cfg loom`) explore
//! the same code that ships. The wrappers give both back-ends one small API: `lock`,
//! `try_lock`, and condition variables that take and return the guard by value.

#[cfg(not(loom))]
mod imp {
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};
    pub(crate) use std::sync::Arc;

    /// One step of a wait for another thread that is between two instructions (a producer
    /// that reserved a slot and is writing it): spin a little, then give the core away.
    #[inline]
    pub(crate) fn wait_step(step: &mut u32) {
        if *step < 6 {
            for _ in 0..1u32 << *step {
                std::hint::spin_loop();
            }
            *step += 1;
        } else {
            std::thread::yield_now();
        }
    }

    pub(crate) use super::plain::{Condvar, Mutex, MutexGuard};

    /// Whether the bounded spins before parking are compiled in: not under Miri, where
    /// spinning on the clock is slow to interpret and checks nothing the blocking paths do not
    /// (loom's facade below turns them off too).
    pub(crate) const SPIN_ENABLED: bool = !cfg!(miri);

    /// `std::cell::UnsafeCell` behind loom's closure-based API, so that loom can check every
    /// access of the cells it models.
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }

        /// Immutable access through a raw pointer.
        #[inline]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Mutable access through a raw pointer.
        #[inline]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }

        /// Exclusive access, checked by the borrow checker.
        pub(crate) fn get_mut(&mut self) -> &mut T {
            self.0.get_mut()
        }
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};
    pub(crate) use loom::sync::Arc;

    /// Under loom a wait for another thread yields to loom's scheduler at once.
    #[inline]
    pub(crate) fn wait_step(_step: &mut u32) {
        loom::thread::yield_now();
    }
    use std::time::Duration;

    /// loom's mutex behind the same API as the parking_lot one.
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().unwrap()
        }

        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock().ok()
        }
    }

    impl<T: Default> Default for Mutex<T> {
        fn default() -> Self {
            Self::new(T::default())
        }
    }

    /// loom's condition variable. loom has no notion of time, so a timed wait is modelled as
    /// a wait that may also return spuriously ("timed out") at any point loom chooses not to
    /// notify: the models never rely on a timeout firing.
    #[derive(Default)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Self(loom::sync::Condvar::new())
        }

        pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(guard).unwrap()
        }

        pub(crate) fn wait_timeout<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
            _timeout: Duration,
        ) -> (MutexGuard<'a, T>, bool) {
            (self.0.wait(guard).unwrap(), false)
        }

        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }

    pub(crate) const SPIN_ENABLED: bool = false;

    /// loom's `UnsafeCell`, which checks that no access overlaps a mutable one.
    pub(crate) struct UnsafeCell<T>(loom::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::cell::UnsafeCell::new(value))
        }

        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            self.0.with(f)
        }

        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            self.0.with_mut(f)
        }

        pub(crate) fn get_mut(&mut self) -> &mut T {
            // SAFETY: `&mut self` proves no other access exists.
            self.0.with_mut(|ptr| unsafe { &mut *ptr })
        }
    }
}

pub(crate) use imp::*;

/// Pads and aligns a value to its own cache line(s), so that fields written by different
/// threads never share a line: crossbeam's, tuned per architecture (128 bytes on x86_64,
/// where adjacent-line prefetchers pair lines).
pub(crate) use crossbeam_utils::CachePadded;

/// The locks themselves, outside loom: parking_lot's (small, no poisoning), or std's under
/// Miri. Every lock of the crate comes from here — the protocols' through the facade above
/// (loom's under `cfg(loom)`), the rest (result slots, task cells, pool registries) directly —
/// with one small API: `lock`, `try_lock`, and condition variables that take and return the
/// guard by value.
///
/// Why std's under Miri: parking_lot_core 0.9.12's `WordLock::unlock_slow` forms a reference
/// to a queued waiter's futex word after that waiter may have been woken and gone (its thread
/// exited), which Miri reports as a dangling reference; on real hardware the futex wake on a
/// stale address is harmless. Miri is there to check this crate's `unsafe`, not that known
/// pattern in a dependency, so under Miri the same API runs on std's locks, whose futex code
/// Miri knows.
pub(crate) mod plain {
    use std::time::Duration;

    #[cfg(not(miri))]
    type RawMutex<T> = parking_lot::Mutex<T>;
    #[cfg(miri)]
    type RawMutex<T> = std::sync::Mutex<T>;

    /// The guard of [`Mutex`].
    #[cfg(not(miri))]
    pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;
    /// The guard of [`Mutex`].
    #[cfg(miri)]
    pub(crate) type MutexGuard<'a, T> = std::sync::MutexGuard<'a, T>;

    /// A mutual-exclusion lock. A panic while it is held does not poison it.
    #[derive(Default)]
    pub(crate) struct Mutex<T>(RawMutex<T>);

    impl<T> Mutex<T> {
        pub(crate) const fn new(value: T) -> Self {
            Self(RawMutex::new(value))
        }

        #[cfg(not(miri))]
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock()
        }

        #[cfg(miri)]
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }

        // Under loom every caller of these two uses loom's types instead.
        #[cfg_attr(loom, allow(dead_code))]
        #[cfg(not(miri))]
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock()
        }

        #[cfg(miri)]
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            match self.0.try_lock() {
                Ok(guard) => Some(guard),
                Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            }
        }
    }

    /// A condition variable used with [`Mutex`].
    #[derive(Default)]
    pub(crate) struct Condvar(
        #[cfg(not(miri))] parking_lot::Condvar,
        #[cfg(miri)] std::sync::Condvar,
    );

    impl Condvar {
        pub(crate) const fn new() -> Self {
            #[cfg(not(miri))]
            return Self(parking_lot::Condvar::new());
            #[cfg(miri)]
            return Self(std::sync::Condvar::new());
        }

        #[cfg(not(miri))]
        pub(crate) fn wait<'a, T>(&self, mut guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(&mut guard);
            guard
        }

        #[cfg(miri)]
        pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0
                .wait(guard)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }

        /// Waits at most `timeout`; the flag is `true` when the wait timed out.
        #[cfg(not(miri))]
        pub(crate) fn wait_timeout<'a, T>(
            &self,
            mut guard: MutexGuard<'a, T>,
            timeout: Duration,
        ) -> (MutexGuard<'a, T>, bool) {
            let timed_out = self.0.wait_for(&mut guard, timeout).timed_out();
            (guard, timed_out)
        }

        /// Waits at most `timeout`; the flag is `true` when the wait timed out.
        #[cfg(miri)]
        pub(crate) fn wait_timeout<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
            timeout: Duration,
        ) -> (MutexGuard<'a, T>, bool) {
            let (guard, result) = self
                .0
                .wait_timeout(guard, timeout)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (guard, result.timed_out())
        }

        #[cfg_attr(loom, allow(dead_code))]
        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}
