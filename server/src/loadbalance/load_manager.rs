//! `LoadManager` (Pulsar's `ModularLoadManagerImpl`): registers this broker's load report,
//! keeps a cache of every live broker's report and of the failure domains, refreshed on its own
//! `load-manager` thread whenever the metadata under them changes, and places bundles.
//!
//! | trigger (queued from the store's thread) | step on `load-manager` |
//! |---|---|
//! | any change under `/loadbalance/brokers` or `/loadbalance/failure-domains` | refresh |
//! | `SessionReestablished` | register this broker again (its node went with the session), refresh |
//! | `Resync` (after `Reconnected` or `SessionReestablished`: changes may have gone unnotified) | refresh |
//!
//! Refreshes are coalesced: a burst of changes queues one refresh, which reads everything
//! after the last of them. A refresh replaces the cache whole; brokers whose node is gone drop
//! out of it and out of placement, and the bundles placed on them are forgotten.

use crate::component::retry_timer::RetryTimer;
use crate::component::threads::ComponentThreads;
use crate::component::user_code::call_user;
use crate::component::ComponentExecutor;
use crate::loadbalance::error::LoadManagerError;
use crate::loadbalance::placement::PlacementView;
use crate::loadbalance::report::{FailureDomain, LoadReport};
use crate::loadbalance::{BROKERS_ROOT, FAILURE_DOMAINS_ROOT};
use crate::metadata::path;
use crate::metadata::{
    ExpectedVersion, MetadataStore, MetadataStoreError, Notification, NotificationType,
    SessionEvent, StoreListeners,
};
use parking_lot::Mutex;
use pulsar_common::executors::RejectReason;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How long after a failed refresh or re-registration it is tried again (as the leader
/// service's election retry): a step that failed while the connection stayed up (a timed-out
/// read) has no later event to start it again.
const RETRY_DELAY: Duration = Duration::from_secs(5);

type CacheListener = Arc<dyn Fn(&[String]) + Send + Sync>;

/// Brokers' load reports on the metadata store, cached and refreshed on change, and bundle
/// placement over the live brokers (Pulsar's `ModularLoadManagerImpl`).
///
/// Each broker runs one, on its own store (its own session): its report is an ephemeral node,
/// so a broker that stops or loses its session drops out of every other broker's cache.
///
/// # Examples
///
/// ```
/// use pulsar_server::loadbalance::{LoadManager, LoadReport};
/// use pulsar_server::metadata::MetadataStore;
///
/// let store = MetadataStore::open("memory:load-manager-doc").unwrap();
/// let report = LoadReport { cpu: 0.3, ..LoadReport::default() };
/// let manager = LoadManager::start(store.clone(), "broker-1:8080", report).unwrap();
/// assert_eq!(manager.available_brokers(), ["broker-1:8080"]);
/// assert_eq!(
///     manager.select_broker("public/default/0x00000000_0xffffffff").unwrap().as_deref(),
///     Some("broker-1:8080")
/// );
/// manager.stop();
/// store.close();
/// ```
#[derive(Clone)]
pub struct LoadManager {
    inner: Arc<ManagerInner>,
}

/// What the refreshes maintain and placement reads.
#[derive(Default)]
struct Cache {
    /// Live brokers' reports by id.
    brokers: BTreeMap<String, LoadReport>,
    /// Broker id to failure domain.
    domains: HashMap<String, String>,
    /// Bundles placed by this load manager, to the broker chosen (Pulsar's preallocated
    /// bundles), until the broker's report lists them or the broker goes.
    placed: HashMap<String, String>,
}

struct ManagerState {
    closed: bool,
    /// The last report this broker published, re-published after a session loss.
    local_report: LoadReport,
}

struct ManagerInner {
    store: MetadataStore,
    broker_id: String,
    /// `/loadbalance/brokers/<broker_id>`.
    broker_path: String,
    /// Removed on stop, or when the manager is dropped without it.
    store_listeners: StoreListeners,
    /// `load-manager`: refreshes, re-registration and cache listeners run here.
    executor: ComponentExecutor,
    /// `load-manager-retry`: queues a failed refresh or re-registration again [`RETRY_DELAY`]
    /// later (its thread starts on the first failure).
    retry: RetryTimer,
    /// This manager, for the retry timer's tasks (which must not keep it alive).
    this: Weak<ManagerInner>,
    /// A re-registration failed and waits for the retry (which then re-registers and refreshes;
    /// else it only refreshes): the one retry armed at a time covers both steps.
    reregister_pending: AtomicBool,
    cache: Mutex<Cache>,
    /// Set while a refresh is queued and has not started reading.
    refresh_queued: AtomicBool,
    cache_listeners: Mutex<Arc<[CacheListener]>>,
    state: Mutex<ManagerState>,
    /// Held by `update_local_report` from its `closed` check through its write, by `stop`
    /// while it sets `closed`, and by `register` from its read of the report through its
    /// writes: a report written by a caller that passed the check lands before `stop` deletes
    /// the node, never after (which would bring the stopped broker's report back until its
    /// session ends), and a re-registration never writes an older report over a newer one.
    report_write: Mutex<()>,
}

fn validate_name(name: &str) -> Result<(), LoadManagerError> {
    if name.is_empty() || path::validate(&format!("/{name}")).is_err() || name.contains('/') {
        return Err(LoadManagerError::InvalidName {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// The error for work the `load-manager` executor refused.
fn refused(reason: &RejectReason) -> LoadManagerError {
    match reason {
        RejectReason::ThreadStartFailed(error) => LoadManagerError::ThreadStart {
            reason: error.to_string(),
        },
        _ => LoadManagerError::Closed,
    }
}

fn encode<T: serde::Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("load reports and domains always serialize")
}

impl LoadManager {
    /// Starts the load manager of broker `broker_id`: publishes `report` as the ephemeral node
    /// `/loadbalance/brokers/<broker_id>`, watches the brokers and failure domains, and fills
    /// the cache before returning.
    ///
    /// # Errors
    ///
    /// [`LoadManagerError::InvalidName`]; [`LoadManagerError::Store`] (a closed store, or the
    /// registration failed); [`LoadManagerError::ThreadStart`].
    ///
    /// A refresh that fails later (a store timeout, say) is tried again 5 s later, and so is
    /// the re-registration after a session loss.
    pub fn start(
        store: MetadataStore,
        broker_id: &str,
        report: LoadReport,
    ) -> Result<Self, LoadManagerError> {
        validate_name(broker_id)?;
        let executor = ComponentExecutor::new("load-manager");
        let retry = RetryTimer::new("load-manager", &executor.threads(), RETRY_DELAY);
        let inner = Arc::new_cyclic(|this| ManagerInner {
            store: store.clone(),
            broker_id: broker_id.to_owned(),
            broker_path: format!("{BROKERS_ROOT}/{broker_id}"),
            store_listeners: StoreListeners::new(&store),
            executor,
            retry,
            this: this.clone(),
            reregister_pending: AtomicBool::new(false),
            cache: Mutex::new(Cache::default()),
            refresh_queued: AtomicBool::new(false),
            cache_listeners: Mutex::new(Arc::from(Vec::new())),
            state: Mutex::new(ManagerState {
                closed: false,
                local_report: report,
            }),
            report_write: Mutex::new(()),
        });
        let manager = Self { inner };
        if let Err(error) = manager.inner.listen() {
            manager.stop();
            return Err(error);
        }
        let weak = Arc::downgrade(&manager.inner);
        let first = manager.inner.executor.submit(move || match weak.upgrade() {
            Some(inner) => {
                inner.register()?;
                inner.refresh();
                Ok(())
            }
            None => Err(LoadManagerError::Closed),
        });
        let outcome = match first {
            Ok(handle) => handle.join().unwrap_or(Err(LoadManagerError::Closed)),
            Err(rejected) => Err(refused(rejected.reason())),
        };
        if let Err(error) = outcome {
            manager.stop();
            return Err(error);
        }
        tracing::info!(broker = broker_id, "load manager started");
        Ok(manager)
    }

    /// This broker's id.
    pub fn broker_id(&self) -> &str {
        &self.inner.broker_id
    }

    /// The live brokers in the cache, sorted.
    pub fn available_brokers(&self) -> Vec<String> {
        self.inner.cache.lock().brokers.keys().cloned().collect()
    }

    /// A live broker's report, from the cache.
    pub fn broker_report(&self, broker_id: &str) -> Option<LoadReport> {
        self.inner.cache.lock().brokers.get(broker_id).cloned()
    }

    /// The failure domain of a broker, from the cache.
    pub fn failure_domain_of(&self, broker_id: &str) -> Option<String> {
        self.inner.cache.lock().domains.get(broker_id).cloned()
    }

    /// Picks the broker for `bundle` (`tenant/namespace/range`) among the live brokers: the one
    /// serving or already given it, else the least loaded, spreading a namespace's bundles over
    /// the failure domains (see `placement.rs`). The choice is remembered (it counts towards
    /// the broker's load) until the broker's report lists the bundle or the broker goes.
    /// `None` when no broker is live.
    ///
    /// # Errors
    ///
    /// [`LoadManagerError::Closed`].
    pub fn select_broker(&self, bundle: &str) -> Result<Option<String>, LoadManagerError> {
        if self.is_closed() {
            return Err(LoadManagerError::Closed);
        }
        let mut cache = self.inner.cache.lock();
        let chosen = PlacementView {
            brokers: &cache.brokers,
            domains: &cache.domains,
            placed: &cache.placed,
        }
        .select(bundle);
        if let Some(broker) = &chosen {
            let served = cache.brokers[broker].bundles.iter().any(|b| b == bundle);
            if !served {
                cache.placed.insert(bundle.to_owned(), broker.clone());
            }
        }
        Ok(chosen)
    }

    /// Publishes a new report for this broker.
    ///
    /// # Errors
    ///
    /// [`LoadManagerError::Closed`]; [`LoadManagerError::Store`].
    pub fn update_local_report(&self, report: LoadReport) -> Result<(), LoadManagerError> {
        let bytes = encode(&report);
        let _writing = self.inner.report_write.lock();
        {
            let mut state = self.inner.state.lock();
            if state.closed {
                return Err(LoadManagerError::Closed);
            }
            state.local_report = report;
        }
        self.inner
            .store
            .put_ephemeral(&self.inner.broker_path, &bytes, ExpectedVersion::Any)?;
        Ok(())
    }

    /// Defines (or redefines) failure domain `domain` as `brokers` (an administrative write;
    /// every load manager's cache picks it up).
    ///
    /// # Errors
    ///
    /// [`LoadManagerError::InvalidName`]; [`LoadManagerError::Closed`];
    /// [`LoadManagerError::Store`].
    pub fn set_failure_domain(
        &self,
        domain: &str,
        brokers: &[&str],
    ) -> Result<(), LoadManagerError> {
        validate_name(domain)?;
        if self.is_closed() {
            return Err(LoadManagerError::Closed);
        }
        let value = FailureDomain {
            brokers: brokers.iter().map(|broker| broker.to_string()).collect(),
        };
        self.inner.store.put(
            &format!("{FAILURE_DOMAINS_ROOT}/{domain}"),
            &encode(&value),
            ExpectedVersion::Any,
        )?;
        Ok(())
    }

    /// Adds a listener called on the `load-manager` thread after every refresh, with the live
    /// brokers (sorted). It runs with no lock held; a panic is caught and logged.
    pub fn add_cache_listener(&self, listener: impl Fn(&[String]) + Send + Sync + 'static) {
        let mut listeners = self.inner.cache_listeners.lock();
        let mut list = listeners.to_vec();
        list.push(Arc::new(listener));
        *listeners = Arc::from(list);
    }

    /// Reloads the cache now, on the `load-manager` thread, and waits for it (and so for every
    /// refresh queued before it).
    ///
    /// # Errors
    ///
    /// [`LoadManagerError::Closed`]; [`LoadManagerError::ThreadStart`].
    pub fn refresh_now(&self) -> Result<(), LoadManagerError> {
        let weak = Arc::downgrade(&self.inner);
        let handle = self
            .inner
            .executor
            .submit(move || {
                if let Some(inner) = weak.upgrade() {
                    inner.refresh();
                }
            })
            .map_err(|rejected| refused(rejected.reason()))?;
        handle.join().map_err(|_| LoadManagerError::Closed)
    }

    /// Stops the load manager (Pulsar's `stop`): the store listeners are removed, the executor
    /// is shut down with `shutdown_now` (a queued refresh is dropped) and awaited up to 10 s,
    /// this broker's report is deleted, then the caches are cleared. Idempotent.
    pub fn stop(&self) {
        self.inner.stop();
    }

    /// The same as [`stop`](Self::stop).
    pub fn close(&self) {
        self.inner.stop();
    }

    /// Whether [`stop`](Self::stop) has been called.
    pub fn is_closed(&self) -> bool {
        self.inner.state.lock().closed
    }

    /// The load manager's executor thread (`load-manager`).
    pub fn threads(&self) -> ComponentThreads {
        self.inner.executor.threads()
    }
}

impl ManagerInner {
    /// Registers the store listeners that queue refreshes and re-registration.
    fn listen(self: &Arc<Self>) -> Result<(), LoadManagerError> {
        let weak = Arc::downgrade(self);
        self.store_listeners
            .on_notification(move |notification: &Notification| {
                // A `Resync` (sent for `/`) means changes under the roots may have been missed.
                let relevant = notification.kind == NotificationType::Resync
                    || [BROKERS_ROOT, FAILURE_DOMAINS_ROOT]
                        .iter()
                        .any(|root| notification.path.starts_with(root));
                if relevant {
                    if let Some(inner) = weak.upgrade() {
                        inner.queue_refresh();
                    }
                }
            })?;
        let weak = Arc::downgrade(self);
        self.store_listeners.on_session_event(move |event| {
            if let Some(inner) = weak.upgrade() {
                match event {
                    SessionEvent::SessionReestablished => inner.queue(Self::register_again),
                    // The `Resync` that follows refreshes.
                    SessionEvent::Reconnected
                    | SessionEvent::ConnectionLost
                    | SessionEvent::SessionLost => {}
                }
            }
        })?;
        Ok(())
    }

    /// Queues `step` on the executor (refused quietly after stop).
    fn queue(self: &Arc<Self>, step: fn(&Self)) {
        let weak: Weak<Self> = Arc::downgrade(self);
        let _ = self.executor.execute(move || {
            if let Some(inner) = weak.upgrade() {
                step(&inner);
            }
        });
    }

    /// Queues one refresh unless one is queued and has not started reading yet.
    fn queue_refresh(self: &Arc<Self>) {
        // AcqRel: `refresh` clears the flag before reading, so a change after a `true` here is
        // read by that refresh.
        if !self.refresh_queued.swap(true, Ordering::AcqRel) {
            self.queue(Self::refresh);
        }
    }

    /// Arms the retry of a failed step, unless one is armed (it covers both steps: see
    /// `reregister_pending`).
    fn arm_retry(&self) {
        let this = self.this.clone();
        self.retry.arm("load manager step", move || {
            if let Some(inner) = this.upgrade() {
                inner.queue(Self::retry_failed_step);
            }
        });
    }

    /// The retry: re-registers (and refreshes) if a re-registration failed, else refreshes.
    /// Runs on `load-manager`.
    fn retry_failed_step(&self) {
        if self.reregister_pending.swap(false, Ordering::AcqRel) {
            self.register_again();
        } else {
            self.refresh();
        }
    }

    /// After a session loss: publishes this broker's report again (tried again
    /// [`RETRY_DELAY`] later if that fails), then refreshes. Runs on `load-manager`.
    fn register_again(&self) {
        if let Err(error) = self.register() {
            if !self.state.lock().closed {
                tracing::warn!(broker = %self.broker_id, %error, retry_in = ?RETRY_DELAY, "could not register the broker again after a session loss");
                self.reregister_pending.store(true, Ordering::Release);
                self.arm_retry();
            }
        }
        self.refresh();
    }

    /// Publishes this broker's report as an ephemeral node, replacing one left by an earlier
    /// session of the same broker. Runs on `load-manager`.
    fn register(&self) -> Result<(), LoadManagerError> {
        // Held through the writes: an `update_local_report` racing this one either lands
        // before the read below (and is what this writes) or after the writes (and overwrites
        // them), never between, where this would write the older report over it.
        let _writing = self.report_write.lock();
        let bytes = encode(&self.state.lock().local_report);
        for _ in 0..2 {
            match self
                .store
                .put_ephemeral(&self.broker_path, &bytes, ExpectedVersion::Absent)
            {
                Ok(_) => return Ok(()),
                Err(MetadataStoreError::BadVersion { .. }) => {
                    match self.store.get(&self.broker_path)? {
                        Some(read) if read.stat.created_by_self => {
                            self.store.put_ephemeral(
                                &self.broker_path,
                                &bytes,
                                ExpectedVersion::Exactly(read.stat.version),
                            )?;
                            return Ok(());
                        }
                        Some(read) => {
                            // Left by an earlier session that has not expired yet.
                            match self.store.delete(
                                &self.broker_path,
                                ExpectedVersion::Exactly(read.stat.version),
                            ) {
                                Ok(()) | Err(MetadataStoreError::NotFound { .. }) => {}
                                Err(error) => return Err(error.into()),
                            }
                        }
                        None => {}
                    }
                }
                Err(error) => return Err(error.into()),
            }
        }
        Err(LoadManagerError::Store(MetadataStoreError::BadVersion {
            path: self.broker_path.clone(),
            expected: ExpectedVersion::Absent,
        }))
    }

    /// Reloads brokers and failure domains and replaces the cache; then calls the cache
    /// listeners. Runs on `load-manager`.
    fn refresh(&self) {
        self.refresh_queued.store(false, Ordering::Release);
        if self.state.lock().closed {
            return;
        }
        let (brokers, domains) = match self.read_load_data() {
            Ok(data) => data,
            Err(error) => {
                // Tried again `RETRY_DELAY` later, unless a change or a session event queues
                // a refresh sooner.
                if error != MetadataStoreError::AlreadyClosed && !self.state.lock().closed {
                    tracing::warn!(broker = %self.broker_id, %error, retry_in = ?RETRY_DELAY, "load data refresh failed");
                    self.arm_retry();
                }
                return;
            }
        };
        let (live, gone) = {
            let mut cache = self.cache.lock();
            let gone: Vec<String> = cache
                .brokers
                .keys()
                .filter(|broker| !brokers.contains_key(*broker))
                .cloned()
                .collect();
            cache.placed.retain(|bundle, broker| {
                brokers
                    .get(broker)
                    .is_some_and(|report| !report.bundles.contains(bundle))
            });
            cache.brokers = brokers;
            cache.domains = domains;
            (cache.brokers.keys().cloned().collect::<Vec<_>>(), gone)
        };
        for broker in &gone {
            tracing::info!(broker = %self.broker_id, stopped = %broker, "broker gone: removed from the cache and from placement");
        }
        let listeners = Arc::clone(&self.cache_listeners.lock());
        for listener in listeners.iter() {
            call_user("load manager cache listener", || listener(&live));
        }
    }

    #[allow(clippy::type_complexity)]
    fn read_load_data(
        &self,
    ) -> Result<(BTreeMap<String, LoadReport>, HashMap<String, String>), MetadataStoreError> {
        let mut brokers = BTreeMap::new();
        for broker in self.store.children(BROKERS_ROOT)? {
            let node = path::child(BROKERS_ROOT, &broker);
            let Some(read) = self.store.get(&node)? else {
                continue; // gone since the listing
            };
            match serde_json::from_slice::<LoadReport>(&read.value) {
                Ok(report) => {
                    brokers.insert(broker, report);
                }
                Err(error) => {
                    tracing::warn!(broker = %broker, %error, "skipping an unreadable load report")
                }
            }
        }
        let mut domains = HashMap::new();
        for domain in self.store.children(FAILURE_DOMAINS_ROOT)? {
            let node = path::child(FAILURE_DOMAINS_ROOT, &domain);
            let Some(read) = self.store.get(&node)? else {
                continue;
            };
            match serde_json::from_slice::<FailureDomain>(&read.value) {
                Ok(members) => {
                    for broker in members.brokers {
                        domains.insert(broker, domain.clone());
                    }
                }
                Err(error) => {
                    tracing::warn!(domain = %domain, %error, "skipping an unreadable failure domain")
                }
            }
        }
        Ok((brokers, domains))
    }

    fn stop(&self) {
        {
            let _writing = self.report_write.lock();
            let mut state = self.state.lock();
            if state.closed {
                return;
            }
            state.closed = true;
        }
        self.store_listeners.remove_all();
        self.retry.close();
        self.executor.close_now("a load data refresh");
        self.unregister_broker();
        let cache = std::mem::take(&mut *self.cache.lock());
        let listeners = std::mem::replace(&mut *self.cache_listeners.lock(), Arc::from(Vec::new()));
        drop((cache, listeners));
        tracing::info!(broker = %self.broker_id, "load manager stopped");
    }

    /// Deletes this broker's report if this store's session owns it.
    fn unregister_broker(&self) {
        match self.store.get(&self.broker_path) {
            Ok(Some(read)) if read.stat.created_by_self => {
                if let Err(error) = self.store.delete(
                    &self.broker_path,
                    ExpectedVersion::Exactly(read.stat.version),
                ) {
                    tracing::warn!(broker = %self.broker_id, %error, "could not delete the broker's report; it goes with the session");
                }
            }
            Ok(_) | Err(MetadataStoreError::AlreadyClosed) => {}
            Err(error) => {
                tracing::warn!(broker = %self.broker_id, %error, "could not delete the broker's report; it goes with the session")
            }
        }
    }
}

impl fmt::Debug for LoadManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let brokers = self.available_brokers();
        f.debug_struct("LoadManager")
            .field("broker_id", &self.inner.broker_id)
            .field("closed", &self.is_closed())
            .field("live_brokers", &brokers)
            .field("executor", &*self.inner.executor)
            .finish()
    }
}
