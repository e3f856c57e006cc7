//! Loom models of the park lock: `protocol.rs` compiled with loom's atomics, parking on the
//! emulated lot (loom's lock and condition variable), one spin round. Loom runs every
//! interleaving (up to the preemption bound `cargo xtask test` sets); a lost wake-up shows as
//! a deadlock, a broken exclusion as a failed assertion.
//!
//! Mutants checked by hand (each fails a model here): `unlock` not unparking when it replaces
//! `CONTENDED`; a contended `lock` parking without `validate`; a yielding waiter taking the
//! lock with a store instead of a compare-and-swap; a `wait` reading the sequence number after
//! unlocking instead of before; `notify_all` unparking one waiter only.

#![allow(dead_code)] // the model uses part of the API

use super::emulated_parking as parking;
use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use loom::sync::Arc;
use loom::thread;

/// One round of each: enough for a waiter to spin, yield and park.
const SPIN_ROUNDS: u32 = 1;
const YIELD_ROUNDS: u32 = 1;

fn spin_hint() {
    loom::hint::spin_loop();
}

fn yield_hint() {
    loom::thread::yield_now();
}

include!("protocol.rs");

impl<T> Mutex<T> {
    fn new(value: T) -> Self {
        Self {
            state: AtomicU8::new(UNLOCKED),
            waiters: AtomicU8::new(0),
            value: UnsafeCell::new(value),
        }
    }
}

impl Condvar {
    fn new() -> Self {
        Self {
            seq: AtomicU32::new(0),
        }
    }
}

/// A lock and a flag that says whether some thread is inside it.
struct Counted {
    count: Mutex<u32>,
    inside: AtomicBool,
}

impl Counted {
    fn increment(&self) {
        let mut count = self.count.lock();
        assert!(
            !self.inside.swap(true, Ordering::Relaxed),
            "two threads inside the lock"
        );
        *count += 1;
        self.inside.store(false, Ordering::Relaxed);
    }
}

#[test]
fn loom_park_lock_three_threads_exclude_each_other_and_every_waiter_gets_in() {
    loom::model(|| {
        let counted = Arc::new(Counted {
            count: Mutex::new(0),
            inside: AtomicBool::new(false),
        });
        let others: Vec<_> = (0..2)
            .map(|_| {
                let counted = Arc::clone(&counted);
                thread::spawn(move || counted.increment())
            })
            .collect();
        counted.increment();
        for other in others {
            other.join().unwrap();
        }
        assert_eq!(*counted.count.lock(), 3);
        assert_eq!(counted.count.state.load(Ordering::Relaxed), UNLOCKED);
        assert_eq!(counted.count.waiters.load(Ordering::Relaxed), 0);
    });
}

/// A thread that waits on the condition variable until the flag is set.
fn spawn_flag_waiter(shared: &Arc<(Mutex<bool>, Condvar)>) -> thread::JoinHandle<()> {
    let shared = Arc::clone(shared);
    thread::spawn(move || {
        let (flag, changed) = &*shared;
        let mut flag = flag.lock();
        while !*flag {
            flag = changed.wait(flag);
        }
    })
}

#[test]
fn loom_park_lock_a_notify_after_the_condition_changed_is_never_lost() {
    loom::model(|| {
        let shared = Arc::new((Mutex::new(false), Condvar::new()));
        let waiter = spawn_flag_waiter(&shared);
        let (ready, changed) = &*shared;
        *ready.lock() = true;
        changed.notify_one();
        waiter.join().unwrap();
    });
}

#[test]
fn loom_park_lock_notify_all_wakes_both_waiters() {
    loom::model(|| {
        let shared = Arc::new((Mutex::new(false), Condvar::new()));
        let waiters: Vec<_> = (0..2).map(|_| spawn_flag_waiter(&shared)).collect();
        let (go, changed) = &*shared;
        *go.lock() = true;
        changed.notify_all();
        for waiter in waiters {
            waiter.join().unwrap();
        }
    });
}
