//! `CpuHogs`: threads that burn CPU beside a benchmark, to show what a spin costs when the
//! machine has more runnable threads than cores.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

/// `n` threads that compute without pause until dropped.
///
/// A waiter that spins while its producer is descheduled behind a hog wastes its time slice,
/// and one that yields hands its core to a hog for a whole slice: running a workload beside
/// hogs shows whether a spin-before-park still pays when it cannot win. The hogs are threads
/// of the bench process, so process CPU figures measured beside them include theirs.
///
/// # Examples
///
/// ```
/// use microbench::hogs::CpuHogs;
///
/// let hogs = CpuHogs::start(2);
/// assert_eq!(hogs.len(), 2);
/// drop(hogs); // stops and joins them
/// ```
#[derive(Debug)]
pub struct CpuHogs {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl CpuHogs {
    /// Starts `n` hogs, named `cpu-hog-<i>`.
    ///
    /// # Panics
    ///
    /// If a thread cannot be started.
    pub fn start(n: usize) -> CpuHogs {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|i| {
                let stop = Arc::clone(&stop);
                thread::Builder::new()
                    .name(format!("cpu-hog-{i}"))
                    .spawn(move || burn(&stop))
                    .expect("start a CPU hog")
            })
            .collect();
        CpuHogs { stop, threads }
    }

    /// Number of hogs.
    pub fn len(&self) -> usize {
        self.threads.len()
    }

    /// Whether there are no hogs.
    pub fn is_empty(&self) -> bool {
        self.threads.is_empty()
    }
}

/// Arithmetic in rounds of 4096 steps, checking `stop` between rounds.
fn burn(stop: &AtomicBool) {
    let mut x: u64 = 1;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..4096 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    black_box(x);
}

impl Drop for CpuHogs {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}
