//! `ZooKeeperSession` (Pulsar's `PulsarZooKeeperClient`): owns one ZooKeeper session at a time;
//! when it expires, re-creates it and re-registers the watches on its `zk-connect-executor`.
//!
//! Threads:
//!
//! | thread | what runs there |
//! |---|---|
//! | `zk-connect-executor-{pool}-1` | connecting (first and after expiry), (re-)registering watches, session listeners, in order |
//! | `zk-io-{pool}-1` | the client's session task, the watch pumps (they call the watch handlers), the session-state monitor |
//!
//! Session life: a state monitor per session watches its state. `Disconnected` becomes
//! [`SessionEvent::ConnectionLost`]. `SyncConnected` after it (the same session, reconnected
//! within the session timeout, possibly to another server of the ensemble) queues on
//! `zk-connect-executor`: register every watch again on the server, then
//! [`SessionEvent::Reconnected`]. The client crate is not trusted to re-attach them:
//! `zookeeper-client` 0.11.2 never re-sends persistent watches (`resend_watches` in
//! `src/session/watch.rs` computes `index.max(index)`, so the `SetWatches` it sends has no
//! persistent slots), and a server forgets a connection's watches when the connection ends. The
//! watch registered again on the same client is dropped at once: the client keeps dispatching to
//! the first registration's pump, so events are not delivered twice, and dropping a duplicate
//! sends nothing to the server while another watcher of the same mode remains on the path.
//! Changes made while disconnected are never replayed for persistent watches: listeners must
//! re-read what they cache on `Reconnected` (the metadata store also sends
//! [`NotificationType::Resync`](crate::metadata::NotificationType::Resync)).
//!
//! `Expired` (or `Closed` when `close` did not ask for it: [`ZooKeeperSession::expire_session`])
//! becomes [`SessionEvent::SessionLost`] and queues recovery on `zk-connect-executor`: connect a
//! new session (retrying with backoff until it succeeds or the session is closed), register every
//! watch again, then [`SessionEvent::SessionReestablished`]. Everything that changes which
//! watches exist runs on that one thread, so a watch added while a recovery runs is registered
//! exactly once.

use crate::component::threads::ComponentThreads;
use crate::component::user_code::call_user;
use crate::component::ComponentExecutor;
use crate::metadata::path;
use crate::metadata::{
    ListenerId, ListenerList, MetadataStoreConfig, Notification, NotificationType, SessionEvent,
};
use crate::zookeeper::error::ZooKeeperError;
use crate::zookeeper::io::IoRuntime;
use parking_lot::{Condvar, Mutex};
use pulsar_common::executors::RejectReason;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;
use zookeeper_client as zk;

/// First and longest pause between attempts to re-create an expired session.
const RECOVERY_BACKOFF_MIN: Duration = Duration::from_millis(100);
const RECOVERY_BACKOFF_MAX: Duration = Duration::from_secs(5);

type SessionListener = Arc<dyn Fn(SessionEvent) + Send + Sync>;
type WatchHandler = Arc<dyn Fn(&Notification) + Send + Sync>;

/// A recursive watch to keep registered across sessions.
struct Watch {
    path: String,
    handler: WatchHandler,
}

/// Which session is current.
struct State {
    /// The current session's client (rooted at the chroot); `None` after expiry until the new
    /// session is up, and after close.
    client: Option<zk::Client>,
    /// Sessions established so far; the current session's generation.
    established: u64,
    closed: bool,
}

struct SessionInner {
    /// `host:port[,host:port...]`.
    hosts: String,
    /// The chroot, `/` for none.
    chroot: String,
    config: MetadataStoreConfig,
    io: IoRuntime,
    /// `zk-connect-executor`: connects and (re-)registers watches; session listeners run here.
    connect_executor: ComponentExecutor,
    state: Mutex<State>,
    /// Wakes a recovery waiting between attempts when the session is closed.
    closed_changed: Condvar,
    /// Every watch to keep; changed only on `zk-connect-executor`.
    watches: Mutex<Vec<Arc<Watch>>>,
    listeners: Mutex<SessionListeners>,
}

/// Session listeners, replaced whole on change (a delivery takes an `Arc` snapshot).
struct SessionListeners {
    next_id: u64,
    list: ListenerList<SessionListener>,
}

/// Owns a ZooKeeper session (Pulsar's `PulsarZooKeeperClient`): on expiry it re-creates the
/// session and re-registers its watches on its `zk-connect-executor` thread, so watches set
/// before the expiry keep firing after it.
///
/// Clones share one session. [`close`](Self::close) ends it (its ephemeral nodes go at once)
/// and stops both threads; dropping the last clone without closing it is reported by the
/// executor's warning.
///
/// # Panics
///
/// `connect` and `expire_session` block, and panic when called on a thread that runs an async
/// runtime.
///
/// # Examples
///
/// ```no_run
/// use pulsar_server::metadata::MetadataStoreConfig;
/// use pulsar_server::zookeeper::ZooKeeperSession;
/// use std::time::Duration;
///
/// let config = MetadataStoreConfig::default().with_session_timeout(Duration::from_secs(3));
/// let session = ZooKeeperSession::connect("127.0.0.1:2181/pulsar", config).unwrap();
/// session
///     .watch_recursive("/", |notification| println!("{notification:?}"))
///     .unwrap();
/// session.add_session_listener(|event| println!("{event:?}"));
/// session.close();
/// ```
#[derive(Clone)]
pub struct ZooKeeperSession {
    inner: Arc<SessionInner>,
}

impl ZooKeeperSession {
    /// Connects to `connect_string` (`host:port[,host:port...][/chroot]`), creating the chroot
    /// node if it is missing. The connection is made on `zk-connect-executor`.
    ///
    /// # Errors
    ///
    /// [`ZooKeeperError::InvalidConnectString`]; [`ZooKeeperError::ThreadStart`];
    /// [`ZooKeeperError::Timeout`] or [`ZooKeeperError::Client`] when no session could be
    /// established within the operation timeout.
    pub fn connect(
        connect_string: &str,
        config: MetadataStoreConfig,
    ) -> Result<Self, ZooKeeperError> {
        let (hosts, chroot) = parse_connect_string(connect_string)?;
        let threads = ComponentThreads::new();
        let io = IoRuntime::start(&threads).map_err(|error| ZooKeeperError::ThreadStart {
            reason: error.to_string(),
        })?;
        let connect_executor = ComponentExecutor::recorded_in("zk-connect-executor", threads);
        let inner = Arc::new(SessionInner {
            hosts,
            chroot,
            config,
            io,
            connect_executor,
            state: Mutex::new(State {
                client: None,
                established: 0,
                closed: false,
            }),
            closed_changed: Condvar::new(),
            watches: Mutex::new(Vec::new()),
            listeners: Mutex::new(SessionListeners {
                next_id: 1,
                list: ListenerList::new(),
            }),
        });
        let session = Self { inner };
        match session.inner.on_connect_executor(SessionInner::establish) {
            Ok(()) => {
                tracing::info!(
                    hosts = %session.inner.hosts,
                    chroot = %session.inner.chroot,
                    session_id = ?session.session_id(),
                    "ZooKeeper session established"
                );
                Ok(session)
            }
            Err(error) => {
                session.close();
                Err(error)
            }
        }
    }

    /// Registers a persistent recursive watch on `path`: `handler` hears every creation,
    /// deletion and value change of `path` and the nodes below it, in the order the server
    /// applied them, for this session and every session after it.
    ///
    /// The handler runs on the `zk-io` thread and must not block (hand the event off; the
    /// metadata store queues it for its own executor). Its panics are caught and logged.
    ///
    /// # Errors
    ///
    /// [`ZooKeeperError::Closed`]; [`ZooKeeperError::Client`] for an invalid path or when the
    /// server refused the watch; [`ZooKeeperError::Timeout`].
    pub fn watch_recursive(
        &self,
        path: &str,
        handler: impl Fn(&Notification) + Send + Sync + 'static,
    ) -> Result<(), ZooKeeperError> {
        path::validate(path).map_err(|error| ZooKeeperError::Client {
            what: "watch",
            reason: error.to_string(),
        })?;
        let watch = Arc::new(Watch {
            path: path.to_owned(),
            handler: Arc::new(handler),
        });
        self.inner
            .on_connect_executor(move |inner| inner.add_watch(watch))
    }

    /// Adds a listener for [`SessionEvent`]s; listeners run in order on `zk-connect-executor`.
    pub fn add_session_listener(
        &self,
        listener: impl Fn(SessionEvent) + Send + Sync + 'static,
    ) -> ListenerId {
        let mut listeners = self.inner.listeners.lock();
        let id = ListenerId(listeners.next_id);
        listeners.next_id += 1;
        listeners.list.add(id, Arc::new(listener));
        id
    }

    /// The current session's id; `None` while none is established or after close.
    pub fn session_id(&self) -> Option<i64> {
        let state = self.inner.state.lock();
        state.client.as_ref().map(|client| client.session_id().0)
    }

    /// How many sessions have been established: 1 after `connect`, one more per recovery.
    pub fn sessions_established(&self) -> u64 {
        self.inner.state.lock().established
    }

    /// Ends the current session on the server as an expiry would, then recovers: the session
    /// is closed (the server deletes its ephemeral nodes and forgets its watches), this session
    /// hears [`SessionEvent::SessionLost`], and `zk-connect-executor` establishes a new session,
    /// registers the watches again and reports [`SessionEvent::SessionReestablished`]; the
    /// recovery is asynchronous. For tests and failure drills. (A session the server expires
    /// on its own, after a partition longer than the session timeout, takes the same path.)
    ///
    /// # Errors
    ///
    /// [`ZooKeeperError::Closed`], [`ZooKeeperError::NoSession`] (no session right now), or
    /// [`ZooKeeperError::Timeout`] when the server did not confirm the end of the session.
    pub fn expire_session(&self) -> Result<(), ZooKeeperError> {
        let client = {
            let mut state = self.inner.state.lock();
            if state.closed {
                return Err(ZooKeeperError::Closed);
            }
            state.client.take().ok_or(ZooKeeperError::NoSession)?
        };
        let states = client.state_watcher();
        // The last client of the session: dropping it sends the close request. (A clone held by
        // an operation in flight delays that until the operation ends.)
        drop(client);
        self.inner
            .run("ending the session", wait_until_terminated(states))?;
        tracing::info!(hosts = %self.inner.hosts, "ZooKeeper session ended on request");
        Ok(())
    }

    /// Ends the session (its ephemeral nodes are deleted at once) and stops both threads:
    /// `zk-connect-executor` is shut down with `shutdown_now` (a pending recovery is dropped)
    /// and awaited up to 10 s, then the `zk-io` runtime. Idempotent.
    pub fn close(&self) {
        self.inner.close();
    }

    /// Whether [`close`](Self::close) has been called.
    pub fn is_closed(&self) -> bool {
        self.inner.state.lock().closed
    }

    /// The threads of this session (`zk-connect-executor`, `zk-io`).
    pub fn threads(&self) -> ComponentThreads {
        self.inner.connect_executor.threads()
    }

    /// The current session's client, rooted at the chroot.
    pub(crate) fn client(&self) -> Result<zk::Client, ZooKeeperError> {
        self.inner.client()
    }

    /// Waits for one client operation, at most the operation timeout.
    pub(crate) fn run<F: Future>(
        &self,
        what: &'static str,
        future: F,
    ) -> Result<F::Output, ZooKeeperError> {
        self.inner.run(what, future)
    }
}

impl SessionInner {
    fn client(&self) -> Result<zk::Client, ZooKeeperError> {
        let state = self.state.lock();
        if state.closed {
            return Err(ZooKeeperError::Closed);
        }
        state.client.clone().ok_or(ZooKeeperError::NoSession)
    }

    fn run<F: Future>(&self, what: &'static str, future: F) -> Result<F::Output, ZooKeeperError> {
        self.io
            .block_on(future, self.config.operation_timeout)
            .map_err(|_| ZooKeeperError::Timeout { what })
    }

    /// Runs `f` on `zk-connect-executor` and waits for it (inline when already there).
    fn on_connect_executor<R, F>(self: &Arc<Self>, f: F) -> Result<R, ZooKeeperError>
    where
        F: FnOnce(&Arc<Self>) -> Result<R, ZooKeeperError> + Send + 'static,
        R: Send + 'static,
    {
        let here = std::thread::current();
        if here
            .name()
            .is_some_and(|name| name == self.connect_executor.name())
        {
            return f(self);
        }
        let weak = Arc::downgrade(self);
        let task = move || match weak.upgrade() {
            Some(inner) => f(&inner),
            None => Err(ZooKeeperError::Closed),
        };
        match self.connect_executor.submit(task) {
            Ok(handle) => handle.join().unwrap_or_else(|error| {
                Err(ZooKeeperError::Client {
                    what: "running on zk-connect-executor",
                    reason: error.to_string(),
                })
            }),
            Err(rejected) => Err(refused_error(rejected.reason())),
        }
    }

    /// Connects a new session, creates the chroot, registers every watch, starts the state
    /// monitor, and makes the session current. Runs on `zk-connect-executor`.
    fn establish(self: &Arc<Self>) -> Result<(), ZooKeeperError> {
        let connector = zk::Client::connector().with_session_timeout(self.config.session_timeout);
        let base = self
            .run("connecting", connector.connect(&self.hosts))?
            .map_err(|error| client_error("connecting", error))?;
        let client = if self.chroot == "/" {
            base
        } else {
            let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
            for node in path::ancestors(&self.chroot).chain([self.chroot.as_str()]) {
                match self.run("creating the chroot", base.create(node, &[], &persistent))? {
                    Ok(_) | Err(zk::Error::NodeExists) => {}
                    Err(error) => return Err(client_error("creating the chroot", error)),
                }
            }
            base.chroot(self.chroot.clone())
                .map_err(|_| ZooKeeperError::Client {
                    what: "rooting the client",
                    reason: format!("invalid chroot `{}`", self.chroot),
                })?
        };
        let generation = {
            let state = self.state.lock();
            if state.closed {
                return Err(ZooKeeperError::Closed);
            }
            state.established + 1
        };
        let watches = self.watches.lock().clone();
        for watch in &watches {
            self.register_watch(&client, watch)?;
        }
        let monitor = state_monitor(client.state_watcher(), Arc::downgrade(self), generation);
        self.io.spawn(monitor).ok_or(ZooKeeperError::Closed)?;
        let mut state = self.state.lock();
        if state.closed {
            drop(state);
            return Err(ZooKeeperError::Closed);
        }
        state.client = Some(client);
        state.established = generation;
        Ok(())
    }

    /// Registers `watch` on `client` and starts its pump. Runs on `zk-connect-executor`.
    fn register_watch(&self, client: &zk::Client, watch: &Watch) -> Result<(), ZooKeeperError> {
        let watcher = self
            .run(
                "registering a watch",
                client.watch(&watch.path, zk::AddWatchMode::PersistentRecursive),
            )?
            .map_err(|error| client_error("registering a watch", error))?;
        self.io
            .spawn(watch_pump(watcher, Arc::clone(&watch.handler)))
            .ok_or(ZooKeeperError::Closed)?;
        Ok(())
    }

    /// Keeps `watch` and registers it on the current session. Runs on `zk-connect-executor`.
    fn add_watch(self: &Arc<Self>, watch: Arc<Watch>) -> Result<(), ZooKeeperError> {
        let client = match self.client() {
            Ok(client) => Some(client),
            // Registered by the recovery that is about to run.
            Err(ZooKeeperError::NoSession) => None,
            Err(error) => return Err(error),
        };
        if let Some(client) = client {
            self.register_watch(&client, &watch)?;
        }
        self.watches.lock().push(watch);
        Ok(())
    }

    /// Delivers a session event to the listeners on `zk-connect-executor`, after whatever is
    /// queued there.
    fn emit(self: &Arc<Self>, event: SessionEvent) {
        let weak = Arc::downgrade(self);
        let _ = self.connect_executor.execute(move || {
            if let Some(inner) = weak.upgrade() {
                inner.notify(event);
            }
        });
    }

    /// Calls the session listeners; runs on `zk-connect-executor`, with no lock held.
    fn notify(&self, event: SessionEvent) {
        let listeners = self.listeners.lock().list.snapshot();
        for (_, listener) in listeners.iter() {
            call_user("ZooKeeper session listener", || listener(event));
        }
    }

    /// The session of `generation` reconnected (same session): queue the re-registration of
    /// the watches, which then reports [`SessionEvent::Reconnected`].
    fn reconnected(self: &Arc<Self>, generation: u64) {
        tracing::info!(hosts = %self.hosts, generation, "ZooKeeper session reconnected; registering the watches again");
        let weak = Arc::downgrade(self);
        let _ = self.connect_executor.execute(move || {
            if let Some(inner) = weak.upgrade() {
                inner.restore_watches(generation);
            }
        });
    }

    /// Registers every watch again on the reconnected session of `generation`, then tells the
    /// listeners [`SessionEvent::Reconnected`]. Retries with backoff while the session stays
    /// connected; gives up quietly when it disconnects again (the next reconnect queues this
    /// again) or when another session replaced it (its recovery registers the watches and
    /// reports [`SessionEvent::SessionReestablished`]). Runs on `zk-connect-executor`.
    fn restore_watches(self: &Arc<Self>, generation: u64) {
        let mut backoff = RECOVERY_BACKOFF_MIN;
        loop {
            let client = {
                let state = self.state.lock();
                if state.closed || state.established != generation {
                    return;
                }
                match &state.client {
                    Some(client) => client.clone(),
                    None => return,
                }
            };
            match self.register_watches_again(&client) {
                Ok(()) => {
                    tracing::info!(hosts = %self.hosts, session_id = client.session_id().0, "ZooKeeper watches registered again after the reconnect");
                    self.notify(SessionEvent::Reconnected);
                    return;
                }
                Err(error) => {
                    let connected = matches!(
                        client.state(),
                        zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly
                    );
                    if !connected {
                        tracing::info!(hosts = %self.hosts, %error, "disconnected again while registering the watches; the next reconnect retries");
                        return;
                    }
                    tracing::warn!(hosts = %self.hosts, %error, retry_in = ?backoff, "cannot register the watches again yet");
                    let mut state = self.state.lock();
                    if !state.closed {
                        // Not a sleep: `close` wakes it.
                        let _ = self.closed_changed.wait_for(&mut state, backoff);
                    }
                    backoff = (backoff * 2).min(RECOVERY_BACKOFF_MAX);
                }
            }
        }
    }

    /// Adds every watch to the server again through `client`, whose first registration (and its
    /// pump) stays in place. Runs on `zk-connect-executor`.
    fn register_watches_again(&self, client: &zk::Client) -> Result<(), ZooKeeperError> {
        let watches = self.watches.lock().clone();
        for watch in &watches {
            let duplicate = self
                .run(
                    "registering a watch again",
                    client.watch(&watch.path, zk::AddWatchMode::PersistentRecursive),
                )?
                .map_err(|error| client_error("registering a watch again", error))?;
            // The server now sends the path's events again; the client hands them to every
            // watcher of the path, and the first one's pump delivers them. Dropping this one
            // removes it from the client only (another persistent recursive watcher remains).
            drop(duplicate);
        }
        Ok(())
    }

    /// The session of `generation` expired: forget its client and queue the recovery.
    fn session_expired(self: &Arc<Self>, generation: u64) {
        let expired = {
            let mut state = self.state.lock();
            if state.established == generation {
                state.client.take()
            } else {
                None
            }
        };
        drop(expired);
        tracing::warn!(hosts = %self.hosts, generation, "ZooKeeper session expired; re-creating it");
        self.emit(SessionEvent::SessionLost);
        let weak = Arc::downgrade(self);
        let _ = self.connect_executor.execute(move || {
            if let Some(inner) = weak.upgrade() {
                inner.recover();
            }
        });
    }

    /// Re-creates the session until it succeeds or the session is closed. Runs on
    /// `zk-connect-executor`.
    fn recover(self: &Arc<Self>) {
        let mut backoff = RECOVERY_BACKOFF_MIN;
        loop {
            if self.state.lock().closed {
                return;
            }
            match self.establish() {
                Ok(()) => {
                    tracing::info!(hosts = %self.hosts, session_id = ?self.client().ok().map(|c| c.session_id().0), "ZooKeeper session re-established; watches registered again");
                    self.notify(SessionEvent::SessionReestablished);
                    return;
                }
                Err(ZooKeeperError::Closed) => return,
                Err(error) => {
                    tracing::warn!(hosts = %self.hosts, %error, retry_in = ?backoff, "cannot re-create the ZooKeeper session yet");
                    let mut state = self.state.lock();
                    if !state.closed {
                        // Not a sleep: `close` wakes it.
                        let _ = self.closed_changed.wait_for(&mut state, backoff);
                    }
                    backoff = (backoff * 2).min(RECOVERY_BACKOFF_MAX);
                }
            }
        }
    }

    fn close(&self) {
        {
            let mut state = self.state.lock();
            if state.closed {
                return;
            }
            state.closed = true;
        }
        self.closed_changed.notify_all();
        self.connect_executor
            .close_now("a ZooKeeper connect attempt");
        let client = self.state.lock().client.take();
        if let Some(client) = client {
            let states = client.state_watcher();
            drop(client);
            if tokio::runtime::Handle::try_current().is_err() {
                // Wait for the close request to be answered, so the ephemeral nodes are gone
                // when `close` returns.
                let _ = self.run("closing the session", wait_until_terminated(states));
            }
        }
        self.io.shutdown();
        let watches = std::mem::take(&mut *self.watches.lock());
        let listeners = self.listeners.lock().list.take_all();
        drop((watches, listeners));
        tracing::info!(hosts = %self.hosts, chroot = %self.chroot, "ZooKeeper session closed");
    }
}

/// Delivers the node events of one session's watch to the handler; ends with the session.
async fn watch_pump(mut watcher: zk::PersistentWatcher, handler: WatchHandler) {
    loop {
        let event = watcher.changed().await;
        let kind = match event.event_type {
            zk::EventType::Session => {
                if event.session_state.is_terminated() {
                    return;
                }
                continue;
            }
            zk::EventType::NodeCreated => NotificationType::Created,
            zk::EventType::NodeDeleted => NotificationType::Deleted,
            zk::EventType::NodeDataChanged => NotificationType::Modified,
            zk::EventType::NodeChildrenChanged => NotificationType::ChildrenChanged,
        };
        let notification = Notification::new(kind, event.path);
        call_user("ZooKeeper watch handler", || handler(&notification));
    }
}

/// Turns one session's state changes into session events; ends with the session.
async fn state_monitor(mut states: zk::StateWatcher, session: Weak<SessionInner>, generation: u64) {
    loop {
        let state = states.changed().await;
        let Some(inner) = session.upgrade() else {
            return;
        };
        match state {
            zk::SessionState::Disconnected => inner.emit(SessionEvent::ConnectionLost),
            zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
                inner.reconnected(generation)
            }
            zk::SessionState::Expired => {
                inner.session_expired(generation);
                return;
            }
            zk::SessionState::Closed if !inner.state.lock().closed => {
                // Closed, but not by `close`: `expire_session` ended it; recover as from expiry.
                inner.session_expired(generation);
                return;
            }
            _ => return,
        }
    }
}

/// Waits until a client's session has ended (closed, expired or failed authentication).
async fn wait_until_terminated(mut states: zk::StateWatcher) {
    if states.peek_state().is_terminated() {
        return;
    }
    while !states.changed().await.is_terminated() {}
}

/// The error for work `zk-connect-executor` refused: `Closed` after the session's close shut it
/// down, `ThreadStart` when its thread could not be started (a session that is not closed, so
/// the caller may try again).
fn refused_error(reason: &RejectReason) -> ZooKeeperError {
    match reason {
        RejectReason::Shutdown => ZooKeeperError::Closed,
        RejectReason::ThreadStartFailed(error) => ZooKeeperError::ThreadStart {
            reason: error.to_string(),
        },
        _ => ZooKeeperError::Client {
            what: "handing work to zk-connect-executor",
            reason: reason.to_string(),
        },
    }
}

fn client_error(what: &'static str, error: zk::Error) -> ZooKeeperError {
    ZooKeeperError::Client {
        what,
        reason: error.to_string(),
    }
}

/// Splits `host:port[,host:port...][/chroot]`.
fn parse_connect_string(connect_string: &str) -> Result<(String, String), ZooKeeperError> {
    match crate::metadata::url::StoreUrl::parse(&format!("zk:{connect_string}")) {
        Ok(crate::metadata::url::StoreUrl::ZooKeeper { hosts, chroot }) => Ok((hosts, chroot)),
        Ok(_) => unreachable!("a `zk:` URL parses as ZooKeeper"),
        Err(error) => Err(ZooKeeperError::InvalidConnectString {
            connect_string: connect_string.to_owned(),
            reason: error.to_string(),
        }),
    }
}

impl fmt::Debug for ZooKeeperSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (established, closed) = {
            let state = self.inner.state.lock();
            (state.established, state.closed)
        };
        f.debug_struct("ZooKeeperSession")
            .field("hosts", &self.inner.hosts)
            .field("chroot", &self.inner.chroot)
            .field("session_id", &self.session_id())
            .field("sessions_established", &established)
            .field("closed", &closed)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[test]
    fn work_refused_for_a_thread_that_cannot_start_is_a_thread_start_error_not_closed() {
        let refused = RejectReason::ThreadStartFailed(io::Error::other("no threads left"));
        match refused_error(&refused) {
            ZooKeeperError::ThreadStart { reason } => assert!(reason.contains("no threads left")),
            other => panic!("expected ThreadStart, got {other:?}"),
        }
        assert_eq!(
            refused_error(&RejectReason::Shutdown),
            ZooKeeperError::Closed
        );
    }
}
