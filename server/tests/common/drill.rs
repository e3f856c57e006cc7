//! The fault drills' cast: brokers (a store, a `LeaderService`, a `LoadManager` and an
//! `UnderreplicationManager` each), a writer that records which writes were acknowledged, and
//! the checks every drill ends with (notifications flow to every component, one leader, dead
//! brokers leave every cache, no acknowledged write lost).

use super::leader_history::LeaderHistory;
use pulsar_server::leader::LeaderService;
use pulsar_server::loadbalance::{LoadManager, LoadReport};
use pulsar_server::metadata::{
    ExpectedVersion, MetadataStore, MetadataStoreConfig, Notification, NotificationType,
    SessionEvent,
};
use pulsar_server::replication::UnderreplicationManager;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The election every drill broker joins.
pub const ELECTION_PATH: &str = "/drill/leader";

/// The ledgers root of every drill broker's under-replication manager.
pub const LEDGERS_ROOT: &str = "/drill/ledgers";

/// How long a drill waits for the system to settle after a fault ("within a few seconds"; a
/// bound on a wait, not a measurement).
pub const RECOVERY: Duration = Duration::from_secs(15);

/// The session timeout of a drill whose sessions must survive the fault (a server restart, a
/// re-election, a cut connection healed). The ZooKeeper client gives a session up on its own
/// 7/5 of the timeout after it last heard a server (`zookeeper-client` 0.11, `reset_timeout`), so
/// the fault and the reconnect must fit in that. With 4 s (5.6 s) a re-election beside Miri on
/// 2 cores once did not (CI of 66d517e: `SessionLost` instead of `Reconnected`); 10 s (14 s)
/// leaves the slack of a loaded machine, and none of these drills waits for an expiry.
pub const SURVIVING_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// The store config of a drill: `session_timeout`, and an operation timeout short enough that
/// calls during an outage fail quickly.
pub fn config(session_timeout: Duration) -> MetadataStoreConfig {
    MetadataStoreConfig::default()
        .with_session_timeout(session_timeout)
        .with_operation_timeout(Duration::from_secs(2))
}

/// Receives until `wanted` matches, within `within`; the value that matched.
#[track_caller]
pub fn recv_within<T: std::fmt::Debug>(
    receiver: &Receiver<T>,
    within: Duration,
    wanted: impl Fn(&T) -> bool,
) -> T {
    let deadline = Instant::now() + within;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match receiver.recv_timeout(left) {
            Ok(value) if wanted(&value) => return value,
            Ok(value) => seen.push(value),
            Err(error) => {
                let tail = &seen[seen.len().saturating_sub(20)..];
                panic!("no matching value within {within:?} ({error}); last seen {tail:?}")
            }
        }
    }
}

/// Polls `condition` until it holds, within `within`; fails the test with `what` otherwise.
#[track_caller]
pub fn eventually(within: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !condition() {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        // Polling, not synchronising: what is awaited (a leader, a cache, a session) changes
        // when the ZooKeeper processes act, and offers nothing to block on; the condition is
        // checked again after a short pause, and the deadline bounds the wait.
        thread::sleep(Duration::from_millis(20));
    }
}

/// One broker of a drill: its own store (session), a leader service, a load manager and an
/// under-replication manager on it, and what the store told its listeners.
pub struct DrillBroker {
    /// The broker's id (candidate id and load-report name).
    pub id: String,
    /// The broker's store.
    pub store: MetadataStore,
    /// Its leader service.
    pub leader: LeaderService,
    /// Its load manager.
    pub load: LoadManager,
    /// Its under-replication manager.
    pub replication: UnderreplicationManager,
    /// Every notification its store delivered.
    pub notifications: Receiver<Notification>,
    /// Every session event its store delivered.
    pub sessions: Receiver<SessionEvent>,
}

impl DrillBroker {
    /// Starts broker `id` on `url`, its leadership callbacks recorded in `history`.
    pub fn start(
        url: &str,
        config: MetadataStoreConfig,
        id: &str,
        history: &LeaderHistory,
    ) -> Self {
        let store = MetadataStore::open_with_config(url, config)
            .unwrap_or_else(|error| panic!("cannot open a store on {url}: {error}"));
        let (heard, notifications) = mpsc::channel();
        store
            .register_listener(move |n: &Notification| {
                let _ = heard.send(n.clone());
            })
            .unwrap();
        let (heard, sessions) = mpsc::channel();
        store
            .register_session_listener(move |event| {
                let _ = heard.send(event);
            })
            .unwrap();
        let leader =
            LeaderService::start(store.clone(), ELECTION_PATH, id, history.listener(id)).unwrap();
        let load = LoadManager::start(store.clone(), id, LoadReport::default()).unwrap();
        let replication = UnderreplicationManager::new(store.clone(), LEDGERS_ROOT).unwrap();
        Self {
            id: id.to_owned(),
            store,
            leader,
            load,
            replication,
            notifications,
            sessions,
        }
    }

    /// Waits for `event` from the store.
    #[track_caller]
    pub fn await_session_event(&self, event: SessionEvent, within: Duration) {
        recv_within(&self.sessions, within, |heard| *heard == event);
    }

    /// Stops the broker cleanly (its report and, if it leads, the election node are deleted).
    pub fn stop(&self, history: &LeaderHistory) {
        history.gone(&self.id);
        self.leader.close();
        self.load.stop();
        self.replication.close();
        self.store.close();
    }
}

/// Notifications flow to every broker again: `writer` writes a new probe value every 200 ms
/// until each broker's listeners heard one, failing after [`RECOVERY`]. (A probe written while a
/// broker was still between sessions is not heard, and need not be: `Resync` covers it. The
/// next one must be.)
#[track_caller]
pub fn assert_notifications_flow(writer: &MetadataStore, brokers: &[&DrillBroker], tag: &str) {
    let prefix = format!("/drill/probe/{tag}-");
    let deadline = Instant::now() + RECOVERY;
    let mut deaf: Vec<&DrillBroker> = brokers.to_vec();
    let mut probes = 0;
    while !deaf.is_empty() {
        if Instant::now() > deadline {
            let ids: Vec<&str> = deaf.iter().map(|b| b.id.as_str()).collect();
            let sessions: Vec<Vec<SessionEvent>> = deaf
                .iter()
                .map(|b| b.sessions.try_iter().collect())
                .collect();
            panic!(
                "{ids:?} heard none of {probes} probes {prefix}* within {RECOVERY:?}; their \
                 session events since the last wait: {sessions:?}"
            );
        }
        // The write may fail while the store recovers; the next round tries again.
        if writer
            .put(&format!("{prefix}{probes}"), b"", ExpectedVersion::Any)
            .is_ok()
        {
            probes += 1;
        }
        let round = Instant::now() + Duration::from_millis(200);
        deaf.retain(|broker| loop {
            let left = round.saturating_duration_since(Instant::now());
            match broker.notifications.recv_timeout(left) {
                Ok(n) if n.path.starts_with(&prefix) && n.kind == NotificationType::Created => {
                    break false
                }
                Ok(_) => {}
                Err(_) => break true,
            }
        });
    }
}

/// The under-replication manager of every broker still hears the replication switch: the
/// writer disables replication, each broker's manager reads that (within [`RECOVERY`]) and
/// registers an "enabled" callback (which must wait), the writer enables replication, and
/// every callback runs within [`RECOVERY`].
#[track_caller]
pub fn assert_replication_switch_heard(writer: &MetadataStore, brokers: &[&DrillBroker]) {
    let switch = UnderreplicationManager::new(writer.clone(), LEDGERS_ROOT).unwrap();
    switch.disable_ledger_replication().unwrap();
    // ZooKeeper orders each session's view, not the sessions against each other: a broker
    // whose session is on a follower that has not applied the writer's disable yet still
    // reads replication as enabled, and a callback registered then runs at once (as in
    // Pulsar). Once a broker has read the disable through its session, its later reads see
    // it too, so the callbacks below must wait.
    for broker in brokers {
        eventually(
            RECOVERY,
            "every broker reads replication as disabled",
            || broker.replication.is_ledger_replication_enabled().ok() == Some(false),
        );
    }
    let (ran, heard) = mpsc::channel();
    for broker in brokers {
        let (ran, id) = (ran.clone(), broker.id.clone());
        broker
            .replication
            .notify_ledger_replication_enabled(move || {
                let _ = ran.send(id);
            })
            .unwrap();
    }
    assert!(
        heard.try_recv().is_err(),
        "an \"enabled\" callback ran while replication was disabled"
    );
    switch.enable_ledger_replication().unwrap();
    let mut waiting: Vec<&str> = brokers.iter().map(|b| b.id.as_str()).collect();
    while !waiting.is_empty() {
        let id = heard.recv_timeout(RECOVERY).unwrap_or_else(|error| {
            panic!("{waiting:?} did not hear replication enabled within {RECOVERY:?} ({error})")
        });
        waiting.retain(|waiting| *waiting != id);
    }
    switch.close();
}

/// Waits until exactly one of `brokers` leads and every one names it as the leader; its id.
#[track_caller]
pub fn await_one_leader(brokers: &[&DrillBroker], history: &LeaderHistory) -> String {
    let mut leader = String::new();
    eventually(
        RECOVERY,
        "exactly one leader, named by every broker",
        || {
            let leading: Vec<&DrillBroker> = brokers
                .iter()
                .copied()
                .filter(|b| b.leader.is_leader())
                .collect();
            if leading.len() != 1 {
                return false;
            }
            leader = leading[0].id.clone();
            brokers.iter().all(|b| {
                b.leader.current_leader().ok().flatten().as_deref() == Some(leader.as_str())
            })
        },
    );
    history.assert_one_leader_at_a_time();
    let active = history.active_now();
    assert_eq!(
        active.into_iter().collect::<Vec<_>>(),
        [leader.clone()],
        "the callbacks agree with is_leader"
    );
    leader
}

/// Waits until `gone` has left the cache of every broker in `brokers`, then checks that placing
/// many bundles never picks it.
#[track_caller]
pub fn assert_broker_left_every_cache(gone: &str, brokers: &[&DrillBroker]) {
    for broker in brokers {
        eventually(
            RECOVERY,
            &format!("{gone} leaves the cache of {}", broker.id),
            || !broker.load.available_brokers().iter().any(|b| b == gone),
        );
    }
    for broker in brokers {
        for bundle in 0..32 {
            let chosen = broker
                .load
                .select_broker(&format!("drill/ns/0x{bundle:08x}_0x{:08x}", bundle + 1))
                .unwrap();
            assert_ne!(chosen.as_deref(), Some(gone), "a dead broker was selected");
        }
    }
}

/// Writes `/drill/acked/<n>` in a loop on its own thread, remembering which writes were
/// acknowledged (returned `Ok`); failed or timed-out writes are not counted.
pub struct AckedWriter {
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<String>>>,
    attempts: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl AckedWriter {
    /// Starts writing through `store`.
    pub fn start(store: MetadataStore) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let attempts = Arc::new(AtomicUsize::new(0));
        let thread = {
            let (stop, acked, attempts) = (stop.clone(), acked.clone(), attempts.clone());
            thread::Builder::new()
                .name("drill-writer".into())
                .spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(Ordering::Acquire) {
                        let path = format!("/drill/acked/{n:08}");
                        n += 1;
                        attempts.fetch_add(1, Ordering::Relaxed);
                        if store.put(&path, b"acked", ExpectedVersion::Any).is_ok() {
                            acked.lock().unwrap().push(path);
                        } else {
                            // Without a session a put fails at once: pace the retries rather
                            // than spin a core during the outage.
                            thread::sleep(Duration::from_millis(20));
                        }
                    }
                })
                .unwrap()
        };
        Self {
            stop,
            acked,
            attempts,
            thread: Some(thread),
        }
    }

    /// How many writes were acknowledged so far.
    pub fn acked_count(&self) -> usize {
        self.acked.lock().unwrap().len()
    }

    /// Waits (within [`RECOVERY`]) until `more` writes beyond those acknowledged now are
    /// acknowledged; `what` names the wait in the failure message.
    #[track_caller]
    pub fn await_more_acks(&self, more: usize, what: &str) {
        let before = self.acked_count();
        eventually(RECOVERY, what, || self.acked_count() >= before + more);
    }

    /// Stops writing; the acknowledged paths.
    pub fn finish(mut self) -> Vec<String> {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        let attempts = self.attempts.load(Ordering::Relaxed);
        let acked = std::mem::take(&mut *self.acked.lock().unwrap());
        eprintln!(
            "drill writer: {} of {attempts} writes acknowledged",
            acked.len()
        );
        acked
    }
}

impl Drop for AckedWriter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Every acknowledged write is still there, read through `store`.
#[track_caller]
pub fn assert_acked_writes_survived(store: &MetadataStore, acked: &[String]) {
    assert!(!acked.is_empty(), "the writer had some writes acknowledged");
    let present: std::collections::BTreeSet<String> = store
        .children("/drill/acked")
        .unwrap()
        .into_iter()
        .map(|child| format!("/drill/acked/{child}"))
        .collect();
    let lost: Vec<&String> = acked
        .iter()
        .filter(|path| !present.contains(*path))
        .collect();
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
}

/// One drill at a time within a test binary: they start JVMs and use short session timeouts.
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The brokers as the slice of references the assertions take.
pub fn refs(brokers: &[DrillBroker]) -> Vec<&DrillBroker> {
    brokers.iter().collect()
}

/// A drill's three brokers, `broker-a` to `broker-c`, each on its own store at `url`.
pub fn start_brokers(
    url: &str,
    config: MetadataStoreConfig,
    history: &LeaderHistory,
) -> Vec<DrillBroker> {
    ["broker-a", "broker-b", "broker-c"]
        .iter()
        .map(|id| DrillBroker::start(url, config, id, history))
        .collect()
}

/// Ends a drill: stops the brokers left, closes the writer's store, and checks one leader at a
/// time over the whole history of leadership changes.
pub fn end_drill(brokers: &[DrillBroker], writer: &MetadataStore, history: &LeaderHistory) {
    for broker in brokers {
        broker.stop(history);
    }
    writer.close();
    history.assert_one_leader_at_a_time();
}
