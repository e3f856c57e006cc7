//! Fault drills on a ZooKeeper server each test starts for itself (to kill and restart it): the
//! server killed and restarted within the session timeout, a connection cut and restored within
//! it, an outage longer than it, and one leader at a time while leaders are closed, partitioned
//! and killed. After each fault: notifications flow again (to the store's listeners and to the
//! under-replication managers), exactly one leader, a broker that stops leaves every cache, and
//! no acknowledged write is lost.
//!
//! The drills run one at a time (they start JVMs and use short session timeouts), each bounded
//! by the waits of [`common::drill`]; every server and proxy they start stops when its guard
//! drops, also when a drill fails.

mod common;

use common::drill::{
    assert_acked_writes_survived, assert_broker_left_every_cache, assert_notifications_flow,
    assert_replication_switch_heard, await_one_leader, config, end_drill, eventually, recv_within,
    refs, serial, start_brokers, AckedWriter, DrillBroker, RECOVERY, SURVIVING_SESSION_TIMEOUT,
};
use common::leader_history::{check_one_leader_at_a_time, LeaderHistory, Transition};
use common::own_zookeeper_servers;
use common::proxy::PartitionProxy;
use pulsar_server::leader::LeaderService;
use pulsar_server::metadata::{MetadataStore, NotificationType, SessionEvent};
use pulsar_testkit::zookeeper::ZooKeeperServer;
use std::time::{Duration, Instant};

fn session_of(broker: &DrillBroker) -> (Option<i64>, u64) {
    let session = broker.store.zookeeper_session().expect("a zk: store");
    (session.session_id(), session.sessions_established())
}

/// The set-up two drills share: a ZooKeeper server of their own, three brokers on it, a
/// writer store, and the one leader they elected.
struct SingleServerDrill {
    server: ZooKeeperServer,
    history: LeaderHistory,
    brokers: Vec<DrillBroker>,
    writer: MetadataStore,
}

impl SingleServerDrill {
    fn start(session_timeout: Duration) -> Self {
        let server = ZooKeeperServer::start().unwrap();
        let url = format!("zk:{}/drill", server.address());
        let config = config(session_timeout);
        let history = LeaderHistory::default();
        let brokers = start_brokers(&url, config, &history);
        let writer = MetadataStore::open_with_config(&url, config).unwrap();
        await_one_leader(&refs(&brokers), &history);
        Self {
            server,
            history,
            brokers,
            writer,
        }
    }
}

/// Stops the leader among `brokers`, checks a follower takes over and the stopped broker
/// leaves every cache; the brokers still running.
fn stop_the_leader_and_check_failover(
    brokers: Vec<DrillBroker>,
    history: &LeaderHistory,
) -> Vec<DrillBroker> {
    let leader = await_one_leader(&refs(&brokers), history);
    let (gone, rest): (Vec<DrillBroker>, Vec<DrillBroker>) =
        brokers.into_iter().partition(|b| b.id == leader);
    gone[0].stop(history);
    assert_broker_left_every_cache(&leader, &refs(&rest));
    let next = await_one_leader(&refs(&rest), history);
    assert_ne!(next, leader);
    rest
}

#[test]
fn a_server_killed_and_restarted_within_the_session_timeout_keeps_every_session_and_nothing_goes_deaf(
) {
    if !own_zookeeper_servers() {
        return;
    }
    let _serial = serial();
    let started = Instant::now();
    let SingleServerDrill {
        mut server,
        history,
        brokers,
        writer,
    } = SingleServerDrill::start(SURVIVING_SESSION_TIMEOUT);
    let sessions: Vec<_> = brokers.iter().map(session_of).collect();
    let acked = AckedWriter::start(writer.clone());
    acked.await_more_acks(5, "writes acknowledged before the kill");

    server.kill();
    for broker in &brokers {
        broker.await_session_event(SessionEvent::ConnectionLost, RECOVERY);
    }
    server.restart().unwrap();
    for broker in &brokers {
        broker.await_session_event(SessionEvent::Reconnected, RECOVERY);
    }
    acked.await_more_acks(5, "writes acknowledged after the restart");
    let acked = acked.finish();

    assert_eq!(
        brokers.iter().map(session_of).collect::<Vec<_>>(),
        sessions,
        "the same sessions came back (a reconnect, not a new session)"
    );
    assert_notifications_flow(&writer, &refs(&brokers), "after-restart");
    assert_replication_switch_heard(&writer, &refs(&brokers));
    // The follower must hear the leader's node go (the failure of issue 11: no failover).
    let rest = stop_the_leader_and_check_failover(brokers, &history);
    assert_acked_writes_survived(&writer, &acked);
    end_drill(&rest, &writer, &history);
    eprintln!("drill: server restart took {:?}", started.elapsed());
}

#[test]
fn a_connection_cut_and_restored_within_the_session_timeout_misses_nothing_it_must_act_on() {
    if !own_zookeeper_servers() {
        return;
    }
    let _serial = serial();
    let started = Instant::now();
    let server = ZooKeeperServer::start().unwrap();
    let config = config(SURVIVING_SESSION_TIMEOUT);
    let history = LeaderHistory::default();
    // Each broker reaches the server through its own proxy, to cut one alone.
    let proxies: Vec<PartitionProxy> = (0..3)
        .map(|_| PartitionProxy::start(&server.address()))
        .collect();
    let brokers: Vec<DrillBroker> = ["broker-a", "broker-b", "broker-c"]
        .iter()
        .zip(&proxies)
        .map(|(id, proxy)| {
            DrillBroker::start(
                &format!("zk:{}/drill", proxy.address()),
                config,
                id,
                &history,
            )
        })
        .collect();
    let writer =
        MetadataStore::open_with_config(&format!("zk:{}/drill", server.address()), config).unwrap();
    let acked = AckedWriter::start(writer.clone());
    let leader = await_one_leader(&refs(&brokers), &history);
    let cut = brokers.iter().position(|b| b.id == leader).unwrap();
    let sessions: Vec<_> = brokers.iter().map(session_of).collect();

    proxies[cut].partition();
    brokers[cut].await_session_event(SessionEvent::ConnectionLost, RECOVERY);
    eventually(RECOVERY, "the cut-off leader steps down", || {
        !brokers[cut].leader.is_leader()
    });
    // While it is cut off: a broker stops and a value is written. It hears neither.
    let stopping = (cut + 1) % brokers.len();
    brokers[stopping].stop(&history);
    writer
        .put(
            "/drill/during-the-cut",
            b"",
            pulsar_server::metadata::ExpectedVersion::Any,
        )
        .unwrap();
    proxies[cut].heal();
    brokers[cut].await_session_event(SessionEvent::Reconnected, RECOVERY);
    // What changed during the cut is not replayed: the store tells its listeners so.
    recv_within(&brokers[cut].notifications, RECOVERY, |n| {
        n.kind == NotificationType::Resync && n.path == "/"
    });
    let acked = acked.finish();

    let live: Vec<&DrillBroker> = brokers
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != stopping)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(session_of(&brokers[cut]), sessions[cut], "the same session");
    assert_eq!(
        await_one_leader(&live, &history),
        leader,
        "the node survived: the same broker leads again"
    );
    assert_broker_left_every_cache(&brokers[stopping].id, &live);
    assert_notifications_flow(&writer, &live, "after-the-cut");
    assert_replication_switch_heard(&writer, &live);
    // Still hearing deletions: the leader stops, the other takes over.
    let (gone, next) = if live[0].id == leader {
        (live[0], live[1])
    } else {
        (live[1], live[0])
    };
    gone.stop(&history);
    assert_broker_left_every_cache(&gone.id, &[next]);
    assert_eq!(await_one_leader(&[next], &history), next.id);
    assert_acked_writes_survived(&writer, &acked);
    next.stop(&history);
    writer.close();
    history.assert_one_leader_at_a_time();
    drop(proxies);
    eprintln!("drill: connection cut took {:?}", started.elapsed());
}

#[test]
fn an_outage_longer_than_the_session_timeout_ends_in_new_sessions_and_one_leader() {
    if !own_zookeeper_servers() {
        return;
    }
    let _serial = serial();
    let started = Instant::now();
    let SingleServerDrill {
        mut server,
        history,
        brokers,
        writer,
    } = SingleServerDrill::start(Duration::from_secs(2));
    let acked = AckedWriter::start(writer.clone());
    acked.await_more_acks(5, "writes acknowledged before the outage");

    server.kill();
    // Down until every client gave its session up.
    for broker in &brokers {
        broker.await_session_event(SessionEvent::SessionLost, RECOVERY);
    }
    eventually(RECOVERY, "no broker leads without a session", || {
        brokers.iter().all(|b| !b.leader.is_leader())
    });
    server.restart().unwrap();
    for broker in &brokers {
        broker.await_session_event(SessionEvent::SessionReestablished, RECOVERY);
    }
    acked.await_more_acks(5, "writes acknowledged after the outage");
    let acked = acked.finish();

    for broker in &brokers {
        assert_eq!(session_of(broker).1, 2, "{}: a new session", broker.id);
    }
    assert_notifications_flow(&writer, &refs(&brokers), "after-the-outage");
    assert_replication_switch_heard(&writer, &refs(&brokers));
    // The old sessions' nodes go when the restarted server expires them; then one leader.
    await_one_leader(&refs(&brokers), &history);
    for broker in &brokers {
        let ids: Vec<&str> = brokers.iter().map(|b| b.id.as_str()).collect();
        eventually(RECOVERY, "every broker registered again", || {
            broker.load.available_brokers() == ids
        });
    }
    let rest = stop_the_leader_and_check_failover(brokers, &history);
    assert_acked_writes_survived(&writer, &acked);
    end_drill(&rest, &writer, &history);
    eprintln!("drill: outage took {:?}", started.elapsed());
}

/// A candidate of the one-leader drill: a store through its own proxy, and a leader service.
struct Candidate {
    id: String,
    proxy: PartitionProxy,
    store: MetadataStore,
    service: LeaderService,
}

impl Candidate {
    fn start(server: &ZooKeeperServer, id: &str, history: &LeaderHistory) -> Self {
        let proxy = PartitionProxy::start(&server.address());
        let store = MetadataStore::open_with_config(
            &format!("zk:{}/drill", proxy.address()),
            config(Duration::from_secs(2)),
        )
        .unwrap();
        let service = LeaderService::start(
            store.clone(),
            common::drill::ELECTION_PATH,
            id,
            history.listener(id),
        )
        .unwrap();
        Self {
            id: id.to_owned(),
            proxy,
            store,
            service,
        }
    }

    fn close(&self, history: &LeaderHistory) {
        history.gone(&self.id);
        self.service.close();
        self.store.close();
    }
}

/// Waits until exactly one of `candidates` leads; its index.
fn await_leader(candidates: &[&Candidate], history: &LeaderHistory) -> usize {
    let mut leader = 0;
    eventually(RECOVERY, "exactly one candidate leads", || {
        let leading: Vec<usize> = (0..candidates.len())
            .filter(|&i| candidates[i].service.is_leader())
            .collect();
        leader = leading.first().copied().unwrap_or(0);
        leading.len() == 1
    });
    history.assert_one_leader_at_a_time();
    leader
}

#[test]
fn one_leader_at_a_time_while_leaders_are_closed_partitioned_and_killed() {
    if !own_zookeeper_servers() {
        return;
    }
    let _serial = serial();
    let started = Instant::now();
    let server = ZooKeeperServer::start().unwrap();
    let history = LeaderHistory::default();
    let candidates: Vec<Candidate> = ["c1", "c2", "c3", "c4"]
        .iter()
        .map(|id| Candidate::start(&server, id, &history))
        .collect();
    let all: Vec<&Candidate> = candidates.iter().collect();

    // Closed: the leader leaves cleanly.
    let first = await_leader(&all, &history);
    all[first].close(&history);
    let mut live: Vec<&Candidate> = all
        .iter()
        .copied()
        .filter(|c| c.id != all[first].id)
        .collect();

    // Partitioned: the leader is cut off past its session timeout, then comes back.
    let second = await_leader(&live, &history);
    live[second].proxy.partition();
    eventually(RECOVERY, "another candidate leads", || {
        live.iter()
            .enumerate()
            .any(|(i, c)| i != second && c.service.is_leader())
    });
    live[second].proxy.heal();
    let session = live[second].store.zookeeper_session().unwrap();
    eventually(
        RECOVERY,
        "the partitioned candidate has a new session",
        || session.sessions_established() == 2,
    );
    await_leader(&live, &history);

    // Killed: the leader is cut off and never comes back.
    let third = await_leader(&live, &history);
    live[third].proxy.partition();
    let killed = live.remove(third);
    await_leader(&live, &history);
    killed.close(&history);
    for candidate in &live {
        candidate.close(&history);
    }

    history.assert_one_leader_at_a_time();
    assert!(
        history.activations() >= 4,
        "four leaders in turn: {:?}",
        history.entries()
    );
    eprintln!("drill: one leader at a time took {:?}", started.elapsed());
}

#[test]
fn the_one_leader_checker_rejects_two_leaders_at_once() {
    use Transition::*;
    let a = || "a".to_owned();
    let b = || "b".to_owned();
    assert!(check_one_leader_at_a_time(&[Active(a()), Inactive(a()), Active(b())]).is_ok());
    assert!(check_one_leader_at_a_time(&[Active(a()), Gone(a()), Active(b())]).is_ok());
    assert!(check_one_leader_at_a_time(&[Active(a()), Active(b())]).is_err());
    assert!(check_one_leader_at_a_time(&[Active(a()), Active(a())]).is_err());
    assert!(check_one_leader_at_a_time(&[Inactive(a())]).is_err());
}
