//! The `memory:<name>` provider: an in-process versioned tree shared by every store opened with
//! the same name (Pulsar's `LocalMemoryMetadataStore`), with sessions and ephemeral nodes.
//!
//! One mutex guards the tree and its session table. A change computes its events and queues
//! them on every live session's dispatcher while still holding that mutex, which is what puts
//! every store's events in the one order the tree changed in; the drain tasks are scheduled
//! after the mutex is released. No listener ever runs under it.
//!
//! The tree lives as long as some store is open on it; when the last one closes, its data is
//! gone.

use crate::metadata::dispatcher::{Dispatcher, StoreEvent};
use crate::metadata::error::MetadataStoreError;
use crate::metadata::path;
use crate::metadata::provider::{Provider, Result};
use crate::metadata::types::{
    CreateMode, ExpectedVersion, GetResult, Notification, NotificationType, SessionEvent, Stat,
};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Weak};

/// The trees by name; an entry lives while some store holds its tree.
static TREES: LazyLock<Mutex<HashMap<String, Weak<MemoryTree>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// One node of the tree.
struct Node {
    value: Vec<u8>,
    /// Puts since creation: 0 for a new node.
    version: i64,
    /// The session that owns the node, if it is ephemeral.
    ephemeral_owner: Option<u64>,
}

/// The shared tree and who is watching it.
struct TreeState {
    /// Every node by full path; `/` always exists.
    nodes: BTreeMap<String, Node>,
    /// The live sessions and the dispatchers of their stores.
    sessions: HashMap<u64, Arc<Dispatcher>>,
    next_session: u64,
}

/// A named tree shared by the stores opened on `memory:<name>`.
pub(crate) struct MemoryTree {
    name: String,
    state: Mutex<TreeState>,
}

impl Drop for MemoryTree {
    fn drop(&mut self) {
        let mut trees = TREES.lock();
        if trees
            .get(&self.name)
            .is_some_and(|weak| weak.strong_count() == 0)
        {
            trees.remove(&self.name);
        }
    }
}

/// The dispatchers that got events under the tree lock and need a drain task once it is
/// released.
#[must_use]
struct ToSchedule(Vec<Arc<Dispatcher>>);

impl ToSchedule {
    fn run(self) {
        for dispatcher in self.0 {
            dispatcher.schedule();
        }
    }
}

impl TreeState {
    /// Queues `events` for every live session except `except`, in this order.
    fn emit(&self, events: &[StoreEvent], except: Option<u64>) -> ToSchedule {
        let mut targets = Vec::with_capacity(self.sessions.len());
        if events.is_empty() {
            return ToSchedule(targets);
        }
        for (&session, dispatcher) in &self.sessions {
            if Some(session) != except {
                dispatcher.enqueue(events.iter().cloned());
                targets.push(Arc::clone(dispatcher));
            }
        }
        ToSchedule(targets)
    }

    fn has_children(&self, path: &str) -> bool {
        let prefix = if path == "/" {
            "/".to_owned()
        } else {
            format!("{path}/")
        };
        self.nodes
            .range(prefix.clone()..)
            .take_while(|(key, _)| key.starts_with(&prefix))
            .any(|(key, _)| key.len() > prefix.len())
    }

    /// Deletes the ephemeral nodes of `session`, returning the events for the other sessions.
    fn delete_ephemerals_of(&mut self, session: u64) -> Vec<StoreEvent> {
        let owned: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, node)| node.ephemeral_owner == Some(session))
            .map(|(path, _)| path.clone())
            .collect();
        let mut events = Vec::with_capacity(owned.len() * 2);
        for path in owned {
            // Ephemeral nodes have no children, so each can go on its own.
            self.nodes.remove(&path);
            push_deleted(&mut events, &path);
        }
        events
    }
}

fn node_event(kind: NotificationType, path: &str) -> StoreEvent {
    StoreEvent::Node(Notification::new(kind, path))
}

fn push_created(events: &mut Vec<StoreEvent>, path: &str) {
    events.push(node_event(NotificationType::Created, path));
    if let Some(parent) = path::parent(path) {
        events.push(node_event(NotificationType::ChildrenChanged, parent));
    }
}

fn push_deleted(events: &mut Vec<StoreEvent>, path: &str) {
    events.push(node_event(NotificationType::Deleted, path));
    if let Some(parent) = path::parent(path) {
        events.push(node_event(NotificationType::ChildrenChanged, parent));
    }
}

/// A store's session on a [`MemoryTree`].
pub(crate) struct MemoryProvider {
    tree: Arc<MemoryTree>,
    /// The current session id; changed only under the tree lock (by `expire_session`).
    session: AtomicU64,
}

impl MemoryProvider {
    /// Opens a session on the tree named `name` (creating the tree if no store holds it) whose
    /// events go to `dispatcher`.
    pub(crate) fn open(name: &str, dispatcher: Arc<Dispatcher>) -> Self {
        let tree = {
            let mut trees = TREES.lock();
            match trees.get(name).and_then(Weak::upgrade) {
                Some(tree) => tree,
                None => {
                    let mut nodes = BTreeMap::new();
                    nodes.insert(
                        "/".to_owned(),
                        Node {
                            value: Vec::new(),
                            version: 0,
                            ephemeral_owner: None,
                        },
                    );
                    let tree = Arc::new(MemoryTree {
                        name: name.to_owned(),
                        state: Mutex::new(TreeState {
                            nodes,
                            sessions: HashMap::new(),
                            next_session: 1,
                        }),
                    });
                    trees.insert(name.to_owned(), Arc::downgrade(&tree));
                    tree
                }
            }
        };
        let session = {
            let mut state = tree.state.lock();
            let session = state.next_session;
            state.next_session += 1;
            state.sessions.insert(session, dispatcher);
            session
        };
        tracing::debug!(tree = name, session, "memory metadata session opened");
        Self {
            tree,
            session: AtomicU64::new(session),
        }
    }

    /// The current session, checked to be live under the tree lock.
    fn live_session(&self, state: &TreeState) -> Result<u64> {
        let session = self.session.load(Ordering::Acquire);
        if state.sessions.contains_key(&session) {
            Ok(session)
        } else {
            Err(MetadataStoreError::AlreadyClosed)
        }
    }

    fn stat_of(node: &Node, session: u64) -> Stat {
        Stat {
            version: node.version,
            ephemeral: node.ephemeral_owner.is_some(),
            created_by_self: node.ephemeral_owner == Some(session),
        }
    }
}

impl Provider for MemoryProvider {
    fn get(&self, path: &str) -> Result<Option<GetResult>> {
        let state = self.tree.state.lock();
        let session = self.live_session(&state)?;
        Ok(state.nodes.get(path).map(|node| GetResult {
            value: node.value.clone(),
            stat: Self::stat_of(node, session),
        }))
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
        let (stat, to_schedule) = {
            let mut state = self.tree.state.lock();
            let session = self.live_session(&state)?;
            let mut events = Vec::new();
            let stat = match state.nodes.get_mut(path) {
                Some(node) => {
                    match expected {
                        ExpectedVersion::Absent => return Err(bad_version()),
                        ExpectedVersion::Exactly(version) if version != node.version => {
                            return Err(bad_version())
                        }
                        _ => {}
                    }
                    node.value = value.to_vec();
                    node.version += 1;
                    events.push(node_event(NotificationType::Modified, path));
                    Self::stat_of(node, session)
                }
                None => {
                    if matches!(expected, ExpectedVersion::Exactly(_)) {
                        return Err(bad_version());
                    }
                    let ephemeral_ancestor = path::ancestors(path).any(|ancestor| {
                        state
                            .nodes
                            .get(ancestor)
                            .is_some_and(|node| node.ephemeral_owner.is_some())
                    });
                    if ephemeral_ancestor {
                        return Err(MetadataStoreError::EphemeralParent {
                            path: path.to_owned(),
                        });
                    }
                    for ancestor in path::ancestors(path) {
                        if !state.nodes.contains_key(ancestor) {
                            state.nodes.insert(
                                ancestor.to_owned(),
                                Node {
                                    value: Vec::new(),
                                    version: 0,
                                    ephemeral_owner: None,
                                },
                            );
                            push_created(&mut events, ancestor);
                        }
                    }
                    let node = Node {
                        value: value.to_vec(),
                        version: 0,
                        ephemeral_owner: (mode == CreateMode::Ephemeral).then_some(session),
                    };
                    let stat = Self::stat_of(&node, session);
                    state.nodes.insert(path.to_owned(), node);
                    push_created(&mut events, path);
                    stat
                }
            };
            (stat, state.emit(&events, None))
        };
        to_schedule.run();
        Ok(stat)
    }

    fn delete(&self, path: &str, expected: ExpectedVersion) -> Result<()> {
        let to_schedule = {
            let mut state = self.tree.state.lock();
            self.live_session(&state)?;
            let Some(node) = state.nodes.get(path) else {
                return Err(MetadataStoreError::NotFound {
                    path: path.to_owned(),
                });
            };
            let version_matches = match expected {
                ExpectedVersion::Any => true,
                ExpectedVersion::Absent => false,
                ExpectedVersion::Exactly(version) => version == node.version,
            };
            if !version_matches {
                return Err(MetadataStoreError::BadVersion {
                    path: path.to_owned(),
                    expected,
                });
            }
            if state.has_children(path) {
                return Err(MetadataStoreError::NotEmpty {
                    path: path.to_owned(),
                });
            }
            state.nodes.remove(path);
            let mut events = Vec::with_capacity(2);
            push_deleted(&mut events, path);
            state.emit(&events, None)
        };
        to_schedule.run();
        Ok(())
    }

    fn children(&self, path: &str) -> Result<Vec<String>> {
        let state = self.tree.state.lock();
        self.live_session(&state)?;
        let prefix = if path == "/" {
            "/".to_owned()
        } else {
            format!("{path}/")
        };
        // BTreeMap order is the sorted order of the children's names within one parent.
        Ok(state
            .nodes
            .range(prefix.clone()..)
            .take_while(|(key, _)| key.starts_with(&prefix))
            .map(|(key, _)| &key[prefix.len()..])
            .filter(|name| !name.is_empty() && !name.contains('/'))
            .map(str::to_owned)
            .collect())
    }

    fn exists(&self, path: &str) -> Result<bool> {
        let state = self.tree.state.lock();
        self.live_session(&state)?;
        Ok(state.nodes.contains_key(path))
    }

    fn expire_session(&self) -> Result<()> {
        let (to_schedule, own) = {
            let mut state = self.tree.state.lock();
            let old = self.live_session(&state)?;
            let deleted = state.delete_ephemerals_of(old);
            let to_schedule = state.emit(&deleted, Some(old));
            let dispatcher = state
                .sessions
                .remove(&old)
                .expect("the live session is in the table");
            let new = state.next_session;
            state.next_session += 1;
            self.session.store(new, Ordering::Release);
            dispatcher.enqueue([
                StoreEvent::Session(SessionEvent::SessionLost),
                StoreEvent::Session(SessionEvent::SessionReestablished),
                // As on ZooKeeper: listeners re-read after a new session.
                StoreEvent::Node(Notification::new(NotificationType::Resync, "/")),
            ]);
            state.sessions.insert(new, Arc::clone(&dispatcher));
            tracing::info!(tree = %self.tree.name, old, new, "memory metadata session expired and replaced");
            (to_schedule, dispatcher)
        };
        to_schedule.run();
        own.schedule();
        Ok(())
    }

    fn close(&self) {
        let (to_schedule, dispatcher) = {
            let mut state = self.tree.state.lock();
            let Ok(session) = self.live_session(&state) else {
                return;
            };
            let deleted = state.delete_ephemerals_of(session);
            let dispatcher = state.sessions.remove(&session);
            (state.emit(&deleted, None), dispatcher)
        };
        to_schedule.run();
        // Dropped after the tree lock: this may be the store's last reference to it.
        drop(dispatcher);
        tracing::debug!(tree = %self.tree.name, "memory metadata session closed");
    }
}

impl Drop for MemoryProvider {
    fn drop(&mut self) {
        // A store dropped without close still ends its session: ephemeral nodes go, and the
        // tree lets go of its dispatcher.
        self.close();
    }
}

impl fmt::Debug for MemoryProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryProvider")
            .field("tree", &self.tree.name)
            .field("session", &self.session.load(Ordering::Relaxed))
            .finish()
    }
}
