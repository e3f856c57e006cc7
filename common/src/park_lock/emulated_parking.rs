//! A parking lot made of one lock and one condition variable, with the parking functions of
//! `lot_parking` (in `mod.rs`): std's lock under Miri (where it stands in for
//! `parking_lot_core`), loom's in the loom model. Every parked thread holds a ticket in one
//! FIFO list; `unpark_one` takes the first ticket of the key out of the list, `unpark_all`
//! every ticket of the key, and a parked thread sleeps until its ticket is gone (or its
//! deadline passes: then it takes its ticket out itself, under the lock, so that no unpark is
//! spent on it). `validate` runs under the lock, as `parking_lot_core` runs it under the
//! bucket lock: an unpark is either before it or finds the thread's ticket.

#[cfg(loom)]
use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// The parked threads, oldest first: (key, ticket).
struct Lot {
    parked: Vec<(usize, u64)>,
    next_ticket: u64,
}

impl Lot {
    const fn new() -> Self {
        Self {
            parked: Vec::new(),
            next_ticket: 0,
        }
    }

    fn holds(&self, ticket: u64) -> bool {
        self.parked.iter().any(|&(_, held)| held == ticket)
    }
}

#[cfg(not(loom))]
fn lot() -> &'static (Mutex<Lot>, Condvar) {
    static LOT: (Mutex<Lot>, Condvar) = (Mutex::new(Lot::new()), Condvar::new());
    &LOT
}

#[cfg(loom)]
fn lot() -> &'static (Mutex<Lot>, Condvar) {
    loom::lazy_static! {
        static ref LOT: (Mutex<Lot>, Condvar) = (Mutex::new(Lot::new()), Condvar::new());
    }
    &LOT
}

fn lock(lot: &Mutex<Lot>) -> MutexGuard<'_, Lot> {
    lot.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Sleeps on `key` if `validate()` holds, until unparked or `deadline` (ignored under loom,
/// which has no clock: the models never rely on a timeout). Returns whether the deadline
/// passed.
pub(super) fn park(key: usize, validate: impl FnOnce() -> bool, deadline: Option<Instant>) -> bool {
    let (mutex, unparked) = lot();
    let mut lot = lock(mutex);
    if !validate() {
        return false;
    }
    let ticket = lot.next_ticket;
    lot.next_ticket += 1;
    lot.parked.push((key, ticket));
    #[cfg(loom)]
    let _ = deadline;
    #[cfg(loom)]
    let deadline: Option<Instant> = None;
    while lot.holds(ticket) {
        lot = match deadline {
            None => unparked
                .wait(lot)
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    lot.parked.retain(|&(_, held)| held != ticket);
                    return true;
                }
                wait_timeout(unparked, lot, left)
            }
        };
    }
    false
}

#[cfg(not(loom))]
fn wait_timeout<'a>(
    unparked: &Condvar,
    lot: MutexGuard<'a, Lot>,
    left: std::time::Duration,
) -> MutexGuard<'a, Lot> {
    unparked
        .wait_timeout(lot, left)
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .0
}

#[cfg(loom)]
fn wait_timeout<'a>(
    _: &Condvar,
    _: MutexGuard<'a, Lot>,
    _: std::time::Duration,
) -> MutexGuard<'a, Lot> {
    unreachable!("no deadline under loom")
}

/// Wakes the thread parked longest on `key`, if any.
pub(super) fn unpark_one(key: usize) {
    let (mutex, unparked) = lot();
    let mut lot = lock(mutex);
    if let Some(first) = lot.parked.iter().position(|&(parked, _)| parked == key) {
        lot.parked.remove(first);
        unparked.notify_all();
    }
}

/// Wakes every thread parked on `key`.
pub(super) fn unpark_all(key: usize) {
    let (mutex, unparked) = lot();
    let mut lot = lock(mutex);
    let before = lot.parked.len();
    lot.parked.retain(|&(parked, _)| parked != key);
    if lot.parked.len() != before {
        unparked.notify_all();
    }
}

/// Grows the list of parked threads to room for a few now (`lot_parking::prepare`'s
/// counterpart: the first park then allocates nothing mid-workload).
pub(super) fn prepare() {
    let (mutex, _) = lot();
    let mut lot = lock(mutex);
    let room = 8usize.saturating_sub(lot.parked.len());
    lot.parked.reserve(room);
}
