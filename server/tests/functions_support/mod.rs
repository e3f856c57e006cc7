//! Test fixtures shared by the `functions_*` tests: drop counters, a seeded shuffle, test producers and sources, thread counts.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Generous bound on waits that only fail when there is a bug (never a timing assertion).
pub const LONG: Duration = Duration::from_secs(30);

/// Counts how many times values carrying it were dropped.
#[derive(Clone, Default)]
pub struct DropCounter(Arc<AtomicUsize>);

impl DropCounter {
    pub fn new() -> Self {
        Self::default()
    }

    /// A value whose drop this counter counts.
    pub fn token(&self) -> Token {
        Token(Arc::clone(&self.0))
    }

    pub fn drops(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A value counted by its `DropCounter` when dropped.
#[derive(Debug)]
pub struct Token(Arc<AtomicUsize>);

impl Drop for Token {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A seeded xorshift generator: the same "random" order on every run.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// The current thread's name.
pub fn thread_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("<unnamed>")
        .to_owned()
}

/// Threads of this process now (Linux: entries of /proc/self/task).
pub fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .count()
}

/// Waits (yielding, bounded) until the thread count drops to at most `expected`; returns the
/// last count seen. A thread that has run its thread-local destructors leaves the kernel's task
/// list a moment later, so tests poll this condition instead of sleeping.
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

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

/// A future the test opens by hand: `(opener, future)`; the future is ready once opened.
pub fn gate() -> (GateOpener, GateFuture) {
    let state = Arc::new(Mutex::new(GateState {
        open: false,
        waker: None,
    }));
    (GateOpener(Arc::clone(&state)), GateFuture(state))
}

struct GateState {
    open: bool,
    waker: Option<Waker>,
}

pub struct GateOpener(Arc<Mutex<GateState>>);

impl GateOpener {
    pub fn open(self) {
        let waker = {
            let mut state = self.0.lock().unwrap();
            state.open = true;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

pub struct GateFuture(Arc<Mutex<GateState>>);

impl Future for GateFuture {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.0.lock().unwrap();
        if state.open {
            Poll::Ready(())
        } else {
            state.waker = Some(cx.waker().clone());
            Poll::Pending
        }
    }
}
