//! `UnderreplicationManager`, specified on both providers: marking and listing, locks, the
//! replication switch, callbacks that fire once each on the notification thread, and close
//! (while callbacks are pending, twice, calls after it).

#[macro_use]
mod common;

use common::{recv, TestBackend};
use pulsar_server::metadata::MetadataStore;
use pulsar_server::replication::{ReplicationError, UnderreplicationManager};
use std::sync::mpsc::{self, Sender};
use std::thread;

const ROOT: &str = "/ledgers";

/// A manager on its own store (its own session), like one auditor or replication worker.
struct Node {
    store: MetadataStore,
    manager: UnderreplicationManager,
}

impl Node {
    fn start(backend: &TestBackend) -> Self {
        let store = backend.open();
        let manager = UnderreplicationManager::new(store.clone(), ROOT).unwrap();
        Self { store, manager }
    }

    fn close(&self) {
        self.manager.close();
        self.store.close();
    }
}

/// A callback that reports `(id, thread)` when run and `id` when dropped (run or not).
struct Probe {
    id: u32,
    ran: Sender<(u32, String)>,
    dropped: Sender<u32>,
}

impl Probe {
    fn callback(self) -> impl FnOnce() + Send + 'static {
        move || {
            let thread = thread::current().name().unwrap_or("<unnamed>").to_owned();
            let _ = self.ran.send((self.id, thread));
        }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        let _ = self.dropped.send(self.id);
    }
}

across_backends!(
    marked_ledgers_are_listed_until_marked_replicated,
    marking_again_records_every_missing_replica,
    replication_is_enabled_until_disabled,
    a_callback_registered_while_enabled_runs_at_once_on_the_notification_thread,
    re_enable_callbacks_fire_once_each,
    callbacks_may_call_the_manager,
    delay_change_callbacks_fire_once_at_the_next_change,
    a_locked_ledger_goes_to_one_worker_at_a_time,
    nothing_is_handed_out_while_replication_is_disabled,
    close_while_callbacks_are_pending_drops_them_unrun,
    close_from_a_callback_drops_the_callbacks_queued_behind_it,
    close_releases_held_locks,
    close_twice_and_calls_after_close,
    locks_lost_with_the_session_are_forgotten_and_the_ledger_goes_to_another_worker,
);

fn marked_ledgers_are_listed_until_marked_replicated(backend: &TestBackend) {
    let node = Node::start(backend);
    let m = &node.manager;
    for ledger in [42, 7, 1_000_000] {
        m.mark_ledger_underreplicated(ledger, "bookie-1:3181")
            .unwrap();
    }
    assert_eq!(
        m.list_underreplicated_ledgers().unwrap(),
        [7, 42, 1_000_000]
    );
    assert!(m.is_ledger_underreplicated(42).unwrap());
    m.mark_ledger_replicated(42).unwrap();
    m.mark_ledger_replicated(42).unwrap();
    assert!(!m.is_ledger_underreplicated(42).unwrap());
    assert_eq!(m.list_underreplicated_ledgers().unwrap(), [7, 1_000_000]);
    node.close();
}

fn marking_again_records_every_missing_replica(backend: &TestBackend) {
    let node = Node::start(backend);
    let m = &node.manager;
    m.mark_ledger_underreplicated(3, "bookie-1:3181").unwrap();
    m.mark_ledger_underreplicated(3, "bookie-2:3181").unwrap();
    m.mark_ledger_underreplicated(3, "bookie-1:3181").unwrap();
    assert_eq!(
        m.missing_replicas(3).unwrap(),
        ["bookie-1:3181", "bookie-2:3181"]
    );
    node.close();
}

fn replication_is_enabled_until_disabled(backend: &TestBackend) {
    let a = Node::start(backend);
    let b = Node::start(backend);
    assert!(a.manager.is_ledger_replication_enabled().unwrap());
    a.manager.disable_ledger_replication().unwrap();
    a.manager.disable_ledger_replication().unwrap();
    assert!(!b.manager.is_ledger_replication_enabled().unwrap());
    b.manager.enable_ledger_replication().unwrap();
    b.manager.enable_ledger_replication().unwrap();
    assert!(a.manager.is_ledger_replication_enabled().unwrap());
    a.close();
    b.close();
}

fn a_callback_registered_while_enabled_runs_at_once_on_the_notification_thread(
    backend: &TestBackend,
) {
    let node = Node::start(backend);
    let (ran, heard) = mpsc::channel();
    let caller = thread::current().name().map(str::to_owned);
    node.manager
        .notify_ledger_replication_enabled(move || {
            ran.send(thread::current().name().map(str::to_owned))
                .unwrap()
        })
        .unwrap();
    let thread = recv(&heard).unwrap();
    assert!(
        thread.starts_with("underreplication-notification-"),
        "{thread}"
    );
    assert_ne!(Some(thread), caller);
    node.close();
}

/// Mirrors Pulsar's `LedgerUnderreplicationManagerTest.testEnableLedgerReplication` (the
/// callbacks waiting on a disabled switch run once it is enabled).
fn re_enable_callbacks_fire_once_each(backend: &TestBackend) {
    let a = Node::start(backend);
    let b = Node::start(backend);
    let (ran, heard) = mpsc::channel();
    let (dropped, _drops) = mpsc::channel();
    a.manager.disable_ledger_replication().unwrap();
    for id in 1..=3 {
        let probe = Probe {
            id,
            ran: ran.clone(),
            dropped: dropped.clone(),
        };
        a.manager
            .notify_ledger_replication_enabled(probe.callback())
            .unwrap();
    }
    let probe = Probe {
        id: 4,
        ran: ran.clone(),
        dropped: dropped.clone(),
    };
    b.manager
        .notify_ledger_replication_enabled(probe.callback())
        .unwrap();

    // Another manager enables replication: every waiting callback, of both managers, runs once.
    b.manager.enable_ledger_replication().unwrap();
    let mut fired: Vec<u32> = (0..4).map(|_| recv(&heard).0).collect();
    fired.sort_unstable();
    assert_eq!(fired, [1, 2, 3, 4]);

    // Disabling and enabling again fires nothing more. Proof by order: `a` hears the enable
    // before the delay change that follows it, so a second run of a callback would be queued
    // on `a`'s thread before the sentinel.
    b.manager.disable_ledger_replication().unwrap();
    b.manager.enable_ledger_replication().unwrap();
    let (sentinel, sentinel_heard) = mpsc::channel();
    a.manager
        .notify_lost_bookie_recovery_delay_changed(move || sentinel.send(()).unwrap())
        .unwrap();
    b.manager.set_lost_bookie_recovery_delay(30).unwrap();
    recv(&sentinel_heard);
    assert_eq!(heard.try_iter().count(), 0, "no callback ran twice");
    a.close();
    b.close();
}

fn callbacks_may_call_the_manager(backend: &TestBackend) {
    let node = Node::start(backend);
    node.manager
        .mark_ledger_underreplicated(9, "bookie-3:3181")
        .unwrap();
    node.manager.disable_ledger_replication().unwrap();
    let (seen, heard) = mpsc::channel();
    let manager = node.manager.clone();
    node.manager
        .notify_ledger_replication_enabled(move || {
            // Under a manager lock this would deadlock.
            let enabled = manager.is_ledger_replication_enabled().unwrap();
            let ledgers = manager.list_underreplicated_ledgers().unwrap();
            seen.send((enabled, ledgers)).unwrap();
        })
        .unwrap();
    node.manager.enable_ledger_replication().unwrap();
    assert_eq!(recv(&heard), (true, vec![9]));
    node.close();
}

fn delay_change_callbacks_fire_once_at_the_next_change(backend: &TestBackend) {
    let a = Node::start(backend);
    let b = Node::start(backend);
    assert_eq!(a.manager.lost_bookie_recovery_delay().unwrap(), 0);
    let (ran, heard) = mpsc::channel();
    for id in [1, 2] {
        let ran = ran.clone();
        a.manager
            .notify_lost_bookie_recovery_delay_changed(move || {
                ran.send((id, thread::current().name().unwrap().to_owned()))
                    .unwrap()
            })
            .unwrap();
    }
    b.manager.set_lost_bookie_recovery_delay(60).unwrap();
    let mut fired = [recv(&heard), recv(&heard)];
    fired.sort();
    assert_eq!(fired.iter().map(|(id, _)| *id).collect::<Vec<_>>(), [1, 2]);
    assert!(fired
        .iter()
        .all(|(_, thread)| thread.starts_with("underreplication-notification-")));
    assert_eq!(a.manager.lost_bookie_recovery_delay().unwrap(), 60);

    // One-shot: the next change fires only what was registered since.
    let (again, heard_again) = mpsc::channel();
    a.manager
        .notify_lost_bookie_recovery_delay_changed(move || again.send(()).unwrap())
        .unwrap();
    b.manager.set_lost_bookie_recovery_delay(90).unwrap();
    recv(&heard_again);
    assert_eq!(heard.try_iter().count(), 0);
    a.close();
    b.close();
}

fn a_locked_ledger_goes_to_one_worker_at_a_time(backend: &TestBackend) {
    let a = Node::start(backend);
    let b = Node::start(backend);
    a.manager
        .mark_ledger_underreplicated(5, "bookie-1:3181")
        .unwrap();
    assert_eq!(a.manager.poll_ledger_to_rereplicate().unwrap(), Some(5));
    assert_eq!(a.manager.held_locks(), [5]);
    assert_eq!(b.manager.poll_ledger_to_rereplicate().unwrap(), None);
    a.manager.release_underreplicated_ledger(5).unwrap();
    assert_eq!(b.manager.poll_ledger_to_rereplicate().unwrap(), Some(5));
    // Replicated: the ledger and its lock go.
    b.manager.mark_ledger_replicated(5).unwrap();
    assert!(b.manager.held_locks().is_empty());
    assert_eq!(a.manager.poll_ledger_to_rereplicate().unwrap(), None);
    a.close();
    b.close();
}

/// Mirrors Pulsar's `LedgerUnderreplicationManagerTest.testDisableLedgerReplication`: a ledger
/// marked after replication was disabled is not handed out, to any manager, until replication
/// is enabled again.
fn nothing_is_handed_out_while_replication_is_disabled(backend: &TestBackend) {
    let a = Node::start(backend);
    let b = Node::start(backend);
    a.manager.disable_ledger_replication().unwrap();
    a.manager
        .mark_ledger_underreplicated(6, "bookie-1:3181")
        .unwrap();
    assert_eq!(a.manager.poll_ledger_to_rereplicate().unwrap(), None);
    assert_eq!(b.manager.poll_ledger_to_rereplicate().unwrap(), None);
    b.manager.enable_ledger_replication().unwrap();
    assert_eq!(a.manager.poll_ledger_to_rereplicate().unwrap(), Some(6));
    a.close();
    b.close();
}

fn close_while_callbacks_are_pending_drops_them_unrun(backend: &TestBackend) {
    let a = Node::start(backend);
    let b = Node::start(backend);
    let (ran, heard) = mpsc::channel();
    let (dropped, drops) = mpsc::channel();
    a.manager.disable_ledger_replication().unwrap();
    for id in 1..=3 {
        let probe = Probe {
            id,
            ran: ran.clone(),
            dropped: dropped.clone(),
        };
        a.manager
            .notify_ledger_replication_enabled(probe.callback())
            .unwrap();
    }
    let delay_probe = Probe {
        id: 4,
        ran: ran.clone(),
        dropped: dropped.clone(),
    };
    a.manager
        .notify_lost_bookie_recovery_delay_changed(delay_probe.callback())
        .unwrap();

    a.manager.close();
    // Every pending callback was dropped by close, none ran.
    let mut gone: Vec<u32> = drops.try_iter().collect();
    gone.sort_unstable();
    assert_eq!(gone, [1, 2, 3, 4]);
    b.manager.enable_ledger_replication().unwrap();
    b.manager.set_lost_bookie_recovery_delay(5).unwrap();
    assert_eq!(heard.try_iter().count(), 0);
    a.store.close();
    b.close();
}

fn close_from_a_callback_drops_the_callbacks_queued_behind_it(backend: &TestBackend) {
    let a = Node::start(backend);
    let b = Node::start(backend);
    let (ran, heard) = mpsc::channel();
    let (dropped, drops) = mpsc::channel();
    a.manager.disable_ledger_replication().unwrap();
    let closer = a.manager.clone();
    let closed_by_callback = ran.clone();
    a.manager
        .notify_ledger_replication_enabled(move || {
            // On the manager's own thread: close returns without waiting for itself.
            closer.close();
            closed_by_callback.send((0, "closer".to_owned())).unwrap();
        })
        .unwrap();
    for id in 1..=2 {
        let probe = Probe {
            id,
            ran: ran.clone(),
            dropped: dropped.clone(),
        };
        a.manager
            .notify_ledger_replication_enabled(probe.callback())
            .unwrap();
    }
    b.manager.enable_ledger_replication().unwrap();
    assert_eq!(recv(&heard).0, 0);
    // The two behind it were queued (or refused) and are dropped unrun.
    let mut gone = [recv(&drops), recv(&drops)];
    gone.sort_unstable();
    assert_eq!(gone, [1, 2]);
    assert_eq!(heard.try_iter().count(), 0);
    assert!(a.manager.is_closed());
    a.store.close();
    b.close();
}

fn close_releases_held_locks(backend: &TestBackend) {
    let a = Node::start(backend);
    let b = Node::start(backend);
    a.manager
        .mark_ledger_underreplicated(11, "bookie-1:3181")
        .unwrap();
    assert_eq!(a.manager.poll_ledger_to_rereplicate().unwrap(), Some(11));
    assert_eq!(b.manager.poll_ledger_to_rereplicate().unwrap(), None);
    // Closing the manager (its store stays open) releases the lock.
    a.manager.close();
    assert!(a.manager.held_locks().is_empty());
    assert_eq!(b.manager.poll_ledger_to_rereplicate().unwrap(), Some(11));
    a.store.close();
    b.close();
}

fn close_twice_and_calls_after_close(backend: &TestBackend) {
    let node = Node::start(backend);
    let m = &node.manager;
    m.close();
    m.close();
    assert!(m.is_closed());
    let closed = Err(ReplicationError::Closed);
    assert_eq!(m.mark_ledger_underreplicated(1, "b"), closed);
    assert_eq!(m.mark_ledger_replicated(1), closed);
    assert_eq!(m.is_ledger_underreplicated(1).map(|_| ()), closed);
    assert_eq!(m.list_underreplicated_ledgers().map(|_| ()), closed);
    assert_eq!(m.poll_ledger_to_rereplicate().map(|_| ()), closed);
    assert_eq!(m.release_underreplicated_ledger(1), closed);
    assert_eq!(m.disable_ledger_replication(), closed);
    assert_eq!(m.enable_ledger_replication(), closed);
    assert_eq!(m.is_ledger_replication_enabled().map(|_| ()), closed);
    assert_eq!(m.set_lost_bookie_recovery_delay(1), closed);
    assert_eq!(m.lost_bookie_recovery_delay().map(|_| ()), closed);
    let (dropped, drops) = mpsc::channel();
    let (ran, heard) = mpsc::channel();
    let probe = Probe {
        id: 1,
        ran: ran.clone(),
        dropped: dropped.clone(),
    };
    assert_eq!(
        m.notify_ledger_replication_enabled(probe.callback()),
        closed
    );
    let probe = Probe {
        id: 2,
        ran,
        dropped,
    };
    assert_eq!(
        m.notify_lost_bookie_recovery_delay_changed(probe.callback()),
        closed
    );
    assert_eq!(
        drops.try_iter().collect::<Vec<_>>(),
        [1, 2],
        "refused callbacks are dropped"
    );
    assert_eq!(heard.try_iter().count(), 0);
    node.store.close();
}

/// Mirrors Pulsar's `ZKSessionTest.testReacquireLocksAfterSessionLost`, with the outcome this
/// manager chose: a re-replication lock is not taken back after a session loss (another worker
/// may have taken the ledger meanwhile); the manager forgets it, and the ledger is handed out
/// again.
fn locks_lost_with_the_session_are_forgotten_and_the_ledger_goes_to_another_worker(
    backend: &TestBackend,
) {
    let a = Node::start(backend);
    let b = Node::start(backend);
    a.manager
        .mark_ledger_underreplicated(9, "bookie-1:3181")
        .unwrap();
    assert_eq!(a.manager.poll_ledger_to_rereplicate().unwrap(), Some(9));
    assert_eq!(a.manager.held_locks(), [9]);

    a.store.expire_session().unwrap();
    common::drill::eventually(common::WAIT, "the lost lock is forgotten", || {
        a.manager.held_locks().is_empty()
    });
    assert_eq!(b.manager.poll_ledger_to_rereplicate().unwrap(), Some(9));
    assert_eq!(a.manager.poll_ledger_to_rereplicate().unwrap(), None);
    a.close();
    b.close();
}
