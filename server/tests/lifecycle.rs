//! Every component's lifecycle: its named thread is gone after `close` (counted by the component
//! and in the operating system's thread list), and dropping it without `close` is reported by
//! its executor's warning (captured here by a process-wide tracing subscriber).

mod common;

use common::{assert_threads_gone, os_threads_listed, recv, unique, zookeeper_address};
use pulsar_server::leader::{LeaderService, LeadershipListener};
use pulsar_server::loadbalance::{LoadManager, LoadReport};
use pulsar_server::metadata::{ExpectedVersion, MetadataStore};
use pulsar_server::replication::UnderreplicationManager;
use pulsar_server::threads::ComponentThreads;
use pulsar_server::zookeeper::ZooKeeperSession;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Condvar, Mutex, Once};
use std::time::Instant;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

// ---- capturing the executors' warnings ----

/// A warning or error logged anywhere in this test process.
#[derive(Debug, Clone, Default)]
struct Logged {
    message: String,
    executor: Option<String>,
}

static LOGGED: Mutex<Vec<Logged>> = Mutex::new(Vec::new());
/// Notified on every new entry of `LOGGED`.
static NEW_ENTRY: Condvar = Condvar::new();

/// Records WARN and ERROR events with their `message` and `executor` fields.
struct Capture {
    next_span: AtomicU64,
}

struct Fields<'a>(&'a mut Logged);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "message" => self.0.message = format!("{value:?}"),
            "executor" => self.0.executor = Some(format!("{value:?}")),
            _ => {}
        }
    }
}

impl Subscriber for Capture {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.is_span() || *metadata.level() <= Level::WARN
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.next_span.fetch_add(1, Ordering::Relaxed))
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut logged = Logged::default();
        event.record(&mut Fields(&mut logged));
        LOGGED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(logged);
        NEW_ENTRY.notify_all();
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn capture_logs() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        tracing::subscriber::set_global_default(Capture {
            next_span: AtomicU64::new(1),
        })
        .expect("the only subscriber of this test binary");
    });
}

/// Waits until the executor whose thread is `thread` warns that it was dropped without
/// shutdown. (The warning comes from whichever thread drops the executor's last handle: the
/// test's, or the worker's if it was finishing a task at that moment.)
#[track_caller]
fn assert_drop_warning(thread: &str) {
    let deadline = Instant::now() + common::WAIT;
    let mut logged = LOGGED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    loop {
        let warned = logged.iter().any(|entry| {
            entry.executor.as_deref() == Some(thread)
                && entry.message.contains("dropped without shutdown")
        });
        if warned {
            return;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let snapshot = logged.clone();
            drop(logged);
            panic!("no drop warning for {thread}; logged: {snapshot:?}");
        }
        logged = NEW_ENTRY
            .wait_timeout(logged, left)
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .0;
    }
}

/// The one thread of a component, by name.
fn only_thread(threads: &ComponentThreads, prefix: &str) -> String {
    let names = threads.names();
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(names[0].starts_with(prefix), "{names:?}");
    names[0].clone()
}

fn memory_url(test: &str) -> String {
    format!("memory:{}", unique(test))
}

/// Starts the store's thread (it starts on the first notification) and waits until it runs.
fn start_store_thread(store: &MetadataStore) {
    let (seen, heard) = mpsc::channel();
    let id = store
        .register_listener(move |_| {
            let _ = seen.send(());
        })
        .unwrap();
    store.put("/start", b"", ExpectedVersion::Any).unwrap();
    recv(&heard);
    store.unregister_listener(id);
}

struct Quiet;
impl LeadershipListener for Quiet {
    fn became_active(&self) {}
    fn became_inactive(&self) {}
}

// ---- metadata store ----

#[test]
fn metadata_store_thread_is_gone_after_close() {
    capture_logs();
    let store = MetadataStore::open(&memory_url("store-thread")).unwrap();
    start_store_thread(&store);
    let threads = store.threads();
    only_thread(&threads, "metadata-store-");
    assert_eq!(threads.live_count(), 1);
    assert_eq!(os_threads_listed(&threads), 1);
    store.close();
    assert_threads_gone(&threads);
}

#[test]
fn metadata_store_dropped_without_close_is_reported() {
    capture_logs();
    let store = MetadataStore::open(&memory_url("store-drop")).unwrap();
    start_store_thread(&store);
    let thread = only_thread(&store.threads(), "metadata-store-");
    drop(store);
    assert_drop_warning(&thread);
}

#[test]
fn zookeeper_store_threads_are_gone_after_close() {
    capture_logs();
    let Some(address) = zookeeper_address() else {
        return;
    };
    let url = format!("zk:{address}/pulsar-tests/{}", unique("zk-store-threads"));
    let store = MetadataStore::open_with_config(&url, common::config()).unwrap();
    start_store_thread(&store);
    let store_threads = store.threads();
    let session_threads = store.zookeeper_session().unwrap().threads();
    only_thread(&store_threads, "metadata-store-");
    let names = session_threads.names();
    assert!(
        names
            .iter()
            .any(|name| name.starts_with("zk-connect-executor-")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|name| name.starts_with("zk-io-")),
        "{names:?}"
    );
    assert_eq!(os_threads_listed(&session_threads), names.len());
    store.close();
    assert_threads_gone(&store_threads);
    assert_threads_gone(&session_threads);
}

#[test]
fn zookeeper_store_dropped_without_close_is_reported() {
    capture_logs();
    let Some(address) = zookeeper_address() else {
        return;
    };
    let url = format!("zk:{address}/pulsar-tests/{}", unique("zk-store-drop"));
    let store = MetadataStore::open_with_config(&url, common::config()).unwrap();
    start_store_thread(&store);
    let store_thread = only_thread(&store.threads(), "metadata-store-");
    let session = store.zookeeper_session().unwrap();
    let connect_thread = session
        .threads()
        .names()
        .into_iter()
        .find(|name| name.starts_with("zk-connect-executor-"))
        .unwrap();
    drop(session);
    drop(store);
    assert_drop_warning(&store_thread);
    assert_drop_warning(&connect_thread);
}

// ---- ZooKeeper session ----

#[test]
fn zookeeper_session_threads_are_gone_after_close() {
    capture_logs();
    let Some(address) = zookeeper_address() else {
        return;
    };
    let connect = format!("{address}/pulsar-tests/{}", unique("session-threads"));
    let session = ZooKeeperSession::connect(&connect, common::config()).unwrap();
    let threads = session.threads();
    assert_eq!(threads.live_count(), 2, "{:?}", threads.names());
    session.close();
    assert_threads_gone(&threads);
}

#[test]
fn zookeeper_session_dropped_without_close_is_reported() {
    capture_logs();
    let Some(address) = zookeeper_address() else {
        return;
    };
    let connect = format!("{address}/pulsar-tests/{}", unique("session-drop"));
    let session = ZooKeeperSession::connect(&connect, common::config()).unwrap();
    let thread = session
        .threads()
        .names()
        .into_iter()
        .find(|name| name.starts_with("zk-connect-executor-"))
        .unwrap();
    drop(session);
    assert_drop_warning(&thread);
}

// ---- leader service ----

#[test]
fn leader_service_thread_is_gone_after_close() {
    capture_logs();
    let store = MetadataStore::open(&memory_url("leader-thread")).unwrap();
    let service = LeaderService::start(store.clone(), "/leader", "a", Quiet).unwrap();
    let threads = service.threads();
    only_thread(&threads, "leader-service-");
    assert_eq!(os_threads_listed(&threads), 1);
    service.close();
    assert_threads_gone(&threads);
    store.close();
}

#[test]
fn leader_service_dropped_without_close_is_reported() {
    capture_logs();
    let store = MetadataStore::open(&memory_url("leader-drop")).unwrap();
    let service = LeaderService::start(store.clone(), "/leader", "a", Quiet).unwrap();
    let thread = only_thread(&service.threads(), "leader-service-");
    drop(service);
    assert_drop_warning(&thread);
    store.close();
}

// ---- load manager ----

#[test]
fn load_manager_thread_is_gone_after_stop() {
    capture_logs();
    let store = MetadataStore::open(&memory_url("load-thread")).unwrap();
    let manager = LoadManager::start(store.clone(), "b1", LoadReport::default()).unwrap();
    let threads = manager.threads();
    only_thread(&threads, "load-manager-");
    assert_eq!(os_threads_listed(&threads), 1);
    manager.stop();
    assert_threads_gone(&threads);
    store.close();
}

#[test]
fn load_manager_dropped_without_stop_is_reported() {
    capture_logs();
    let store = MetadataStore::open(&memory_url("load-drop")).unwrap();
    let manager = LoadManager::start(store.clone(), "b1", LoadReport::default()).unwrap();
    let thread = only_thread(&manager.threads(), "load-manager-");
    drop(manager);
    assert_drop_warning(&thread);
    store.close();
}

// ---- under-replication manager ----

/// Starts the manager's thread (it starts with the first callback) and waits until it ran.
fn start_notification_thread(manager: &UnderreplicationManager) {
    let (ran, heard) = mpsc::channel();
    manager
        .notify_ledger_replication_enabled(move || ran.send(()).unwrap())
        .unwrap();
    recv(&heard);
}

#[test]
fn underreplication_manager_thread_is_gone_after_close() {
    capture_logs();
    let store = MetadataStore::open(&memory_url("replication-thread")).unwrap();
    let manager = UnderreplicationManager::new(store.clone(), "/ledgers").unwrap();
    start_notification_thread(&manager);
    let threads = manager.threads();
    only_thread(&threads, "underreplication-notification-");
    manager.close();
    assert_threads_gone(&threads);
    store.close();
}

#[test]
fn underreplication_manager_dropped_without_close_is_reported() {
    capture_logs();
    let store = MetadataStore::open(&memory_url("replication-drop")).unwrap();
    let manager = UnderreplicationManager::new(store.clone(), "/ledgers").unwrap();
    start_notification_thread(&manager);
    let thread = only_thread(&manager.threads(), "underreplication-notification-");
    drop(manager);
    assert_drop_warning(&thread);
    store.close();
}
