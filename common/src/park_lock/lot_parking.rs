//! Parking through `parking_lot_core` (the park lock's parking, except under Miri and in the
//! loom model): a thread parks on a key (an address) in a global hash table of queues, each
//! queue under its bucket's lock. The only `unsafe` is the calls into it; Miri does not run
//! them (see `emulated_parking.rs`), the native suites and valgrind do.

use parking_lot_core::{ParkResult, DEFAULT_PARK_TOKEN, DEFAULT_UNPARK_TOKEN};
use std::time::Instant;

/// Sleeps on `key` if `validate()` (called under the key's bucket lock, so that an
/// `unpark_*` of the key is either before it or finds this thread queued) holds, until
/// unparked or `deadline`. Returns whether the deadline passed.
#[inline]
pub(super) fn park(key: usize, validate: impl FnOnce() -> bool, deadline: Option<Instant>) -> bool {
    // SAFETY: `key` is the address of an atomic owned by the calling lock or condition
    // variable, on which no other primitive parks; the callbacks neither panic nor call
    // into the parking lot.
    #[allow(unsafe_code)]
    let result = unsafe {
        parking_lot_core::park(
            key,
            validate,
            || {},
            |_, _| {},
            DEFAULT_PARK_TOKEN,
            deadline,
        )
    };
    result == ParkResult::TimedOut
}

/// Wakes one thread parked on `key`, if any.
#[inline]
pub(super) fn unpark_one(key: usize) {
    // SAFETY: as in `park`.
    #[allow(unsafe_code)]
    unsafe {
        parking_lot_core::unpark_one(key, |_| DEFAULT_UNPARK_TOKEN);
    }
}

/// Wakes every thread parked on `key`.
#[inline]
pub(super) fn unpark_all(key: usize) {
    // SAFETY: as in `park`.
    #[allow(unsafe_code)]
    unsafe {
        parking_lot_core::unpark_all(key, DEFAULT_UNPARK_TOKEN);
    }
}

/// Makes the parking lot's global table of parked threads now, if no thread has parked or
/// unparked through it yet. `parking_lot_core` allocates it on first use (1 KiB of buckets,
/// and each thread racing to make it allocates its own copy before one wins), which would
/// otherwise happen at whichever lock is first contended, mid-workload: a steady workload that
/// allocates nothing would then allocate once, somewhere. An executor's worker calls this when
/// it starts, where starting the thread allocates anyway.
pub(super) fn prepare() {
    /// A key no lock or condition variable parks on.
    static NOBODY_PARKS_HERE: u8 = 0;
    // Unparking a key with no waiter takes its bucket's lock, making the table first.
    unpark_one(std::ptr::addr_of!(NOBODY_PARKS_HERE) as usize);
}
