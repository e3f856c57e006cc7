//! Test support shared by the server's test files: the two backends every suite runs on, unique
//! names, and bounded waits (channels with timeouts, condition waits; no sleep stands in for
//! synchronisation: the drills' `eventually` polls a condition with a deadline).

#![allow(dead_code)] // each test file uses a different part of this module

pub mod drill;
pub mod leader_history;
pub mod proxy;

use pulsar_server::metadata::{MetadataStore, MetadataStoreConfig};
use pulsar_server::threads::ComponentThreads;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// The environment variable holding the address (`host:port`) of the ZooKeeper server the tests
/// use; `cargo xtask test` and `.ci/run` start one and set it.
pub const ZOOKEEPER_ENV: &str = "PULSAR_TEST_ZOOKEEPER";

/// How long a test waits for something that must happen before it fails.
pub const WAIT: Duration = Duration::from_secs(20);

/// Session timeout of ZooKeeper stores in tests. The expiry tests do not wait for it (they end
/// the session on request), so it is generous: a loaded CI machine must not lose sessions by
/// accident. The partition test sets its own short timeout.
pub const ZK_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// One backend a shared suite runs on.
#[derive(Debug, Clone)]
pub struct TestBackend {
    /// `memory` or `zookeeper`.
    pub kind: &'static str,
    url: String,
}

impl TestBackend {
    /// A fresh `memory:` tree for `test`.
    pub fn memory(test: &str) -> Self {
        Self {
            kind: "memory",
            url: format!("memory:{}", unique(test)),
        }
    }

    /// A fresh chroot on the test ZooKeeper server for `test`; `None` only when a developer
    /// opted out with `PULSAR_TEST_ZOOKEEPER=off` outside CI.
    pub fn zookeeper(test: &str) -> Option<Self> {
        let address = zookeeper_address()?;
        Some(Self {
            kind: "zookeeper",
            url: format!("zk:{address}/pulsar-tests/{}", unique(test)),
        })
    }

    /// The URL every store of this backend opens.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Opens a new store (a new session) on this backend.
    pub fn open(&self) -> MetadataStore {
        MetadataStore::open_with_config(&self.url, config())
            .unwrap_or_else(|error| panic!("cannot open a store on {}: {error}", self.url))
    }
}

/// The store config of the tests: a short session timeout, a generous operation timeout.
pub fn config() -> MetadataStoreConfig {
    MetadataStoreConfig::default()
        .with_session_timeout(ZK_SESSION_TIMEOUT)
        .with_operation_timeout(Duration::from_secs(10))
}

/// The test ZooKeeper server's `host:port`.
///
/// # Panics
///
/// When `PULSAR_TEST_ZOOKEEPER` is unset (or set to `off` under CI): the ZooKeeper tests are
/// part of the suite, not optional. `cargo xtask test` provides the server.
pub fn zookeeper_address() -> Option<String> {
    let in_ci = std::env::var_os("CI").is_some_and(|value| !value.is_empty() && value != "false");
    match std::env::var(ZOOKEEPER_ENV) {
        Ok(value) if value == "off" && !in_ci => {
            eprintln!("ZooKeeper test SKIPPED: {ZOOKEEPER_ENV}=off");
            None
        }
        Ok(value) if value == "off" => panic!(
            "{ZOOKEEPER_ENV}=off, but CI must run the ZooKeeper tests: \
             .ci/run starts a ZooKeeper server and sets {ZOOKEEPER_ENV}=127.0.0.1:<port>"
        ),
        Ok(value) if !value.is_empty() => Some(value),
        _ if in_ci => panic!(
            "{ZOOKEEPER_ENV} is not set, but CI must provide a ZooKeeper server: .ci/run \
             (through `cargo xtask test`) starts one and sets {ZOOKEEPER_ENV}=127.0.0.1:<port>"
        ),
        _ => panic!(
            "{ZOOKEEPER_ENV} is not set: run the tests with `cargo xtask test` (it starts a \
             ZooKeeper server), or start one yourself and set {ZOOKEEPER_ENV}=127.0.0.1:<port>, \
             or set {ZOOKEEPER_ENV}=off to skip the ZooKeeper tests locally"
        ),
    }
}

/// Whether the tests that start their own ZooKeeper servers (to kill and restart them) run.
/// They need the server's jars, not `PULSAR_TEST_ZOOKEEPER`; like every ZooKeeper test they
/// are skipped only when a developer opts out with `PULSAR_TEST_ZOOKEEPER=off` outside CI.
///
/// # Panics
///
/// When the jars are missing: the drills are part of the suite, not optional.
pub fn own_zookeeper_servers() -> bool {
    let in_ci = std::env::var_os("CI").is_some_and(|value| !value.is_empty() && value != "false");
    if !in_ci && std::env::var(ZOOKEEPER_ENV).is_ok_and(|value| value == "off") {
        eprintln!("ZooKeeper drill SKIPPED: {ZOOKEEPER_ENV}=off");
        return false;
    }
    if let Err(error) = pulsar_testkit::zookeeper::classpath() {
        panic!(
            "the ZooKeeper drills start their own servers: {error} (`cargo xtask test` installs \
             it), or set {ZOOKEEPER_ENV}=off to skip the ZooKeeper tests locally"
        );
    }
    true
}

/// `test-<pid>-<n>`: unique in this run and across runs sharing a ZooKeeper server.
pub fn unique(test: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or(0);
    format!("{test}-{}-{n}-{nanos}", std::process::id())
}

/// The next value from `receiver`, failing the test after [`WAIT`].
#[track_caller]
pub fn recv<T>(receiver: &Receiver<T>) -> T {
    match receiver.recv_timeout(WAIT) {
        Ok(value) => value,
        Err(error) => panic!("nothing received within {WAIT:?}: {error}"),
    }
}

/// Receives until `wanted` matches, returning the value that matched; fails after [`WAIT`].
#[track_caller]
pub fn recv_until<T: std::fmt::Debug>(receiver: &Receiver<T>, wanted: impl Fn(&T) -> bool) -> T {
    drill::recv_within(receiver, WAIT, wanted)
}

/// Asserts that every thread the component started has ended: each marked itself exited and
/// is gone from `/proc/self/task` (the operating system's thread list of this process).
#[track_caller]
pub fn assert_threads_gone(threads: &ComponentThreads) {
    assert!(
        threads.await_exit(WAIT),
        "threads still running: {:?}",
        threads.started()
    );
    assert_eq!(threads.live_count(), 0);
    // The exit mark is set in the thread's last moments; the kernel drops the thread right
    // after. Wait (bounded) for the OS to agree.
    let deadline = Instant::now() + WAIT;
    loop {
        let still_listed = os_threads_listed(threads);
        if still_listed == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{still_listed} thread(s) still in /proc/self/task: {:?}",
            threads.started()
        );
        std::thread::yield_now();
    }
}

/// How many of the component's threads the operating system still lists for this process.
pub fn os_threads_listed(threads: &ComponentThreads) -> usize {
    threads
        .started()
        .iter()
        .filter_map(|thread| thread.os_id)
        .filter(|tid| std::path::Path::new(&format!("/proc/self/task/{tid}")).exists())
        .count()
}

/// Defines one `#[test]` per backend for each named function `fn name(backend: &TestBackend)`:
/// `memory::name` and `zookeeper::name`. (`#[macro_use] mod common;` brings it in.)
#[allow(unused_macros)] // not every test file runs a suite on both backends
macro_rules! across_backends {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[test]
                fn $name() {
                    super::$name(&$crate::common::TestBackend::memory(stringify!($name)));
                }
            )*
        }
        mod zookeeper {
            $(
                #[test]
                fn $name() {
                    if let Some(backend) = $crate::common::TestBackend::zookeeper(stringify!($name)) {
                        super::$name(&backend);
                    }
                }
            )*
        }
    };
}
