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

    pub(super) type ClockId = libc::clockid_t;

    pub(super) fn thread_clock<T>(thread: &std::thread::JoinHandle<T>) -> Option<ClockId> {
        use std::os::unix::thread::JoinHandleExt;
        let mut id: libc::clockid_t = 0;
        // SAFETY: the pthread id comes from a live (not yet joined) `JoinHandle`, and `id` is a
        // valid, writable `clockid_t`; the call writes only to it.
        let rc = unsafe { libc::pthread_getcpuclockid(thread.as_pthread_t(), &mut id) };
        (rc == 0).then_some(id)
    }

    pub(super) fn read(id: ClockId) -> Option<Duration> {
        clock(id)
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

    pub(super) type ClockId = ();

    pub(super) fn thread_clock<T>(_: &std::thread::JoinHandle<T>) -> Option<ClockId> {
        None
    }

    pub(super) fn read(_: ClockId) -> Option<Duration> {
        None
    }
}

/// The CPU clock of another thread of this process (`pthread_getcpuclockid`), readable from any
/// thread while that thread lives.
///
/// The bench's oversubscribed variants read their CPU burners' clocks this way, to take the
/// burners' CPU time out of the process's.
///
/// # Examples
///
/// ```
/// use microbench::cpu::ThreadCpuClock;
///
/// let thread = std::thread::spawn(|| std::thread::park());
/// if let Some(clock) = ThreadCpuClock::of(&thread) {
///     assert!(clock.read().is_some());
/// }
/// thread.thread().unpark();
/// thread.join().unwrap();
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ThreadCpuClock(imp::ClockId);

impl ThreadCpuClock {
    /// The clock of `thread`, or `None` where the platform has no such clock. Reading it after
    /// the thread was joined is meaningless (the id may be reused).
    pub fn of<T>(thread: &std::thread::JoinHandle<T>) -> Option<Self> {
        imp::thread_clock(thread).map(Self)
    }

    /// CPU time the thread has consumed so far, or `None` if the clock cannot be read.
    pub fn read(&self) -> Option<Duration> {
        imp::read(self.0)
    }
}
