//! The process's thread count, for tests that prove no thread is left behind.

use std::time::{Duration, Instant};

/// Threads of this process now (Linux: entries of /proc/self/task).
///
/// # Panics
///
/// If /proc/self/task cannot be read.
pub fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .count()
}

/// Waits (yielding, bounded) until the thread count drops to at most `expected`; returns the
/// last count seen. A thread that has signalled its exit leaves the kernel's task list a moment
/// later, so tests poll this condition instead of sleeping.
pub fn wait_for_thread_count_at_most(expected: usize, timeout: Duration) -> usize {
    let deadline = Instant::now() + timeout;
    loop {
        let now = thread_count();
        if now <= expected || Instant::now() >= deadline {
            return now;
        }
        std::thread::yield_now();
    }
}
