//! Listener bookkeeping: [`ListenerList`], the copy-on-write list a store or session delivers
//! from, and `StoreListeners`, the listeners a component registered on a metadata store,
//! removed together when it closes or is dropped.
//!
//! The store's dispatcher (node and session listeners) and the ZooKeeper session (session
//! listeners) each kept the same copy-on-write list by hand; [`ListenerList`] is that list.
//! The leader service, the load manager and the under-replication manager each listen to
//! their store; each used to keep the listener ids in its state and remove them both in
//! `close` and in `Drop` (a component dropped without closing must not leave the store calling
//! into it). This type does that once: it is a guard.

use crate::metadata::store::MetadataStore;
use crate::metadata::types::{ListenerId, Notification, SessionEvent};
use crate::metadata::MetadataStoreError;
use parking_lot::Mutex;
use std::sync::Arc;

/// Listeners of one kind, in registration order, replaced whole on every change: a delivery
/// takes a [`snapshot`](Self::snapshot) with one `Arc` clone and calls it with no lock held,
/// while registrations go on.
pub(crate) struct ListenerList<L> {
    list: Arc<[(ListenerId, L)]>,
}

impl<L: Clone> ListenerList<L> {
    /// No listeners.
    pub(crate) fn new() -> Self {
        Self {
            list: Arc::from(Vec::new()),
        }
    }

    /// Appends `listener`, registered as `id`.
    pub(crate) fn add(&mut self, id: ListenerId, listener: L) {
        let mut list = self.list.to_vec();
        list.push((id, listener));
        self.list = Arc::from(list);
    }

    /// Removes the listener registered as `id`, and hands it back so that the caller drops it
    /// after releasing its lock (a listener's `Drop` is user code); `None` if there is none.
    pub(crate) fn remove(&mut self, id: ListenerId) -> Option<L> {
        let position = self.list.iter().position(|(listed, _)| *listed == id)?;
        let mut list = self.list.to_vec();
        let (_, removed) = list.remove(position);
        self.list = Arc::from(list);
        Some(removed)
    }

    /// Removes every listener, handing them back to be dropped outside the caller's lock.
    pub(crate) fn take_all(&mut self) -> Arc<[(ListenerId, L)]> {
        std::mem::replace(&mut self.list, Arc::from(Vec::new()))
    }

    /// The listeners now, to call with no lock held.
    pub(crate) fn snapshot(&self) -> Arc<[(ListenerId, L)]> {
        Arc::clone(&self.list)
    }

    /// How many listeners there are.
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }
}

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
