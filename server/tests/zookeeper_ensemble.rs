//! Fault drills on a 3-node ZooKeeper ensemble on loopback, started by each test: the
//! ensemble's leader killed (operations resume after the re-election, every component keeps
//! hearing changes: the store's listeners, the leader service, the load manager and the
//! under-replication manager), and the quorum lost (calls fail with a clear error within the
//! operation timeout, nothing hangs, everything recovers when the quorum returns, and no
//! acknowledged write is lost).

mod common;

use common::drill::{
    assert_acked_writes_survived, assert_broker_left_every_cache, assert_notifications_flow,
    assert_replication_switch_heard, await_one_leader, config, end_drill, eventually, recv_within,
    refs, serial, start_brokers, AckedWriter, DrillBroker, RECOVERY, SURVIVING_SESSION_TIMEOUT,
};
use common::leader_history::LeaderHistory;
use common::own_zookeeper_servers;
use pulsar_server::metadata::{ExpectedVersion, MetadataStore, MetadataStoreError, SessionEvent};
use pulsar_testkit::zookeeper::ZooKeeperEnsemble;
use std::time::{Duration, Instant};

/// The operation timeout of [`config`]: calls without a quorum must fail within it (plus the
/// slack of a loaded machine).
const OPERATION_TIMEOUT: Duration = Duration::from_secs(2);

#[test]
fn killing_the_ensembles_leader_resumes_operations_after_the_re_election_and_nothing_goes_deaf() {
    if !own_zookeeper_servers() {
        return;
    }
    let _serial = serial();
    let started = Instant::now();
    let mut ensemble = ZooKeeperEnsemble::start(3).unwrap();
    let url = format!("zk:{}/drill", ensemble.connect_string());
    let history = LeaderHistory::default();
    let brokers = start_brokers(&url, config(SURVIVING_SESSION_TIMEOUT), &history);
    let writer = MetadataStore::open_with_config(&url, config(SURVIVING_SESSION_TIMEOUT)).unwrap();
    await_one_leader(&refs(&brokers), &history);
    let acked = AckedWriter::start(writer.clone());
    acked.await_more_acks(5, "writes acknowledged before the kill");

    let zk_leader = ensemble
        .wait_for_leader(RECOVERY)
        .expect("the ensemble has a leader");
    ensemble.server_mut(zk_leader).kill();
    let new_leader = ensemble
        .wait_for_leader(RECOVERY)
        .expect("the two others elect a leader");
    assert_ne!(new_leader, zk_leader);
    // Every member stops serving while they elect: every client reconnects, to a member that
    // serves again. (What is written before a broker is back is only covered by `Resync`.)
    for broker in &brokers {
        broker.await_session_event(SessionEvent::Reconnected, RECOVERY);
    }
    acked.await_more_acks(5, "writes acknowledged after the re-election");
    let acked = acked.finish();

    for broker in &brokers {
        let session = broker.store.zookeeper_session().unwrap();
        assert_eq!(
            session.sessions_established(),
            1,
            "{}: the session moved to another member (a reconnect, not a new session)",
            broker.id
        );
    }
    assert_notifications_flow(&writer, &refs(&brokers), "after-the-re-election");
    assert_replication_switch_heard(&writer, &refs(&brokers));
    let leader = await_one_leader(&refs(&brokers), &history);
    let (gone, rest): (Vec<DrillBroker>, Vec<DrillBroker>) =
        brokers.into_iter().partition(|b| b.id == leader);
    gone[0].stop(&history);
    assert_broker_left_every_cache(&leader, &refs(&rest));
    assert_ne!(await_one_leader(&refs(&rest), &history), leader);

    // The killed member rejoins; the others keep working through it.
    ensemble.server_mut(zk_leader).restart().unwrap();
    assert_notifications_flow(&writer, &refs(&rest), "after-the-rejoin");
    assert_acked_writes_survived(&writer, &acked);
    end_drill(&rest, &writer, &history);
    eprintln!("drill: ensemble leader kill took {:?}", started.elapsed());
}

#[test]
fn losing_the_quorum_fails_calls_within_the_operation_timeout_and_everything_recovers_with_it() {
    if !own_zookeeper_servers() {
        return;
    }
    let _serial = serial();
    let started = Instant::now();
    let mut ensemble = ZooKeeperEnsemble::start(3).unwrap();
    let url = format!("zk:{}/drill", ensemble.connect_string());
    let history = LeaderHistory::default();
    let session_timeout = Duration::from_secs(4);
    let brokers = start_brokers(&url, config(session_timeout), &history);
    let writer = MetadataStore::open_with_config(&url, config(session_timeout)).unwrap();
    await_one_leader(&refs(&brokers), &history);
    writer
        .put("/drill/before-the-loss", b"kept", ExpectedVersion::Any)
        .unwrap();
    let acked = AckedWriter::start(writer.clone());
    acked.await_more_acks(5, "writes acknowledged before the loss");

    // Two of three down: the last one stops serving.
    ensemble.server_mut(0).kill();
    ensemble.server_mut(1).kill();
    for broker in &brokers {
        broker.await_session_event(SessionEvent::ConnectionLost, RECOVERY);
    }
    eventually(RECOVERY, "no broker leads without the quorum", || {
        brokers.iter().all(|b| !b.leader.is_leader())
    });
    for attempt in 0..3 {
        let call = Instant::now();
        let outcome = writer.put(
            &format!("/drill/without-quorum-{attempt}"),
            b"",
            ExpectedVersion::Any,
        );
        let took = call.elapsed();
        match outcome {
            Err(MetadataStoreError::Unavailable { reason }) => {
                assert!(!reason.is_empty(), "the error says why");
            }
            other => panic!("a put without quorum must fail as Unavailable, got {other:?}"),
        }
        assert!(
            took <= OPERATION_TIMEOUT + Duration::from_secs(3),
            "the put returned after {took:?}, well past the operation timeout"
        );
        let call = Instant::now();
        assert!(matches!(
            writer.get("/drill/before-the-loss"),
            Err(MetadataStoreError::Unavailable { .. })
        ));
        assert!(call.elapsed() <= OPERATION_TIMEOUT + Duration::from_secs(3));
    }

    // The quorum returns (maybe after the sessions expired: either way, all recovers).
    ensemble.server_mut(0).restart().unwrap();
    ensemble.server_mut(1).restart().unwrap();
    for broker in &brokers {
        recv_within(&broker.sessions, RECOVERY, |event| {
            matches!(
                event,
                SessionEvent::Reconnected | SessionEvent::SessionReestablished
            )
        });
    }
    acked.await_more_acks(5, "writes acknowledged after the quorum returned");
    let acked = acked.finish();
    assert_eq!(
        writer.get("/drill/before-the-loss").unwrap().unwrap().value,
        b"kept"
    );
    assert_acked_writes_survived(&writer, &acked);
    assert_notifications_flow(&writer, &refs(&brokers), "after-the-quorum");
    assert_replication_switch_heard(&writer, &refs(&brokers));
    let leader = await_one_leader(&refs(&brokers), &history);
    let (gone, rest): (Vec<DrillBroker>, Vec<DrillBroker>) =
        brokers.into_iter().partition(|b| b.id == leader);
    gone[0].stop(&history);
    assert_broker_left_every_cache(&leader, &refs(&rest));
    assert_ne!(await_one_leader(&refs(&rest), &history), leader);
    end_drill(&rest, &writer, &history);
    eprintln!("drill: quorum loss took {:?}", started.elapsed());
}
