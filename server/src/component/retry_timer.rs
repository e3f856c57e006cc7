//! `RetryTimer`: runs a component's retry of a failed step some time later, one at a time.
//!
//! A component whose step failed for a reason that no later event will announce (a store
//! operation that timed out while the connection stayed up) must try again by itself, or it
//! waits for good: a leader election with no leader, a load cache that keeps a departed
//! broker. Pulsar's `LeaderElectionImpl` re-runs its election 5 s after a failure for this
//! reason. The timer is a `ScheduledExecutor` of its own, `{pool_name}-retry`, recorded in the
//! component's threads and started only by the first retry; the retry it runs should only
//! queue the step on the component's executor, so that the step keeps its order there.

use crate::component::threads::ComponentThreads;
use crate::component::CLOSE_TIMEOUT;
use pulsar_common::executors::{
    ExecutorBuilder, NamedThreadFactory, RejectReason, ScheduledExecutor,
};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A lazily started timer for a component's retries; at most one retry armed at a time.
pub(crate) struct RetryTimer {
    timer: ScheduledExecutor,
    delay: Duration,
    /// A retry is armed and has not started yet.
    armed: Arc<AtomicBool>,
}

impl RetryTimer {
    /// A timer named `{pool_name}-retry`, whose thread is recorded in `threads`; each retry
    /// runs `delay` after it is armed.
    pub(crate) fn new(pool_name: &str, threads: &ComponentThreads, delay: Duration) -> Self {
        let factory = NamedThreadFactory::new(format!("{pool_name}-retry"));
        let timer = ExecutorBuilder::new()
            .thread_factory(threads.tracking(Arc::new(factory)))
            .auto_shutdown_on_drop(false)
            .build();
        Self {
            timer,
            delay,
            armed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The delay between arming a retry and running it.
    pub(crate) fn delay(&self) -> Duration {
        self.delay
    }

    /// Runs `retry` on the timer's thread after the delay, unless a retry is armed already (the
    /// armed one does the same work). `false` if none was armed by this call: one was armed
    /// already, the timer is closed, or its thread could not start (logged; the next call tries
    /// again).
    pub(crate) fn arm(&self, what: &'static str, retry: impl FnOnce() + Send + 'static) -> bool {
        if self.armed.swap(true, Ordering::AcqRel) {
            return false;
        }
        let armed = Arc::clone(&self.armed);
        let scheduled = self.timer.schedule(self.delay, move || {
            // Cleared first: a failure of the step the retry queues may arm the next retry.
            armed.store(false, Ordering::Release);
            retry();
        });
        match scheduled {
            Ok(_) => true,
            Err(rejected) => {
                self.armed.store(false, Ordering::Release);
                if matches!(rejected.reason(), RejectReason::ThreadStartFailed(_)) {
                    tracing::error!(retry = what, reason = %rejected.reason(), "cannot arm a retry");
                }
                false
            }
        }
    }

    /// Stops the timer (an armed retry is dropped, unrun) and waits up to [`CLOSE_TIMEOUT`] for
    /// a retry running now. Called from a retry itself, it does not wait for it. Idempotent.
    pub(crate) fn close(&self) {
        drop(self.timer.shutdown_now());
        if !self.timer.await_termination(CLOSE_TIMEOUT) && !self.timer.is_current_worker() {
            tracing::warn!(executor = %self.timer.name(), "a retry is still running after close");
        }
    }
}

impl fmt::Debug for RetryTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryTimer")
            .field("delay", &self.delay)
            .field("armed", &self.armed.load(Ordering::Relaxed))
            .field("timer", &self.timer)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn one_retry_is_armed_at_a_time_runs_after_the_delay_and_the_next_can_be_armed() {
        let threads = ComponentThreads::new();
        let timer = RetryTimer::new("test-component", &threads, Duration::from_millis(1));
        assert!(
            threads.names().is_empty(),
            "no thread before the first retry"
        );
        let (ran, runs) = mpsc::channel();
        let (release, held) = mpsc::channel::<()>();
        let first = ran.clone();
        assert!(timer.arm("first", move || {
            first.send("first").unwrap();
            let _ = held.recv();
        }));
        assert_eq!(runs.recv().unwrap(), "first");
        // The first is running (no longer armed): the next can be armed; a third cannot.
        let second = ran.clone();
        assert!(timer.arm("second", move || second.send("second").unwrap()));
        assert!(!timer.arm("third", move || ran.send("third").unwrap()));
        drop(release);
        assert_eq!(runs.recv().unwrap(), "second");
        timer.close();
        assert!(runs.try_recv().is_err(), "the third was never armed");
        assert_eq!(threads.names().len(), 1);
        assert!(threads.names()[0].starts_with("test-component-retry-"));
        assert!(
            threads.await_exit(Duration::from_secs(10)),
            "closed: its thread exits"
        );
        assert!(!timer.arm("after close", || {}), "closed: nothing is armed");
    }

    #[test]
    fn close_drops_an_armed_retry_unrun() {
        let threads = ComponentThreads::new();
        let timer = RetryTimer::new("test-component", &threads, Duration::from_secs(3600));
        let (ran, runs) = mpsc::channel::<()>();
        assert!(timer.arm("armed", move || ran.send(()).unwrap()));
        timer.close();
        assert!(runs.recv().is_err(), "dropped unrun: its sender is gone");
    }
}
