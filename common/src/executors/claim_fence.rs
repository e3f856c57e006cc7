//! The asymmetric fence pair of the worker's claim protocol (`task_batch.rs`): a *light* fence
//! the worker runs before every task, and a *heavy* one `shutdown_now` runs once per steal.
//!
//! # Design note
//!
//! The claim is a store-then-load handshake (Dekker's): the worker announces the index it
//! takes, then looks for a steal; the stealer marks the steal, then reads the worker's
//! announcement. Each side needs a StoreLoad barrier between its store and its load, or both
//! may miss the other's store. A full fence (or a locked read-modify-write, which the first
//! version used) per task cost the worker more than half of its ~20 ns per task on the 2-core
//! EPYC host (~8.5 ns without it: `task_batch.rs`).
//!
//! On Linux the worker's side is only a compiler fence, and the stealer's side is
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`: the kernel makes every running thread of the
//! process execute a full memory barrier before the call returns (a thread not running passed
//! one when it was switched out). Whichever point of the worker's instruction stream that
//! barrier lands on, either the worker's announcement is visible to the stealer's read after
//! the call, or the worker's look for a steal comes after the barrier and sees the mark — the
//! same guarantee a pair of `SeqCst` fences gives, paid only on the rare side. (liburcu and
//! folly's hazard pointers use the same pairing.)
//!
//! `membarrier` needs a one-time registration per process. The mode is decided once, the
//! first time either side asks, and never changes, so both sides always agree: if the kernel
//! lacks the command or a sandbox refuses it, both sides use `fence(SeqCst)`. Under loom and
//! Miri both sides are always `fence(SeqCst)`, which both model; the loom models check the
//! protocol with that pair.

use crate::sync::{fence, Ordering};

/// The worker's side, between its announcement and its look for a steal.
#[inline]
pub(crate) fn light() {
    if membarrier::available() {
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
}

/// Decides the mode now. `shutdown_now` calls it before it takes the queue lock, so the one-time
/// decision (a system call, and a debug log when `membarrier` is unavailable) never runs under
/// that lock, where [`heavy`] is called: a tracing layer that calls the executor would wedge
/// there. (The worker's [`light`] runs outside every lock.)
pub(crate) fn prepare() {
    membarrier::available();
}

/// The stealer's side, between its mark and its read of the worker's announcement.
pub(crate) fn heavy() {
    debug_assert!(
        membarrier::is_decided(),
        "`shutdown_now` decides the mode before it takes the lock and steals"
    );
    fence(Ordering::SeqCst);
    if membarrier::available() {
        membarrier::barrier();
        fence(Ordering::SeqCst);
    }
}

/// Whether the light side is only a compiler fence here.
#[cfg(all(test, not(loom)))]
pub(crate) fn is_asymmetric() -> bool {
    membarrier::available()
}

#[cfg(all(target_os = "linux", not(loom), not(miri)))]
mod membarrier {
    use crate::decided_once::DecidedOnce;

    // From <linux/membarrier.h>.
    const CMD_QUERY: libc::c_long = 0;
    const CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

    /// The mode, decided once.
    static MODE: DecidedOnce = DecidedOnce::new();

    /// Whether the process is registered for private expedited barriers (registering it the
    /// first time this is asked).
    #[inline]
    pub(super) fn available() -> bool {
        MODE.get(decide)
    }

    /// Whether the mode has been decided (no decision is made here).
    pub(super) fn is_decided() -> bool {
        MODE.is_decided()
    }

    #[cold]
    fn decide() -> bool {
        // Racing callers may both register: registration is idempotent, and both store the
        // same answer, so both sides of any claim agree.
        let commands = call(CMD_QUERY);
        let needed = CMD_PRIVATE_EXPEDITED | CMD_REGISTER_PRIVATE_EXPEDITED;
        let yes = commands >= 0
            && commands & needed == needed
            && call(CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
        if !yes {
            // Guarded: the worker's first claim may decide, between its announcement and the
            // task's move, where an unwind would lose the announced task.
            crate::executors::worker_lifecycle::log_guarded(|| {
                tracing::debug!(
                    "membarrier(2) unavailable: executor claims use a full fence per task"
                )
            });
        }
        yes
    }

    /// A full memory barrier on every running thread of the process.
    pub(super) fn barrier() {
        let result = call(CMD_PRIVATE_EXPEDITED);
        // After a successful registration the command cannot fail (its documented errors are
        // all about registration and support, checked in `decide`). The workers rely on it, so
        // there is no safe way on.
        assert_eq!(
            result,
            0,
            "membarrier(PRIVATE_EXPEDITED) failed after registration: {}",
            std::io::Error::last_os_error()
        );
    }

    fn call(command: libc::c_long) -> libc::c_long {
        // SAFETY: membarrier(2) takes two integers and a CPU id and touches no memory of ours;
        // every command used here is defined by the kernel's ABI, and an unknown one fails
        // with EINVAL.
        #[allow(unsafe_code)]
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                command,
                0 as libc::c_uint,
                0 as libc::c_int,
            )
        }
    }
}

#[cfg(not(all(target_os = "linux", not(loom), not(miri))))]
mod membarrier {
    /// No asymmetric barrier here: both sides use `fence(SeqCst)`.
    #[inline]
    pub(super) fn available() -> bool {
        false
    }

    pub(super) fn barrier() {
        unreachable!("never called: `available` is false");
    }

    /// Nothing to decide here.
    pub(super) fn is_decided() -> bool {
        true
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_mode_is_decided_once_and_both_sides_agree() {
        let first = is_asymmetric();
        light();
        heavy();
        assert_eq!(is_asymmetric(), first, "the mode never changes");
        #[cfg(all(target_os = "linux", not(miri)))]
        {
            // On Linux the barrier is used whenever the kernel offers it.
            let query = {
                // SAFETY: as in `membarrier::call`.
                #[allow(unsafe_code)]
                unsafe {
                    libc::syscall(libc::SYS_membarrier, 0 as libc::c_long, 0u32, 0i32)
                }
            };
            let offered = query >= 0 && query & (1 << 3) != 0 && query & (1 << 4) != 0;
            assert_eq!(first, offered);
        }
        #[cfg(not(all(target_os = "linux", not(miri))))]
        assert!(!first, "without membarrier both sides are full fences");
    }
}
