//! `MetadataStore` (Pulsar's `AbstractMetadataStore`): a versioned key-value tree whose
//! listeners hear every change, in order, on the store's own `metadata-store` thread.

use crate::component::threads::ComponentThreads;
use crate::component::ComponentExecutor;
use crate::metadata::config::MetadataStoreConfig;
use crate::metadata::dispatcher::Dispatcher;
use crate::metadata::error::MetadataStoreError;
use crate::metadata::memory::MemoryProvider;
use crate::metadata::path;
use crate::metadata::provider::Provider;
use crate::metadata::types::{
    CreateMode, ExpectedVersion, GetResult, ListenerId, Notification, SessionEvent, Stat,
};
use crate::metadata::url::StoreUrl;
use crate::metadata::zookeeper::ZooKeeperProvider;
use crate::zookeeper::ZooKeeperSession;
use std::fmt;
use std::sync::Arc;

/// A versioned key-value tree with compare-and-set writes, ephemeral nodes bound to the store's
/// session, and listeners for every change (Pulsar's `AbstractMetadataStore`).
///
/// Providers, chosen by URL:
///
/// | URL | backend |
/// |---|---|
/// | `memory:<name>` | in-process tree shared by every store opened with that name (while one is open) |
/// | `zk:<host:port>[,<host:port>...][/chroot]` | a ZooKeeper ensemble, through a [`ZooKeeperSession`] |
///
/// - **Versions**: a new node has version 0; each put adds 1. Writes take an
///   [`ExpectedVersion`]; a lost compare-and-set fails with
///   [`MetadataStoreError::BadVersion`].
/// - **Sessions**: each store has its own session; its ephemeral nodes are deleted when the
///   store closes or its session is lost.
/// - **Notifications**: listeners run in the order the changes happened, on the store's own
///   single-thread executor (thread `metadata-store-{pool}-1`), never on the caller's thread and
///   never under a store lock. Creating or deleting a node also notifies `ChildrenChanged` for
///   its parent. After a reconnect or a new session the store sends
///   [`NotificationType::Resync`](crate::metadata::NotificationType::Resync) for `/`: changes
///   made meanwhile were not notified, so listeners that cache re-read.
/// - **Lifecycle**: clones share one store. [`close`](Self::close) stops the executor
///   (`shutdown_now`, then waits up to 10 s for a running listener) and ends the session; every
///   operation after it fails with [`MetadataStoreError::AlreadyClosed`]. Dropping the last
///   clone without closing is a bug the executor reports with a warning.
///
/// Operations block the calling thread (ZooKeeper: up to the operation timeout).
///
/// # Panics
///
/// The operations of a `zk:` store panic when called on a thread that runs an async runtime
/// (blocking there would stall it); call them from a blocking context (`spawn_blocking`).
///
/// # Examples
///
/// ```
/// use pulsar_server::metadata::{ExpectedVersion, MetadataStore, NotificationType};
/// use std::sync::mpsc;
/// use std::time::Duration;
///
/// let store = MetadataStore::open("memory:store-doc").unwrap();
/// let (events, received) = mpsc::channel();
/// store
///     .register_listener(move |n| events.send((n.kind, n.path.clone())).unwrap())
///     .unwrap();
///
/// let stat = store.put("/config", b"v1", ExpectedVersion::Absent).unwrap();
/// assert_eq!(stat.version, 0);
/// store
///     .put("/config", b"v2", ExpectedVersion::Exactly(stat.version))
///     .unwrap();
/// assert_eq!(store.get("/config").unwrap().unwrap().value, b"v2");
///
/// let next = || received.recv_timeout(Duration::from_secs(10)).unwrap();
/// assert_eq!(next(), (NotificationType::Created, "/config".to_owned()));
/// assert_eq!(next(), (NotificationType::ChildrenChanged, "/".to_owned()));
/// assert_eq!(next(), (NotificationType::Modified, "/config".to_owned()));
/// store.close();
/// ```
#[derive(Clone)]
pub struct MetadataStore {
    inner: Arc<StoreInner>,
}

struct StoreInner {
    url: String,
    /// Declared before `dispatcher`: dropped first, so a memory session lets go of the
    /// dispatcher before the store's own reference (the executor's last holder) goes.
    provider: Box<dyn Provider>,
    /// Also holds the store's closed flag (`Dispatcher::begin_close`).
    dispatcher: Arc<Dispatcher>,
}

impl MetadataStore {
    /// Opens a store on `url` with the default [`MetadataStoreConfig`].
    ///
    /// # Errors
    ///
    /// As for [`open_with_config`](Self::open_with_config).
    pub fn open(url: &str) -> Result<Self, MetadataStoreError> {
        Self::open_with_config(url, MetadataStoreConfig::default())
    }

    /// Opens a store on `url` (see the table above); for ZooKeeper this connects a session and
    /// creates the chroot if it is missing.
    ///
    /// # Errors
    ///
    /// [`MetadataStoreError::InvalidUrl`]; for ZooKeeper, [`MetadataStoreError::Unavailable`]
    /// or [`MetadataStoreError::Backend`] when no session could be established.
    pub fn open_with_config(
        url: &str,
        config: MetadataStoreConfig,
    ) -> Result<Self, MetadataStoreError> {
        let parsed = StoreUrl::parse(url)?;
        let dispatcher = Dispatcher::new(ComponentExecutor::new("metadata-store"));
        let provider: Box<dyn Provider> = match parsed {
            StoreUrl::Memory { name } => {
                Box::new(MemoryProvider::open(&name, Arc::clone(&dispatcher)))
            }
            StoreUrl::ZooKeeper { hosts, chroot } => {
                match ZooKeeperProvider::open(&hosts, &chroot, config, &dispatcher) {
                    Ok(provider) => Box::new(provider),
                    Err(error) => {
                        dispatcher.shutdown();
                        return Err(error);
                    }
                }
            }
        };
        tracing::info!(url, "metadata store opened");
        Ok(Self {
            inner: Arc::new(StoreInner {
                url: url.to_owned(),
                provider,
                dispatcher,
            }),
        })
    }

    /// The URL the store was opened with.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    fn check_open(&self) -> Result<(), MetadataStoreError> {
        if self.inner.dispatcher.is_closed() {
            Err(MetadataStoreError::AlreadyClosed)
        } else {
            Ok(())
        }
    }

    fn check_writable(&self, path: &str) -> Result<(), MetadataStoreError> {
        self.check_open()?;
        path::validate(path)?;
        if path == "/" {
            return Err(MetadataStoreError::InvalidPath {
                path: path.to_owned(),
                reason: "the root is neither written nor deleted",
            });
        }
        Ok(())
    }

    /// The node's value and stat; `None` if it does not exist.
    ///
    /// # Errors
    ///
    /// [`MetadataStoreError::InvalidPath`], [`MetadataStoreError::AlreadyClosed`],
    /// [`MetadataStoreError::Unavailable`], [`MetadataStoreError::Backend`].
    pub fn get(&self, path: &str) -> Result<Option<GetResult>, MetadataStoreError> {
        self.check_open()?;
        path::validate(path)?;
        self.inner.provider.get(path)
    }

    /// Writes a persistent node under the version condition, creating missing ancestors
    /// (persistent, empty); returns the node's new stat.
    ///
    /// # Errors
    ///
    /// [`MetadataStoreError::BadVersion`] when the condition does not hold;
    /// [`MetadataStoreError::EphemeralParent`]; [`MetadataStoreError::InvalidPath`] (also for
    /// `/`); [`MetadataStoreError::AlreadyClosed`]; [`MetadataStoreError::Unavailable`];
    /// [`MetadataStoreError::Backend`].
    pub fn put(
        &self,
        path: &str,
        value: &[u8],
        expected: ExpectedVersion,
    ) -> Result<Stat, MetadataStoreError> {
        self.check_writable(path)?;
        self.inner
            .provider
            .put(path, value, expected, CreateMode::Persistent)
    }

    /// As [`put`](Self::put), but a node the put creates is ephemeral: it is deleted when this
    /// store's session ends. (Overwriting an existing node keeps its kind.)
    ///
    /// # Errors
    ///
    /// As for [`put`](Self::put).
    pub fn put_ephemeral(
        &self,
        path: &str,
        value: &[u8],
        expected: ExpectedVersion,
    ) -> Result<Stat, MetadataStoreError> {
        self.check_writable(path)?;
        self.inner
            .provider
            .put(path, value, expected, CreateMode::Ephemeral)
    }

    /// Deletes a node that has no children, under the version condition.
    ///
    /// # Errors
    ///
    /// [`MetadataStoreError::NotFound`]; [`MetadataStoreError::BadVersion`];
    /// [`MetadataStoreError::NotEmpty`]; [`MetadataStoreError::InvalidPath`] (also for `/`);
    /// [`MetadataStoreError::AlreadyClosed`]; [`MetadataStoreError::Unavailable`];
    /// [`MetadataStoreError::Backend`].
    pub fn delete(&self, path: &str, expected: ExpectedVersion) -> Result<(), MetadataStoreError> {
        self.check_writable(path)?;
        self.inner.provider.delete(path, expected)
    }

    /// The names of the node's children, sorted; empty if the node does not exist.
    ///
    /// # Errors
    ///
    /// As for [`get`](Self::get).
    pub fn children(&self, path: &str) -> Result<Vec<String>, MetadataStoreError> {
        self.check_open()?;
        path::validate(path)?;
        self.inner.provider.children(path)
    }

    /// Whether the node exists.
    ///
    /// # Errors
    ///
    /// As for [`get`](Self::get).
    pub fn exists(&self, path: &str) -> Result<bool, MetadataStoreError> {
        self.check_open()?;
        path::validate(path)?;
        self.inner.provider.exists(path)
    }

    /// Adds a listener for node changes. It runs on the store's `metadata-store` thread, in
    /// the order the changes happened, with no store lock held; a panic is caught and logged.
    /// It may call the store. After [`unregister_listener`](Self::unregister_listener) it can
    /// still run once if a delivery was under way. A listener that caches what it reads must
    /// re-read on [`NotificationType::Resync`](crate::metadata::NotificationType::Resync).
    ///
    /// # Errors
    ///
    /// [`MetadataStoreError::AlreadyClosed`].
    pub fn register_listener(
        &self,
        listener: impl Fn(&Notification) + Send + Sync + 'static,
    ) -> Result<ListenerId, MetadataStoreError> {
        self.check_open()?;
        Ok(self
            .inner
            .dispatcher
            .add_notification_listener(Arc::new(listener)))
    }

    /// Adds a listener for [`SessionEvent`]s, delivered like node notifications (same thread,
    /// same order).
    ///
    /// # Errors
    ///
    /// [`MetadataStoreError::AlreadyClosed`].
    pub fn register_session_listener(
        &self,
        listener: impl Fn(SessionEvent) + Send + Sync + 'static,
    ) -> Result<ListenerId, MetadataStoreError> {
        self.check_open()?;
        Ok(self
            .inner
            .dispatcher
            .add_session_listener(Arc::new(listener)))
    }

    /// Removes a listener of either kind; `false` if it was not registered.
    pub fn unregister_listener(&self, id: ListenerId) -> bool {
        self.inner.dispatcher.remove_listener(id)
    }

    /// Ends the store's session as an expiry would, then establishes a new one: its ephemeral
    /// nodes are deleted (other stores hear `Deleted`), and this store's session listeners
    /// hear [`SessionEvent::SessionLost`] then [`SessionEvent::SessionReestablished`]. On
    /// ZooKeeper the session is ended on the server and re-created through the same recovery
    /// as after a real expiry, asynchronously (see [`ZooKeeperSession::expire_session`]). For
    /// tests and failure drills.
    ///
    /// # Errors
    ///
    /// [`MetadataStoreError::AlreadyClosed`]; for ZooKeeper, [`MetadataStoreError::Unavailable`]
    /// or [`MetadataStoreError::Backend`].
    pub fn expire_session(&self) -> Result<(), MetadataStoreError> {
        self.check_open()?;
        self.inner.provider.expire_session()
    }

    /// The ZooKeeper session behind a `zk:` store.
    pub fn zookeeper_session(&self) -> Option<ZooKeeperSession> {
        self.inner.provider.zookeeper_session().cloned()
    }

    /// Closes the store: the executor is shut down with `shutdown_now` (queued notifications
    /// are dropped) and awaited up to 10 s (returning at once when called from a listener),
    /// then the session ends and its ephemeral nodes are deleted. Idempotent.
    pub fn close(&self) {
        if !self.inner.dispatcher.begin_close() {
            return;
        }
        self.inner.dispatcher.shutdown();
        self.inner.provider.close();
        tracing::info!(url = %self.inner.url, "metadata store closed");
    }

    /// Whether [`close`](Self::close) has been called.
    pub fn is_closed(&self) -> bool {
        self.inner.dispatcher.is_closed()
    }

    /// The store's executor thread (`metadata-store`), once started. A `zk:` store's session
    /// threads are in [`ZooKeeperSession::threads`].
    pub fn threads(&self) -> ComponentThreads {
        self.inner.dispatcher.threads()
    }
}

impl fmt::Debug for MetadataStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetadataStore")
            .field("url", &self.inner.url)
            .field("closed", &self.is_closed())
            .field("provider", &self.inner.provider)
            .field("dispatcher", &self.inner.dispatcher)
            .finish()
    }
}
