//! `CountdownLatch`: the per-batch latch of the hand-off benchmark (Java's `CountDownLatch`).

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// A one-shot countdown latch with one waiter: the thread that made it.
///
/// [`count_down`](Self::count_down) from any thread; when the count reaches zero the waiter is
/// unparked. Allocation-free itself; the hand-off benchmark puts one in an `Arc` per batch
/// (that `Arc` is the "latch" bytes the report subtracts).
///
/// # Memory ordering
///
/// `count_down` decrements with `AcqRel` and the waiter reads with `Acquire`, so everything a
/// task did before counting down is visible to the waiter once it sees zero.
///
/// # Examples
///
/// ```
/// use microbench::latch::CountdownLatch;
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let latch = Arc::new(CountdownLatch::new(2));
/// for _ in 0..2 {
///     let latch = Arc::clone(&latch);
///     std::thread::spawn(move || latch.count_down());
/// }
/// assert!(latch.wait_timeout(Duration::from_secs(10)));
/// ```
pub struct CountdownLatch {
    /// Count-downs still expected.
    count: AtomicUsize,
    /// The thread that waits (the creator).
    waiter: Thread,
}

impl CountdownLatch {
    /// A latch expecting `count` count-downs, awaited by the calling thread.
    pub fn new(count: usize) -> Self {
        Self {
            count: AtomicUsize::new(count),
            waiter: thread::current(),
        }
    }

    /// Re-arms a latch whose count reached zero for `count` more count-downs (a new batch).
    /// Tasks that counted the previous batch down are done with the count: the last of them
    /// made it zero (one may still be waking the waiter, which only costs a spurious wake-up).
    ///
    /// # Panics
    ///
    /// If called from a thread other than the waiter, or before the count reached zero.
    pub fn arm(&self, count: usize) {
        assert_eq!(
            thread::current().id(),
            self.waiter.id(),
            "only the thread that made a CountdownLatch may re-arm it"
        );
        assert_eq!(
            self.count(),
            0,
            "a latch is re-armed only once it reached zero"
        );
        // Published to the tasks by the executor's hand-off, like everything else they read.
        self.count.store(count, Ordering::Relaxed);
    }

    /// Counts down once; the last count-down wakes the waiter.
    #[inline]
    pub fn count_down(&self) {
        if self.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.waiter.unpark();
        }
    }

    /// Count-downs still expected.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Parks until the count reaches zero or `timeout` passes; `true` if it reached zero.
    ///
    /// # Panics
    ///
    /// If called from a thread other than the one that made the latch (it would never be
    /// woken).
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        assert_eq!(
            thread::current().id(),
            self.waiter.id(),
            "only the thread that made a CountdownLatch may wait on it"
        );
        let deadline = Instant::now() + timeout;
        while self.count.load(Ordering::Acquire) != 0 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            thread::park_timeout(deadline - now);
        }
        true
    }
}

impl fmt::Debug for CountdownLatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountdownLatch")
            .field("count", &self.count())
            .finish_non_exhaustive()
    }
}
