//! `UnderreplicationManager` (Pulsar's `PulsarLedgerUnderreplicationManager`): under-replicated
//! ledgers, their re-replication locks, the replication switch and its callbacks.
//!
//! Layout under the ledgers root (BookKeeper's, with a flat ledger directory):
//!
//! | node | meaning |
//! |---|---|
//! | `<root>/underreplication/ledgers/urL<id>` | ledger `<id>` is under-replicated; value: missing replicas, one per line |
//! | `<root>/underreplication/locks/urL<id>` | a worker re-replicates `<id>` (ephemeral) |
//! | `<root>/underreplication/disable` | present: replication is disabled |
//! | `<root>/underreplication/lostBookieRecoveryDelay` | the delay in seconds |
//!
//! Callbacks: each registered callback runs exactly once, on the `underreplication-notification`
//! thread, never on the store's notification thread and never under the manager's lock. Whoever
//! takes a callback out of the pending list (under the lock) queues it; the list is emptied in
//! one step, so a callback cannot be taken twice.
//!
//! After `Reconnected` or `SessionReestablished` (changes may have gone unnotified) the manager
//! reconciles on its thread: it runs the "enabled" callbacks if replication is enabled now, and
//! forgets the ledger locks whose nodes are no longer its own.

use crate::component::threads::ComponentThreads;
use crate::component::user_code::call_user;
use crate::component::ComponentExecutor;
use crate::metadata::path;
use crate::metadata::{
    ExpectedVersion, MetadataStore, MetadataStoreError, Notification, NotificationType,
    SessionEvent, StoreListeners,
};
use crate::replication::error::ReplicationError;
use parking_lot::Mutex;
use pulsar_common::executors::RejectReason;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// The prefix of ledger nodes and lock nodes.
const LEDGER_PREFIX: &str = "urL";

type Callback = Box<dyn FnOnce() + Send + 'static>;

/// Under-replicated ledgers and the replication switch on the metadata store (Pulsar's
/// `PulsarLedgerUnderreplicationManager`).
///
/// Clones share one manager. [`close`](Self::close) shuts the executor down first (queued
/// callbacks are dropped unrun, as are pending ones), then releases the ledger locks this
/// manager holds.
///
/// # Examples
///
/// ```
/// use pulsar_server::metadata::MetadataStore;
/// use pulsar_server::replication::UnderreplicationManager;
/// use std::sync::mpsc;
/// use std::time::Duration;
///
/// let store = MetadataStore::open("memory:underreplication-doc").unwrap();
/// let manager = UnderreplicationManager::new(store.clone(), "/ledgers").unwrap();
/// manager.mark_ledger_underreplicated(7, "bookie-1:3181").unwrap();
/// assert_eq!(manager.list_underreplicated_ledgers().unwrap(), [7]);
///
/// manager.disable_ledger_replication().unwrap();
/// let (enabled, heard) = mpsc::channel();
/// manager
///     .notify_ledger_replication_enabled(move || enabled.send(()).unwrap())
///     .unwrap();
/// manager.enable_ledger_replication().unwrap();
/// heard.recv_timeout(Duration::from_secs(10)).unwrap();
///
/// manager.close();
/// store.close();
/// ```
#[derive(Clone)]
pub struct UnderreplicationManager {
    inner: Arc<ManagerInner>,
}

struct ManagerState {
    closed: bool,
    /// Waiting for replication to be enabled.
    enabled_callbacks: Vec<Callback>,
    /// Waiting for the next change of the lost-bookie recovery delay.
    delay_callbacks: Vec<Callback>,
    /// The delay node's version (`None`: absent) when the waiting delay callbacks were
    /// registered, so that `reconcile` can tell a change made while the store was not
    /// listening; `None` while none wait.
    delay_seen: Option<Option<i64>>,
    /// Ledgers whose lock node this manager created, each with the number of its acquisition
    /// (`acquisitions` when it was taken), so that `reconcile` forgets only the acquisition it
    /// checked, not one taken again meanwhile.
    held_locks: BTreeMap<u64, u64>,
    /// Lock acquisitions so far (numbers the entries of `held_locks`).
    acquisitions: u64,
}

impl ManagerState {
    /// Records that this manager holds the lock of `ledger_id` (a new acquisition).
    fn hold(&mut self, ledger_id: u64) {
        self.acquisitions += 1;
        self.held_locks.insert(ledger_id, self.acquisitions);
    }
}

struct ManagerInner {
    store: MetadataStore,
    ledgers_dir: String,
    locks_dir: String,
    disable_path: String,
    delay_path: String,
    /// Removed on close, or when the manager is dropped without it.
    store_listeners: StoreListeners,
    /// `underreplication-notification`: every callback runs here.
    executor: ComponentExecutor,
    state: Mutex<ManagerState>,
}

impl UnderreplicationManager {
    /// A manager for the ledgers under `ledgers_root` (BookKeeper's `zkLedgersRootPath`, e.g.
    /// `/ledgers`).
    ///
    /// # Errors
    ///
    /// [`ReplicationError::Store`] for an invalid root or a closed store.
    pub fn new(store: MetadataStore, ledgers_root: &str) -> Result<Self, ReplicationError> {
        path::validate(ledgers_root)?;
        let base = if ledgers_root == "/" {
            "/underreplication".to_owned()
        } else {
            format!("{ledgers_root}/underreplication")
        };
        let inner = Arc::new(ManagerInner {
            store: store.clone(),
            ledgers_dir: format!("{base}/ledgers"),
            locks_dir: format!("{base}/locks"),
            disable_path: format!("{base}/disable"),
            delay_path: format!("{base}/lostBookieRecoveryDelay"),
            store_listeners: StoreListeners::new(&store),
            executor: ComponentExecutor::new("underreplication-notification"),
            state: Mutex::new(ManagerState {
                closed: false,
                enabled_callbacks: Vec::new(),
                delay_callbacks: Vec::new(),
                delay_seen: None,
                held_locks: BTreeMap::new(),
                acquisitions: 0,
            }),
        });
        let manager = Self { inner };
        if let Err(error) = manager.inner.listen() {
            manager.close();
            return Err(error);
        }
        Ok(manager)
    }

    fn check_open(&self) -> Result<(), ReplicationError> {
        if self.inner.state.lock().closed {
            Err(ReplicationError::Closed)
        } else {
            Ok(())
        }
    }

    /// Marks ledger `ledger_id` under-replicated, missing `missing_replica` (added to the
    /// replicas already recorded missing).
    ///
    /// # Errors
    ///
    /// [`ReplicationError::Closed`]; [`ReplicationError::Store`].
    pub fn mark_ledger_underreplicated(
        &self,
        ledger_id: u64,
        missing_replica: &str,
    ) -> Result<(), ReplicationError> {
        self.check_open()?;
        let node = self.inner.ledger_path(ledger_id);
        loop {
            let outcome = match self.inner.store.get(&node)? {
                None => {
                    self.inner
                        .store
                        .put(&node, missing_replica.as_bytes(), ExpectedVersion::Absent)
                }
                Some(read) => {
                    let mut replicas = parse_replicas(&read.value);
                    if replicas.iter().any(|replica| replica == missing_replica) {
                        return Ok(());
                    }
                    replicas.push(missing_replica.to_owned());
                    self.inner.store.put(
                        &node,
                        replicas.join("\n").as_bytes(),
                        ExpectedVersion::Exactly(read.stat.version),
                    )
                }
            };
            match outcome {
                Ok(_) => return Ok(()),
                // Someone else changed it meanwhile: read again.
                Err(MetadataStoreError::BadVersion { .. }) => continue,
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Marks ledger `ledger_id` fully replicated: its node goes, and its lock if this manager
    /// holds it. Marking a ledger that is not under-replicated does nothing.
    ///
    /// # Errors
    ///
    /// [`ReplicationError::Closed`]; [`ReplicationError::Store`].
    pub fn mark_ledger_replicated(&self, ledger_id: u64) -> Result<(), ReplicationError> {
        self.check_open()?;
        match self
            .inner
            .store
            .delete(&self.inner.ledger_path(ledger_id), ExpectedVersion::Any)
        {
            Ok(()) | Err(MetadataStoreError::NotFound { .. }) => {}
            Err(error) => return Err(error.into()),
        }
        self.release_underreplicated_ledger(ledger_id)
    }

    /// Whether ledger `ledger_id` is marked under-replicated.
    ///
    /// # Errors
    ///
    /// [`ReplicationError::Closed`]; [`ReplicationError::Store`].
    pub fn is_ledger_underreplicated(&self, ledger_id: u64) -> Result<bool, ReplicationError> {
        self.check_open()?;
        Ok(self
            .inner
            .store
            .exists(&self.inner.ledger_path(ledger_id))?)
    }

    /// The replicas recorded missing for ledger `ledger_id` (empty if it is not marked).
    ///
    /// # Errors
    ///
    /// [`ReplicationError::Closed`]; [`ReplicationError::Store`].
    pub fn missing_replicas(&self, ledger_id: u64) -> Result<Vec<String>, ReplicationError> {
        self.check_open()?;
        Ok(self
            .inner
            .store
            .get(&self.inner.ledger_path(ledger_id))?
            .map(|read| parse_replicas(&read.value))
            .unwrap_or_default())
    }

    /// The under-replicated ledgers, in ascending order.
    ///
    /// # Errors
    ///
    /// [`ReplicationError::Closed`]; [`ReplicationError::Store`].
    pub fn list_underreplicated_ledgers(&self) -> Result<Vec<u64>, ReplicationError> {
        self.check_open()?;
        let mut ledgers: Vec<u64> = self
            .inner
            .store
            .children(&self.inner.ledgers_dir)?
            .iter()
            .filter_map(|name| parse_ledger_name(name))
            .collect();
        ledgers.sort_unstable();
        Ok(ledgers)
    }

    /// Takes the re-replication lock of an under-replicated ledger no one else holds, and
    /// returns that ledger (BookKeeper's `pollLedgerToRereplicate`); `None` when replication is
    /// disabled or every marked ledger is locked.
    ///
    /// # Errors
    ///
    /// [`ReplicationError::Closed`]; [`ReplicationError::Store`].
    pub fn poll_ledger_to_rereplicate(&self) -> Result<Option<u64>, ReplicationError> {
        if !self.is_ledger_replication_enabled()? {
            return Ok(None);
        }
        for ledger_id in self.list_underreplicated_ledgers()? {
            if self.inner.state.lock().held_locks.contains_key(&ledger_id) {
                continue;
            }
            let lock = self.inner.lock_path(ledger_id);
            match self
                .inner
                .store
                .put_ephemeral(&lock, b"", ExpectedVersion::Absent)
            {
                Ok(_) => {
                    let mut state = self.inner.state.lock();
                    if state.closed {
                        drop(state);
                        let _ = self.inner.store.delete(&lock, ExpectedVersion::Any);
                        return Err(ReplicationError::Closed);
                    }
                    state.hold(ledger_id);
                    return Ok(Some(ledger_id));
                }
                Err(MetadataStoreError::BadVersion { .. }) => continue,
                Err(error) => return Err(error.into()),
            }
        }
        Ok(None)
    }

    /// Releases the re-replication lock of ledger `ledger_id` if this manager holds it.
    ///
    /// # Errors
    ///
    /// [`ReplicationError::Closed`]; [`ReplicationError::Store`]: the lock is then still held
    /// (its node may still exist), and a later call tries again (as BookKeeper's
    /// `releaseUnderreplicatedLedger`, which forgets the lock only once its node is deleted).
    pub fn release_underreplicated_ledger(&self, ledger_id: u64) -> Result<(), ReplicationError> {
        let held = {
            let mut state = self.inner.state.lock();
            if state.closed {
                return Err(ReplicationError::Closed);
            }
            state.held_locks.remove(&ledger_id).is_some()
        };
        if held {
            if let Err(error) = self.inner.release_lock(ledger_id) {
                // Forgotten, the lock's node would stay until the session ends, and no worker,
                // this one included, could lock the ledger again.
                let mut state = self.inner.state.lock();
                if !state.closed {
                    state.hold(ledger_id);
                }
                return Err(error);
            }
        }
        Ok(())
    }

    /// The ledgers whose re-replication lock this manager holds, ascending.
    pub fn held_locks(&self) -> Vec<u64> {
        self.inner.state.lock().held_locks.keys().copied().collect()
    }

    /// Disables re-replication (idempotent).
    ///
    /// # Errors
    ///
    /// [`ReplicationError::Closed`]; [`ReplicationError::Store`].
    pub fn disable_ledger_replication(&self) -> Result<(), ReplicationError> {
        self.check_open()?;
        match self
            .inner
            .store
            .put(&self.inner.disable_path, b"", ExpectedVersion::Absent)
        {
            Ok(_) | Err(MetadataStoreError::BadVersion { .. }) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// Enables re-replication (idempotent); the "replication enabled" callbacks of every
    /// manager on this store's backend fire.
    ///
    /// # Errors
    ///
    /// [`ReplicationError::Closed`]; [`ReplicationError::Store`].
    pub fn enable_ledger_replication(&self) -> Result<(), ReplicationError> {
        self.check_open()?;
        match self
            .inner
            .store
            .delete(&self.inner.disable_path, ExpectedVersion::Any)
        {
            Ok(()) | Err(MetadataStoreError::NotFound { .. }) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// Whether re-replication is enabled.
    ///
    /// # Errors
    ///
    /// [`ReplicationError::Closed`]; [`ReplicationError::Store`].
    pub fn is_ledger_replication_enabled(&self) -> Result<bool, ReplicationError> {
        self.check_open()?;
        Ok(!self.inner.store.exists(&self.inner.disable_path)?)
    }

    /// Runs `callback` once replication is enabled: at once (on the notification thread) if
    /// it is enabled now, else when it is next enabled. Each callback runs exactly once, on
    /// the `underreplication-notification` thread, outside any lock of the manager.
    ///
    /// "Now" is as this manager's store reads it. On ZooKeeper each session's view is ordered,
    /// but another process's write may reach this session's server a moment later: a callback
    /// registered just after another process disabled replication can still run at once, as
    /// in Pulsar (`is_ledger_replication_enabled` on this manager tells which it saw).
    ///
    /// # Errors
    ///
    /// [`ReplicationError::Closed`] (the callback is dropped unrun);
    /// [`ReplicationError::Store`] when the current state could not be read (the callback stays
    /// registered and fires on the next enable).
    pub fn notify_ledger_replication_enabled(
        &self,
        callback: impl FnOnce() + Send + 'static,
    ) -> Result<(), ReplicationError> {
        self.inner
            .add_pending(Box::new(callback), |state| &mut state.enabled_callbacks)?;
        // Checked after registering: an enable racing this call is seen by one side or both,
        // and whichever takes the callbacks first runs them.
        if !self.inner.store.exists(&self.inner.disable_path)? {
            self.inner.run_enabled_callbacks();
        }
        Ok(())
    }

    /// Sets the lost-bookie recovery delay; the "delay changed" callbacks of every manager on
    /// this store's backend fire.
    ///
    /// # Errors
    ///
    /// [`ReplicationError::Closed`]; [`ReplicationError::Store`].
    pub fn set_lost_bookie_recovery_delay(&self, seconds: u32) -> Result<(), ReplicationError> {
        self.check_open()?;
        self.inner.store.put(
            &self.inner.delay_path,
            seconds.to_string().as_bytes(),
            ExpectedVersion::Any,
        )?;
        Ok(())
    }

    /// The lost-bookie recovery delay in seconds (0 when never set).
    ///
    /// # Errors
    ///
    /// [`ReplicationError::Closed`]; [`ReplicationError::Corrupt`]; [`ReplicationError::Store`].
    pub fn lost_bookie_recovery_delay(&self) -> Result<u32, ReplicationError> {
        self.check_open()?;
        let Some(read) = self.inner.store.get(&self.inner.delay_path)? else {
            return Ok(0);
        };
        std::str::from_utf8(&read.value)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .ok_or_else(|| ReplicationError::Corrupt {
                path: self.inner.delay_path.clone(),
                reason: "not a number of seconds".to_owned(),
            })
    }

    /// Runs `callback` once, at the next change of the lost-bookie recovery delay, on the
    /// `underreplication-notification` thread, outside any lock of the manager.
    ///
    /// The delay's current version is read to tell, after a reconnect, whether it changed
    /// while the store was not listening. If it cannot be read now (the store is
    /// disconnected), the callback is registered all the same and runs at the next change the
    /// store notifies; the version is read at the next reconnect, and a change made before
    /// then is not noticed.
    ///
    /// # Errors
    ///
    /// [`ReplicationError::Closed`] (the callback is dropped unrun).
    pub fn notify_lost_bookie_recovery_delay_changed(
        &self,
        callback: impl FnOnce() + Send + 'static,
    ) -> Result<(), ReplicationError> {
        self.inner
            .add_pending(Box::new(callback), |state| &mut state.delay_callbacks)?;
        // Remembered after registering: a change racing this call is notified (and runs the
        // callbacks), and a change while disconnected differs from it (`reconcile`).
        match self.inner.store.get(&self.inner.delay_path) {
            Ok(read) => self
                .inner
                .note_delay_seen(read.map(|read| read.stat.version)),
            // The callback stays registered (a registration that failed with it still
            // registered would run twice for a caller that tries again).
            Err(error) => {
                tracing::debug!(%error, "cannot read the lost-bookie recovery delay now; its version is read at the next reconnect")
            }
        }
        Ok(())
    }

    /// Closes the manager: its store listeners are removed; the executor is shut down with
    /// `shutdown_now` (callbacks queued on it are dropped unrun) and awaited up to 10 s
    /// (returning at once when called from a callback); then the ledger locks it holds are
    /// released; pending callbacks are dropped unrun. Idempotent.
    pub fn close(&self) {
        self.inner.close();
    }

    /// Whether [`close`](Self::close) has been called.
    pub fn is_closed(&self) -> bool {
        self.inner.state.lock().closed
    }

    /// The manager's executor thread (`underreplication-notification`).
    pub fn threads(&self) -> ComponentThreads {
        self.inner.executor.threads()
    }
}

impl ManagerInner {
    fn ledger_path(&self, ledger_id: u64) -> String {
        format!("{}/{LEDGER_PREFIX}{ledger_id:020}", self.ledgers_dir)
    }

    fn lock_path(&self, ledger_id: u64) -> String {
        format!("{}/{LEDGER_PREFIX}{ledger_id:020}", self.locks_dir)
    }

    /// Registers the store listeners that hand callbacks to the executor.
    fn listen(self: &Arc<Self>) -> Result<(), ReplicationError> {
        let weak = Arc::downgrade(self);
        self.store_listeners
            .on_notification(move |notification: &Notification| {
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                if notification.path == inner.disable_path
                    && notification.kind == NotificationType::Deleted
                {
                    inner.run_enabled_callbacks();
                } else if notification.path == inner.delay_path
                    && notification.kind != NotificationType::ChildrenChanged
                {
                    inner.run_delay_callbacks();
                }
            })?;
        let weak = Arc::downgrade(self);
        self.store_listeners.on_session_event(move |event| {
            if !matches!(
                event,
                SessionEvent::SessionReestablished | SessionEvent::Reconnected
            ) {
                return;
            }
            if let Some(inner) = weak.upgrade() {
                // Changes while disconnected went unnotified: look again, off the store's
                // thread.
                let weak = Arc::downgrade(&inner);
                let queued = inner.executor.execute(move || {
                    if let Some(inner) = weak.upgrade() {
                        inner.reconcile();
                    }
                });
                if let Err(refused) = queued {
                    if matches!(refused.reason(), RejectReason::ThreadStartFailed(_)) {
                        tracing::error!(reason = %refused.reason(), "cannot start the underreplication-notification thread: changes missed while disconnected are not looked for; callbacks wait for the next change");
                    }
                }
            }
        })?;
        Ok(())
    }

    /// After a reconnect or a new session: runs the "enabled" callbacks if replication was
    /// enabled while the store was not listening, the "delay changed" callbacks if the delay's
    /// node changed since they were registered, and forgets the locks this manager no longer
    /// holds (gone with an expired session, or deleted by someone else), so it does not
    /// re-replicate a ledger another worker may now lock. Runs on
    /// `underreplication-notification`.
    fn reconcile(&self) {
        if self.store.exists(&self.disable_path) == Ok(false) {
            self.run_enabled_callbacks();
        }
        let (seen, waiting) = {
            let state = self.state.lock();
            (state.delay_seen, !state.delay_callbacks.is_empty())
        };
        if waiting {
            let now = self
                .store
                .get(&self.delay_path)
                .map(|read| read.map(|read| read.stat.version));
            match (seen, now) {
                (Some(seen), Ok(now)) if now != seen => self.run_delay_callbacks(),
                // Registered while the delay could not be read: from now on, changes are
                // told from this version.
                (None, Ok(now)) => self.note_delay_seen(now),
                _ => {}
            }
        }
        let held: Vec<(u64, u64)> = {
            let state = self.state.lock();
            state
                .held_locks
                .iter()
                .map(|(&id, &taken)| (id, taken))
                .collect()
        };
        for (ledger_id, acquisition) in held {
            let still_ours = match self.store.get(&self.lock_path(ledger_id)) {
                Ok(Some(read)) => read.stat.created_by_self,
                Ok(None) => false,
                // Cannot tell now; the next reconnect looks again.
                Err(_) => true,
            };
            if !still_ours {
                tracing::warn!(
                    ledger_id,
                    "re-replication lock lost while the store was disconnected; forgetting it"
                );
                // Only the acquisition checked: a release and a poll since may have taken the
                // lock again, with a node this read did not see.
                let mut state = self.state.lock();
                if state.held_locks.get(&ledger_id) == Some(&acquisition) {
                    state.held_locks.remove(&ledger_id);
                }
            }
        }
    }

    /// Records the delay node's version the waiting delay callbacks compare with, unless one
    /// is recorded already (the oldest registration's) or none waits.
    fn note_delay_seen(&self, version: Option<i64>) {
        let mut state = self.state.lock();
        if state.delay_seen.is_none() && !state.delay_callbacks.is_empty() {
            state.delay_seen = Some(version);
        }
    }

    /// Adds `callback` to the pending list that `list` picks, unless the manager is closed:
    /// then it is dropped unrun, outside the lock (its `Drop` is user code).
    fn add_pending(
        &self,
        callback: Callback,
        list: fn(&mut ManagerState) -> &mut Vec<Callback>,
    ) -> Result<(), ReplicationError> {
        let mut state = self.state.lock();
        if state.closed {
            drop(state);
            drop(callback);
            return Err(ReplicationError::Closed);
        }
        list(&mut state).push(callback);
        Ok(())
    }

    /// Takes every pending "replication enabled" callback and queues each on the executor.
    fn run_enabled_callbacks(&self) {
        let list: fn(&mut ManagerState) -> &mut Vec<Callback> =
            |state| &mut state.enabled_callbacks;
        let callbacks = std::mem::take(list(&mut self.state.lock()));
        self.queue_callbacks(callbacks, "replication enabled callback", list);
    }

    /// Takes every pending "delay changed" callback and queues each on the executor.
    fn run_delay_callbacks(&self) {
        let list: fn(&mut ManagerState) -> &mut Vec<Callback> = |state| &mut state.delay_callbacks;
        let callbacks = {
            let mut state = self.state.lock();
            state.delay_seen = None;
            std::mem::take(list(&mut state))
        };
        self.queue_callbacks(callbacks, "lost bookie recovery delay callback", list);
    }

    /// Queues each callback as its own task. After close the executor refuses them and they
    /// are dropped unrun (here, outside any lock). If the executor cannot start its thread
    /// (its next task tries again), the refused callback and the rest go back, in order, to
    /// the front of the pending list that `list` picks: they run at the next occasion (the
    /// next change, registration or reconnect check) instead of being lost.
    fn queue_callbacks(
        &self,
        callbacks: Vec<Callback>,
        what: &'static str,
        list: fn(&mut ManagerState) -> &mut Vec<Callback>,
    ) {
        let mut callbacks = callbacks.into_iter();
        while let Some(callback) = callbacks.next() {
            let Err(refused) = self.executor.execute(move || {
                call_user(what, callback);
            }) else {
                continue;
            };
            let (task, reason) = refused.into_parts();
            if !matches!(reason, RejectReason::ThreadStartFailed(_)) {
                return; // closed: this one and the rest are dropped unrun
            }
            tracing::error!(%reason, "{what}s wait: the manager's thread cannot start");
            let mut kept: Vec<Callback> = vec![Box::new(task)];
            kept.extend(callbacks);
            let mut state = self.state.lock();
            if state.closed {
                drop(state);
                drop(kept);
                return;
            }
            let pending = list(&mut state);
            kept.append(pending);
            *pending = kept;
            return;
        }
    }

    fn release_lock(&self, ledger_id: u64) -> Result<(), ReplicationError> {
        match self
            .store
            .delete(&self.lock_path(ledger_id), ExpectedVersion::Any)
        {
            Ok(()) | Err(MetadataStoreError::NotFound { .. }) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    fn close(&self) {
        let (pending, locks) = {
            let mut state = self.state.lock();
            if state.closed {
                return;
            }
            state.closed = true;
            let pending = (
                std::mem::take(&mut state.enabled_callbacks),
                std::mem::take(&mut state.delay_callbacks),
            );
            let locks: Vec<u64> = std::mem::take(&mut state.held_locks).into_keys().collect();
            (pending, locks)
        };
        self.store_listeners.remove_all();
        // First the executor: no callback runs after this returns (but the one running now,
        // when called from another thread, which is waited for).
        self.executor.close_now("a replication callback");
        // Then the locks.
        for ledger_id in locks {
            match self.release_lock(ledger_id) {
                Ok(()) | Err(ReplicationError::Store(MetadataStoreError::AlreadyClosed)) => {}
                Err(error) => {
                    tracing::warn!(ledger_id, %error, "could not release a re-replication lock; it goes with the session")
                }
            }
        }
        // Pending callbacks are dropped unrun, outside the lock (their `Drop` is user code).
        drop(pending);
        tracing::info!(ledgers = %self.ledgers_dir, "under-replication manager closed");
    }
}

/// `urL<digits>` to the ledger id.
fn parse_ledger_name(name: &str) -> Option<u64> {
    name.strip_prefix(LEDGER_PREFIX)?.parse().ok()
}

/// The missing replicas, one per line.
fn parse_replicas(value: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(value)
        .lines()
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

impl fmt::Debug for UnderreplicationManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        f.debug_struct("UnderreplicationManager")
            .field("ledgers", &self.inner.ledgers_dir)
            .field("closed", &state.closed)
            .field("pending_enabled_callbacks", &state.enabled_callbacks.len())
            .field("pending_delay_callbacks", &state.delay_callbacks.len())
            .field("held_locks", &state.held_locks)
            .finish()
    }
}
