//! [`MetadataStore`]: a versioned key-value tree with sessions, ephemeral nodes and ordered
//! change notifications, on an embedded tree or on ZooKeeper.
//!
//! - [`MetadataStore`]: Pulsar's `AbstractMetadataStore`; the provider is chosen by URL
//!   (`memory:<name>`, `zk:<host:port>[/chroot]`).
//! - [`MetadataStoreConfig`]: session and operation timeouts.
//! - [`ExpectedVersion`], [`CreateMode`], [`Stat`], [`GetResult`]: what operations take and give.
//! - [`Notification`], [`NotificationType`], [`SessionEvent`], [`ListenerId`]: what listeners hear.
//! - [`MetadataStoreError`]: why an operation failed.
//!
//! Inside: `dispatcher.rs` (the ordered delivery on the store's executor), `provider.rs` (what a
//! backend implements), `memory.rs` and `zookeeper.rs` (the two backends), `path.rs`, `url.rs`.
//! `README.md` beside this file explains the ordering, locking and session design.

mod config;
pub(crate) mod dispatcher;
mod error;
mod listeners;
mod memory;
pub(crate) mod path;
mod provider;
mod store;
mod types;
pub(crate) mod url;
mod zookeeper;

pub use config::MetadataStoreConfig;
pub use error::MetadataStoreError;
pub(crate) use listeners::{ListenerList, StoreListeners};
pub use store::MetadataStore;
pub use types::{
    CreateMode, ExpectedVersion, GetResult, ListenerId, Notification, NotificationType,
    SessionEvent, Stat,
};
