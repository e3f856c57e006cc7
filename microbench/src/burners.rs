//! `CpuBurners`: threads that burn CPU beside a workload, for the oversubscribed variants
//! (more busy threads than cores, the normal case of a broker or client host).

use crate::cpu::ThreadCpuClock;
use std::fmt;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// How many burners the oversubscribed variants run: with the workload's own threads, more
/// busy threads than the 2 cores of the reference machine.
pub const OVERSUBSCRIBING_BURNERS: usize = 2;

/// Threads that each run a busy loop (arithmetic on [`black_box`], no yields, no system
/// calls) until [`stop`](Self::stop) or drop.
///
/// Their CPU time is readable ([`cpu_time`](Self::cpu_time)) so that a bench can report the
/// workload's CPU time alone: process CPU time minus the burners'.
///
/// # Examples
///
/// ```
/// use microbench::burners::CpuBurners;
///
/// let burners = CpuBurners::start(2);
/// let before = burners.cpu_time();
/// let spins = burners.stop();
/// assert_eq!(spins.len(), 2);
/// # let _ = before;
/// ```
pub struct CpuBurners {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<u64>>,
    clocks: Vec<ThreadCpuClock>,
}

impl CpuBurners {
    /// Starts `count` burner threads (named `cpu-burner-<n>`); they are running when this
    /// returns.
    ///
    /// # Panics
    ///
    /// If a thread cannot be started.
    pub fn start(count: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(Barrier::new(count + 1));
        let threads: Vec<JoinHandle<u64>> = (0..count)
            .map(|n| {
                let (stop, started) = (Arc::clone(&stop), Arc::clone(&started));
                thread::Builder::new()
                    .name(format!("cpu-burner-{n}"))
                    .spawn(move || burn(&stop, &started))
                    .expect("start a CPU burner")
            })
            .collect();
        started.wait();
        let clocks = threads.iter().filter_map(ThreadCpuClock::of).collect();
        Self {
            stop,
            threads,
            clocks,
        }
    }

    /// CPU time all burners have consumed so far, or `None` where their clocks cannot be read.
    pub fn cpu_time(&self) -> Option<Duration> {
        if self.clocks.len() != self.threads.len() {
            return None;
        }
        self.clocks.iter().map(ThreadCpuClock::read).sum()
    }

    /// The burners' CPU clocks (valid until [`stop`](Self::stop)).
    pub fn clocks(&self) -> &[ThreadCpuClock] {
        &self.clocks
    }

    /// Stops and joins the burners; returns each one's loop count (proof that it ran).
    ///
    /// # Panics
    ///
    /// If a burner panicked.
    pub fn stop(mut self) -> Vec<u64> {
        self.halt()
            .into_iter()
            .map(|outcome| outcome.expect("a CPU burner panicked"))
            .collect()
    }

    /// Signals the burners to stop and joins them (their clocks become invalid first).
    fn halt(&mut self) -> Vec<thread::Result<u64>> {
        self.stop.store(true, Ordering::Relaxed);
        self.clocks.clear();
        self.threads.drain(..).map(JoinHandle::join).collect()
    }
}

/// One burner's loop: integer work the optimiser cannot remove, checking `stop` every 1,024
/// steps.
fn burn(stop: &AtomicBool, started: &Barrier) -> u64 {
    started.wait();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut loops = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..1024 {
            x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
        loops += 1;
    }
    loops
}

impl Drop for CpuBurners {
    fn drop(&mut self) {
        // A burner's panic was reported by its thread; `Drop` must not panic again.
        let _ = self.halt();
    }
}

impl fmt::Debug for CpuBurners {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuBurners")
            .field("threads", &self.threads.len())
            .finish_non_exhaustive()
    }
}
