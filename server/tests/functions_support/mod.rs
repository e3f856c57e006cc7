//! Test fixtures shared by the `functions_*` tests: drop counters, a seeded shuffle, test producers and sources, thread counts.
#![allow(dead_code, unused_imports)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use pulsar_testkit::{thread_count, wait_for_thread_count_at_most, DropCounter, Token, LONG};

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
