//! `StoreListeners`: the listeners a component registered on a metadata store, removed
//! together when it closes or is dropped.
//!
//! The leader service, the load manager and the under-replication manager each listen to
//! their store; each used to keep the listener ids in its state and remove them both in
//! `close` and in `Drop` (a component dropped without closing must not leave the store calling
//! into it). This type does that once: it is a guard.

use crate::metadata::store::MetadataStore;
use crate::metadata::types::{ListenerId, Notification, SessionEvent};
use crate::metadata::MetadataStoreError;
use parking_lot::Mutex;

/// The store listeners of one component; [`remove_all`](Self::remove_all) or dropping it
/// removes every one registered through it.
pub(crate) struct StoreListeners {
    store: MetadataStore,
    /// The listeners to remove, in registration order.
    ids: Mutex<Vec<ListenerId>>,
}

impl StoreListeners {
    /// No listeners yet, on `store`.
    pub(crate) fn new(store: &MetadataStore) -> Self {
        Self {
            store: store.clone(),
            ids: Mutex::new(Vec::new()),
        }
    }

    /// Registers a node-notification listener (see [`MetadataStore::register_listener`]).
    pub(crate) fn on_notification(
        &self,
        listener: impl Fn(&Notification) + Send + Sync + 'static,
    ) -> Result<(), MetadataStoreError> {
        let id = self.store.register_listener(listener)?;
        self.ids.lock().push(id);
        Ok(())
    }

    /// Registers a session listener (see [`MetadataStore::register_session_listener`]).
    pub(crate) fn on_session_event(
        &self,
        listener: impl Fn(SessionEvent) + Send + Sync + 'static,
    ) -> Result<(), MetadataStoreError> {
        let id = self.store.register_session_listener(listener)?;
        self.ids.lock().push(id);
        Ok(())
    }

    /// Removes every listener registered so far; idempotent. The removed closures are dropped
    /// by the store outside its locks, and none of them is called once this returns (but the
    /// one that may be running now on the store's thread).
    pub(crate) fn remove_all(&self) {
        let ids = std::mem::take(&mut *self.ids.lock());
        for id in ids {
            self.store.unregister_listener(id);
        }
    }
}

impl Drop for StoreListeners {
    fn drop(&mut self) {
        self.remove_all();
    }
}
