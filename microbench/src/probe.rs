//! `Probe`: reads the clocks and allocation counters around exactly the timed work of each
//! criterion sample (`iter_custom`), and summarises the measured samples.

use crate::alloc::{self, AllocStats};
use crate::cpu::{self, ThreadCpuClock};
use std::fmt;
use std::time::Duration;

/// The most the excluded threads' clocks may advance around one read of the process clock
/// before the reading is taken again (a few system calls' worth on two burning threads).
const MAX_EXCLUDED_READ_SKEW: Duration = Duration::from_micros(50);
/// Reads of the clocks tried before the last one is used as it is.
const EXCLUDED_READ_ATTEMPTS: u32 = 8;

/// What one call of an `iter_custom` routine measured.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Iterations criterion asked for.
    pub iters: u64,
    /// Units of work done (batches, items): `iters` times the units per iteration.
    pub units: u64,
    /// Wall time of the timed work.
    pub wall: Duration,
    /// Process CPU time (all threads but those excluded, see [`Probe::excluding_cpu_of`]) over
    /// the timed work, if the platform has the clocks.
    pub cpu: Option<Duration>,
    /// CPU time of the worker thread under test, if the bench can read it.
    pub worker_cpu: Option<Duration>,
    /// Allocations made meanwhile, by every thread.
    pub alloc: AllocStats,
}

/// Collects the [`Sample`]s of one benchmark (one group, variant and round).
///
/// Criterion calls the routine first for warm-up (1, 2, 4, ... iterations) and then
/// `sample_size` times for the measurement; [`summary`](Self::summary) uses only the last
/// `sample_size` calls.
///
/// # Examples
///
/// ```
/// use microbench::Probe;
/// use std::time::{Duration, Instant};
///
/// let mut probe = Probe::new();
/// for iters in [1, 2, 4] {
///     probe.sample(iters, 1, None, |iters| {
///         let start = Instant::now();
///         let v: Vec<u64> = (0..iters).collect(); // one allocation per sample
///         std::hint::black_box(v);
///         start.elapsed()
///     });
/// }
/// let summary = probe.summary(2).unwrap();
/// assert_eq!(summary.samples, 2);
/// assert_eq!(summary.units, 6);
/// ```
#[derive(Default)]
pub struct Probe {
    samples: Vec<Sample>,
    /// Threads whose CPU time is not the workload's (CPU burners): subtracted from the
    /// process's.
    excluded: Vec<ThreadCpuClock>,
}

impl Probe {
    /// An empty probe.
    pub fn new() -> Self {
        Self {
            samples: Vec::with_capacity(256),
            excluded: Vec::new(),
        }
    }

    /// Leaves the CPU time of the threads behind `clocks` (CPU burners beside the workload)
    /// out of every sample's [`Sample::cpu`]. The clocks must stay valid (their threads alive)
    /// while this probe samples.
    pub fn excluding_cpu_of(mut self, clocks: &[ThreadCpuClock]) -> Self {
        self.excluded = clocks.to_vec();
        self
    }

    /// Process CPU time minus the excluded threads', or `None` if a clock cannot be read.
    ///
    /// The excluded threads burn CPU while the clocks are read, so their clocks are read just
    /// before and just after the process clock and the mean is taken; if the reading thread
    /// was preempted in between (the two readings differ by more than
    /// [`MAX_EXCLUDED_READ_SKEW`]; on an oversubscribed machine that is a whole time slice,
    /// which would move the figure by milliseconds), the reads are taken again.
    fn workload_cpu(&self) -> Option<Duration> {
        if self.excluded.is_empty() {
            return cpu::process_time();
        }
        let excluded = || -> Option<Duration> {
            self.excluded
                .iter()
                .map(ThreadCpuClock::read)
                .sum::<Option<Duration>>()
        };
        let mut reading = None;
        for _ in 0..EXCLUDED_READ_ATTEMPTS {
            let before = excluded()?;
            let process = cpu::process_time()?;
            let after = excluded()?;
            let skew = after.saturating_sub(before);
            let workload = process.saturating_sub(before + skew / 2);
            reading = Some(workload);
            if skew <= MAX_EXCLUDED_READ_SKEW {
                break;
            }
        }
        reading
    }

    /// Measures one sample: `work(iters)` does `iters` iterations of `units_per_iter` units
    /// each and returns their wall time (so it can leave set-up and signalling out).
    /// `worker_cpu`, if given, reads the CPU clock of the worker under test; it runs outside
    /// the allocation window. Returns the wall time for criterion.
    pub fn sample(
        &mut self,
        iters: u64,
        units_per_iter: u64,
        worker_cpu: Option<&dyn Fn() -> Option<Duration>>,
        work: impl FnOnce(u64) -> Duration,
    ) -> Duration {
        if self.samples.len() == self.samples.capacity() {
            self.samples.reserve(self.samples.len().max(64));
        }
        let worker_before = worker_cpu.and_then(|read| read());
        let alloc_before = alloc::snapshot();
        let cpu_before = self.workload_cpu();
        let wall = work(iters);
        let cpu_after = self.workload_cpu();
        let alloc_after = alloc::snapshot();
        let worker_after = worker_cpu.and_then(|read| read());
        let cpu = match (cpu_before, cpu_after) {
            (Some(before), Some(after)) => Some(after.saturating_sub(before)),
            _ => None,
        };
        let worker_cpu = match (worker_before, worker_after) {
            (Some(before), Some(after)) => Some(after.saturating_sub(before)),
            _ => None,
        };
        self.samples.push(Sample {
            iters,
            units: iters * units_per_iter,
            wall,
            cpu,
            worker_cpu,
            alloc: alloc_after.since(&alloc_before),
        });
        wall
    }

    /// Every sample so far, warm-up included.
    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    /// Summarises the last `measured` samples (criterion's `sample_size`); `None` if there were
    /// none (the benchmark was filtered out, or only listed).
    pub fn summary(&self, measured: usize) -> Option<Summary> {
        let start = self.samples.len().saturating_sub(measured);
        let measured = &self.samples[start..];
        if measured.is_empty() {
            return None;
        }
        let mut per_iter: Vec<f64> = measured
            .iter()
            .map(|s| s.wall.as_nanos() as f64 / s.iters.max(1) as f64)
            .collect();
        per_iter.sort_by(f64::total_cmp);
        let units: u64 = measured.iter().map(|s| s.units).sum();
        let iters: u64 = measured.iter().map(|s| s.iters).sum();
        let per_unit = |total: f64| total / units.max(1) as f64;
        let total_cpu = |pick: fn(&Sample) -> Option<Duration>| -> Option<f64> {
            measured
                .iter()
                .map(|s| pick(s).map(|d| d.as_nanos() as f64))
                .sum::<Option<f64>>()
        };
        let alloc = measured
            .iter()
            .fold(AllocStats::default(), |acc, s| AllocStats {
                allocations: acc.allocations + s.alloc.allocations,
                reallocations: acc.reallocations + s.alloc.reallocations,
                bytes_allocated: acc.bytes_allocated + s.alloc.bytes_allocated,
                frees: acc.frees + s.alloc.frees,
                bytes_freed: acc.bytes_freed + s.alloc.bytes_freed,
            });
        Some(Summary {
            samples: measured.len(),
            iters,
            units,
            wall_ns_per_iter: median_sorted(&per_iter),
            wall_ns_per_iter_min: per_iter[0],
            wall_ns_per_iter_max: per_iter[per_iter.len() - 1],
            wall_ns_per_unit: measured
                .iter()
                .map(|s| s.wall.as_nanos() as f64)
                .sum::<f64>()
                / units.max(1) as f64,
            cpu_ns_per_unit: total_cpu(|s| s.cpu).map(per_unit),
            worker_cpu_ns_per_unit: total_cpu(|s| s.worker_cpu).map(per_unit),
            allocations_per_unit: per_unit(alloc.allocations as f64),
            bytes_per_unit: per_unit(alloc.bytes_allocated as f64),
            alloc,
        })
    }
}

fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

impl fmt::Debug for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Probe")
            .field("samples", &self.samples.len())
            .field("excluded_threads", &self.excluded.len())
            .finish()
    }
}

/// The measured samples of one benchmark, reduced.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    /// Samples used.
    pub samples: usize,
    /// Iterations over those samples.
    pub iters: u64,
    /// Units of work over those samples.
    pub units: u64,
    /// Median over samples of wall time per iteration (criterion's view), in ns.
    pub wall_ns_per_iter: f64,
    /// Fastest sample's wall time per iteration, in ns.
    pub wall_ns_per_iter_min: f64,
    /// Slowest sample's wall time per iteration, in ns.
    pub wall_ns_per_iter_max: f64,
    /// Total wall time over total units, in ns.
    pub wall_ns_per_unit: f64,
    /// Process CPU time per unit, in ns.
    pub cpu_ns_per_unit: Option<f64>,
    /// Worker-thread CPU time per unit, in ns.
    pub worker_cpu_ns_per_unit: Option<f64>,
    /// Allocations per unit.
    pub allocations_per_unit: f64,
    /// Bytes allocated per unit (reallocation growth included).
    pub bytes_per_unit: f64,
    /// The allocation totals over the measured samples.
    pub alloc: AllocStats,
}
