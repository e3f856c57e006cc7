//! `ExecutorHandle`: the part every clone of an executor shares — its core and its drop policy
//! — and the operations both executors offer in the same words (`execute`, `execute_all`,
//! `submit`, `invoke_all`, `invoke_any`, shutdown and termination), written once. The public
//! types (`SingleThreadExecutor`, `ScheduledExecutor`) hold an `Arc` of one and document each
//! operation for their users.

use crate::executors::between_batches::BetweenBatches;
use crate::executors::executor_core::{ExecutorCore, RUNNING, TERMINATED};
use crate::executors::invoke_any::{InvokeAnyError, InvokeFailure};
use crate::executors::raw_task::{Job, RawTask};
use crate::executors::rejected::RejectedExecution;
use crate::executors::staging;
use crate::executors::task::Task;
use crate::executors::task_error::TaskError;
use crate::executors::task_handle::{result_slot, Completer, TaskHandle};
use crate::sync::Arc as CoreArc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What every clone of an executor shares; its `Drop` is "the last clone went away".
pub(crate) struct ExecutorHandle<B: BetweenBatches> {
    pub(crate) core: CoreArc<ExecutorCore<B>>,
    /// Whether dropping the last clone shuts the executor down without a warning.
    pub(crate) auto_shutdown_on_drop: bool,
}

impl<B: BetweenBatches> Drop for ExecutorHandle<B> {
    fn drop(&mut self) {
        if !self.auto_shutdown_on_drop && self.core.run_state() == RUNNING {
            tracing::warn!(
                executor = %self.core.name(),
                "executor dropped without shutdown although auto_shutdown_on_drop is off; \
                 shutting it down gracefully (queued tasks still run)"
            );
        }
        ExecutorCore::shutdown(&self.core);
    }
}

/// A submitted closure with the slot its result goes to.
struct SubmitJob<F, R> {
    f: F,
    completer: Completer<R>,
}

impl<F, R> Job for SubmitJob<F, R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    fn run(self) {
        self.completer.run(self.f)
    }
}

impl<B: BetweenBatches> ExecutorHandle<B> {
    /// A handle over a new core.
    pub(crate) fn new(core: ExecutorCore<B>, auto_shutdown_on_drop: bool) -> Arc<Self> {
        Arc::new(Self {
            core: CoreArc::new(core),
            auto_shutdown_on_drop,
        })
    }

    /// Queues `job`; on refusal hands it back in its own type.
    #[inline]
    pub(crate) fn execute<J: Job>(&self, job: J) -> Result<(), RejectedExecution<J>> {
        match ExecutorCore::enqueue(&self.core, RawTask::new(job)) {
            Ok(()) => Ok(()),
            Err((raw, reason)) => match raw.downcast::<J>() {
                Ok(job) => Err(RejectedExecution::new(job, reason)),
                Err(_) => unreachable!("a rejected task comes back with its own type"),
            },
        }
    }

    /// Queues every task, under one lock, all or nothing (see `staging::execute_all`).
    pub(crate) fn execute_all<I, F>(&self, tasks: I) -> Result<(), RejectedExecution<Vec<F>>>
    where
        I: IntoIterator<Item = F>,
        F: FnOnce() + Send + 'static,
    {
        staging::execute_all(tasks, |staged| {
            ExecutorCore::enqueue_all(&self.core, staged)
        })
    }

    /// Queues `f` with a result slot; on refusal hands `f` back.
    pub(crate) fn submit<F, R>(&self, f: F) -> Result<TaskHandle<R>, RejectedExecution<F>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let (completer, handle) = result_slot(self.core.id());
        match self.execute(SubmitJob { f, completer }) {
            Ok(()) => Ok(handle),
            Err(rejected) => {
                let (job, reason) = rejected.into_parts();
                // Dropping the completer resolves the (also dropped) handle: no leak, no wait.
                Err(RejectedExecution::new(job.f, reason))
            }
        }
    }

    /// Submits every task and joins them all, in order (refused at once on the worker).
    pub(crate) fn invoke_all<F, R>(&self, tasks: Vec<F>) -> Vec<Result<R, TaskError>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        if self.core.is_current_worker() {
            return tasks
                .into_iter()
                .map(|_| Err(TaskError::WouldDeadlock))
                .collect();
        }
        let handles: Vec<_> = tasks.into_iter().map(|task| self.submit(task)).collect();
        handles
            .into_iter()
            .map(|handle| match handle {
                Ok(handle) => handle.join(),
                Err(_) => Err(TaskError::Rejected),
            })
            .collect()
    }

    /// Submits the tasks; the first success wins and the later tasks are skipped.
    ///
    /// # Errors
    ///
    /// As `SingleThreadExecutor::invoke_any` documents.
    pub(crate) fn invoke_any<F, R, E>(&self, tasks: Vec<F>) -> Result<R, InvokeAnyError<E>>
    where
        F: FnOnce() -> Result<R, E> + Send + 'static,
        R: Send + 'static,
        E: Send + 'static,
    {
        if tasks.is_empty() {
            return Err(InvokeAnyError::NoTasks);
        }
        if self.core.is_current_worker() {
            let refused = tasks
                .into_iter()
                .map(|_| InvokeFailure::Task(TaskError::WouldDeadlock));
            return Err(InvokeAnyError::AllFailed(refused.collect()));
        }
        let succeeded = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = tasks
            .into_iter()
            .map(|task| {
                let succeeded = Arc::clone(&succeeded);
                self.submit(move || {
                    if succeeded.load(Ordering::Acquire) {
                        return None; // an earlier task already succeeded: skip
                    }
                    let outcome = task();
                    if outcome.is_ok() {
                        succeeded.store(true, Ordering::Release);
                    }
                    Some(outcome)
                })
            })
            .collect();
        let mut failures = Vec::new();
        for handle in handles {
            let outcome = match handle {
                Ok(handle) => handle.join(),
                Err(_) => Err(TaskError::Rejected),
            };
            match outcome {
                Ok(Some(Ok(value))) => return Ok(value),
                Ok(Some(Err(error))) => failures.push(InvokeFailure::Failed(error)),
                Ok(None) => failures.push(InvokeFailure::Task(TaskError::Cancelled)),
                Err(error) => failures.push(InvokeFailure::Task(error)),
            }
        }
        Err(InvokeAnyError::AllFailed(failures))
    }

    pub(crate) fn shutdown(&self) {
        ExecutorCore::shutdown(&self.core);
    }

    pub(crate) fn shutdown_now(&self) -> Vec<Task> {
        ExecutorCore::shutdown_now(&self.core)
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        self.core.run_state() != RUNNING
    }

    pub(crate) fn is_terminated(&self) -> bool {
        self.core.run_state() == TERMINATED
    }

    pub(crate) fn await_termination(&self, timeout: Duration) -> bool {
        self.core.await_termination(timeout)
    }

    /// The run state in words, for `Debug`.
    pub(crate) fn state_name(&self) -> &'static str {
        match self.core.run_state() {
            RUNNING => "running",
            TERMINATED => "terminated",
            _ => "shutting down",
        }
    }
}
