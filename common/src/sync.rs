//! The synchronisation primitives of the concurrency core, switched to loom's under `cfg(loom)`.
//!
//! Every `Mutex`, `Condvar`, `Arc` and atomic that takes part in a protocol of this crate comes
//! from here, so that the loom models (`cargo xtask test` runs them with `--cfg loom`) explore
//! the same code that ships. The wrappers give both back-ends one small API: `lock`,
//! `try_lock`, and condition variables that take and return the guard by value.

#[cfg(not(loom))]
mod imp {
    pub(crate) use std::sync::atomic::{
        fence, AtomicBool, AtomicPtr, AtomicU16, AtomicU8, AtomicUsize, Ordering,
    };
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
    pub(crate) use loom::sync::atomic::{
        fence, AtomicBool, AtomicPtr, AtomicU16, AtomicU8, AtomicUsize, Ordering,
    };
    pub(crate) use loom::sync::Arc;

    /// Under loom a wait for another thread yields to loom's scheduler at once.
    #[inline]
    pub(crate) fn wait_step(_step: &mut u32) {
        loom::thread::yield_now();
    }
    use std::time::Duration;

    /// loom's mutex behind the same API as the std one.
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

/// The locks themselves, outside loom: the park lock's ([`crate::park_lock`]: a futex-style
/// mutex that spins briefly, yields only while it waits alone, then parks; its docs say why
/// neither parking_lot's nor std's). Every lock of the crate comes from here — the protocols'
/// through the facade above (loom's under `cfg(loom)`), the rest (result slots, task cells,
/// pool registries) directly — with one small API: `lock`, `try_lock`, and condition
/// variables that take and return the guard by value. A panic while a lock is held does not
/// poison it. Under Miri the park lock parks on an emulated parking lot (see its docs), so
/// Miri checks the lock code that ships.
pub(crate) mod plain {
    #[cfg_attr(loom, allow(unused_imports))]
    pub(crate) use crate::park_lock::{Condvar, Mutex, MutexGuard};
}
