//! `LoadManager`, specified on both providers: registration, the cache of live brokers refreshed
//! on its own thread, broker-stop cache updates, placement honouring failure domains, stop.

#[macro_use]
mod common;

use common::{assert_threads_gone, recv, recv_until, TestBackend};
use pulsar_server::loadbalance::{LoadManager, LoadManagerError, LoadReport, BROKERS_ROOT};
use pulsar_server::metadata::{ExpectedVersion, MetadataStore};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::thread;

/// A broker: its own store (session) and load manager, and what its cache listener heard.
struct Broker {
    store: MetadataStore,
    manager: LoadManager,
    /// (live brokers, thread) per refresh.
    refreshes: Receiver<(Vec<String>, String)>,
}

impl Broker {
    fn start(backend: &TestBackend, id: &str, cpu: f64) -> Self {
        let store = backend.open();
        let report = LoadReport {
            cpu,
            ..LoadReport::default()
        };
        let manager = LoadManager::start(store.clone(), id, report).unwrap();
        let (heard, refreshes) = mpsc::channel();
        manager.add_cache_listener(move |live| {
            let thread = thread::current().name().unwrap_or("<unnamed>").to_owned();
            let _ = heard.send((live.to_vec(), thread));
        });
        Self {
            store,
            manager,
            refreshes,
        }
    }

    /// Waits until a refresh shows exactly `brokers` live.
    #[track_caller]
    fn await_live(&self, brokers: &[&str]) {
        if self.manager.available_brokers() == brokers {
            return;
        }
        recv_until(&self.refreshes, |(live, _)| live == brokers);
    }

    fn stop(&self) {
        self.manager.stop();
        self.store.close();
    }
}

across_backends!(
    a_started_broker_registers_its_report_and_sees_itself,
    every_manager_sees_every_live_broker,
    refreshes_run_on_the_load_manager_thread,
    broker_stop_cache_updates,
    a_broker_that_lost_its_session_registers_again,
    select_broker_picks_the_least_loaded_live_broker,
    select_broker_spreads_a_namespace_over_failure_domains,
    an_unreadable_report_is_skipped,
    stop_deletes_the_report_stops_the_thread_and_is_idempotent,
    a_report_update_racing_stop_never_brings_the_report_back,
);

fn a_started_broker_registers_its_report_and_sees_itself(backend: &TestBackend) {
    let a = Broker::start(backend, "a", 0.25);
    assert_eq!(a.manager.available_brokers(), ["a"]);
    assert_eq!(a.manager.broker_report("a").unwrap().cpu, 0.25);
    let node = a.store.get(&format!("{BROKERS_ROOT}/a")).unwrap().unwrap();
    assert!(node.stat.ephemeral && node.stat.created_by_self);
    a.stop();
}

fn every_manager_sees_every_live_broker(backend: &TestBackend) {
    let a = Broker::start(backend, "a", 0.1);
    let b = Broker::start(backend, "b", 0.2);
    let c = Broker::start(backend, "c", 0.3);
    for broker in [&a, &b, &c] {
        broker.await_live(&["a", "b", "c"]);
    }
    c.manager
        .update_local_report(LoadReport {
            cpu: 0.9,
            ..LoadReport::default()
        })
        .unwrap();
    recv_until(&a.refreshes, |_| {
        a.manager
            .broker_report("c")
            .is_some_and(|report| report.cpu == 0.9)
    });
    for broker in [&a, &b, &c] {
        broker.stop();
    }
}

fn refreshes_run_on_the_load_manager_thread(backend: &TestBackend) {
    let a = Broker::start(backend, "a", 0.1);
    let b = Broker::start(backend, "b", 0.2);
    let (_, thread) = recv(&a.refreshes);
    let names = a.manager.threads().names();
    assert_eq!(names.len(), 1);
    assert!(names[0].starts_with("load-manager-"), "{names:?}");
    assert_eq!(thread, names[0]);
    a.stop();
    b.stop();
}

/// Mirrors Pulsar's `ModularLoadManagerImplTest.testBrokerStopCacheUpdate`.
fn broker_stop_cache_updates(backend: &TestBackend) {
    let a = Broker::start(backend, "a", 0.5);
    let b = Broker::start(backend, "b", 0.1);
    let c = Broker::start(backend, "c", 0.3);
    a.await_live(&["a", "b", "c"]);
    assert_eq!(
        a.manager.select_broker("t/ns/0x0_0x1").unwrap().as_deref(),
        Some("b"),
        "b is the least loaded"
    );

    // The broker stops: its load manager and its store (session) close.
    b.stop();
    a.await_live(&["a", "c"]);
    c.await_live(&["a", "c"]);
    assert_eq!(a.manager.broker_report("b"), None);
    // Gone from placement too, the bundle placed on it included.
    assert_eq!(
        a.manager.select_broker("t/ns/0x0_0x1").unwrap().as_deref(),
        Some("c")
    );
    for n in 0..8 {
        let chosen = a.manager.select_broker(&format!("t/other/{n}")).unwrap();
        assert_ne!(chosen.as_deref(), Some("b"));
    }
    a.stop();
    c.stop();
}

fn a_broker_that_lost_its_session_registers_again(backend: &TestBackend) {
    let a = Broker::start(backend, "a", 0.1);
    let b = Broker::start(backend, "b", 0.2);
    a.await_live(&["a", "b"]);
    let node = format!("{BROKERS_ROOT}/b");

    b.store.expire_session().unwrap();
    // Eventually b's report is back, owned by b's new session, and everyone sees b.
    recv_until(&b.refreshes, |(live, _)| {
        live.contains(&"b".to_owned())
            && b.store
                .get(&node)
                .ok()
                .flatten()
                .is_some_and(|read| read.stat.created_by_self)
    });
    a.await_live(&["a", "b"]);
    a.stop();
    b.stop();
}

fn select_broker_picks_the_least_loaded_live_broker(backend: &TestBackend) {
    let a = Broker::start(backend, "a", 0.8);
    let b = Broker::start(backend, "b", 0.2);
    let c = Broker::start(backend, "c", 0.5);
    a.await_live(&["a", "b", "c"]);
    assert_eq!(
        a.manager.select_broker("t/ns/0x0_0x1").unwrap().as_deref(),
        Some("b")
    );
    // The choice is remembered.
    assert_eq!(
        a.manager.select_broker("t/ns/0x0_0x1").unwrap().as_deref(),
        Some("b")
    );
    b.manager
        .update_local_report(LoadReport {
            cpu: 0.95,
            ..LoadReport::default()
        })
        .unwrap();
    recv_until(&a.refreshes, |_| {
        a.manager
            .broker_report("b")
            .is_some_and(|report| report.cpu == 0.95)
    });
    assert_eq!(
        a.manager.select_broker("t/ns/0x1_0x2").unwrap().as_deref(),
        Some("c")
    );
    for broker in [&a, &b, &c] {
        broker.stop();
    }
}

fn select_broker_spreads_a_namespace_over_failure_domains(backend: &TestBackend) {
    let a = Broker::start(backend, "a", 0.1);
    let b = Broker::start(backend, "b", 0.2);
    let c = Broker::start(backend, "c", 0.9);
    a.await_live(&["a", "b", "c"]);
    a.manager.set_failure_domain("d1", &["a", "b"]).unwrap();
    a.manager.set_failure_domain("d2", &["c"]).unwrap();
    recv_until(&a.refreshes, |_| {
        a.manager.failure_domain_of("a").as_deref() == Some("d1")
            && a.manager.failure_domain_of("c").as_deref() == Some("d2")
    });

    let first = a.manager.select_broker("t/ns/0x0_0x1").unwrap();
    assert_eq!(
        first.as_deref(),
        Some("a"),
        "least loaded while no domain holds t/ns"
    );
    let second = a.manager.select_broker("t/ns/0x1_0x2").unwrap();
    assert_eq!(
        second.as_deref(),
        Some("c"),
        "d1 already holds a bundle of t/ns, so d2 gets the next, loaded as it is"
    );
    let other = a.manager.select_broker("t/other/0x0_0x1").unwrap();
    assert_eq!(other.as_deref(), Some("a"), "another namespace starts over");
    assert_eq!(
        a.manager.set_failure_domain("bad/name", &["a"]),
        Err(LoadManagerError::InvalidName {
            name: "bad/name".into()
        })
    );
    for broker in [&a, &b, &c] {
        broker.stop();
    }
}

fn an_unreadable_report_is_skipped(backend: &TestBackend) {
    let a = Broker::start(backend, "a", 0.1);
    let writer = backend.open();
    writer
        .put_ephemeral(
            &format!("{BROKERS_ROOT}/garbage"),
            b"not json",
            ExpectedVersion::Absent,
        )
        .unwrap();
    let b = Broker::start(backend, "b", 0.2);
    a.await_live(&["a", "b"]);
    assert_eq!(a.manager.broker_report("garbage"), None);
    writer.close();
    a.stop();
    b.stop();
}

fn stop_deletes_the_report_stops_the_thread_and_is_idempotent(backend: &TestBackend) {
    let a = Broker::start(backend, "a", 0.1);
    let threads = a.manager.threads();
    assert_eq!(threads.live_count(), 1);
    a.manager.stop();
    a.manager.stop();
    a.manager.close();
    assert!(a.manager.is_closed());
    assert_threads_gone(&threads);
    assert_eq!(a.store.get(&format!("{BROKERS_ROOT}/a")).unwrap(), None);
    assert!(a.manager.available_brokers().is_empty(), "caches closed");
    assert_eq!(
        a.manager.select_broker("t/ns/0x0_0x1"),
        Err(LoadManagerError::Closed)
    );
    assert_eq!(
        a.manager.update_local_report(LoadReport::default()),
        Err(LoadManagerError::Closed)
    );
    assert_eq!(a.manager.refresh_now(), Err(LoadManagerError::Closed));
    a.store.close();
}

/// Reports published from another thread while `stop` runs: once both are done, the broker's
/// node is gone. `update_local_report` holds a write lock from its `closed` check through its
/// write, which `stop` takes to set `closed`, so a write that passed the check lands before
/// `stop` deletes the node. (Audit of 2026-12-07: a write between the check and the delete
/// re-created the node after `stop`, and other brokers kept placing bundles on the stopped
/// one until its session ended.) A stress test: the race it guards is a window of a few
/// instructions, so a regression shows in some rounds, not in every one.
fn a_report_update_racing_stop_never_brings_the_report_back(backend: &TestBackend) {
    let rounds = if backend.kind == "zookeeper" { 10 } else { 200 };
    let store = backend.open();
    for round in 0..rounds {
        let id = format!("racer-{round}");
        let manager =
            Arc::new(LoadManager::start(store.clone(), &id, LoadReport::default()).unwrap());
        let updater = {
            let manager = Arc::clone(&manager);
            thread::spawn(move || {
                let mut published = 0u32;
                loop {
                    let report = LoadReport {
                        cpu: f64::from(published % 100) / 100.0,
                        ..LoadReport::default()
                    };
                    match manager.update_local_report(report) {
                        Ok(()) => published += 1,
                        Err(LoadManagerError::Closed) => return published,
                        Err(error) => panic!("unexpected {error}"),
                    }
                }
            })
        };
        if round % 2 == 0 {
            thread::yield_now();
        }
        manager.stop();
        updater.join().unwrap();
        assert!(
            store
                .get(&format!("{BROKERS_ROOT}/{id}"))
                .unwrap()
                .is_none(),
            "round {round}: the stopped broker's report came back"
        );
    }
    store.close();
}
