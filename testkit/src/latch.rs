//! `Latch`: a count-down latch for tests.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// `wait` returns once `count_down` was called `n` times.
#[derive(Debug)]
pub struct Latch {
    remaining: Mutex<usize>,
    zero: Condvar,
}

impl Latch {
    /// A latch that opens after `n` count-downs.
    pub fn new(n: usize) -> Arc<Self> {
        Arc::new(Self {
            remaining: Mutex::new(n),
            zero: Condvar::new(),
        })
    }

    /// Counts down once.
    pub fn count_down(&self) {
        let mut remaining = self.remaining.lock().unwrap();
        *remaining -= 1;
        if *remaining == 0 {
            self.zero.notify_all();
        }
    }

    /// Waits for zero.
    ///
    /// # Panics
    ///
    /// After `timeout`, so that a bug fails the test instead of hanging it.
    pub fn wait(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut remaining = self.remaining.lock().unwrap();
        while *remaining > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "latch still at {} after {timeout:?}",
                *remaining
            );
            remaining = self.zero.wait_timeout(remaining, left).unwrap().0;
        }
    }
}
