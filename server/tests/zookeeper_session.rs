//! `ZooKeeperSession` against a real ZooKeeper server: sessions, recursive watches, and recovery
//! from a lost session (watches set before the loss keep firing after it), both when the session
//! is ended on request and when the server expires it during a network partition.

mod common;

use common::proxy::PartitionProxy;
use common::{recv, recv_until, unique, zookeeper_address};
use pulsar_server::metadata::{
    ExpectedVersion, MetadataStore, MetadataStoreConfig, Notification, NotificationType,
    SessionEvent,
};
use pulsar_server::zookeeper::{ZooKeeperError, ZooKeeperSession};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// `host:port/pulsar-tests/<unique>` on the test server; `None` when opted out locally.
fn connect_string(test: &str) -> Option<String> {
    Some(format!(
        "{}/pulsar-tests/{}",
        zookeeper_address()?,
        unique(test)
    ))
}

#[test]
fn connect_establishes_a_session_and_creates_the_chroot() {
    let Some(address) = zookeeper_address() else {
        return;
    };
    let chroot = format!("/pulsar-tests/{}/deeper", unique("chroot"));
    let session =
        ZooKeeperSession::connect(&format!("{address}{chroot}"), common::config()).unwrap();
    assert!(session.session_id().is_some());
    assert_eq!(session.sessions_established(), 1);
    session.close();

    let root = MetadataStore::open_with_config(&format!("zk:{address}"), common::config()).unwrap();
    assert!(root.exists(&chroot).unwrap(), "the chroot was created");
    root.close();
}

#[test]
fn connect_rejects_a_malformed_connect_string() {
    for connect_string in ["", "no-port", "host:port", "host:1/trailing/"] {
        assert!(
            matches!(
                ZooKeeperSession::connect(connect_string, common::config()),
                Err(ZooKeeperError::InvalidConnectString { .. })
            ),
            "{connect_string}"
        );
    }
}

#[test]
fn connect_to_a_server_that_is_not_there_fails() {
    // Nothing listens on a port just released by the OS.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = MetadataStoreConfig::default()
        .with_session_timeout(Duration::from_secs(1))
        .with_operation_timeout(Duration::from_secs(2));
    let error = ZooKeeperSession::connect(&format!("127.0.0.1:{port}"), config).unwrap_err();
    assert!(
        matches!(
            error,
            ZooKeeperError::Timeout { .. } | ZooKeeperError::Client { .. }
        ),
        "{error:?}"
    );
}

#[test]
fn a_recursive_watch_reports_changes_below_its_path_on_the_io_thread() {
    let Some(connect_string) = connect_string("watch") else {
        return;
    };
    let session = ZooKeeperSession::connect(&connect_string, common::config()).unwrap();
    let (events, received) = mpsc::channel();
    session
        .watch_recursive("/", move |n: &Notification| {
            events
                .send((
                    n.kind,
                    n.path.clone(),
                    thread::current().name().map(str::to_owned),
                ))
                .unwrap()
        })
        .unwrap();
    let store =
        MetadataStore::open_with_config(&format!("zk:{connect_string}"), common::config()).unwrap();
    store.put("/a", b"1", ExpectedVersion::Absent).unwrap();
    store.put("/a", b"2", ExpectedVersion::Any).unwrap();
    store.delete("/a", ExpectedVersion::Any).unwrap();
    for expected in [
        NotificationType::Created,
        NotificationType::Modified,
        NotificationType::Deleted,
    ] {
        let (kind, path, thread) = recv(&received);
        assert_eq!(
            (kind, path.as_str()),
            (expected, "/a"),
            "paths are relative to the chroot"
        );
        let thread = thread.unwrap();
        assert!(thread.starts_with("zk-io-"), "{thread}");
    }
    store.close();
    session.close();
}

#[test]
fn a_watch_set_before_expiry_still_fires_after_recovery() {
    let Some(connect_string) = connect_string("expiry") else {
        return;
    };
    let session = ZooKeeperSession::connect(&connect_string, common::config()).unwrap();
    let (events, received) = mpsc::channel();
    session
        .watch_recursive("/", move |n: &Notification| {
            events.send(n.path.clone()).unwrap()
        })
        .unwrap();
    let (session_events, session_received) = mpsc::channel();
    session.add_session_listener(move |event| {
        session_events
            .send((event, thread::current().name().map(str::to_owned)))
            .unwrap()
    });
    let first_session = session.session_id().unwrap();

    session.expire_session().unwrap();
    recv_until(&session_received, |(event, _)| {
        *event == SessionEvent::SessionLost
    });
    let (_, thread) = recv_until(&session_received, |(event, _)| {
        *event == SessionEvent::SessionReestablished
    });
    let thread = thread.unwrap();
    assert!(
        thread.starts_with("zk-connect-executor-"),
        "recovery ran on {thread}"
    );
    assert_eq!(session.sessions_established(), 2);
    assert_ne!(session.session_id(), Some(first_session));

    // A change made by someone else after the recovery reaches the old watch.
    let other =
        MetadataStore::open_with_config(&format!("zk:{connect_string}"), common::config()).unwrap();
    other
        .put("/after-expiry", b"", ExpectedVersion::Absent)
        .unwrap();
    recv_until(&received, |path| path == "/after-expiry");
    other.close();
    session.close();
}

#[test]
fn the_store_keeps_delivering_notifications_after_its_session_expired() {
    let Some(connect_string) = connect_string("store-expiry") else {
        return;
    };
    let url = format!("zk:{connect_string}");
    let store = MetadataStore::open_with_config(&url, common::config()).unwrap();
    let (events, received) = mpsc::channel();
    store
        .register_listener(move |n: &Notification| events.send((n.kind, n.path.clone())).unwrap())
        .unwrap();
    let (session_events, session_received) = mpsc::channel();
    store
        .register_session_listener(move |event| session_events.send(event).unwrap())
        .unwrap();
    store
        .zookeeper_session()
        .expect("a zk: store has a ZooKeeper session")
        .expire_session()
        .unwrap();
    recv_until(&session_received, |event| {
        *event == SessionEvent::SessionReestablished
    });

    let writer = MetadataStore::open_with_config(&url, common::config()).unwrap();
    writer.put("/x", b"1", ExpectedVersion::Absent).unwrap();
    writer.put("/x", b"2", ExpectedVersion::Any).unwrap();
    assert_eq!(
        recv_until(&received, |(_, path)| path == "/x"),
        (NotificationType::Created, "/x".to_owned())
    );
    assert_eq!(
        recv_until(&received, |(_, path)| path == "/x"),
        (NotificationType::Modified, "/x".to_owned())
    );
    writer.close();
    store.close();
}

#[test]
fn calls_after_close_fail_with_closed() {
    let Some(connect_string) = connect_string("closed") else {
        return;
    };
    let session = ZooKeeperSession::connect(&connect_string, common::config()).unwrap();
    session.close();
    session.close();
    assert!(session.is_closed());
    assert_eq!(session.session_id(), None);
    assert_eq!(
        session.watch_recursive("/", |_| {}),
        Err(ZooKeeperError::Closed)
    );
    assert_eq!(session.expire_session(), Err(ZooKeeperError::Closed));
}

#[test]
fn a_session_the_server_expires_during_a_partition_is_re_created_and_its_watch_still_fires() {
    let Some(address) = zookeeper_address() else {
        return;
    };
    let chroot = format!("/pulsar-tests/{}", unique("partition"));
    let proxy = PartitionProxy::start(&address);
    let config = MetadataStoreConfig::default()
        .with_session_timeout(Duration::from_secs(2))
        .with_operation_timeout(Duration::from_secs(10));
    // The store under test reaches the server through the proxy; the observer does not.
    let store = MetadataStore::open_with_config(&format!("zk:{}{chroot}", proxy.address()), config)
        .unwrap();
    let observer =
        MetadataStore::open_with_config(&format!("zk:{address}{chroot}"), common::config())
            .unwrap();
    let session = store.zookeeper_session().unwrap();
    let (watched, watch_events) = mpsc::channel();
    session
        .watch_recursive("/", move |n: &Notification| {
            watched.send(n.path.clone()).unwrap()
        })
        .unwrap();
    let (session_events, session_received) = mpsc::channel();
    session.add_session_listener(move |event| session_events.send(event).unwrap());
    let (observed, observer_events) = mpsc::channel();
    observer
        .register_listener(move |n: &Notification| observed.send((n.kind, n.path.clone())).unwrap())
        .unwrap();
    store
        .put_ephemeral("/owned", b"", ExpectedVersion::Absent)
        .unwrap();
    recv_until(&observer_events, |(_, path)| path == "/owned");

    proxy.partition();
    // The server expires the silent session: its ephemeral node goes.
    recv_until(&observer_events, |event| {
        *event == (NotificationType::Deleted, "/owned".to_owned())
    });
    recv_until(&session_received, |event| {
        *event == SessionEvent::SessionLost
    });

    proxy.heal();
    recv_until(&session_received, |event| {
        *event == SessionEvent::SessionReestablished
    });
    assert_eq!(session.sessions_established(), 2);
    observer
        .put("/after-partition", b"", ExpectedVersion::Absent)
        .unwrap();
    recv_until(&watch_events, |path| path == "/after-partition");
    assert_eq!(store.get("/owned").unwrap(), None);
    store.close();
    observer.close();
}
