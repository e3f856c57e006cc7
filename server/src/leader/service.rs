//! `LeaderService` (the functions worker's `LeaderService` on Pulsar's `LeaderElectionImpl`):
//! leader election by an ephemeral node created with compare-and-set, with the callbacks on a
//! dedicated `leader-service` thread.
//!
//! Election: create the election node as an ephemeral with [`ExpectedVersion::Absent`]; whoever
//! succeeds leads, everyone else follows and waits for the node's deletion. Every step runs on
//! the service's executor: the store's notification thread only queues work there, so the
//! callbacks never run on it, and they run in the order the transitions happened.
//!
//! | trigger (queued from the store's thread) | step on `leader-service` |
//! |---|---|
//! | `start` | elect |
//! | election node `Deleted` | stop leading if it was ours, then elect |
//! | `SessionReestablished`, `Reconnected` | elect (a leader whose node survived leads again; a follower re-reads the node, whose deletion it may have missed) |
//! | `ConnectionLost` | stop leading (until `Reconnected` confirms the node is still ours) |
//! | `SessionLost` | stop leading, unless the node is held by the store's current session |
//! | a round that failed (retry timer, [`DEFAULT_RETRY_DELAY`] later) | elect |
//!
//! A round that fails with an error other than losing the race (the store timed out, the
//! path's parent cannot hold the node) is tried again after the retry delay, as Pulsar's
//! `LeaderElectionImpl` does every 5 s: otherwise, with no session event and no deletion of the
//! node to follow, no candidate would ever campaign again. (A create that timed out on the
//! client but was applied on the server leaves a node that names this candidate: the retry
//! reads it as its own and leads.) The retry timer is a second thread, `leader-service-retry`,
//! started only by the first failed round; it only queues the round on `leader-service`.
//!
//! One leader at a time: a leader that loses its connection cannot tell whether its session
//! will expire on the server (its node deleted, a follower elected), so it steps down at once.
//! The ZooKeeper client reports the loss after 2/5 of the session timeout without an answer from
//! the server, which expires the session only after the whole timeout: the old leader has
//! called `became_inactive` before another can be elected. When the connection comes back
//! within the session timeout, the node is still its own and it leads again.

use crate::component::retry_timer::RetryTimer;
use crate::component::threads::ComponentThreads;
use crate::component::user_code::call_user;
use crate::component::ComponentExecutor;
use crate::leader::error::LeaderServiceError;
use crate::metadata::{
    ExpectedVersion, MetadataStore, MetadataStoreError, Notification, NotificationType,
    SessionEvent, StoreListeners,
};
use parking_lot::Mutex;
use pulsar_common::executors::RejectReason;
use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How long after a failed election round the next one starts (Pulsar's
/// `LEADER_ELECTION_RETRY_DELAY_SECONDS`).
pub const DEFAULT_RETRY_DELAY: Duration = Duration::from_secs(5);

/// Hears when this service gains and loses leadership.
///
/// Both run on the service's `leader-service` thread, in the order the transitions happened,
/// never on the metadata store's thread and never under a lock of the service; they may call
/// the service (but `close` from a callback does not wait for the callback itself). A panic is
/// caught and logged. `close` calls neither.
pub trait LeadershipListener: Send + Sync + 'static {
    /// This service now leads.
    fn became_active(&self);
    /// This service no longer leads (its node is gone: deleted, or its session was lost).
    fn became_inactive(&self);
}

/// Leader election on the metadata store (the functions worker's `LeaderService`).
///
/// Each candidate runs one service, normally on its own store (its own session). Clones share
/// one service. [`close`](Self::close) stops the executor and releases leadership (deletes the
/// node if this service holds it), so a follower takes over.
///
/// # Examples
///
/// ```
/// use pulsar_server::leader::{LeaderService, LeadershipListener};
/// use pulsar_server::metadata::MetadataStore;
///
/// struct Log;
/// impl LeadershipListener for Log {
///     fn became_active(&self) { println!("leading"); }
///     fn became_inactive(&self) { println!("following"); }
/// }
///
/// let store_a = MetadataStore::open("memory:leader-doc").unwrap();
/// let store_b = MetadataStore::open("memory:leader-doc").unwrap();
/// let a = LeaderService::start(store_a.clone(), "/leader", "worker-a", Log).unwrap();
/// let b = LeaderService::start(store_b.clone(), "/leader", "worker-b", Log).unwrap();
/// assert!(a.is_leader() && !b.is_leader());
/// assert_eq!(b.current_leader().unwrap().as_deref(), Some("worker-a"));
/// a.close();
/// b.close();
/// store_a.close();
/// store_b.close();
/// ```
#[derive(Clone)]
pub struct LeaderService {
    inner: Arc<LeaderInner>,
}

struct LeaderState {
    leading: bool,
    closed: bool,
}

struct LeaderInner {
    store: MetadataStore,
    path: String,
    candidate: String,
    listener: Box<dyn LeadershipListener>,
    /// Removed on close, or when the service is dropped without it.
    store_listeners: StoreListeners,
    /// `leader-service`: every election step and every callback runs here.
    executor: ComponentExecutor,
    /// `leader-service-retry`: arms the next round after a failed one (its thread starts on
    /// the first failure); the round itself runs on `executor`.
    retry: RetryTimer,
    /// This service, for the retry timer's task (which must not keep it alive).
    this: Weak<LeaderInner>,
    state: Mutex<LeaderState>,
}

impl LeaderService {
    /// Joins the election at `election_path` as `candidate_id` and runs the first election
    /// round on the `leader-service` thread before returning, so [`is_leader`](Self::is_leader)
    /// is settled (and `became_active` has run, if this candidate won).
    ///
    /// A round that fails (the store timed out, say) is tried again [`DEFAULT_RETRY_DELAY`]
    /// later, in the background; `start` still returns the service, which follows meanwhile.
    ///
    /// # Errors
    ///
    /// [`LeaderServiceError::Store`] for an invalid path or a closed store;
    /// [`LeaderServiceError::ThreadStart`] when the `leader-service` thread cannot be started.
    pub fn start(
        store: MetadataStore,
        election_path: &str,
        candidate_id: &str,
        listener: impl LeadershipListener,
    ) -> Result<Self, LeaderServiceError> {
        Self::start_with_retry_delay(
            store,
            election_path,
            candidate_id,
            listener,
            DEFAULT_RETRY_DELAY,
        )
    }

    /// [`start`](Self::start), with failed rounds tried again `retry_delay` later instead of
    /// [`DEFAULT_RETRY_DELAY`].
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn start_with_retry_delay(
        store: MetadataStore,
        election_path: &str,
        candidate_id: &str,
        listener: impl LeadershipListener,
        retry_delay: Duration,
    ) -> Result<Self, LeaderServiceError> {
        // Validates the path and that the store is open.
        store.exists(election_path)?;
        let executor = ComponentExecutor::new("leader-service");
        let retry = RetryTimer::new("leader-service", &executor.threads(), retry_delay);
        let inner = Arc::new_cyclic(|this| LeaderInner {
            store: store.clone(),
            path: election_path.to_owned(),
            candidate: candidate_id.to_owned(),
            listener: Box::new(listener),
            store_listeners: StoreListeners::new(&store),
            executor,
            retry,
            this: this.clone(),
            state: Mutex::new(LeaderState {
                leading: false,
                closed: false,
            }),
        });
        let weak = Arc::downgrade(&inner);
        inner
            .store_listeners
            .on_notification(move |notification: &Notification| {
                if let Some(inner) = weak.upgrade() {
                    if notification.path == inner.path
                        && notification.kind == NotificationType::Deleted
                    {
                        inner.queue(LeaderInner::node_deleted);
                    }
                }
            })?;
        let weak = Arc::downgrade(&inner);
        inner.store_listeners.on_session_event(move |event| {
            if let Some(inner) = weak.upgrade() {
                match event {
                    SessionEvent::SessionLost => inner.queue(LeaderInner::session_lost),
                    SessionEvent::SessionReestablished | SessionEvent::Reconnected => {
                        inner.queue(LeaderInner::elect)
                    }
                    SessionEvent::ConnectionLost => inner.queue(LeaderInner::connection_lost),
                }
            }
        })?;
        let service = Self { inner };
        let weak = Arc::downgrade(&service.inner);
        let first_round = service.inner.executor.submit(move || {
            if let Some(inner) = weak.upgrade() {
                inner.elect();
            }
        });
        match first_round {
            Ok(handle) => {
                let _ = handle.join();
            }
            Err(rejected) => {
                // Closed, so that the executors are shut down and the listeners removed (a
                // service dropped unclosed is reported by its executors).
                service.close();
                return Err(match rejected.reason() {
                    RejectReason::ThreadStartFailed(error) => LeaderServiceError::ThreadStart {
                        reason: error.to_string(),
                    },
                    _ => LeaderServiceError::Closed,
                });
            }
        }
        Ok(service)
    }

    /// Whether this service leads now.
    pub fn is_leader(&self) -> bool {
        self.inner.state.lock().leading
    }

    /// The id this service runs as.
    pub fn candidate_id(&self) -> &str {
        &self.inner.candidate
    }

    /// The election path.
    pub fn election_path(&self) -> &str {
        &self.inner.path
    }

    /// The id of the current leader, as the election node names it; `None` when no one leads.
    ///
    /// # Errors
    ///
    /// [`LeaderServiceError::Closed`]; [`LeaderServiceError::Store`].
    pub fn current_leader(&self) -> Result<Option<String>, LeaderServiceError> {
        if self.is_closed() {
            return Err(LeaderServiceError::Closed);
        }
        Ok(self
            .inner
            .store
            .get(&self.inner.path)?
            .map(|read| String::from_utf8_lossy(&read.value).into_owned()))
    }

    /// Closes the service: its store listeners are removed, the retry timer and the executor
    /// are shut down with `shutdown_now` (a retry armed and queued steps are dropped) and the
    /// executor awaited up to 10 s, then leadership is released (the node deleted if this
    /// service holds it). Neither callback runs. Idempotent.
    pub fn close(&self) {
        self.inner.close();
    }

    /// Whether [`close`](Self::close) has been called.
    pub fn is_closed(&self) -> bool {
        self.inner.state.lock().closed
    }

    /// The service's threads: `leader-service`, and `leader-service-retry` once a round failed.
    pub fn threads(&self) -> ComponentThreads {
        self.inner.executor.threads()
    }
}

impl LeaderInner {
    /// Queues `step` on the executor (refused quietly after close).
    fn queue(self: &Arc<Self>, step: fn(&Self)) {
        let weak: Weak<Self> = Arc::downgrade(self);
        let _ = self.executor.execute(move || {
            if let Some(inner) = weak.upgrade() {
                step(&inner);
            }
        });
    }

    /// One election round. Runs on `leader-service`.
    fn elect(&self) {
        loop {
            if self.state.lock().closed {
                return;
            }
            match self.store.put_ephemeral(
                &self.path,
                self.candidate.as_bytes(),
                ExpectedVersion::Absent,
            ) {
                Ok(_) => return self.transition(true),
                Err(MetadataStoreError::BadVersion { .. }) => match self.store.get(&self.path) {
                    Ok(Some(read)) => {
                        let ours =
                            read.stat.created_by_self && read.value == self.candidate.as_bytes();
                        return self.transition(ours);
                    }
                    // The leader just left: try again.
                    Ok(None) => continue,
                    Err(error) => return self.election_failed(&error),
                },
                Err(error) => return self.election_failed(&error),
            }
        }
    }

    /// The election node is gone: if it was ours, leadership is lost first (the listener
    /// hears `became_inactive` before any new round can make it leader again); then elect.
    /// Runs on `leader-service`.
    fn node_deleted(&self) {
        self.transition(false);
        self.elect();
    }

    /// A round failed: the next one starts `retry_delay` later (module docs), unless a retry
    /// is armed already or the service is closed. A session event or the node's deletion may
    /// start one sooner.
    fn election_failed(&self, error: &MetadataStoreError) {
        if *error == MetadataStoreError::AlreadyClosed || self.state.lock().closed {
            return; // nothing to campaign on any more
        }
        tracing::warn!(path = %self.path, candidate = %self.candidate, %error, retry_in = ?self.retry.delay(), "leader election round failed");
        let this = self.this.clone();
        self.retry.arm("leader election", move || {
            if let Some(inner) = this.upgrade() {
                inner.queue(LeaderInner::elect);
            }
        });
    }

    /// The connection to the store dropped: leadership cannot be confirmed until it comes
    /// back, so a leader steps down (`Reconnected` elects again, and the node, if it survived,
    /// is still ours). Runs on `leader-service`.
    fn connection_lost(&self) {
        if self.state.lock().leading {
            tracing::warn!(path = %self.path, candidate = %self.candidate, "connection to the store lost: stepping down until it is back");
        }
        self.transition(false);
    }

    /// A session of the store ended, and a node it held went with it. The event can arrive
    /// after this service already won again with the store's next session (the deletion of
    /// the old node may be heard first), so leadership is checked, not assumed lost. Runs on
    /// `leader-service`.
    fn session_lost(&self) {
        let still_ours = matches!(
            self.store.get(&self.path),
            Ok(Some(read)) if read.stat.created_by_self && read.value == self.candidate.as_bytes()
        );
        if !still_ours {
            self.transition(false);
        }
    }

    /// Records the outcome and runs the callback if leadership changed; no lock is held while
    /// the callback runs. Runs on `leader-service`.
    fn transition(&self, leading: bool) {
        let changed = {
            let mut state = self.state.lock();
            if state.closed {
                return;
            }
            let changed = state.leading != leading;
            state.leading = leading;
            changed
        };
        if !changed {
            return;
        }
        if leading {
            tracing::info!(path = %self.path, candidate = %self.candidate, "became leader");
            call_user("became_active", || self.listener.became_active());
        } else {
            tracing::info!(path = %self.path, candidate = %self.candidate, "lost leadership");
            call_user("became_inactive", || self.listener.became_inactive());
        }
    }

    fn close(&self) {
        let was_leading = {
            let mut state = self.state.lock();
            if state.closed {
                return;
            }
            state.closed = true;
            std::mem::take(&mut state.leading)
        };
        self.store_listeners.remove_all();
        self.retry.close();
        self.executor.close_now("a leadership callback");
        // Also when not leading: a round that raced with close may have created the node.
        self.release_leadership();
        if was_leading {
            tracing::info!(path = %self.path, candidate = %self.candidate, "leadership released");
        }
        tracing::info!(path = %self.path, candidate = %self.candidate, "leader service closed");
    }

    /// Deletes the election node if this service's session holds it.
    fn release_leadership(&self) {
        match self.store.get(&self.path) {
            Ok(Some(read))
                if read.stat.created_by_self && read.value == self.candidate.as_bytes() =>
            {
                if let Err(error) = self
                    .store
                    .delete(&self.path, ExpectedVersion::Exactly(read.stat.version))
                {
                    tracing::warn!(path = %self.path, %error, "could not release leadership; it goes with the session");
                }
            }
            Ok(_) | Err(MetadataStoreError::AlreadyClosed) => {}
            Err(error) => {
                tracing::warn!(path = %self.path, %error, "could not release leadership; it goes with the session")
            }
        }
    }
}

impl fmt::Debug for LeaderService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (leading, closed) = {
            let state = self.inner.state.lock();
            (state.leading, state.closed)
        };
        f.debug_struct("LeaderService")
            .field("path", &self.inner.path)
            .field("candidate", &self.inner.candidate)
            .field("leading", &leading)
            .field("closed", &closed)
            .field("executor", &*self.inner.executor)
            .finish()
    }
}
