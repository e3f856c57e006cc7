//! `Mutex` and `Condvar`: the crate's locks (outside loom's models). A futex-style mutex that
//! spins a little, yields its core only while it waits alone, and then parks; and a
//! sequence-number condition variable; both park through `parking_lot_core` (the parking lot
//! parking_lot's own locks are built on).
//!
//! # Why not parking_lot's or std's lock
//!
//! All three behave alike until more threads want to run than there are cores, which is where
//! brokers and clients live. The hand-off bench beside two CPU-burning threads (one executor,
//! S submitters, 2 vCPUs; 10 alternated rounds of each build, ours ÷ the fastest peer, median)
//! shows what a contended waiter should do once its short spin has failed:
//!
//! - **Yield, as parking_lot's lock does** (up to seven `sched_yield`s before it parks, by
//!   every waiter): with 8 submitters the yields hand the cores to the burners for the rest of
//!   their time slices while the holder waits for a core (`perf sched`: a woken submitter
//!   waited 0.7-1.6 ms for one on average, four traces): K=256 S=8 3.01x, met in 4 rounds of 10.
//! - **Park at once** (std's lock does, after spinning up to 100 `pause`s, microseconds on
//!   this CPU, which on a quiet machine with 9 busy threads on 2 cores burns the core the
//!   holder needs): K=256 S=8 0.62x (9 of 10), but K=256 S=1 2.46x (3 of 10) against
//!   parking_lot's 0.53x (10 of 10). With one submitter the holder is the other thread of the
//!   pair, most likely preempted beside the waiter: a yield hands it the core, while a park
//!   costs a sleep and a wake-up that then waits behind the burners.
//! - **This lock: yield only while alone.** A waiter spins `SPIN_ROUNDS` short rounds (no
//!   yield: 15 `pause`s, ~0.3 µs here), then counts itself among the waiters; if it is the only
//!   one it yields up to `YIELD_ROUNDS` times, else (or once another waiter arrives) it parks;
//!   the unlocking thread wakes one parked waiter. Same rounds: K=256 S=8 0.74x (6 of 10),
//!   S=2 0.51x (9 of 10), S=1 0.57x (10 of 10); K=16 S=1/2/8 1.11x / 2.11x / 2.02x against
//!   parking_lot's 0.95x / 2.79x / 2.05x. The K=16 rows stay a scheduling lottery on 2 vCPUs.
//!
//! Those burners ran where the kernel put them, at times both on one core. With one pinned to
//! each core, a lone waiter's yield meets a CPU hog, and on Linux 6.18 that costs the waiter a
//! whole time slice and its claim on the core (2026-12-03; the measurements, and the gates on
//! the yields that were tried and not kept, are in `idle_spin.rs`, "Yields beside a CPU
//! hog"): pinned, K=256 S=8 ran 2.6-3.7 ms per batch against the fastest peer's 0.34-0.44 ms
//! (medians of 6 rounds). A gate that refused this lock's yields for 250 ms after one took 1
//! ms or more cured that (pinned K=256 S=8 7.99x -> 0.70x the fastest peer) but cost the
//! default placement K=256 S=1 0.58x -> 6.45x, and yielding only when the holder last took
//! the lock on the waiter's CPU was worse in both placements; the lone waiter's yields stay.
//!
//! # The protocol
//!
//! The mutex's state is one byte: `UNLOCKED`, `LOCKED`, or `CONTENDED` (locked, and some
//! thread may be parked); a second byte counts the waiters past their spin (the yield
//! policy's hint only). `lock` takes `UNLOCKED -> LOCKED` by compare-and-swap; failing that
//! it spins (and perhaps yields, above) while the state is `LOCKED`, then swaps in
//! `CONTENDED` and parks on the mutex's
//! address as long as the state is still `CONTENDED` (checked by the parking lot under its
//! bucket lock, so a wake-up between the swap and the park is not lost). A thread that
//! parked once keeps taking the lock as `CONTENDED` (its swap returned `UNLOCKED`): others may
//! still be parked, and its own unlock must look for them. `unlock` swaps in `UNLOCKED` and,
//! if it replaced `CONTENDED`, unparks one thread. This is the classic three-state futex mutex
//! (Drepper, "Futexes Are Tricky", mutex 3); the parking lot stands in for the futex.
//!
//! The condition variable is a sequence number: `wait` reads it, unlocks, and parks on the
//! condition variable's address as long as the number is unchanged; `notify_*` bumps the
//! number and unparks. A notify between the read and the park changes the number, so the
//! waiter does not sleep (a spurious wake-up, allowed: every caller re-checks its condition
//! under the lock). Each `notify_*` finds its waiters under the parking lot's bucket lock: no
//! system call when nobody waits.
//!
//! # Files
//!
//! - `protocol.rs`: the two types, written once against a few names each includer supplies
//!   (atomics, the parking functions, the spin hint): this module includes it with std's
//!   atomics, and the loom model (`loom_model.rs`) with loom's, so that loom checks the very
//!   lines that ship.
//! - `emulated_parking.rs`: a parking lot made of one lock and one condition variable (std's
//!   under Miri, loom's in the model). Under Miri it replaces `parking_lot_core`, whose
//!   0.9.12 `WordLock::unlock_slow` forms a reference to a queued waiter that may have gone,
//!   which Miri reports (a known pattern of the dependency, harmless on hardware); so Miri
//!   runs this crate's protocol and guards, not that pattern.
//! - `lot_parking.rs`: the parking everywhere else, through `parking_lot_core` (the only
//!   `unsafe` calls of the lock outside its guards).
//! - `loom_model.rs`: the loom models, and the mutants they kill.

#[cfg(miri)]
use self::emulated_parking as parking;
#[cfg(not(miri))]
use self::lot_parking as parking;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

#[cfg(any(miri, all(loom, test)))]
mod emulated_parking;
#[cfg(all(loom, test))]
mod loom_model;
#[cfg(not(miri))]
mod lot_parking;

/// Spin rounds of a contended `lock`: round `r` waits `2^r` spin hints (1 + 2 + 4 + 8: 15
/// `pause`s, ~0.3 µs on the 2-vCPU host where a `pause` measured ~21 ns: room for a running
/// holder to leave a short critical section; parking_lot's spin is 14 `pause`s).
const SPIN_ROUNDS: u32 = 4;

/// Yields of a contended `lock` that is the only waiter past its spin, before it parks
/// (parking_lot's count).
const YIELD_ROUNDS: u32 = 7;

/// One spin hint (`pause` on x86).
#[inline]
fn spin_hint() {
    std::hint::spin_loop();
}

/// Offers the core to another runnable thread.
#[inline]
fn yield_hint() {
    std::thread::yield_now();
}

include!("protocol.rs");

/// Sets up, now, what the locks' parking allocates on its first use (the parking lot's table
/// of parked threads), so that it is not allocated mid-workload by whichever lock is first
/// contended. Executor workers call it when they start. Idempotent and cheap (one bucket lock).
pub(crate) fn prepare_parking() {
    parking::prepare();
}

impl<T> Mutex<T> {
    /// An unlocked mutex holding `value`.
    pub(crate) const fn new(value: T) -> Self {
        Self {
            state: AtomicU8::new(UNLOCKED),
            waiters: AtomicU8::new(0),
            value: UnsafeCell::new(value),
        }
    }
}

impl Condvar {
    /// A condition variable nobody waits on.
    pub(crate) const fn new() -> Self {
        Self {
            seq: AtomicU32::new(0),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use pulsar_testkit::LONG;
    use std::sync::{mpsc, Arc};
    use std::thread;
    use std::time::Duration;

    /// Runs `f` on its own thread and returns its result; fails the test (instead of hanging
    /// the suite) if it has not finished within [`LONG`], which only a lost wake-up makes it do.
    fn finishes<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
        let (done, finished) = mpsc::channel();
        thread::spawn(move || {
            let _ = done.send(f());
        });
        finished
            .recv_timeout(LONG)
            .expect("lost wake-up: the threads did not finish")
    }

    #[test]
    fn contending_threads_exclude_each_other_and_lose_no_increment() {
        const THREADS: usize = if cfg!(miri) { 3 } else { 6 };
        const ROUNDS: u64 = if cfg!(miri) { 50 } else { 20_000 };
        struct Shared {
            count: u64,
            inside: bool,
        }
        let total = finishes(|| {
            let shared = Arc::new(Mutex::new(Shared {
                count: 0,
                inside: false,
            }));
            let threads: Vec<_> = (0..THREADS)
                .map(|_| {
                    let shared = Arc::clone(&shared);
                    thread::spawn(move || {
                        for _ in 0..ROUNDS {
                            let mut guard = shared.lock();
                            assert!(!guard.inside, "two threads inside the lock");
                            guard.inside = true;
                            guard.count += 1;
                            std::hint::spin_loop();
                            guard.inside = false;
                        }
                    })
                })
                .collect();
            for thread in threads {
                thread.join().expect("no panic");
            }
            let count = shared.lock().count;
            count
        });
        assert_eq!(total, THREADS as u64 * ROUNDS);
    }

    #[test]
    fn waiters_park_and_the_unlocks_let_each_one_in() {
        let (count, state) = finishes(|| {
            let shared = Arc::new(Mutex::new(0u32));
            let held = shared.lock();
            let waiters: Vec<_> = (0..3)
                .map(|_| {
                    let shared = Arc::clone(&shared);
                    thread::spawn(move || *shared.lock() += 1)
                })
                .collect();
            // Each waiter spins a few hundred cycles, then marks the lock contended and parks.
            while shared.state.load(Ordering::Relaxed) != CONTENDED {
                thread::yield_now();
            }
            drop(held);
            for waiter in waiters {
                waiter.join().expect("no panic");
            }
            let count = *shared.lock();
            (count, shared.state.load(Ordering::Relaxed))
        });
        assert_eq!(count, 3);
        assert_eq!(state, UNLOCKED, "the last unlock left the lock free");
    }

    #[test]
    fn try_lock_fails_only_while_the_lock_is_held() {
        let mutex = Mutex::new(5);
        let guard = mutex.try_lock().expect("free");
        assert!(mutex.try_lock().is_none());
        drop(guard);
        assert_eq!(*mutex.try_lock().expect("free again"), 5);
    }

    #[test]
    fn a_panic_while_locked_leaves_the_lock_usable_with_its_value() {
        let shared = Arc::new(Mutex::new(vec![1]));
        let panicking = Arc::clone(&shared);
        let outcome = thread::spawn(move || {
            let mut guard = panicking.lock();
            guard.push(2);
            panic!("a panic while the lock is held (expected by the test)");
        })
        .join();
        assert!(outcome.is_err());
        assert_eq!(*shared.lock(), vec![1, 2]);
    }

    /// Two threads take turns through one lock and condition variable: every wake-up must
    /// arrive, or the test fails within [`LONG`].
    #[test]
    fn turns_handed_back_and_forth_lose_no_wake_up() {
        const TURNS: u32 = if cfg!(miri) { 50 } else { 20_000 };
        let turns = finishes(|| {
            let shared = Arc::new((Mutex::new((0u32, false)), Condvar::new()));
            let other = Arc::clone(&shared);
            let partner = thread::spawn(move || {
                let (lock, turned) = &*other;
                let mut state = lock.lock();
                for _ in 0..TURNS {
                    while !state.1 {
                        state = turned.wait(state);
                    }
                    state.0 += 1;
                    state.1 = false;
                    turned.notify_one();
                }
            });
            let (lock, turned) = &*shared;
            let mut state = lock.lock();
            for _ in 0..TURNS {
                while state.1 {
                    state = turned.wait(state);
                }
                state.0 += 1;
                state.1 = true;
                turned.notify_one();
            }
            while state.1 {
                state = turned.wait(state);
            }
            drop(state);
            partner.join().expect("no panic");
            let turns = lock.lock().0;
            turns
        });
        assert_eq!(turns, 2 * TURNS);
    }

    #[test]
    fn notify_all_wakes_every_waiter() {
        const WAITERS: usize = 4;
        let woken = finishes(|| {
            let shared = Arc::new((Mutex::new((0usize, false, 0usize)), Condvar::new()));
            let waiters: Vec<_> = (0..WAITERS)
                .map(|_| {
                    let shared = Arc::clone(&shared);
                    thread::spawn(move || {
                        let (lock, go) = &*shared;
                        let mut state = lock.lock();
                        state.0 += 1; // waiting
                        while !state.1 {
                            state = go.wait(state);
                        }
                        state.2 += 1; // woken
                    })
                })
                .collect();
            let (lock, go) = &*shared;
            loop {
                let mut state = lock.lock();
                if state.0 == WAITERS {
                    state.1 = true;
                    break;
                }
                drop(state);
                thread::yield_now();
            }
            go.notify_all();
            for waiter in waiters {
                waiter.join().expect("no panic");
            }
            let woken = lock.lock().2;
            woken
        });
        assert_eq!(woken, WAITERS);
    }

    #[test]
    fn a_timed_wait_reports_whether_it_timed_out() {
        let lock = Mutex::new(false);
        let signal = Condvar::new();
        // Nobody notifies (notifying with nobody waiting returns at once).
        signal.notify_one();
        signal.notify_all();
        let (guard, timed_out) = signal.wait_timeout(lock.lock(), Duration::from_millis(20));
        assert!(timed_out);
        drop(guard);

        let notified = finishes(|| {
            let shared = Arc::new((Mutex::new((false, false)), Condvar::new()));
            let waiter = {
                let shared = Arc::clone(&shared);
                thread::spawn(move || {
                    let (lock, signal) = &*shared;
                    let mut state = lock.lock();
                    state.0 = true; // waiting
                    loop {
                        let (guard, timed_out) = signal.wait_timeout(state, LONG);
                        state = guard;
                        if state.1 {
                            return !timed_out;
                        }
                    }
                })
            };
            let (lock, signal) = &*shared;
            loop {
                let mut state = lock.lock();
                if state.0 {
                    state.1 = true;
                    break;
                }
                drop(state);
                thread::yield_now();
            }
            signal.notify_one();
            waiter.join().expect("no panic")
        });
        assert!(notified, "a notified wait reports no timeout");
    }
}
