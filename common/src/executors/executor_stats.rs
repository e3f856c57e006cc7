//! `ExecutorStats`: a snapshot of an executor's counters, taken without its queue lock.

use std::iter::Sum;
use std::ops::{Add, AddAssign};
use std::time::Duration;

/// A snapshot of an executor's counters (`stats()` on an executor, a group or a provider: the
/// latter two sum their members).
///
/// Taking one never takes the queue lock: it reads a few atomics, so it is cheap enough for a
/// metrics scrape at any rate. The counters are updated as the executor works, so a snapshot
/// taken while it runs may be a task or a batch behind; once the executor is idle (or
/// terminated) they are exact. Counters never go backwards.
///
/// - `submitted`: tasks accepted (`execute`, each task of `execute_all`, `submit`,
///   `schedule*`, each poll of a `spawn`ed future; a periodic timer counts again each time it
///   is re-armed for its next run, as Java's task count does). Refused tasks are not counted
///   here but in `rejected`.
/// - `completed`: tasks the worker ran, whether they returned or panicked (Java's
///   `getCompletedTaskCount`); each run of a periodic timer counts.
/// - `panicked`: those of `completed` that panicked.
/// - `rejected`: tasks refused (after shutdown, or because the worker thread could not start);
///   each task of a refused `execute_all` batch counts.
/// - `pending`: tasks accepted and not yet finished — queued, running, or timers armed —
///   excluding those `shutdown_now` handed back, cancelled timers and cancelled tasks (from
///   the moment `cancel` returns `true`, though their entries stay queued as no-ops until the
///   worker passes them). Java's task count minus its completed count.
/// - `queue_capacity`: task slots allocated (ring plus batch), as of the worker's last refill
///   or trim: exact once the executor is idle.
/// - `worker_wakeups`: how often a producer had to wake the parked worker.
/// - `busy`: time the worker spent running tasks: from the moment it finds work after being
///   idle until it next runs dry (so it includes the worker's few instructions between tasks
///   and batches, not its spinning or parking). A period still running is added when it ends.
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::PulsarExecutors;
/// use std::time::Duration;
///
/// let executor = PulsarExecutors::new_single_thread_executor();
/// for i in 0..10 {
///     executor.execute(move || assert!(i < 9, "task {i}")).unwrap();
/// }
/// executor.shutdown();
/// assert!(executor.await_termination(Duration::from_secs(10)));
/// assert!(executor.execute(|| ()).is_err());
///
/// let stats = executor.stats();
/// assert_eq!(stats.submitted, 10);
/// assert_eq!(stats.completed, 10);
/// assert_eq!(stats.panicked, 1);
/// assert_eq!(stats.rejected, 1);
/// assert_eq!(stats.pending, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecutorStats {
    /// Tasks accepted.
    pub submitted: u64,
    /// Tasks run to their end or to a panic.
    pub completed: u64,
    /// Tasks that panicked (counted in `completed` too).
    pub panicked: u64,
    /// Tasks refused.
    pub rejected: u64,
    /// Tasks accepted and not yet finished, handed back or cancelled.
    pub pending: u64,
    /// Task slots allocated.
    pub queue_capacity: usize,
    /// Wake-up calls producers made to the parked worker.
    pub worker_wakeups: u64,
    /// Time spent running tasks.
    pub busy: Duration,
}

impl Add for ExecutorStats {
    type Output = ExecutorStats;

    fn add(mut self, other: ExecutorStats) -> ExecutorStats {
        self += other;
        self
    }
}

impl AddAssign for ExecutorStats {
    fn add_assign(&mut self, other: ExecutorStats) {
        self.submitted += other.submitted;
        self.completed += other.completed;
        self.panicked += other.panicked;
        self.rejected += other.rejected;
        self.pending += other.pending;
        self.queue_capacity += other.queue_capacity;
        self.worker_wakeups += other.worker_wakeups;
        self.busy += other.busy;
    }
}

impl Sum for ExecutorStats {
    fn sum<I: Iterator<Item = ExecutorStats>>(iter: I) -> ExecutorStats {
        iter.fold(ExecutorStats::default(), Add::add)
    }
}
