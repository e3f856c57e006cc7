//! Discovery triggerers: the `DiscoveryTriggerer` trait, the `DiscoveryTrigger` it fires, and the on-demand triggerer.

use parking_lot::Mutex;
use std::fmt;
use std::sync::Arc;

/// What firing a [`DiscoveryTrigger`] did.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{DiscoveryTrigger, TriggerOutcome};
///
/// let trigger = DiscoveryTrigger::new(|_reason| TriggerOutcome::AlreadyRunning);
/// assert_eq!(trigger.fire("test"), TriggerOutcome::AlreadyRunning);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerOutcome {
    /// A discovery was queued on the discovery executor.
    Started,
    /// A discovery is queued or running already; this trigger is dropped (as in Pulsar).
    AlreadyRunning,
    /// Nothing to trigger: the triggerer is not started or was stopped, or the executor is
    /// closed.
    Inactive,
    /// The discovery thread could not be started (the thread factory failed; the executor
    /// logged why). The source stays open: the next trigger tries again.
    ThreadStartFailed,
}

/// Makes a [`BatchSourceExecutor`](crate::functions::BatchSourceExecutor) run discovery
/// (Pulsar's `BatchSourceTriggerer`).
///
/// The executor calls [`start`](Self::start) once when it is built and [`stop`](Self::stop)
/// once when it is closed, with no lock held. Between them the triggerer fires the
/// [`DiscoveryTrigger`] whenever discovery should run, from any thread; discovery itself
/// always runs on the executor's discovery thread, never on the firing thread.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{DiscoveryTrigger, DiscoveryTriggerer, TriggerOutcome};
///
/// /// Fires once, when started.
/// struct Once;
///
/// impl DiscoveryTriggerer for Once {
///     fn start(&mut self, trigger: DiscoveryTrigger) {
///         trigger.fire("started");
///     }
///
///     fn stop(&mut self) {}
/// }
///
/// let fired = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
/// let seen = std::sync::Arc::clone(&fired);
/// Once.start(DiscoveryTrigger::new(move |_| {
///     seen.store(true, std::sync::atomic::Ordering::SeqCst);
///     TriggerOutcome::Started
/// }));
/// assert!(fired.load(std::sync::atomic::Ordering::SeqCst));
/// ```
pub trait DiscoveryTriggerer: Send + 'static {
    /// Starts firing `trigger`.
    fn start(&mut self, trigger: DiscoveryTrigger);

    /// Stops firing. After it returns the triggerer should fire no more; a fire that races
    /// with it anyway is answered [`TriggerOutcome::Inactive`] once the executor is closed.
    fn stop(&mut self);
}

/// Fires a discovery: cheap, non-blocking, callable from any thread. Clones share one target.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{DiscoveryTrigger, TriggerOutcome};
///
/// let trigger = DiscoveryTrigger::new(|reason| {
///     assert_eq!(reason, "new files");
///     TriggerOutcome::Started
/// });
/// let clone = trigger.clone();
/// assert_eq!(clone.fire("new files"), TriggerOutcome::Started);
/// ```
#[derive(Clone)]
pub struct DiscoveryTrigger {
    fire: Arc<dyn Fn(&str) -> TriggerOutcome + Send + Sync>,
}

impl DiscoveryTrigger {
    /// A trigger that calls `fire` (the executor makes its own; this is for testing a
    /// triggerer on its own).
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{DiscoveryTrigger, TriggerOutcome};
    ///
    /// let inert = DiscoveryTrigger::new(|_| TriggerOutcome::Inactive);
    /// assert_eq!(inert.fire("x"), TriggerOutcome::Inactive);
    /// ```
    pub fn new(fire: impl Fn(&str) -> TriggerOutcome + Send + Sync + 'static) -> Self {
        Self {
            fire: Arc::new(fire),
        }
    }

    /// Asks for a discovery; `reason` is logged (Pulsar's `discoveredEvent`). Returns at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{DiscoveryTrigger, TriggerOutcome};
    ///
    /// let trigger = DiscoveryTrigger::new(|_| TriggerOutcome::Started);
    /// assert_eq!(trigger.fire("timer"), TriggerOutcome::Started);
    /// ```
    pub fn fire(&self, reason: &str) -> TriggerOutcome {
        (self.fire)(reason)
    }
}

impl fmt::Debug for DiscoveryTrigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DiscoveryTrigger").finish_non_exhaustive()
    }
}

/// A triggerer fired by hand, through its [`TriggerHandle`]s.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{DiscoveryTrigger, DiscoveryTriggerer, OnDemandTriggerer, TriggerOutcome};
///
/// let mut triggerer = OnDemandTriggerer::new();
/// let handle = triggerer.handle();
/// assert_eq!(handle.trigger(), TriggerOutcome::Inactive); // not started yet
/// triggerer.start(DiscoveryTrigger::new(|_| TriggerOutcome::Started));
/// assert_eq!(handle.trigger(), TriggerOutcome::Started);
/// triggerer.stop();
/// assert_eq!(handle.trigger(), TriggerOutcome::Inactive);
/// ```
#[derive(Debug, Default)]
pub struct OnDemandTriggerer {
    slot: Arc<Mutex<Option<DiscoveryTrigger>>>,
}

impl OnDemandTriggerer {
    /// A triggerer that fires only when a handle's [`trigger`](TriggerHandle::trigger) is
    /// called.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::OnDemandTriggerer;
    ///
    /// let triggerer = OnDemandTriggerer::new();
    /// let _handle = triggerer.handle();
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// A handle that fires this triggerer (cheap to clone, usable from any thread).
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{OnDemandTriggerer, TriggerOutcome};
    ///
    /// let handle = OnDemandTriggerer::new().handle();
    /// assert_eq!(handle.trigger(), TriggerOutcome::Inactive);
    /// ```
    pub fn handle(&self) -> TriggerHandle {
        TriggerHandle {
            slot: Arc::clone(&self.slot),
        }
    }
}

impl DiscoveryTriggerer for OnDemandTriggerer {
    fn start(&mut self, trigger: DiscoveryTrigger) {
        *self.slot.lock() = Some(trigger);
    }

    fn stop(&mut self) {
        let trigger = self.slot.lock().take();
        drop(trigger);
    }
}

/// Fires an [`OnDemandTriggerer`].
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{OnDemandTriggerer, TriggerOutcome};
///
/// let triggerer = OnDemandTriggerer::new();
/// let handle = triggerer.handle().clone();
/// assert_eq!(handle.trigger(), TriggerOutcome::Inactive);
/// ```
#[derive(Debug, Clone)]
pub struct TriggerHandle {
    slot: Arc<Mutex<Option<DiscoveryTrigger>>>,
}

impl TriggerHandle {
    /// Fires a discovery now (it runs on the executor's discovery thread); returns at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{DiscoveryTrigger, DiscoveryTriggerer, OnDemandTriggerer, TriggerOutcome};
    ///
    /// let mut triggerer = OnDemandTriggerer::new();
    /// triggerer.start(DiscoveryTrigger::new(|_| TriggerOutcome::Started));
    /// assert_eq!(triggerer.handle().trigger(), TriggerOutcome::Started);
    /// ```
    pub fn trigger(&self) -> TriggerOutcome {
        let trigger = self.slot.lock().clone();
        match trigger {
            Some(trigger) => trigger.fire("on demand"),
            None => TriggerOutcome::Inactive,
        }
    }
}
