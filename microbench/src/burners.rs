//! `CpuBurners`: threads that burn CPU beside a workload, for the oversubscribed variants
//! (more busy threads than cores, the normal case of a broker or client host).
//!
//! # Where the burners run
//!
//! The kernel places them, as it would two busy processes. On the 2-core reference host it
//! put both on one core for some rounds and one on each for others, and moved them only now
//! and then: a round then measured either a core left to the workload or every core busy, and
//! an executor's median depended on which rounds it drew. A throwaway probe (2026-12-03, AMD
//! EPYC host, 2 vCPUs, Linux 6.18: the hand-off at K=16 S=1, 20,000-batch chunks, each
//! thread's CPU read from `/proc` after each chunk) saw the same code run 6.6 us per batch
//! with both burners on one core and 10-16 us with one on each, for ours and crossbeam alike.
//!
//! `MICROBENCH_BURNERS=pinned` pins burner `n` to the `n`-th allowed CPU instead, so that
//! every core has a CPU hog all the time. That is a harsher case, not a steadier one: in 9
//! rounds of each hand-off configuration (3 alternated processes, 2026-12-03, with the settle
//! below), rounds in which every batch waited about one 4 ms scheduler tick (1.9-4.0 ms per
//! batch) came for ours at K=256 (2, 4 and 4 of 9 at S=1, 2, 8) and for crossbeam at K=16 (1,
//! 1 and 2 of 9): the two that spin and yield before they park. std_mpsc, flume and
//! threadpool stayed at 25-740 us per batch in every round. Unpinned, in 8 or 9 rounds each,
//! such a round came once for ours at K=256 S=2 and once at S=8, and once for crossbeam at
//! K=16 S=8. A `perf sched` trace of one of ours (K=256 S=8, pinned) showed the worker on a
//! core with a burner, getting 8.8 ms of 400: each of its turns ended after 30-150 us with a
//! `sched_yield` of the cold worker (`pulsar_common`'s `idle_spin.rs`), and the burner then
//! ran a whole ~4 ms slice. The option is there to reproduce it.
//!
//! # Why a workload settles before it is measured
//!
//! Beside the burners, freshly started threads run slowly for a while: the same probe, with
//! the hand-off at K=256 S=1 timed in 50-batch chunks from the rig's start, for ours and
//! crossbeam (the two executors it ran), saw the first chunks of most rounds at 0.4-2.7 ms
//! per batch with the burners unpinned and 1.7-3.9 ms pinned (about one 4 ms scheduler tick
//! per hand-off), and most later ones at 10-13 us (ours) or 18-24 us (crossbeam); with pinned
//! burners, whether they had just started or had run for seconds. The slow start lasted up to
//! about 0.8 s. Criterion's warm-up (0.1 s in the quick profile) is shorter, so a round's
//! median could be that start-up instead of the steady state. Each oversubscribed variant
//! therefore runs its workload for [`SETTLE`] first ([`CpuBurners::settle`]).

use crate::affinity;
use crate::cpu::ThreadCpuClock;
use std::fmt;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long a workload runs beside the burners, after its threads start, before it is
/// measured (see the module's notes).
pub const SETTLE: Duration = Duration::from_secs(1);

/// How many burners the oversubscribed variants run: with the workload's own threads, more
/// busy threads than the 2 cores of the reference machine.
pub const OVERSUBSCRIBING_BURNERS: usize = 2;

/// Threads that each run a busy loop (arithmetic on [`black_box`], no yields, no system
/// calls) until [`stop`](Self::stop) or drop; placed by the kernel, or each pinned to its own
/// allowed CPU (round robin) if `$MICROBENCH_BURNERS` is `pinned` (see the module's notes).
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
    /// Burners that pinned themselves to their CPU.
    pinned: usize,
}

/// Environment variable: `pinned` pins each burner to a CPU of its own.
pub const BURNERS_ENV: &str = "MICROBENCH_BURNERS";

/// Where the burners of this run are, for a bench's description: "placed by the kernel", or
/// "each pinned to its own core" when [`BURNERS_ENV`] asks for it.
pub fn placement() -> &'static str {
    if pinning() {
        "each pinned to its own core"
    } else {
        "placed by the kernel"
    }
}

/// Whether burners pin themselves ([`BURNERS_ENV`] is `pinned`).
pub fn pinning() -> bool {
    std::env::var(BURNERS_ENV).is_ok_and(|value| value == "pinned")
}

impl CpuBurners {
    /// Starts `count` burner threads (named `cpu-burner-<n>`); they are running when this
    /// returns.
    ///
    /// # Panics
    ///
    /// If a thread cannot be started.
    pub fn start(count: usize) -> Self {
        let cpus = if pinning() {
            affinity::allowed_cpus()
        } else {
            Vec::new()
        };
        let stop = Arc::new(AtomicBool::new(false));
        let pinned = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(Barrier::new(count + 1));
        let threads: Vec<JoinHandle<u64>> = (0..count)
            .map(|n| {
                let (stop, started) = (Arc::clone(&stop), Arc::clone(&started));
                let pinned = Arc::clone(&pinned);
                let cpu = (!cpus.is_empty()).then(|| cpus[n % cpus.len()]);
                thread::Builder::new()
                    .name(format!("cpu-burner-{n}"))
                    .spawn(move || {
                        if cpu.is_some_and(affinity::pin_current_thread) {
                            pinned.fetch_add(1, Ordering::Relaxed);
                        }
                        burn(&stop, &started)
                    })
                    .expect("start a CPU burner")
            })
            .collect();
        // Each burner pinned itself (or not) before this barrier.
        started.wait();
        let clocks = threads.iter().filter_map(ThreadCpuClock::of).collect();
        Self {
            stop,
            threads,
            clocks,
            pinned: pinned.load(Ordering::Relaxed),
        }
    }

    /// Runs the workload beside the burners for [`SETTLE`] before it is measured: `run(n)`
    /// runs `n` iterations of it, with `n` doubling from 1 while a call takes under 20 ms.
    /// Returns at once if there are no burners.
    ///
    /// # Examples
    ///
    /// ```
    /// use microbench::burners::CpuBurners;
    ///
    /// let idle = CpuBurners::start(0);
    /// let mut calls = 0;
    /// idle.settle(|_| calls += 1);
    /// assert_eq!(calls, 0, "nothing burns: nothing to settle beside");
    ///
    /// let burners = CpuBurners::start(1);
    /// let mut calls = 0;
    /// let started = std::time::Instant::now();
    /// burners.settle(|_n| calls += 1);
    /// assert!(calls > 0);
    /// assert!(started.elapsed() >= microbench::burners::SETTLE);
    /// burners.stop();
    /// ```
    pub fn settle<R>(&self, mut run: impl FnMut(u64) -> R) {
        if self.threads.is_empty() {
            return;
        }
        let start = Instant::now();
        let mut iters = 1;
        while start.elapsed() < SETTLE {
            let call = Instant::now();
            run(iters);
            if call.elapsed() < Duration::from_millis(20) {
                iters = iters.saturating_mul(2);
            }
        }
    }

    /// How many burners are pinned to a CPU of their own (round robin over the allowed
    /// CPUs): none unless pinning is asked for ([`BURNERS_ENV`]), then all where possible.
    pub fn pinned(&self) -> usize {
        self.pinned
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
            .field("pinned", &self.pinned)
            .finish_non_exhaustive()
    }
}
