//! The `zk:<hosts>[/chroot]` provider: the metadata store on a real ZooKeeper ensemble, through a
//! [`ZooKeeperSession`] (Pulsar's `ZKMetadataStore`).
//!
//! One persistent recursive watch on the chroot turns every server-side change into store
//! events: `NodeCreated`/`NodeDeleted` become `Created`/`Deleted` followed by `ChildrenChanged`
//! for the parent (as Pulsar derives them), `NodeDataChanged` becomes `Modified`. The session
//! re-registers the watch after an expiry, so the store keeps delivering. Ephemeral nodes are
//! ZooKeeper ephemerals of the store's session. After `Reconnected` and `SessionReestablished`
//! (the watch is in force again) the store sends `Resync` for `/`: what changed while the
//! watch was not in force was not notified.

use crate::metadata::config::MetadataStoreConfig;
use crate::metadata::dispatcher::{Dispatcher, StoreEvent};
use crate::metadata::error::MetadataStoreError;
use crate::metadata::path;
use crate::metadata::provider::{Provider, Result};
use crate::metadata::types::{
    CreateMode, ExpectedVersion, GetResult, Notification, NotificationType, SessionEvent, Stat,
};
use crate::zookeeper::{ZooKeeperError, ZooKeeperSession};
use std::fmt;
use std::sync::Arc;
use zookeeper_client as zk;

/// How often a put re-creates missing ancestors that a concurrent delete keeps removing.
const MAX_CREATE_ATTEMPTS: usize = 16;

/// A store's session on ZooKeeper.
pub(crate) struct ZooKeeperProvider {
    session: ZooKeeperSession,
}

/// Whether a create made the node or found it there.
enum Created {
    Made(zk::Stat),
    AlreadyThere,
}

impl ZooKeeperProvider {
    /// Connects to `hosts` rooted at `chroot` and routes the session's events and the watch on
    /// the chroot to `dispatcher`.
    pub(crate) fn open(
        hosts: &str,
        chroot: &str,
        config: MetadataStoreConfig,
        dispatcher: &Arc<Dispatcher>,
    ) -> Result<Self> {
        let connect_string = if chroot == "/" {
            hosts.to_owned()
        } else {
            format!("{hosts}{chroot}")
        };
        let session = ZooKeeperSession::connect(&connect_string, config).map_err(store_error)?;
        let sink = Arc::downgrade(dispatcher);
        session.add_session_listener(move |event| {
            if let Some(dispatcher) = sink.upgrade() {
                dispatcher.publish(session_events(event));
            }
        });
        let sink = Arc::downgrade(dispatcher);
        let watched = session.watch_recursive("/", move |notification| {
            if let Some(dispatcher) = sink.upgrade() {
                dispatcher.publish(store_events(notification));
            }
        });
        if let Err(error) = watched {
            session.close();
            return Err(store_error(error));
        }
        Ok(Self { session })
    }

    fn client(&self) -> Result<zk::Client> {
        self.session.client().map_err(store_error)
    }

    fn create(
        &self,
        client: &zk::Client,
        node: &str,
        value: &[u8],
        mode: CreateMode,
    ) -> Result<Created> {
        let zk_mode = match mode {
            CreateMode::Persistent => zk::CreateMode::Persistent,
            CreateMode::Ephemeral => zk::CreateMode::Ephemeral,
        };
        let options = zk_mode.with_acls(zk::Acls::anyone_all());
        for _ in 0..MAX_CREATE_ATTEMPTS {
            let outcome = self
                .session
                .run("create", client.create(node, value, &options))
                .map_err(store_error)?;
            match outcome {
                Ok((stat, _)) => return Ok(Created::Made(stat)),
                Err(zk::Error::NodeExists) => return Ok(Created::AlreadyThere),
                Err(zk::Error::NoNode) => self.create_ancestors(client, node)?,
                Err(zk::Error::NoChildrenForEphemerals) => {
                    return Err(MetadataStoreError::EphemeralParent {
                        path: node.to_owned(),
                    })
                }
                Err(error) => return Err(zk_error(error)),
            }
        }
        Err(MetadataStoreError::Backend {
            reason: format!("the ancestors of `{node}` kept disappearing"),
        })
    }

    fn create_ancestors(&self, client: &zk::Client, node: &str) -> Result<()> {
        let options = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        for ancestor in path::ancestors(node) {
            let outcome = self
                .session
                .run("create", client.create(ancestor, &[], &options))
                .map_err(store_error)?;
            match outcome {
                Ok(_) | Err(zk::Error::NodeExists) => {}
                Err(zk::Error::NoChildrenForEphemerals) => {
                    return Err(MetadataStoreError::EphemeralParent {
                        path: node.to_owned(),
                    })
                }
                Err(error) => return Err(zk_error(error)),
            }
        }
        Ok(())
    }
}

impl Provider for ZooKeeperProvider {
    fn get(&self, path: &str) -> Result<Option<GetResult>> {
        let client = self.client()?;
        let session_id = client.session_id().0;
        match self
            .session
            .run("get", client.get_data(path))
            .map_err(store_error)?
        {
            Ok((value, stat)) => Ok(Some(GetResult {
                value,
                stat: to_stat(&stat, session_id),
            })),
            Err(zk::Error::NoNode) => Ok(None),
            Err(error) => Err(zk_error(error)),
        }
    }

    fn put(
        &self,
        path: &str,
        value: &[u8],
        expected: ExpectedVersion,
        mode: CreateMode,
    ) -> Result<Stat> {
        let bad_version = || MetadataStoreError::BadVersion {
            path: path.to_owned(),
            expected,
        };
        let client = self.client()?;
        let session_id = client.session_id().0;
        loop {
            match expected {
                ExpectedVersion::Absent => {
                    return match self.create(&client, path, value, mode)? {
                        Created::Made(stat) => Ok(to_stat(&stat, session_id)),
                        Created::AlreadyThere => Err(bad_version()),
                    }
                }
                ExpectedVersion::Exactly(version) => {
                    let Ok(version) = i32::try_from(version) else {
                        return Err(bad_version());
                    };
                    let outcome = self
                        .session
                        .run("put", client.set_data(path, value, Some(version)))
                        .map_err(store_error)?;
                    return match outcome {
                        Ok(stat) => Ok(to_stat(&stat, session_id)),
                        Err(zk::Error::BadVersion | zk::Error::NoNode) => Err(bad_version()),
                        Err(error) => Err(zk_error(error)),
                    };
                }
                ExpectedVersion::Any => {
                    let outcome = self
                        .session
                        .run("put", client.set_data(path, value, None))
                        .map_err(store_error)?;
                    match outcome {
                        Ok(stat) => return Ok(to_stat(&stat, session_id)),
                        Err(zk::Error::NoNode) => {
                            if let Created::Made(stat) = self.create(&client, path, value, mode)? {
                                return Ok(to_stat(&stat, session_id));
                            }
                            // Created concurrently: overwrite it.
                        }
                        Err(error) => return Err(zk_error(error)),
                    }
                }
            }
        }
    }

    fn delete(&self, path: &str, expected: ExpectedVersion) -> Result<()> {
        let client = self.client()?;
        let version = match expected {
            ExpectedVersion::Any => None,
            ExpectedVersion::Exactly(version) => match i32::try_from(version) {
                Ok(version) => Some(version),
                Err(_) => {
                    return Err(MetadataStoreError::BadVersion {
                        path: path.to_owned(),
                        expected,
                    })
                }
            },
            ExpectedVersion::Absent => {
                return Err(if self.exists(path)? {
                    MetadataStoreError::BadVersion {
                        path: path.to_owned(),
                        expected,
                    }
                } else {
                    MetadataStoreError::NotFound {
                        path: path.to_owned(),
                    }
                })
            }
        };
        match self
            .session
            .run("delete", client.delete(path, version))
            .map_err(store_error)?
        {
            Ok(()) => Ok(()),
            Err(zk::Error::NoNode) => Err(MetadataStoreError::NotFound {
                path: path.to_owned(),
            }),
            Err(zk::Error::BadVersion) => Err(MetadataStoreError::BadVersion {
                path: path.to_owned(),
                expected,
            }),
            Err(zk::Error::NotEmpty) => Err(MetadataStoreError::NotEmpty {
                path: path.to_owned(),
            }),
            Err(error) => Err(zk_error(error)),
        }
    }

    fn children(&self, path: &str) -> Result<Vec<String>> {
        let client = self.client()?;
        match self
            .session
            .run("children", client.list_children(path))
            .map_err(store_error)?
        {
            Ok(mut children) => {
                children.sort_unstable();
                Ok(children)
            }
            Err(zk::Error::NoNode) => Ok(Vec::new()),
            Err(error) => Err(zk_error(error)),
        }
    }

    fn exists(&self, path: &str) -> Result<bool> {
        let client = self.client()?;
        match self
            .session
            .run("exists", client.check_stat(path))
            .map_err(store_error)?
        {
            Ok(stat) => Ok(stat.is_some()),
            Err(error) => Err(zk_error(error)),
        }
    }

    fn expire_session(&self) -> Result<()> {
        self.session.expire_session().map_err(store_error)
    }

    fn close(&self) {
        self.session.close();
    }

    fn zookeeper_session(&self) -> Option<&ZooKeeperSession> {
        Some(&self.session)
    }
}

impl fmt::Debug for ZooKeeperProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZooKeeperProvider")
            .field("session", &self.session)
            .finish()
    }
}

/// The store events for one session event: after a reconnect or a new session the watch is in
/// force again, and whatever changed meanwhile was not notified, so a `Resync` for the whole
/// store follows.
fn session_events(event: SessionEvent) -> Vec<StoreEvent> {
    let mut events = vec![StoreEvent::Session(event)];
    if matches!(
        event,
        SessionEvent::Reconnected | SessionEvent::SessionReestablished
    ) {
        events.push(StoreEvent::Node(Notification::new(
            NotificationType::Resync,
            "/",
        )));
    }
    events
}

/// The store events for one watch event (Pulsar derives the parent's `ChildrenChanged`).
fn store_events(notification: &Notification) -> Vec<StoreEvent> {
    let mut events = vec![StoreEvent::Node(notification.clone())];
    if matches!(
        notification.kind,
        NotificationType::Created | NotificationType::Deleted
    ) {
        if let Some(parent) = path::parent(&notification.path) {
            events.push(StoreEvent::Node(Notification::new(
                NotificationType::ChildrenChanged,
                parent,
            )));
        }
    }
    events
}

fn to_stat(stat: &zk::Stat, session_id: i64) -> Stat {
    Stat {
        version: i64::from(stat.version),
        ephemeral: stat.ephemeral_owner != 0,
        created_by_self: stat.ephemeral_owner != 0 && stat.ephemeral_owner == session_id,
    }
}

fn store_error(error: ZooKeeperError) -> MetadataStoreError {
    match error {
        ZooKeeperError::Closed => MetadataStoreError::AlreadyClosed,
        ZooKeeperError::NoSession | ZooKeeperError::Timeout { .. } => {
            MetadataStoreError::Unavailable {
                reason: error.to_string(),
            }
        }
        ZooKeeperError::InvalidConnectString {
            connect_string,
            reason,
        } => MetadataStoreError::InvalidUrl {
            url: connect_string,
            reason,
        },
        _ => MetadataStoreError::Backend {
            reason: error.to_string(),
        },
    }
}

fn zk_error(error: zk::Error) -> MetadataStoreError {
    match error {
        zk::Error::ConnectionLoss
        | zk::Error::SessionExpired
        | zk::Error::SessionMoved
        | zk::Error::Timeout
        | zk::Error::ClientClosed
        | zk::Error::NoHosts
        | zk::Error::Throttled => MetadataStoreError::Unavailable {
            reason: error.to_string(),
        },
        _ => MetadataStoreError::Backend {
            reason: error.to_string(),
        },
    }
}
