//! `Progress`: "n of m" lines on stderr, one per benchmark measured, which `cargo xtask bench`
//! passes through while criterion's own output goes to a log.

use std::fmt;
use std::time::Instant;

/// Counts the benchmarks of one bench binary and prints a line as each completes (with its
/// headline figures). With a benchmark filter on the command line the total is an upper bound.
///
/// # Examples
///
/// ```
/// use microbench::Progress;
///
/// let mut progress = Progress::new("queue", 2);
/// progress.step("1 producer / pulsar (round 1 of 1)");
/// progress.step("2 producers / pulsar (round 1 of 1)");
/// assert_eq!(progress.done(), 2);
/// ```
pub struct Progress {
    bench: String,
    total: usize,
    /// A benchmark filter was given: `total` is an upper bound.
    filtered: bool,
    done: usize,
    started: Instant,
}

impl Progress {
    /// Progress of `total` benchmarks in `bench`.
    pub fn new(bench: impl Into<String>, total: usize) -> Self {
        Self {
            bench: bench.into(),
            total,
            filtered: crate::Settings::name_filter().is_some(),
            done: 0,
            started: Instant::now(),
        }
    }

    /// Reports the next benchmark as done, with `what` it measured.
    pub fn step(&mut self, what: impl fmt::Display) {
        self.done += 1;
        eprintln!(
            "  [{} {}/{}{} +{:.0}s] {}",
            self.bench,
            self.done,
            if self.filtered { "<=" } else { "" },
            self.total,
            self.started.elapsed().as_secs_f64(),
            what
        );
    }

    /// Benchmarks announced so far.
    pub fn done(&self) -> usize {
        self.done
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Progress")
            .field("bench", &self.bench)
            .field("done", &self.done)
            .field("total", &self.total)
            .finish()
    }
}
