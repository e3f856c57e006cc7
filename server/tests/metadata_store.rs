//! `MetadataStore`, specified on both providers (Pulsar's `MetadataStoreTest` runs across
//! providers): CRUD, compare-and-set, children, ephemeral nodes, notification order and thread,
//! sessions, closed-store errors.

#[macro_use]
mod common;

use common::{recv, recv_until, TestBackend};
use pulsar_server::metadata::{
    ExpectedVersion, MetadataStoreError, Notification, NotificationType, SessionEvent,
};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;

across_backends!(
    // smoke: create, read, overwrite, delete
    put_then_get_returns_the_value_at_version_zero,
    put_any_overwrites_and_counts_the_version_up,
    get_and_exists_of_a_missing_node_report_none,
    delete_removes_the_node,
    delete_of_a_missing_node_fails_with_not_found,
    // compare-and-set
    put_absent_on_an_existing_node_fails_with_bad_version,
    put_with_a_stale_version_fails_with_bad_version_and_keeps_the_value,
    put_with_a_version_on_a_missing_node_fails_with_bad_version,
    delete_with_a_stale_version_fails_with_bad_version,
    concurrent_compare_and_set_increments_lose_no_update,
    // tree shape
    put_creates_missing_ancestors,
    children_are_the_sorted_names_of_direct_children,
    children_of_a_missing_node_are_empty,
    delete_of_a_node_with_children_fails_with_not_empty,
    invalid_paths_are_rejected,
    // ephemeral nodes and sessions
    ephemeral_nodes_are_marked_and_owned_by_their_session,
    ephemeral_nodes_cannot_have_children,
    ephemeral_node_is_deleted_when_its_store_closes,
    ephemeral_node_is_deleted_when_its_session_is_lost,
    a_store_keeps_working_after_its_session_is_lost,
    // notifications
    notifications_arrive_in_order_of_the_changes,
    notifications_run_on_the_store_thread_not_the_callers,
    another_store_on_the_same_backend_hears_the_changes,
    listeners_may_call_the_store,
    a_panicking_listener_does_not_stop_later_notifications,
    an_unregistered_listener_hears_nothing_more,
    // close
    operations_after_close_fail_with_already_closed,
    close_is_idempotent,
    close_from_a_listener_returns_and_stops_delivery,
    close_from_another_thread_while_a_listener_runs_delivers_nothing_more,
    // mirrored from Pulsar's MetadataStoreTest, not covered above
    an_empty_store_has_no_node_below_a_missing_one,
    children_are_listed_level_by_level,
    a_value_outlives_the_store_that_wrote_it,
    notification_listeners_hear_each_kind_of_change,
    a_closed_store_drops_its_listeners,
    a_new_session_is_followed_by_a_resync_notification,
);

fn put_then_get_returns_the_value_at_version_zero(backend: &TestBackend) {
    let store = backend.open();
    let stat = store.put("/a", b"one", ExpectedVersion::Absent).unwrap();
    assert_eq!(stat.version, 0);
    assert!(!stat.ephemeral);
    let read = store.get("/a").unwrap().expect("the node exists");
    assert_eq!(read.value, b"one");
    assert_eq!(read.stat, stat);
    assert!(store.exists("/a").unwrap());
    store.close();
}

fn put_any_overwrites_and_counts_the_version_up(backend: &TestBackend) {
    let store = backend.open();
    assert_eq!(
        store.put("/a", b"1", ExpectedVersion::Any).unwrap().version,
        0
    );
    assert_eq!(
        store.put("/a", b"2", ExpectedVersion::Any).unwrap().version,
        1
    );
    assert_eq!(
        store
            .put("/a", b"3", ExpectedVersion::Exactly(1))
            .unwrap()
            .version,
        2
    );
    let read = store.get("/a").unwrap().unwrap();
    assert_eq!((read.value.as_slice(), read.stat.version), (&b"3"[..], 2));
    store.close();
}

fn get_and_exists_of_a_missing_node_report_none(backend: &TestBackend) {
    let store = backend.open();
    assert_eq!(store.get("/missing").unwrap(), None);
    assert!(!store.exists("/missing").unwrap());
    store.close();
}

fn delete_removes_the_node(backend: &TestBackend) {
    let store = backend.open();
    store.put("/a", b"1", ExpectedVersion::Absent).unwrap();
    store.delete("/a", ExpectedVersion::Exactly(0)).unwrap();
    assert_eq!(store.get("/a").unwrap(), None);
    store.put("/b", b"1", ExpectedVersion::Absent).unwrap();
    store.delete("/b", ExpectedVersion::Any).unwrap();
    assert!(!store.exists("/b").unwrap());
    store.close();
}

fn delete_of_a_missing_node_fails_with_not_found(backend: &TestBackend) {
    let store = backend.open();
    assert_eq!(
        store.delete("/missing", ExpectedVersion::Any),
        Err(MetadataStoreError::NotFound {
            path: "/missing".into()
        })
    );
    store.close();
}

fn put_absent_on_an_existing_node_fails_with_bad_version(backend: &TestBackend) {
    let store = backend.open();
    store.put("/a", b"first", ExpectedVersion::Absent).unwrap();
    assert_eq!(
        store.put("/a", b"second", ExpectedVersion::Absent),
        Err(MetadataStoreError::BadVersion {
            path: "/a".into(),
            expected: ExpectedVersion::Absent
        })
    );
    assert_eq!(store.get("/a").unwrap().unwrap().value, b"first");
    store.close();
}

fn put_with_a_stale_version_fails_with_bad_version_and_keeps_the_value(backend: &TestBackend) {
    let store = backend.open();
    store.put("/a", b"v0", ExpectedVersion::Absent).unwrap();
    store.put("/a", b"v1", ExpectedVersion::Exactly(0)).unwrap();
    let error = store
        .put("/a", b"lost", ExpectedVersion::Exactly(0))
        .unwrap_err();
    assert_eq!(
        error,
        MetadataStoreError::BadVersion {
            path: "/a".into(),
            expected: ExpectedVersion::Exactly(0)
        }
    );
    assert_eq!(
        error.to_string(),
        "bad version for `/a`: expected version 0"
    );
    let read = store.get("/a").unwrap().unwrap();
    assert_eq!((read.value.as_slice(), read.stat.version), (&b"v1"[..], 1));
    store.close();
}

fn put_with_a_version_on_a_missing_node_fails_with_bad_version(backend: &TestBackend) {
    let store = backend.open();
    assert!(matches!(
        store.put("/missing", b"x", ExpectedVersion::Exactly(0)),
        Err(MetadataStoreError::BadVersion { .. })
    ));
    assert!(!store.exists("/missing").unwrap());
    store.close();
}

fn delete_with_a_stale_version_fails_with_bad_version(backend: &TestBackend) {
    let store = backend.open();
    store.put("/a", b"v0", ExpectedVersion::Absent).unwrap();
    store.put("/a", b"v1", ExpectedVersion::Any).unwrap();
    assert!(matches!(
        store.delete("/a", ExpectedVersion::Exactly(0)),
        Err(MetadataStoreError::BadVersion { .. })
    ));
    assert!(store.exists("/a").unwrap());
    store.close();
}

/// Mirrors Pulsar's `MetadataStoreTest.testConcurrentPutGetOneKey`.
fn concurrent_compare_and_set_increments_lose_no_update(backend: &TestBackend) {
    const WRITERS: usize = 3;
    const INCREMENTS: usize = 15;
    let setup = backend.open();
    setup
        .put("/counter", b"0", ExpectedVersion::Absent)
        .unwrap();
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            // Each writer has its own session, like separate brokers.
            let store = backend.open();
            thread::spawn(move || {
                let mut conflicts = 0;
                for _ in 0..INCREMENTS {
                    loop {
                        let read = store.get("/counter").unwrap().unwrap();
                        let value: usize =
                            std::str::from_utf8(&read.value).unwrap().parse().unwrap();
                        let next = (value + 1).to_string();
                        match store.put(
                            "/counter",
                            next.as_bytes(),
                            ExpectedVersion::Exactly(read.stat.version),
                        ) {
                            Ok(_) => break,
                            Err(MetadataStoreError::BadVersion { .. }) => conflicts += 1,
                            Err(error) => panic!("unexpected {error}"),
                        }
                    }
                }
                store.close();
                conflicts
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let read = setup.get("/counter").unwrap().unwrap();
    assert_eq!(read.value, (WRITERS * INCREMENTS).to_string().as_bytes());
    assert_eq!(read.stat.version, (WRITERS * INCREMENTS) as i64);
    setup.close();
}

fn put_creates_missing_ancestors(backend: &TestBackend) {
    let store = backend.open();
    store
        .put("/a/b/c", b"leaf", ExpectedVersion::Absent)
        .unwrap();
    assert!(store.exists("/a").unwrap());
    assert_eq!(store.get("/a/b").unwrap().unwrap().value, b"");
    assert_eq!(store.children("/a").unwrap(), ["b"]);
    store.close();
}

fn children_are_the_sorted_names_of_direct_children(backend: &TestBackend) {
    let store = backend.open();
    for name in ["c", "a", "b"] {
        store
            .put(&format!("/parent/{name}"), b"", ExpectedVersion::Absent)
            .unwrap();
    }
    store
        .put("/parent/a/grandchild", b"", ExpectedVersion::Absent)
        .unwrap();
    store
        .put("/parent-sibling", b"", ExpectedVersion::Absent)
        .unwrap();
    assert_eq!(store.children("/parent").unwrap(), ["a", "b", "c"]);
    assert_eq!(store.children("/parent/a").unwrap(), ["grandchild"]);
    assert_eq!(store.children("/").unwrap(), ["parent", "parent-sibling"]);
    store.close();
}

fn children_of_a_missing_node_are_empty(backend: &TestBackend) {
    let store = backend.open();
    assert_eq!(store.children("/missing").unwrap(), Vec::<String>::new());
    store.close();
}

fn delete_of_a_node_with_children_fails_with_not_empty(backend: &TestBackend) {
    let store = backend.open();
    store.put("/a/b", b"", ExpectedVersion::Absent).unwrap();
    assert_eq!(
        store.delete("/a", ExpectedVersion::Any),
        Err(MetadataStoreError::NotEmpty { path: "/a".into() })
    );
    store.delete("/a/b", ExpectedVersion::Any).unwrap();
    store.delete("/a", ExpectedVersion::Any).unwrap();
    store.close();
}

/// Covers Pulsar's `MetadataStoreTest.emptyKeyTest` (the empty path among the invalid ones).
fn invalid_paths_are_rejected(backend: &TestBackend) {
    let store = backend.open();
    for path in ["relative", "/trailing/", "/double//slash", ""] {
        assert!(
            matches!(
                store.put(path, b"", ExpectedVersion::Any),
                Err(MetadataStoreError::InvalidPath { .. })
            ),
            "{path}"
        );
        assert!(matches!(
            store.get(path),
            Err(MetadataStoreError::InvalidPath { .. })
        ));
    }
    assert!(matches!(
        store.delete("/", ExpectedVersion::Any),
        Err(MetadataStoreError::InvalidPath { .. })
    ));
    store.close();
}

fn ephemeral_nodes_are_marked_and_owned_by_their_session(backend: &TestBackend) {
    let owner = backend.open();
    let other = backend.open();
    let stat = owner
        .put_ephemeral("/e", b"mine", ExpectedVersion::Absent)
        .unwrap();
    assert!(stat.ephemeral && stat.created_by_self);
    let seen_by_owner = owner.get("/e").unwrap().unwrap().stat;
    assert!(seen_by_owner.ephemeral && seen_by_owner.created_by_self);
    let seen_by_other = other.get("/e").unwrap().unwrap().stat;
    assert!(seen_by_other.ephemeral && !seen_by_other.created_by_self);
    owner.put("/p", b"", ExpectedVersion::Absent).unwrap();
    assert!(!owner.get("/p").unwrap().unwrap().stat.created_by_self);
    owner.close();
    other.close();
}

fn ephemeral_nodes_cannot_have_children(backend: &TestBackend) {
    let store = backend.open();
    store
        .put_ephemeral("/e", b"", ExpectedVersion::Absent)
        .unwrap();
    assert_eq!(
        store.put("/e/child", b"", ExpectedVersion::Absent),
        Err(MetadataStoreError::EphemeralParent {
            path: "/e/child".into()
        })
    );
    store.close();
}

fn ephemeral_node_is_deleted_when_its_store_closes(backend: &TestBackend) {
    let owner = backend.open();
    let watcher = backend.open();
    let (events, received) = mpsc::channel();
    watcher
        .register_listener(move |n: &Notification| events.send(n.clone()).unwrap())
        .unwrap();
    owner
        .put_ephemeral("/brokers/b1", b"up", ExpectedVersion::Absent)
        .unwrap();
    owner
        .put("/durable", b"stays", ExpectedVersion::Absent)
        .unwrap();
    recv_until(&received, |n| n.path == "/durable");

    owner.close();
    recv_until(&received, |n| {
        n.kind == NotificationType::Deleted && n.path == "/brokers/b1"
    });
    assert_eq!(watcher.get("/brokers/b1").unwrap(), None);
    assert!(
        watcher.exists("/brokers").unwrap(),
        "persistent parent stays"
    );
    assert!(watcher.exists("/durable").unwrap());
    watcher.close();
}

fn ephemeral_node_is_deleted_when_its_session_is_lost(backend: &TestBackend) {
    let owner = backend.open();
    let watcher = backend.open();
    let (events, received) = mpsc::channel();
    watcher
        .register_listener(move |n: &Notification| events.send(n.clone()).unwrap())
        .unwrap();
    let (sessions, session_events) = mpsc::channel();
    owner
        .register_session_listener(move |event| sessions.send(event).unwrap())
        .unwrap();
    owner
        .put_ephemeral("/leader", b"owner", ExpectedVersion::Absent)
        .unwrap();
    recv_until(&received, |n| n.path == "/leader");

    owner.expire_session().unwrap();
    recv_until(&received, |n| {
        n.kind == NotificationType::Deleted && n.path == "/leader"
    });
    recv_until(&session_events, |event| *event == SessionEvent::SessionLost);
    recv_until(&session_events, |event| {
        *event == SessionEvent::SessionReestablished
    });
    assert_eq!(owner.get("/leader").unwrap(), None);
    owner.close();
    watcher.close();
}

fn a_store_keeps_working_after_its_session_is_lost(backend: &TestBackend) {
    let store = backend.open();
    let (sessions, session_events) = mpsc::channel();
    store
        .register_session_listener(move |event| sessions.send(event).unwrap())
        .unwrap();
    store.expire_session().unwrap();
    recv_until(&session_events, |event| {
        *event == SessionEvent::SessionReestablished
    });
    let stat = store
        .put_ephemeral("/again", b"", ExpectedVersion::Absent)
        .unwrap();
    assert!(stat.created_by_self, "owned by the new session");
    store.close();
}

fn notifications_arrive_in_order_of_the_changes(backend: &TestBackend) {
    use NotificationType::*;
    let store = backend.open();
    let (events, received) = mpsc::channel();
    store
        .register_listener(move |n: &Notification| events.send((n.kind, n.path.clone())).unwrap())
        .unwrap();
    store.put("/x", b"1", ExpectedVersion::Absent).unwrap();
    store.put("/x", b"2", ExpectedVersion::Exactly(0)).unwrap();
    store.put("/x/y", b"", ExpectedVersion::Absent).unwrap();
    store.delete("/x/y", ExpectedVersion::Any).unwrap();
    store.delete("/x", ExpectedVersion::Any).unwrap();
    let expected = [
        (Created, "/x"),
        (ChildrenChanged, "/"),
        (Modified, "/x"),
        (Created, "/x/y"),
        (ChildrenChanged, "/x"),
        (Deleted, "/x/y"),
        (ChildrenChanged, "/x"),
        (Deleted, "/x"),
        (ChildrenChanged, "/"),
    ];
    for (kind, path) in expected {
        assert_eq!(recv(&received), (kind, path.to_owned()));
    }
    store.close();
}

fn notifications_run_on_the_store_thread_not_the_callers(backend: &TestBackend) {
    let store = backend.open();
    let (threads, received) = mpsc::channel();
    store
        .register_listener(move |_: &Notification| {
            threads
                .send(thread::current().name().map(str::to_owned))
                .unwrap()
        })
        .unwrap();
    store.put("/a", b"", ExpectedVersion::Absent).unwrap();
    let name = recv(&received).expect("the store's thread is named");
    assert!(name.starts_with("metadata-store-"), "{name}");
    assert_eq!(store.threads().names(), [name]);
    store.close();
}

fn another_store_on_the_same_backend_hears_the_changes(backend: &TestBackend) {
    let writer = backend.open();
    let reader = backend.open();
    let (events, received) = mpsc::channel();
    reader
        .register_listener(move |n: &Notification| events.send((n.kind, n.path.clone())).unwrap())
        .unwrap();
    writer
        .put("/shared", b"1", ExpectedVersion::Absent)
        .unwrap();
    writer.put("/shared", b"2", ExpectedVersion::Any).unwrap();
    assert_eq!(
        recv_until(&received, |(_, path)| path == "/shared"),
        (NotificationType::Created, "/shared".to_owned())
    );
    assert_eq!(
        recv_until(&received, |(_, path)| path == "/shared"),
        (NotificationType::Modified, "/shared".to_owned())
    );
    writer.close();
    reader.close();
}

fn listeners_may_call_the_store(backend: &TestBackend) {
    let store = backend.open();
    let (values, received) = mpsc::channel();
    let inner = store.clone();
    store
        .register_listener(move |n: &Notification| {
            if n.kind == NotificationType::Created && n.path == "/a" {
                // A store lock held during delivery would deadlock here.
                let value = inner.get("/a").unwrap().map(|read| read.value);
                inner
                    .put("/from-listener", b"", ExpectedVersion::Any)
                    .unwrap();
                values.send(value).unwrap();
            }
        })
        .unwrap();
    store.put("/a", b"seen", ExpectedVersion::Absent).unwrap();
    assert_eq!(recv(&received), Some(b"seen".to_vec()));
    assert!(store.exists("/from-listener").unwrap());
    store.close();
}

fn a_panicking_listener_does_not_stop_later_notifications(backend: &TestBackend) {
    let store = backend.open();
    store
        .register_listener(|n: &Notification| {
            if n.path == "/boom" {
                panic!("listener fails on /boom");
            }
        })
        .unwrap();
    let (events, received) = mpsc::channel();
    store
        .register_listener(move |n: &Notification| events.send(n.path.clone()).unwrap())
        .unwrap();
    store.put("/boom", b"", ExpectedVersion::Absent).unwrap();
    store.put("/after", b"", ExpectedVersion::Absent).unwrap();
    recv_until(&received, |path| path == "/boom");
    recv_until(&received, |path| path == "/after");
    store.close();
}

fn an_unregistered_listener_hears_nothing_more(backend: &TestBackend) {
    let store = backend.open();
    let (first_events, first) = mpsc::channel();
    let first_id = store
        .register_listener(move |n: &Notification| first_events.send(n.path.clone()).unwrap())
        .unwrap();
    let (second_events, second) = mpsc::channel();
    store
        .register_listener(move |n: &Notification| second_events.send(n.path.clone()).unwrap())
        .unwrap();
    store.put("/before", b"", ExpectedVersion::Absent).unwrap();
    recv_until(&second, |path| path == "/before");
    assert!(store.unregister_listener(first_id));
    assert!(!store.unregister_listener(first_id));
    let heard_by_first: Vec<_> = first.try_iter().collect();
    assert!(heard_by_first.contains(&"/before".to_owned()));

    store.put("/after", b"", ExpectedVersion::Absent).unwrap();
    // Listeners are called in registration order: once the second heard `/after`, the first
    // would have too.
    recv_until(&second, |path| path == "/after");
    assert_eq!(first.try_iter().count(), 0);
    store.close();
}

fn operations_after_close_fail_with_already_closed(backend: &TestBackend) {
    let store = backend.open();
    store.put("/a", b"", ExpectedVersion::Absent).unwrap();
    store.close();
    assert!(store.is_closed());
    let closed = Err(MetadataStoreError::AlreadyClosed);
    assert_eq!(store.get("/a").map(|_| ()), closed);
    assert_eq!(
        store.put("/a", b"", ExpectedVersion::Any).map(|_| ()),
        closed
    );
    assert_eq!(
        store
            .put_ephemeral("/b", b"", ExpectedVersion::Any)
            .map(|_| ()),
        closed
    );
    assert_eq!(store.delete("/a", ExpectedVersion::Any), closed);
    assert_eq!(store.children("/").map(|_| ()), closed);
    assert_eq!(store.exists("/a").map(|_| ()), closed);
    assert_eq!(store.expire_session(), closed);
    assert_eq!(store.register_listener(|_| {}).map(|_| ()), closed);
    assert_eq!(store.register_session_listener(|_| {}).map(|_| ()), closed);
}

fn close_is_idempotent(backend: &TestBackend) {
    let store = backend.open();
    let clone = store.clone();
    store.close();
    store.close();
    clone.close();
    assert!(clone.is_closed());
}

fn close_from_a_listener_returns_and_stops_delivery(backend: &TestBackend) {
    let store = backend.open();
    let (closed, closed_received) = mpsc::channel();
    let (events, received) = mpsc::channel();
    let inner = Arc::new(store.clone());
    store
        .register_listener(move |n: &Notification| {
            events.send(n.path.clone()).unwrap();
            if n.path == "/close-now" {
                // On the store's own thread: close must not wait for itself.
                inner.close();
                closed.send(()).unwrap();
            }
        })
        .unwrap();
    store
        .put("/close-now", b"", ExpectedVersion::Absent)
        .unwrap();
    recv(&closed_received);
    assert!(store.is_closed());
    assert_eq!(
        store.put("/later", b"", ExpectedVersion::Any).map(|_| ()),
        Err(MetadataStoreError::AlreadyClosed)
    );
    // `/close-now` was heard; the `ChildrenChanged` queued behind it was dropped by close.
    let heard: Vec<_> = received.try_iter().collect();
    assert_eq!(heard, ["/close-now"]);
}

/// `close` from another thread while a listener runs and more events are queued: the running
/// drain delivers nothing after the one in hand. (Audit of 2026-12-07, second pass: the drain
/// went on through every queued event, and through events queued after `close` began, while
/// `close` waited up to 10 s for it.)
fn close_from_another_thread_while_a_listener_runs_delivers_nothing_more(backend: &TestBackend) {
    let store = backend.open();
    let (events, received) = mpsc::channel();
    let (release, held) = mpsc::channel::<()>();
    let held = std::sync::Mutex::new(held);
    store
        .register_listener(move |n: &Notification| {
            events.send(n.path.clone()).unwrap();
            if n.path == "/held" && n.kind == NotificationType::Created {
                let _ = held.lock().unwrap().recv();
            }
        })
        .unwrap();
    store.put("/held", b"", ExpectedVersion::Absent).unwrap();
    assert_eq!(recv(&received), "/held", "the listener is running now");
    for i in 0..3 {
        store
            .put(&format!("/queued-{i}"), b"", ExpectedVersion::Absent)
            .unwrap();
    }
    let closer = {
        let store = store.clone();
        thread::spawn(move || store.close())
    };
    // `is_closed` turns true under the event queue's lock, where the drain checks it before
    // each event: once it is seen here, the drain can take no other event.
    while !store.is_closed() {
        thread::yield_now();
    }
    drop(release);
    closer.join().unwrap();
    let heard: Vec<_> = received.try_iter().collect();
    assert!(heard.is_empty(), "delivered after close began: {heard:?}");
}

/// Mirrors Pulsar's `MetadataStoreTest.emptyStoreTest`.
fn an_empty_store_has_no_node_below_a_missing_one(backend: &TestBackend) {
    let store = backend.open();
    for path in ["/non-existing-key", "/non-existing-key/child"] {
        assert!(!store.exists(path).unwrap(), "{path}");
        assert_eq!(store.get(path).unwrap(), None, "{path}");
        assert!(store.children(path).unwrap().is_empty(), "{path}");
    }
    assert!(matches!(
        store.delete("/non-existing-key", ExpectedVersion::Any),
        Err(MetadataStoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.delete("/non-existing-key", ExpectedVersion::Exactly(1)),
        Err(MetadataStoreError::NotFound { .. }) | Err(MetadataStoreError::BadVersion { .. })
    ));
    store.close();
}

/// Mirrors Pulsar's `MetadataStoreTest.navigateChildrenTest`.
fn children_are_listed_level_by_level(backend: &TestBackend) {
    let store = backend.open();
    store
        .put("/key/c-0/cc-1", b"", ExpectedVersion::Any)
        .unwrap();
    store
        .put("/key/c-0/cc-2/ccc-1", b"", ExpectedVersion::Any)
        .unwrap();
    assert_eq!(store.children("/key").unwrap(), ["c-0"]);
    assert_eq!(store.children("/key/c-0").unwrap(), ["cc-1", "cc-2"]);
    assert_eq!(store.children("/key/c-0/cc-2").unwrap(), ["ccc-1"]);
    store.close();
}

/// Mirrors Pulsar's `MetadataStoreTest.testPersistent`: what a store wrote is read by a store
/// opened after it closed. (As upstream, not for memory: its tree lives while a store has it
/// open; here a second store keeps it open.)
fn a_value_outlives_the_store_that_wrote_it(backend: &TestBackend) {
    let keeper = backend.open();
    let writer = backend.open();
    writer
        .put("/a/b/c", b"testPersistent", ExpectedVersion::Absent)
        .unwrap();
    writer.close();
    let reader = backend.open();
    assert_eq!(
        reader.get("/a/b/c").unwrap().map(|read| read.value),
        Some(b"testPersistent".to_vec())
    );
    reader.close();
    keeper.close();
}

/// Mirrors Pulsar's `MetadataStoreTest.notificationListeners`: created, modified, a child's
/// creation (with `ChildrenChanged` for the parent), its deletion (and the parent's
/// `ChildrenChanged`), each with the reads agreeing.
fn notification_listeners_hear_each_kind_of_change(backend: &TestBackend) {
    use NotificationType::*;
    let store = backend.open();
    let (events, received) = mpsc::channel();
    store
        .register_listener(move |n: &Notification| events.send((n.kind, n.path.clone())).unwrap())
        .unwrap();
    let key = "/notification-listeners";
    assert_eq!(store.get(key).unwrap(), None);
    let stat = store.put(key, b"value-1", ExpectedVersion::Any).unwrap();
    assert_eq!(stat.version, 0);
    assert!(store.children(key).unwrap().is_empty());
    assert_eq!(recv(&received), (Created, key.to_owned()));
    assert_eq!(recv(&received), (ChildrenChanged, "/".to_owned()));

    let stat = store.put(key, b"value-2", ExpectedVersion::Any).unwrap();
    assert_eq!(stat.version, 1);
    assert_eq!(recv(&received), (Modified, key.to_owned()));

    let child = format!("{key}/xx");
    assert_eq!(store.get(&child).unwrap(), None);
    store.put(&child, b"value-2", ExpectedVersion::Any).unwrap();
    assert_eq!(recv(&received), (Created, child.clone()));
    assert_eq!(recv(&received), (ChildrenChanged, key.to_owned()));
    assert!(store.exists(&child).unwrap());
    assert_eq!(store.children(key).unwrap(), ["xx"]);

    store.delete(&child, ExpectedVersion::Any).unwrap();
    assert_eq!(recv(&received), (Deleted, child.clone()));
    assert_eq!(recv(&received), (ChildrenChanged, key.to_owned()));
    store.close();
}

/// The closed-store case of Pulsar's `MetadataStoreTest`: after close nothing more is delivered;
/// here provably so, since close drops the listeners (and with them the channel's sender).
fn a_closed_store_drops_its_listeners(backend: &TestBackend) {
    let store = backend.open();
    let other = backend.open();
    let (events, received) = mpsc::channel();
    store
        .register_listener(move |n: &Notification| {
            let _ = events.send(n.path.clone());
        })
        .unwrap();
    store.close();
    other
        .put("/after-close", b"", ExpectedVersion::Any)
        .unwrap();
    // Anything queued before close was dropped with the executor; the sender is gone.
    loop {
        match received.recv_timeout(common::WAIT) {
            Ok(path) => assert_ne!(path, "/after-close", "heard after close"),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("the closed store kept its listener"),
        }
    }
    other.close();
}

/// After a new session the store tells its notification listeners that changes may have been
/// missed: `Resync` for `/`, right after `SessionReestablished`.
fn a_new_session_is_followed_by_a_resync_notification(backend: &TestBackend) {
    let store = backend.open();
    let (events, received) = mpsc::channel();
    let sessions = events.clone();
    store
        .register_listener(move |n: &Notification| {
            let _ = events.send(format!("{:?} {}", n.kind, n.path));
        })
        .unwrap();
    store
        .register_session_listener(move |event| {
            let _ = sessions.send(format!("{event:?}"));
        })
        .unwrap();
    store.expire_session().unwrap();
    recv_until(&received, |event| event == "SessionReestablished");
    assert_eq!(recv(&received), "Resync /");
    store.close();
}
