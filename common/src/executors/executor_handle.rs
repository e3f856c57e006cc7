//! `ExecutorHandle`: the part every clone of an executor shares — its core and its drop
//! policy. Its `Drop` is "the last clone went away".

use crate::executors::between_batches::BetweenBatches;
use crate::executors::executor_core::{ExecutorCore, RUNNING};
use crate::executors::worker_lifecycle::log_guarded;
use crate::sync::Arc as CoreArc;

/// What every clone of a [`SingleWorkerExecutor`](crate::executors::SingleWorkerExecutor)
/// shares.
pub(crate) struct ExecutorHandle<B: BetweenBatches> {
    pub(crate) core: CoreArc<ExecutorCore<B>>,
    /// Whether dropping the last clone shuts the executor down without a warning.
    pub(crate) auto_shutdown_on_drop: bool,
}

impl<B: BetweenBatches> Drop for ExecutorHandle<B> {
    fn drop(&mut self) {
        let unexpected = !self.auto_shutdown_on_drop && self.core.run_state() == RUNNING;
        // The shutdown first: the warning is user code (a tracing layer) and must not keep
        // the executor from shutting down, nor unwind out of `Drop`.
        ExecutorCore::shutdown(&self.core);
        // Work no worker will ever run (its thread could not start, and neither could the
        // shutdown's retry) is dropped now, as the core's own `Drop` would drop it: a spawned
        // future's poll job holds the core, so with one queued that drop would never come, and
        // the future's handle would wait forever.
        ExecutorCore::drop_unrunnable(&self.core);
        if unexpected {
            log_guarded(|| {
                tracing::warn!(
                    executor = %self.core.name(),
                    "executor dropped without shutdown although auto_shutdown_on_drop is off; \
                     shut it down gracefully (queued tasks still run)"
                )
            });
        }
    }
}
