//! Process and thread CPU clocks (`CLOCK_PROCESS_CPUTIME_ID`, `CLOCK_THREAD_CPUTIME_ID`).
//!
//! CPU time beside wall time shows what a design burns to get its speed: a worker that spins
//! while a batch is in flight costs a core even when the wall clock looks good.

use std::time::Duration;

/// CPU time consumed so far by every thread of this process, or `None` where the platform
/// has no such clock.
pub fn process_time() -> Option<Duration> {
    imp::process_time()
}

/// CPU time consumed so far by the calling thread, or `None` where the platform has no such
/// clock.
pub fn thread_time() -> Option<Duration> {
    imp::thread_time()
}

#[cfg(unix)]
mod imp {
    use std::time::Duration;

    pub(super) fn process_time() -> Option<Duration> {
        clock(libc::CLOCK_PROCESS_CPUTIME_ID)
    }

    pub(super) fn thread_time() -> Option<Duration> {
        clock(libc::CLOCK_THREAD_CPUTIME_ID)
    }

    fn clock(id: libc::clockid_t) -> Option<Duration> {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a valid, writable `timespec`; `clock_gettime` writes only to it.
        let rc = unsafe { libc::clock_gettime(id, &mut now) };
        if rc != 0 {
            return None;
        }
        Some(Duration::new(now.tv_sec as u64, now.tv_nsec as u32))
    }
}

#[cfg(not(unix))]
mod imp {
    use std::time::Duration;

    pub(super) fn process_time() -> Option<Duration> {
        None
    }

    pub(super) fn thread_time() -> Option<Duration> {
        None
    }
}
