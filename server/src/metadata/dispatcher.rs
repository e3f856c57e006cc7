//! `Dispatcher`: the store's listeners and the ordered queue of events it delivers to them on its
//! own `metadata-store` executor.
//!
//! Providers [`enqueue`](Dispatcher::enqueue) events in the order the changes happened (the
//! memory provider does so under its tree lock, which is what orders them; the queue lock is
//! always taken after it, never before). [`schedule`](Dispatcher::schedule) then hands one drain
//! task to the executor; the drain pops one event at a time and calls the listeners with no lock
//! held. So listeners run in order, on the store's thread, never on a caller's thread and never
//! under a store lock.

use crate::component::threads::ComponentThreads;
use crate::component::user_code::call_user;
use crate::component::ComponentExecutor;
use crate::metadata::types::{ListenerId, Notification, SessionEvent};
use crate::metadata::ListenerList;
use parking_lot::Mutex;
use pulsar_common::executors::RejectReason;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

/// A change delivered to the store's listeners.
#[derive(Debug, Clone)]
pub(crate) enum StoreEvent {
    /// A node changed.
    Node(Notification),
    /// The session changed state.
    Session(SessionEvent),
}

type NotificationListener = Arc<dyn Fn(&Notification) + Send + Sync>;
type SessionListener = Arc<dyn Fn(SessionEvent) + Send + Sync>;

/// The registered listeners; each list is replaced whole on change, so a delivery takes a
/// snapshot with one `Arc` clone.
struct Listeners {
    next_id: u64,
    notification: ListenerList<NotificationListener>,
    session: ListenerList<SessionListener>,
}

impl Listeners {
    /// The id of the next listener, of either kind.
    fn next_id(&mut self) -> ListenerId {
        let id = ListenerId(self.next_id);
        self.next_id += 1;
        id
    }
}

/// Queues the store's events and delivers them on its executor.
pub(crate) struct Dispatcher {
    /// The store's `metadata-store` executor; only this struct holds it, so dropping the store
    /// without closing it drops the executor (which then warns).
    executor: ComponentExecutor,
    /// Events not yet delivered, oldest first. Lock order: a provider's own lock, then this.
    pending: Mutex<VecDeque<StoreEvent>>,
    /// Set while a drain task is queued and has not started popping; saves one task per event.
    drain_scheduled: AtomicBool,
    /// The store's closed flag (its `is_closed`): set by [`begin_close`](Self::begin_close)
    /// under the `pending` lock, which `enqueue` and each pop of the drain check under that
    /// lock, so no event is queued or delivered once a `close` has begun, not even by a drain
    /// that is running then.
    closed: AtomicBool,
    listeners: Mutex<Listeners>,
}

impl Dispatcher {
    pub(crate) fn new(executor: ComponentExecutor) -> Arc<Self> {
        Arc::new(Self {
            executor,
            pending: Mutex::new(VecDeque::new()),
            drain_scheduled: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            listeners: Mutex::new(Listeners {
                next_id: 1,
                notification: ListenerList::new(),
                session: ListenerList::new(),
            }),
        })
    }

    /// Appends events to the queue, in order. Takes only the queue lock and calls nothing, so
    /// a provider may call it under its own lock to fix the order.
    pub(crate) fn enqueue(&self, events: impl IntoIterator<Item = StoreEvent>) {
        let mut pending = self.pending.lock();
        if !self.closed.load(Ordering::Relaxed) {
            pending.extend(events);
        }
    }

    /// Marks the store closed: from now on nothing is queued and nothing more is delivered
    /// (a drain running now stops before its next event). `false` if it was already closed.
    pub(crate) fn begin_close(&self) -> bool {
        let dropped = {
            let mut pending = self.pending.lock();
            if self.closed.swap(true, Ordering::AcqRel) {
                return false;
            }
            std::mem::take(&mut *pending)
        };
        drop(dropped);
        true
    }

    /// Whether [`begin_close`](Self::begin_close) has been called.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Makes sure a drain task will deliver what is queued. After close the executor refuses
    /// the task and queued events are never delivered. If the executor's thread cannot start
    /// (its factory failed: the executor stays open, and its next task tries again), the events
    /// stay queued and the next `schedule` tries again.
    pub(crate) fn schedule(self: &Arc<Self>) {
        // AcqRel: the drain's `store(false)` happens before its pops, so an event queued before
        // this swap saw `true` is popped by that drain.
        if self.drain_scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        let dispatcher: Weak<Self> = Arc::downgrade(self);
        let accepted = self.executor.execute(move || {
            if let Some(dispatcher) = dispatcher.upgrade() {
                dispatcher.drain();
            }
        });
        match accepted {
            Ok(()) => {}
            Err(refused) if matches!(refused.reason(), RejectReason::ThreadStartFailed(_)) => {
                // No drain is queued: let the next `schedule` try again (the flag would
                // otherwise keep every later one from asking, and the store would go deaf).
                self.drain_scheduled.store(false, Ordering::Release);
                tracing::error!(reason = %refused.reason(), "the metadata store cannot start its notification thread; the events stay queued until the next change retries");
            }
            Err(_) => {
                // Shut down: nothing will be delivered any more.
                self.begin_close();
            }
        }
    }

    /// Queues `events` and schedules their delivery.
    pub(crate) fn publish(self: &Arc<Self>, events: impl IntoIterator<Item = StoreEvent>) {
        self.enqueue(events);
        self.schedule();
    }

    /// Delivers queued events one at a time, with no lock held while listeners run.
    fn drain(&self) {
        self.drain_scheduled.store(false, Ordering::Release);
        loop {
            let event = {
                let mut pending = self.pending.lock();
                if self.closed.load(Ordering::Relaxed) {
                    return; // closed while this drain ran: `close` dropped the rest
                }
                pending.pop_front()
            };
            let Some(event) = event else {
                return;
            };
            match event {
                StoreEvent::Node(notification) => {
                    let listeners = self.listeners.lock().notification.snapshot();
                    for (_, listener) in listeners.iter() {
                        call_user("metadata store listener", || listener(&notification));
                    }
                }
                StoreEvent::Session(session_event) => {
                    let listeners = self.listeners.lock().session.snapshot();
                    for (_, listener) in listeners.iter() {
                        call_user("metadata store session listener", || {
                            listener(session_event)
                        });
                    }
                }
            }
        }
    }

    pub(crate) fn add_notification_listener(&self, listener: NotificationListener) -> ListenerId {
        let mut listeners = self.listeners.lock();
        let id = listeners.next_id();
        listeners.notification.add(id, listener);
        id
    }

    pub(crate) fn add_session_listener(&self, listener: SessionListener) -> ListenerId {
        let mut listeners = self.listeners.lock();
        let id = listeners.next_id();
        listeners.session.add(id, listener);
        id
    }

    /// Removes a listener of either kind; `false` if `id` was not registered. The removed
    /// closure is dropped after the lock is released (its `Drop` is user code).
    pub(crate) fn remove_listener(&self, id: ListenerId) -> bool {
        let removed = {
            let mut listeners = self.listeners.lock();
            (
                listeners.notification.remove(id),
                listeners.session.remove(id),
            )
        };
        removed.0.is_some() || removed.1.is_some()
    }

    /// The store's executor thread, once started.
    pub(crate) fn threads(&self) -> ComponentThreads {
        self.executor.threads()
    }

    /// Stops delivering: [`begin_close`](Self::begin_close) (queued events are dropped, and a
    /// running drain delivers no more), `shutdown_now`, then waits up to 10 s for the listener
    /// running now. Called from a listener it returns at once.
    pub(crate) fn shutdown(&self) {
        self.begin_close();
        self.executor.close_now("a metadata store listener");
        // The listeners are dropped outside the lock: their `Drop` is user code.
        let (notification, session) = {
            let mut listeners = self.listeners.lock();
            (
                listeners.notification.take_all(),
                listeners.session.take_all(),
            )
        };
        drop((notification, session));
    }
}

impl fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pending = self.pending.lock().len();
        let (notification_listeners, session_listeners) = {
            let listeners = self.listeners.lock();
            (listeners.notification.len(), listeners.session.len())
        };
        f.debug_struct("Dispatcher")
            .field("executor", &*self.executor)
            .field("pending", &pending)
            .field("notification_listeners", &notification_listeners)
            .field("session_listeners", &session_listeners)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::types::NotificationType;
    use pulsar_common::executors::{NamedThreadFactory, ThreadFactory};
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;
    use std::thread::JoinHandle;
    use std::time::Duration;

    /// Refuses its first thread (as an OS out of threads would), then starts them.
    struct FailsFirst {
        calls: AtomicUsize,
        inner: NamedThreadFactory,
    }

    impl ThreadFactory for FailsFirst {
        fn new_thread(
            &self,
            body: Box<dyn FnOnce() + Send + 'static>,
        ) -> std::io::Result<JoinHandle<()>> {
            if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    "no thread for now",
                ));
            }
            self.inner.new_thread(body)
        }
    }

    fn created(path: &str) -> StoreEvent {
        StoreEvent::Node(Notification::new(NotificationType::Created, path))
    }

    /// A failed lazy thread start is not a close: the events stay queued and the next change
    /// delivers them, in order. (Audit of 2026-12-07: the refusal cleared the queue and left
    /// the "drain scheduled" flag set, so no drain was ever asked for again: the store, and
    /// every leader election, load manager and replication callback above it, went deaf.)
    #[test]
    fn a_failed_thread_start_keeps_the_events_for_the_next_change_to_deliver() {
        let factory = Arc::new(FailsFirst {
            calls: AtomicUsize::new(0),
            inner: NamedThreadFactory::new("metadata-store"),
        });
        let dispatcher = Dispatcher::new(ComponentExecutor::with_factory_or_named(
            Some(Arc::clone(&factory) as Arc<dyn ThreadFactory>),
            "metadata-store",
        ));
        let (seen, paths) = mpsc::channel();
        dispatcher.add_notification_listener(Arc::new(move |notification: &Notification| {
            let _ = seen.send(notification.path.clone());
        }));
        dispatcher.publish([created("/a")]);
        assert_eq!(factory.calls.load(Ordering::SeqCst), 1, "the start failed");
        dispatcher.publish([created("/b")]);
        let wait = Duration::from_secs(30);
        assert_eq!(paths.recv_timeout(wait).as_deref(), Ok("/a"));
        assert_eq!(paths.recv_timeout(wait).as_deref(), Ok("/b"));
        dispatcher.shutdown();
    }
}
