//! The values the metadata store takes and hands out: expected versions, stats, notifications
//! and session events.

use std::fmt;

/// The version a write expects to find (Pulsar's `Optional<Long> expectedVersion`, with `-1`
/// spelled out as [`Absent`](Self::Absent)).
///
/// Versions count changes to a node's value: a new node has version 0, every put adds 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExpectedVersion {
    /// No condition: create the node or overwrite it (for `delete`: whatever its version).
    Any,
    /// The node must not exist: the put creates it (compare-and-set create).
    Absent,
    /// The node must exist with exactly this version.
    Exactly(i64),
}

impl fmt::Display for ExpectedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpectedVersion::Any => f.write_str("any version"),
            ExpectedVersion::Absent => f.write_str("no node"),
            ExpectedVersion::Exactly(version) => write!(f, "version {version}"),
        }
    }
}

/// Whether a node outlives the session that created it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CreateMode {
    /// The node stays until deleted.
    Persistent,
    /// The node is deleted when the session of the store that created it ends (close, expiry,
    /// loss). Ephemeral nodes cannot have children.
    Ephemeral,
}

/// What the store knows about a node besides its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Changes to the value so far: 0 for a new node.
    pub version: i64,
    /// Whether the node is ephemeral.
    pub ephemeral: bool,
    /// Whether the node is ephemeral and owned by this store's current session.
    pub created_by_self: bool,
}

/// A node's value and stat, as `get` returns them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetResult {
    /// The node's value.
    pub value: Vec<u8>,
    /// The node's stat.
    pub stat: Stat,
}

/// What happened to a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NotificationType {
    /// The node was created.
    Created,
    /// The node's value was replaced.
    Modified,
    /// The node was deleted.
    Deleted,
    /// A child of the node was created or deleted.
    ChildrenChanged,
    /// Changes at or below the node may have happened without a notification: the store lost
    /// its connection or its session and has just watched again (ZooKeeper does not replay what
    /// happened meanwhile). A listener that caches anything under the path re-reads it now;
    /// notifications after this one are delivered as usual.
    ///
    /// The store sends it for `/` (every node) right after [`SessionEvent::Reconnected`] and
    /// [`SessionEvent::SessionReestablished`], so a listener that registered only for
    /// notifications learns of the gap too.
    Resync,
}

/// A change to one node, delivered to the store's listeners in the order the changes happened.
///
/// Creating or deleting a node is followed by [`NotificationType::ChildrenChanged`] for its
/// parent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Notification {
    /// What happened.
    pub kind: NotificationType,
    /// The node it happened to.
    pub path: String,
}

impl Notification {
    /// A notification of `kind` for `path`.
    pub fn new(kind: NotificationType, path: impl Into<String>) -> Self {
        Self {
            kind,
            path: path.into(),
        }
    }
}

/// A change in the state of the store's session (Pulsar's `SessionEvent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionEvent {
    /// The connection to the backend dropped; the session may still be alive.
    ConnectionLost,
    /// The connection came back within the session timeout (to the same server or another of
    /// the ensemble): the session, its ephemeral nodes and the store's watches are in force
    /// again. Changes made while disconnected were not notified: re-read what you cache (a
    /// [`NotificationType::Resync`] follows), and re-check any decision that depends on the
    /// store (a leader confirms its node is still its own).
    Reconnected,
    /// The session ended (expired): its ephemeral nodes are gone and its watches with it.
    SessionLost,
    /// A new session replaced the lost one and the store's watches are registered again;
    /// components re-create their ephemeral nodes and re-read what they cache (a
    /// [`NotificationType::Resync`] follows).
    SessionReestablished,
}

/// Names a registered listener, to [unregister](crate::metadata::MetadataStore::unregister_listener) it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ListenerId(pub(crate) u64);
