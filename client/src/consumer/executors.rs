//! `ConsumerExecutor`: where a consumer hands its work, and the executors one consumer uses.

use crate::consumer::ConsumerJob;
use crate::executor_provider::ExecutorProvider;
use pulsar_common::executors::{RejectReason, ScheduledExecutor, SingleThreadExecutor};
use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// An executor refused a [`ConsumerJob`]. The job is dropped; the consumer still holds the
/// messages it concerned: [`Consumer::close`](crate::Consumer::close) returns those that are
/// never delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobRejected {
    /// The executor was shut down: it will never accept work again. The consumer does not offer
    /// the refused jobs again.
    ShutDown,
    /// The executor could not start its thread (the thread factory failed or panicked; the
    /// executor logged why) and stays open: a later job may be accepted. The consumer offers
    /// the refused listener jobs again at its next hand-over to that executor.
    ThreadStartFailed,
}

impl JobRejected {
    /// The rejection for our executors' [`RejectReason`].
    fn from_reason(reason: &RejectReason) -> Self {
        match reason {
            RejectReason::ThreadStartFailed(_) => JobRejected::ThreadStartFailed,
            _ => JobRejected::ShutDown,
        }
    }
}

impl fmt::Display for JobRejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobRejected::ShutDown => {
                f.write_str("the executor refused the consumer's job: it has been shut down")
            }
            JobRejected::ThreadStartFailed => f.write_str(
                "the executor refused the consumer's job: its thread could not be started",
            ),
        }
    }
}

impl Error for JobRejected {}

/// An executor a consumer can hand its work to: it runs jobs on one thread at a time, in the
/// order they were given (a single-thread executor).
///
/// Implemented for [`SingleThreadExecutor`] and [`ScheduledExecutor`] (whose `execute` is its
/// FIFO fast path). Implement it to run a consumer on another executor, e.g. to compare
/// executors under the same dispatch code.
///
/// Contract: `execute_job` must queue the job and return, never run it inline, and must not
/// call back into the consumer; the consumer may call it while holding its routing lock.
///
/// # Examples
///
/// ```
/// use pulsar_client::{ConsumerExecutor, ConsumerJob, JobRejected};
/// use std::sync::mpsc;
/// use std::sync::Mutex;
///
/// /// A thread fed through a standard channel.
/// #[derive(Debug)]
/// struct ChannelExecutor(Mutex<mpsc::Sender<ConsumerJob>>);
///
/// impl ConsumerExecutor for ChannelExecutor {
///     fn execute_job(&self, job: ConsumerJob) -> Result<(), JobRejected> {
///         self.0.lock().unwrap().send(job).map_err(|_| JobRejected::ShutDown)
///     }
/// }
///
/// let (tx, rx) = mpsc::channel::<ConsumerJob>();
/// std::thread::spawn(move || rx.iter().for_each(ConsumerJob::run));
/// let executor = ChannelExecutor(Mutex::new(tx));
/// # let _ = &executor;
/// ```
pub trait ConsumerExecutor: Send + Sync + fmt::Debug + 'static {
    /// Queues `job` to run after the jobs queued before it.
    ///
    /// # Errors
    ///
    /// [`JobRejected::ShutDown`] when the executor no longer accepts work;
    /// [`JobRejected::ThreadStartFailed`] when it cannot run it now but may later.
    fn execute_job(&self, job: ConsumerJob) -> Result<(), JobRejected>;

    /// Queues every job of `jobs`, in order, as separate jobs; `jobs` is left empty. The
    /// consumer hands a lane's share of a routing batch over in one call.
    ///
    /// The default queues them one [`execute_job`](Self::execute_job) at a time; override it
    /// when the executor can take a batch more cheaply (ours takes its queue lock once).
    ///
    /// # Errors
    ///
    /// [`JobRejected`] if the executor refused any of them (the refused jobs are dropped); the
    /// last refusal's kind.
    fn execute_jobs(&self, jobs: &mut Vec<ConsumerJob>) -> Result<(), JobRejected> {
        let mut outcome = Ok(());
        for job in jobs.drain(..) {
            if let Err(rejected) = self.execute_job(job) {
                outcome = Err(rejected);
            }
        }
        outcome
    }
}

impl ConsumerExecutor for SingleThreadExecutor {
    #[inline]
    fn execute_job(&self, job: ConsumerJob) -> Result<(), JobRejected> {
        self.execute(move || job.run())
            .map_err(|rejected| JobRejected::from_reason(rejected.reason()))
    }

    /// One [`SingleThreadExecutor::execute_all`]: one lock of the queue for the whole batch.
    fn execute_jobs(&self, jobs: &mut Vec<ConsumerJob>) -> Result<(), JobRejected> {
        self.execute_all(jobs.drain(..).map(|job| move || job.run()))
            .map_err(|rejected| JobRejected::from_reason(rejected.reason()))
    }
}

impl ConsumerExecutor for ScheduledExecutor {
    #[inline]
    fn execute_job(&self, job: ConsumerJob) -> Result<(), JobRejected> {
        self.execute(move || job.run())
            .map_err(|rejected| JobRejected::from_reason(rejected.reason()))
    }

    /// One [`ScheduledExecutor::execute_all`] (the FIFO fast path, one lock for the batch).
    fn execute_jobs(&self, jobs: &mut Vec<ConsumerJob>) -> Result<(), JobRejected> {
        self.execute_all(jobs.drain(..).map(|job| move || job.run()))
            .map_err(|rejected| JobRejected::from_reason(rejected.reason()))
    }
}

/// The executors one consumer uses, pinned for its lifetime: the internal executor (its
/// listener trigger runs there) and the listener executors (one pinned for Exclusive, Failover
/// and Shared subscriptions; all of them, chosen per message key, for Key_Shared).
///
/// # Examples
///
/// ```
/// use pulsar_client::{ConsumerExecutors, ExecutorProvider};
///
/// let internal = ExecutorProvider::new(1, "pulsar-client-internal").unwrap();
/// let external = ExecutorProvider::new(4, "pulsar-external-listener").unwrap();
/// let executors = ConsumerExecutors::from_providers(&internal, &external);
/// assert_eq!(executors.listener_count(), 4);
/// ```
#[derive(Clone, Debug)]
pub struct ConsumerExecutors {
    pub(crate) internal: Arc<dyn ConsumerExecutor>,
    pub(crate) listeners: Vec<Arc<dyn ConsumerExecutor>>,
    pub(crate) pinned_listener: usize,
}

impl ConsumerExecutors {
    /// The internal executor, the listener executors (in the order Key_Shared indexes them),
    /// and which of them is pinned for the other subscription types.
    ///
    /// # Panics
    ///
    /// If `listeners` is empty or `pinned_listener` is not an index into it.
    pub fn new(
        internal: Arc<dyn ConsumerExecutor>,
        listeners: Vec<Arc<dyn ConsumerExecutor>>,
        pinned_listener: usize,
    ) -> Self {
        assert!(
            pinned_listener < listeners.len(),
            "pinned listener {pinned_listener} out of {} listener executors",
            listeners.len()
        );
        Self {
            internal,
            listeners,
            pinned_listener,
        }
    }

    /// Pins executors the way Pulsar's `ConsumerBase` does: the next internal executor round
    /// robin, the next listener executor round robin, and the whole listener pool in index
    /// order for Key_Shared (so a key picks the executor Pulsar's Java client would).
    pub fn from_providers(internal: &ExecutorProvider, external: &ExecutorProvider) -> Self {
        let pinned = external.get_executor();
        let pinned_listener = external
            .executors()
            .iter()
            .position(|executor| std::ptr::eq(executor, pinned))
            .expect("get_executor returns a reference into executors()");
        let listeners = external
            .executors()
            .iter()
            .map(|executor| Arc::new(executor.clone()) as Arc<dyn ConsumerExecutor>)
            .collect();
        Self::new(
            Arc::new(internal.get_executor().clone()),
            listeners,
            pinned_listener,
        )
    }

    /// Number of listener executors.
    pub fn listener_count(&self) -> usize {
        self.listeners.len()
    }
}
