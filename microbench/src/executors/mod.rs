//! The single-thread executors under test, behind one trait ([`Executor`]).
//!
//! - [`std_mpsc`]: `std::sync::mpsc` + boxed tasks + one thread: the Rust stand-in for the
//!   JDK single-thread executor's linked queue, and the baseline of the ratios.
//! - [`crossbeam`]: an unbounded crossbeam channel + boxed tasks + one thread.
//! - [`flume`]: an unbounded flume channel + boxed tasks + one thread.
//! - [`threadpool`]: the `threadpool` crate with one thread.
//! - [`delay_heap`]: Java's one-thread `ScheduledThreadPoolExecutor` (a delay heap under one
//!   lock; `execute` is `schedule(task, 0)`), not in [`NAMES`]: the `consumer_dispatch` bench's
//!   baseline.
//! - [`pulsar`]: ours, `PulsarExecutors::new_single_thread_executor`.
//!
//! A bench that runs something on every executor implements [`ExecutorVisitor`] and calls
//! [`visit_all`]; each visit is monomorphised, so no executor pays for dynamic dispatch.

pub mod crossbeam;
pub mod delay_heap;
pub mod flume;
pub mod pulsar;
pub mod std_mpsc;
pub mod threadpool;

pub use self::crossbeam::CrossbeamExecutor;
pub use self::delay_heap::{DelayHeapExecutor, DelayHeapHandle};
pub use self::flume::FlumeExecutor;
pub use self::pulsar::PulsarExecutor;
pub use self::std_mpsc::StdMpscExecutor;
pub use self::threadpool::ThreadPoolExecutor;

/// A task as the channel-based peers queue it: one heap allocation per task.
pub type BoxedTask = Box<dyn FnOnce() + Send + 'static>;

/// A single-thread executor under test.
pub trait Executor: Send + Sized + 'static {
    /// The name in reports (`std_mpsc`, `crossbeam`, `flume`, `threadpool`, `pulsar`).
    const NAME: &'static str;

    /// What submitting threads hold (one clone each).
    type Handle: Submit;

    /// Starts the executor; its worker thread exists when this returns.
    fn start() -> Self;

    /// A handle to submit tasks with.
    fn handle(&self) -> Self::Handle;

    /// Task slots allocated in the queue now, where the executor tells (ours).
    fn queue_capacity(&self) -> Option<usize> {
        None
    }

    /// Shuts down once the queued tasks ran and waits for the worker thread to exit
    /// (`threadpool` cannot be joined: it waits for the queue to empty). Every handle must have
    /// been dropped first.
    fn shutdown(self);
}

/// Submits tasks to an [`Executor`].
pub trait Submit: Clone + Send + 'static {
    /// Queues `task` on the executor's worker.
    ///
    /// # Panics
    ///
    /// If the executor refused the task (it is never shut down while handles exist).
    fn execute<F: FnOnce() + Send + 'static>(&self, task: F);
}

/// Runs something generic over each executor type.
pub trait ExecutorVisitor {
    /// Called once per executor type, in the order of [`NAMES`].
    fn visit<E: Executor>(&mut self);
}

/// The executors' names, in report order (baseline first, ours last).
pub const NAMES: [&str; 5] = [
    StdMpscExecutor::NAME,
    CrossbeamExecutor::NAME,
    FlumeExecutor::NAME,
    ThreadPoolExecutor::NAME,
    PulsarExecutor::NAME,
];

/// Visits every executor type, in the order of [`NAMES`].
pub fn visit_all(visitor: &mut impl ExecutorVisitor) {
    visitor.visit::<StdMpscExecutor>();
    visitor.visit::<CrossbeamExecutor>();
    visitor.visit::<FlumeExecutor>();
    visitor.visit::<ThreadPoolExecutor>();
    visitor.visit::<PulsarExecutor>();
}
