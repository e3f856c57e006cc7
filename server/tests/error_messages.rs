//! Every error the server hands to users: its message, word for word, and whether it names a
//! source. Pins what callers (and their logs) see, whichever way the impls are written.

use pulsar_server::functions::{
    EmitError, FunctionError, GetProducerError, ProcessError, ProducerError, PushError, ReadError,
    SourceError,
};
use pulsar_server::leader::LeaderServiceError;
use pulsar_server::loadbalance::LoadManagerError;
use pulsar_server::metadata::{ExpectedVersion, MetadataStoreError};
use pulsar_server::replication::ReplicationError;
use pulsar_server::zookeeper::ZooKeeperError;
use std::error::Error;

/// `error`'s message and whether `source()` names an error.
fn shown(error: &dyn Error) -> (String, bool) {
    (error.to_string(), error.source().is_some())
}

#[test]
fn metadata_store_errors_keep_their_messages_and_have_no_source() {
    let absent = format!("bad version for `/a`: expected {}", ExpectedVersion::Absent);
    let cases: Vec<(MetadataStoreError, &str)> = vec![
        (
            MetadataStoreError::InvalidUrl {
                url: "x:".into(),
                reason: "no provider".into(),
            },
            "invalid metadata store URL `x:`: no provider",
        ),
        (
            MetadataStoreError::InvalidPath {
                path: "a".into(),
                reason: "not absolute",
            },
            "invalid metadata path `a`: not absolute",
        ),
        (
            MetadataStoreError::NotFound { path: "/a".into() },
            "node `/a` does not exist",
        ),
        (
            MetadataStoreError::BadVersion {
                path: "/a".into(),
                expected: ExpectedVersion::Absent,
            },
            &absent,
        ),
        (
            MetadataStoreError::NotEmpty { path: "/a".into() },
            "node `/a` has children",
        ),
        (
            MetadataStoreError::EphemeralParent {
                path: "/e/c".into(),
            },
            "cannot create `/e/c`: an ancestor is ephemeral",
        ),
        (
            MetadataStoreError::AlreadyClosed,
            "the metadata store is closed",
        ),
        (
            MetadataStoreError::Unavailable {
                reason: "lost".into(),
            },
            "the metadata store is unavailable: lost",
        ),
        (
            MetadataStoreError::Backend {
                reason: "boom".into(),
            },
            "the metadata store backend failed: boom",
        ),
    ];
    for (error, message) in cases {
        assert_eq!(shown(&error), (message.to_owned(), false));
    }
}

#[test]
fn component_errors_keep_their_messages_and_name_the_store_error_as_source() {
    let store = || MetadataStoreError::AlreadyClosed;
    let cases: Vec<(Box<dyn Error>, &str, bool)> = vec![
        (
            Box::new(LeaderServiceError::Closed),
            "the leader service is closed",
            false,
        ),
        (
            Box::new(LeaderServiceError::from(store())),
            "leader election failed: the metadata store is closed",
            true,
        ),
        (
            Box::new(ReplicationError::Closed),
            "the under-replication manager is closed",
            false,
        ),
        (
            Box::new(ReplicationError::Corrupt {
                path: "/l".into(),
                reason: "not a number".into(),
            }),
            "unreadable replication metadata at `/l`: not a number",
            false,
        ),
        (
            Box::new(ReplicationError::from(store())),
            "replication metadata failure: the metadata store is closed",
            true,
        ),
        (
            Box::new(LoadManagerError::Closed),
            "the load manager is stopped",
            false,
        ),
        (
            Box::new(LoadManagerError::InvalidName { name: "a/b".into() }),
            "invalid broker or domain name `a/b`: empty or contains `/`",
            false,
        ),
        (
            Box::new(LoadManagerError::from(store())),
            "load manager store failure: the metadata store is closed",
            true,
        ),
    ];
    for (error, message, has_source) in cases {
        assert_eq!(shown(error.as_ref()), (message.to_owned(), has_source));
    }
}

#[test]
fn zookeeper_errors_keep_their_messages() {
    let cases = [
        (
            ZooKeeperError::InvalidConnectString {
                connect_string: "h".into(),
                reason: "no port".into(),
            },
            "invalid ZooKeeper connect string `h`: no port",
        ),
        (ZooKeeperError::Closed, "the ZooKeeper session is closed"),
        (
            ZooKeeperError::NoSession,
            "the ZooKeeper session expired and is being re-established",
        ),
        (
            ZooKeeperError::Timeout { what: "connecting" },
            "ZooKeeper timed out: connecting",
        ),
        (
            ZooKeeperError::Client {
                what: "reading",
                reason: "no node".into(),
            },
            "ZooKeeper failed: reading: no node",
        ),
        (
            ZooKeeperError::ThreadStart {
                reason: "EAGAIN".into(),
            },
            "cannot start the ZooKeeper session's threads: EAGAIN",
        ),
    ];
    for (error, message) in cases {
        assert_eq!(shown(&error), (message.to_owned(), false));
    }
}

#[test]
fn functions_errors_keep_their_messages_and_sources() {
    let io = || std::io::Error::other("reset");
    let cases: Vec<(Box<dyn Error>, &str, bool)> = vec![
        (
            Box::new(FunctionError::failed(io())),
            "the function failed: reset",
            true,
        ),
        (
            Box::new(FunctionError::Panicked(Box::new("boom"))),
            "the function panicked: boom",
            false,
        ),
        (
            Box::new(FunctionError::Abandoned),
            "the result was abandoned before it was produced",
            false,
        ),
        (
            Box::new(ProcessError::Full(1)),
            "record not processed: max_pending asynchronous results are outstanding",
            false,
        ),
        (
            Box::new(ProcessError::Closed(1)),
            "record not processed: the function instance is closed",
            false,
        ),
        (
            Box::new(ProducerError::new(io())),
            "producer error: reset",
            true,
        ),
        (
            Box::new(GetProducerError::<std::io::Error>::Closed),
            "the producer cache is closed",
            false,
        ),
        (
            Box::new(GetProducerError::Create(io())),
            "the producer could not be created",
            false,
        ),
        // A source's own error is shown as it is, and so is its source (here: none).
        (Box::new(SourceError::new(io())), "reset", false),
        (
            Box::new(ReadError::Discovery(SourceError::new("gone"))),
            "discovery failed: gone",
            true,
        ),
        (
            Box::new(ReadError::Prepare(SourceError::new("gone"))),
            "preparing the next task failed: gone",
            true,
        ),
        (
            Box::new(ReadError::Read(SourceError::new("gone"))),
            "reading the current task failed: gone",
            true,
        ),
        (
            Box::new(ReadError::Closed),
            "the batch source executor is closed",
            false,
        ),
        (
            Box::new(ReadError::ConcurrentRead),
            "another thread is reading from this batch source executor",
            false,
        ),
        (
            Box::new(EmitError(7)),
            "task not queued: the batch source executor is closed",
            false,
        ),
        (
            Box::new(PushError(7)),
            "record not queued: the push source is closed or the task is over",
            false,
        ),
    ];
    for (error, message, has_source) in cases {
        assert_eq!(shown(error.as_ref()), (message.to_owned(), has_source));
    }
}

#[test]
fn a_source_error_passes_on_the_source_of_the_error_it_wraps() {
    #[derive(Debug)]
    struct Outer(std::io::Error);
    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("outer")
        }
    }
    impl Error for Outer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }
    let error = SourceError::new(Outer(std::io::Error::other("inner")));
    assert_eq!(error.to_string(), "outer");
    assert_eq!(
        error.source().map(ToString::to_string).as_deref(),
        Some("inner")
    );
}
