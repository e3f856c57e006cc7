//! The synchronisation primitives of the concurrency core, switched to loom's under `cfg(loom)`.
//!
//! Every `Mutex`, `Condvar`, `Arc` and atomic that takes part in a protocol of this crate comes
//! from here, so that the loom models (`cargo xtask test` runs them with `--cfg loom`) explore
//! the same code that ships. The wrappers give both back-ends one small API: `lock`,
//! `try_lock`, and condition variables that take and return the guard by value.

#[cfg(not(loom))]
mod imp {
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
    pub(crate) use std::sync::Arc;
    use std::time::Duration;

    /// A mutual-exclusion lock (parking_lot's: small, fair enough, no poisoning).
    #[derive(Default)]
    pub(crate) struct Mutex<T>(parking_lot::Mutex<T>);

    /// The guard of [`Mutex`].
    pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(parking_lot::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock()
        }

        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock()
        }
    }

    /// A condition variable used with [`Mutex`].
    #[derive(Default)]
    pub(crate) struct Condvar(parking_lot::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Self(parking_lot::Condvar::new())
        }

        pub(crate) fn wait<'a, T>(&self, mut guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(&mut guard);
            guard
        }

        /// Waits at most `timeout`; the flag is `true` when the wait timed out.
        pub(crate) fn wait_timeout<'a, T>(
            &self,
            mut guard: MutexGuard<'a, T>,
            timeout: Duration,
        ) -> (MutexGuard<'a, T>, bool) {
            let timed_out = self.0.wait_for(&mut guard, timeout).timed_out();
            (guard, timed_out)
        }

        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }

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
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
    pub(crate) use loom::sync::Arc;
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

/// Spins (with the CPU's spin-loop hint) until `ready()` or until `budget` has passed; returns
/// whether `ready()` was seen. Checks the clock every 64 spins. Under loom and Miri it returns at
/// once (`SPIN_ENABLED` is off): they check the blocking paths instead.
#[inline]
pub(crate) fn spin_until(mut ready: impl FnMut() -> bool, budget: std::time::Duration) -> bool {
    if !SPIN_ENABLED {
        return ready();
    }
    let start = std::time::Instant::now();
    let mut spins: u32 = 0;
    loop {
        if ready() {
            return true;
        }
        std::hint::spin_loop();
        spins = spins.wrapping_add(1);
        if spins % 64 == 0 && start.elapsed() >= budget {
            return false;
        }
    }
}

/// A spin-before-park bound that adapts to whether spinning has been finding work, for waiters
/// that would otherwise park at once (a blocking queue's takers).
///
/// Parking and being woken costs a futex wake plus a scheduling hop (tens of microseconds on a
/// busy VM); a waiter that spins briefly first catches an item that arrives within the spin
/// without either side making a system call. A spin that cannot win — the producer is not
/// running, or is waiting for the very core the spinner holds, or nothing comes for a long
/// time — only burns that core, so the bound adapts:
///
/// - the waiter spins (with [`spin_until`], never yielding: under CFS a yield hands the core to
///   any runnable thread, a CPU hog included, for a whole time slice) for at most the current
///   budget, then parks;
/// - a spin that finds work doubles the budget, up to [`AdaptiveSpin::MAX`];
/// - a spin that runs out halves it; below [`AdaptiveSpin::MIN`] spinning stops;
/// - stopped, the waiters park at once, except that every so many waits one *probe* spins for
///   `MAX`: a probe that finds work starts spinning again (at `MAX`); one that fails doubles
///   the number of waits until the next probe (up to [`AdaptiveSpin::MAX_PROBE_INTERVAL`]).
///   A probe is as long as `MAX` because the work it waits for often comes from a thread that
///   is itself parked (both ends of a ping-pong stop spinning together) and must first be
///   woken, which takes longer than any short spin. A machine with more runnable threads than
///   cores thus costs one `MAX` per that many waits, and a workload that starts paying again
///   (a ping-pong once the machine is quiet) is seen to.
///
/// On a machine with one CPU a spin can never win (the producer needs the spinner's core), so
/// nothing spins there; under loom and Miri ([`SPIN_ENABLED`] off) nothing spins either, so the
/// models check the blocking path. The state is a hint shared by the waiters (`Relaxed`): a
/// lost update only changes how long one waiter spins.
pub(crate) struct AdaptiveSpin {
    /// The current bound in nanoseconds: 0 (stopped: probing) or within [`Self::MIN`,
    /// `Self::MAX`].
    budget_ns: AtomicUsize,
    /// While stopped: waits to park at once before the next probe.
    skip: AtomicUsize,
    /// While stopped: the waits between probes, doubled by each failed probe.
    probe_interval: AtomicUsize,
}

impl AdaptiveSpin {
    /// The shortest bound worth spinning for: a halving below it stops spinning.
    pub(crate) const MIN: std::time::Duration = std::time::Duration::from_micros(1);
    /// The longest bound, the initial one and a probe's length: a few times the latency of
    /// waking a parked thread on a busy VM.
    pub(crate) const MAX: std::time::Duration = std::time::Duration::from_micros(50);
    /// The most waits between two probes while spinning is stopped.
    pub(crate) const MAX_PROBE_INTERVAL: usize = 1024;
    /// The waits before the first probe once spinning stops.
    const FIRST_PROBE_INTERVAL: usize = 4;

    /// A bound starting at [`Self::MAX`].
    pub(crate) fn new() -> Self {
        Self {
            budget_ns: AtomicUsize::new(Self::MAX.as_nanos() as usize),
            skip: AtomicUsize::new(0),
            probe_interval: AtomicUsize::new(Self::FIRST_PROBE_INTERVAL),
        }
    }

    /// Spins until `ready()` or until the budget, or `limit` if shorter, has passed; returns
    /// whether `ready()` was seen. A spin that sees `ready()` lengthens the budget; one that
    /// uses up the whole budget (not cut short by `limit`) shortens it.
    #[inline]
    pub(crate) fn spin(&self, mut ready: impl FnMut() -> bool, limit: std::time::Duration) -> bool {
        if !SPIN_ENABLED || limit.is_zero() || single_cpu() {
            return ready();
        }
        let min_ns = Self::MIN.as_nanos() as usize;
        let mut budget_ns = self.budget_ns.load(Ordering::Relaxed);
        let probing = budget_ns == 0;
        if probing {
            let skip = self.skip.load(Ordering::Relaxed);
            if skip > 0 {
                self.skip.store(skip - 1, Ordering::Relaxed);
                return ready();
            }
            budget_ns = Self::MAX.as_nanos() as usize;
        }
        let budget = std::time::Duration::from_nanos(budget_ns as u64);
        let won = spin_until(&mut ready, budget.min(limit));
        if won {
            if probing {
                self.probe_interval
                    .store(Self::FIRST_PROBE_INTERVAL, Ordering::Relaxed);
            }
            self.budget_ns.store(
                (budget_ns * 2).min(Self::MAX.as_nanos() as usize),
                Ordering::Relaxed,
            );
        } else if limit >= budget {
            if probing || budget_ns / 2 < min_ns {
                let interval = if probing {
                    let doubled = self.probe_interval.load(Ordering::Relaxed) * 2;
                    let interval = doubled.min(Self::MAX_PROBE_INTERVAL);
                    self.probe_interval.store(interval, Ordering::Relaxed);
                    interval
                } else {
                    self.probe_interval.load(Ordering::Relaxed)
                };
                self.skip.store(interval, Ordering::Relaxed);
                self.budget_ns.store(0, Ordering::Relaxed);
            } else {
                self.budget_ns.store(budget_ns / 2, Ordering::Relaxed);
            }
        }
        won
    }

    /// The current bound (zero while stopped).
    #[cfg(all(test, not(loom), not(miri)))]
    pub(crate) fn budget(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.budget_ns.load(Ordering::Relaxed) as u64)
    }
}

impl Default for AdaptiveSpin {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether this process may run on one CPU only (read once, then cached).
fn single_cpu() -> bool {
    static SINGLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SINGLE.get_or_init(|| std::thread::available_parallelism().map_or(true, |n| n.get() == 1))
}

#[cfg(all(test, not(loom), not(miri)))]
mod adaptive_spin_tests {
    use super::AdaptiveSpin;
    use std::time::Duration;

    /// Runs one spin whose `ready` is `outcome`; returns how often `ready` was asked.
    fn spin_once(spin: &AdaptiveSpin, outcome: bool) -> usize {
        let mut asked = 0;
        let won = spin.spin(
            || {
                asked += 1;
                outcome
            },
            Duration::MAX,
        );
        assert_eq!(won, outcome);
        asked
    }

    #[test]
    fn failed_spins_halve_the_budget_until_spinning_stops_and_a_won_probe_restarts_it() {
        if super::single_cpu() {
            return; // nothing spins on one CPU: nothing to adapt
        }
        let spin = AdaptiveSpin::new();
        assert_eq!(spin.budget(), AdaptiveSpin::MAX);
        spin_once(&spin, false);
        assert_eq!(spin.budget(), AdaptiveSpin::MAX / 2);
        // A spin cut short by the caller's limit says nothing about the budget.
        assert!(!spin.spin(|| false, Duration::ZERO));
        assert_eq!(spin.budget(), AdaptiveSpin::MAX / 2);
        while spin.budget() > Duration::ZERO {
            spin_once(&spin, false);
        }
        // Stopped: the next waits park at once (`ready` asked once, no spinning)...
        for _ in 0..AdaptiveSpin::FIRST_PROBE_INTERVAL {
            assert_eq!(spin_once(&spin, false), 1);
        }
        // ...then a probe spins (and fails: twice as many waits until the next one)...
        assert!(spin_once(&spin, false) > 1);
        for _ in 0..2 * AdaptiveSpin::FIRST_PROBE_INTERVAL {
            assert_eq!(spin_once(&spin, false), 1);
        }
        // ...and a probe that wins restarts spinning, at the longest bound.
        spin_once(&spin, true);
        assert_eq!(spin.budget(), AdaptiveSpin::MAX);
        spin_once(&spin, false);
        assert_eq!(spin.budget(), AdaptiveSpin::MAX / 2);
        spin_once(&spin, true);
        assert_eq!(spin.budget(), AdaptiveSpin::MAX);
    }
}
