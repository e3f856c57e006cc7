//! `PeriodicTriggerer`: fires discovery at a fixed rate on a `ScheduledExecutor`.

use crate::component::CLOSE_TIMEOUT;
use crate::functions::{DiscoveryTrigger, DiscoveryTriggerer};
use pulsar_common::executors::{NamedThreadFactory, ScheduledExecutor, ScheduledHandle};
use std::fmt;
use std::time::Duration;

/// The pool name of the scheduler a [`PeriodicTriggerer::with_own_scheduler`] starts.
const OWN_SCHEDULER_POOL_NAME: &str = "batch-source-triggerer";

/// Fires discovery every `period` (first after `initial_delay`, zero by default), from a
/// [`ScheduledExecutor`] timer. The timer only fires the trigger; discovery itself runs on the
/// batch source executor's discovery thread. A tick that comes while a discovery is still
/// running is dropped ([`TriggerOutcome::AlreadyRunning`](crate::functions::TriggerOutcome)).
///
/// [`stop`](DiscoveryTriggerer::stop) cancels the timer; with
/// [`with_own_scheduler`](Self::with_own_scheduler) it also shuts that scheduler down and
/// waits for its thread. A shared scheduler given to [`new`](Self::new) stays up (its owner
/// shuts it down).
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::{NamedThreadFactory, ScheduledExecutor};
/// use pulsar_server::functions::{DiscoveryTrigger, DiscoveryTriggerer, PeriodicTriggerer, TriggerOutcome};
/// use std::sync::mpsc;
/// use std::time::Duration;
///
/// let scheduler = ScheduledExecutor::new(NamedThreadFactory::new("timers"));
/// let mut triggerer = PeriodicTriggerer::new(scheduler.clone(), Duration::from_millis(1));
/// let (fired, ticks) = mpsc::channel();
/// triggerer.start(DiscoveryTrigger::new(move |reason| {
///     let _ = fired.send(reason.to_owned());
///     TriggerOutcome::Started
/// }));
/// assert_eq!(ticks.recv().unwrap(), "periodic");
/// assert_eq!(ticks.recv().unwrap(), "periodic");
/// triggerer.stop();
/// scheduler.shutdown();
/// assert!(scheduler.await_termination(Duration::from_secs(10)));
/// ```
pub struct PeriodicTriggerer {
    scheduler: ScheduledExecutor,
    /// Whether `stop` shuts the scheduler down (it was made by `with_own_scheduler`).
    owns_scheduler: bool,
    initial_delay: Duration,
    period: Duration,
    /// The armed timer, between `start` and `stop`.
    timer: Option<ScheduledHandle<()>>,
}

impl PeriodicTriggerer {
    /// Fires every `period` on `scheduler`, a shared executor this triggerer does not shut
    /// down.
    ///
    /// # Panics
    ///
    /// If `period` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_common::executors::{NamedThreadFactory, ScheduledExecutor};
    /// use pulsar_server::functions::PeriodicTriggerer;
    /// use std::time::Duration;
    ///
    /// let scheduler = ScheduledExecutor::new(NamedThreadFactory::new("pulsar-scheduled"));
    /// let triggerer = PeriodicTriggerer::new(scheduler.clone(), Duration::from_secs(60));
    /// # drop(triggerer);
    /// scheduler.shutdown();
    /// ```
    pub fn new(scheduler: ScheduledExecutor, period: Duration) -> Self {
        assert!(!period.is_zero(), "a discovery period must not be zero");
        Self {
            scheduler,
            owns_scheduler: false,
            initial_delay: Duration::ZERO,
            period,
            timer: None,
        }
    }

    /// Fires every `period` on a scheduler of its own (thread
    /// `batch-source-triggerer-{pool}-1`, started with the first timer), shut down by `stop`.
    ///
    /// # Panics
    ///
    /// If `period` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{DiscoveryTrigger, DiscoveryTriggerer, PeriodicTriggerer, TriggerOutcome};
    /// use std::time::Duration;
    ///
    /// let mut triggerer = PeriodicTriggerer::with_own_scheduler(Duration::from_secs(3600));
    /// triggerer.start(DiscoveryTrigger::new(|_| TriggerOutcome::Started));
    /// triggerer.stop(); // cancels the timer and stops the scheduler's thread
    /// ```
    pub fn with_own_scheduler(period: Duration) -> Self {
        let scheduler = ScheduledExecutor::new(NamedThreadFactory::new(OWN_SCHEDULER_POOL_NAME));
        let mut triggerer = Self::new(scheduler, period);
        triggerer.owns_scheduler = true;
        triggerer
    }

    /// Waits `initial_delay` before the first fire (default: fire at once).
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::PeriodicTriggerer;
    /// use std::time::Duration;
    ///
    /// let triggerer = PeriodicTriggerer::with_own_scheduler(Duration::from_secs(60))
    ///     .initial_delay(Duration::from_secs(5));
    /// # drop(triggerer);
    /// ```
    pub fn initial_delay(mut self, initial_delay: Duration) -> Self {
        self.initial_delay = initial_delay;
        self
    }
}

impl DiscoveryTriggerer for PeriodicTriggerer {
    fn start(&mut self, trigger: DiscoveryTrigger) {
        if let Some(previous) = self.timer.take() {
            previous.cancel();
        }
        let armed =
            self.scheduler
                .schedule_at_fixed_rate(self.initial_delay, self.period, move || {
                    trigger.fire("periodic");
                });
        match armed {
            Ok(timer) => self.timer = Some(timer),
            Err(rejected) => tracing::error!(
                %rejected,
                "cannot arm the periodic discovery timer; discovery will not be triggered"
            ),
        }
    }

    fn stop(&mut self) {
        if let Some(timer) = self.timer.take() {
            timer.cancel();
        }
        if self.owns_scheduler {
            self.scheduler.shutdown();
            if !self.scheduler.await_termination(CLOSE_TIMEOUT) {
                tracing::warn!(
                    scheduler = %self.scheduler.name(),
                    "the discovery triggerer's scheduler did not terminate in time"
                );
            }
        }
    }
}

impl Drop for PeriodicTriggerer {
    fn drop(&mut self) {
        if let Some(timer) = self.timer.take() {
            timer.cancel();
        }
        if self.owns_scheduler {
            self.scheduler.shutdown();
        }
    }
}

impl fmt::Debug for PeriodicTriggerer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeriodicTriggerer")
            .field("scheduler", &self.scheduler.name())
            .field("owns_scheduler", &self.owns_scheduler)
            .field("initial_delay", &self.initial_delay)
            .field("period", &self.period)
            .field("running", &self.timer.is_some())
            .finish()
    }
}
