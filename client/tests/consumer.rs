//! Consumer as a specification: receive, listener dispatch (in order, per key for Key_Shared,
//! on the executor Pulsar picks), panicking listeners, close (exact counts, races), and
//! dispatch on any ConsumerExecutor.
//!
//! Under Miri (`cfg!(miri)`) the message counts and race rounds are smaller, with the same
//! assertions.

mod support;

use pulsar_client::{
    Consumer, ConsumerExecutor, ConsumerExecutors, ConsumerJob, ConsumerOptions, DeliverError,
    ExecutorProvider, JobRejected, Message, PulsarClient, ReceiveError, SubscriptionType,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;
use support::{id_of, message, quiesce, Seen, LONG};

fn client(listener_threads: usize) -> PulsarClient {
    PulsarClient::builder()
        .num_listener_threads(listener_threads)
        .build()
        .unwrap()
}

/// A consumer of `client` whose listener records what it sees.
fn recording_consumer(
    client: &PulsarClient,
    subscription_type: SubscriptionType,
) -> (Consumer, Seen) {
    let seen = Seen::default();
    let recorder = seen.clone();
    let consumer = client
        .new_consumer(
            ConsumerOptions::new("recorded")
                .subscription_type(subscription_type)
                .message_listener(move |_: &Consumer, m: Message| recorder.record(&m)),
        )
        .unwrap();
    (consumer, seen)
}

/// Waits until the listener has seen `n` messages (each handed exactly once: counts are exact).
fn wait_for_seen(seen: &Seen, n: usize) {
    let deadline = std::time::Instant::now() + LONG;
    while seen.len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "saw {} of {n}",
            seen.len()
        );
        thread::yield_now();
    }
}

// ---- receive ------------------------------------------------------------------------------

#[test]
fn receive_returns_delivered_messages_in_delivery_order() {
    let client = client(1);
    let consumer = client.new_consumer(ConsumerOptions::new("plain")).unwrap();
    for id in 0..100 {
        consumer.deliver(message(id)).unwrap();
    }
    assert_eq!(consumer.queued_messages(), 100);
    let ids: Vec<u64> = (0..100)
        .map(|_| id_of(&consumer.receive().unwrap()))
        .collect();
    assert_eq!(ids, (0..100).collect::<Vec<_>>());
    assert_eq!(consumer.queued_messages(), 0);
    client.close();
}

#[test]
fn receive_timeout_returns_none_when_nothing_arrives() {
    let client = client(1);
    let consumer = client.new_consumer(ConsumerOptions::new("idle")).unwrap();
    assert_eq!(consumer.receive_timeout(Duration::from_millis(1)), Ok(None));
    consumer.deliver(message(5)).unwrap();
    let received = consumer.receive_timeout(LONG).unwrap().unwrap();
    assert_eq!(id_of(&received), 5);
    client.close();
}

#[test]
fn receive_is_refused_when_a_listener_is_set() {
    let client = client(1);
    let (consumer, _) = recording_consumer(&client, SubscriptionType::Shared);
    assert_eq!(consumer.receive().unwrap_err(), ReceiveError::ListenerSet);
    assert_eq!(
        consumer.receive_timeout(Duration::ZERO).unwrap_err(),
        ReceiveError::ListenerSet
    );
    client.close();
}

#[test]
fn a_blocked_receive_wakes_with_closed_when_the_consumer_closes() {
    let client = client(1);
    let consumer = client
        .new_consumer(ConsumerOptions::new("blocked"))
        .unwrap();
    let receiver = {
        let consumer = consumer.clone();
        thread::spawn(move || consumer.receive())
    };
    assert!(consumer.close().is_empty());
    assert_eq!(receiver.join().unwrap().unwrap_err(), ReceiveError::Closed);
    assert_eq!(consumer.receive_timeout(LONG), Err(ReceiveError::Closed));
    client.close();
}

// ---- close --------------------------------------------------------------------------------

#[test]
fn deliver_after_close_hands_the_message_back() {
    let client = client(1);
    let consumer = client.new_consumer(ConsumerOptions::new("closed")).unwrap();
    consumer.close();
    assert!(consumer.is_closed());
    let error = consumer.deliver(message(9)).unwrap_err();
    assert!(error.to_string().contains("closed"));
    assert!(matches!(error, DeliverError::Closed(_)));
    assert_eq!(id_of(&error.into_message()), 9);
    client.close();
}

#[test]
fn close_returns_the_unreceived_messages_in_delivery_order_once() {
    let client = client(1);
    let consumer = client
        .new_consumer(ConsumerOptions::new("leftovers"))
        .unwrap();
    for id in 0..10 {
        consumer.deliver(message(id)).unwrap();
    }
    for _ in 0..3 {
        consumer.receive().unwrap();
    }
    let returned: Vec<u64> = consumer.close().iter().map(id_of).collect();
    assert_eq!(returned, (3..10).collect::<Vec<_>>());
    assert!(consumer.close().is_empty(), "close is idempotent");
    client.close();
}

#[test]
fn close_returns_the_messages_still_waiting_for_a_busy_listener() {
    let client = client(1);
    let (release, blocked) = mpsc::channel::<()>();
    let blocked = Mutex::new(blocked);
    let (started_tx, started) = mpsc::channel();
    let seen = Seen::default();
    let recorder = seen.clone();
    let consumer = client
        .new_consumer(ConsumerOptions::new("busy").message_listener(
            move |_: &Consumer, m: Message| {
                recorder.record(&m);
                if id_of(&m) == 0 {
                    started_tx.send(()).unwrap();
                    let _ = blocked.lock().unwrap().recv();
                }
            },
        ))
        .unwrap();
    for id in 0..50 {
        consumer.deliver(message(id)).unwrap();
    }
    started.recv().unwrap();
    // Message 0 is in the listener; the rest wait in the lane or the receive queue.
    let returned: Vec<u64> = consumer.close().iter().map(id_of).collect();
    release.send(()).unwrap();
    quiesce(client.external_executor_provider());
    assert_eq!(seen.ids(), [0], "no listener call after close");
    assert_eq!(returned, (1..50).collect::<Vec<_>>());
    client.close();
}

#[test]
fn a_listener_can_close_its_own_consumer() {
    let client = client(2);
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let consumer = client
        .new_consumer(ConsumerOptions::new("self-closing").message_listener(
            move |consumer: &Consumer, m: Message| {
                if id_of(&m) == 3 {
                    let returned = consumer.close();
                    tx.lock().unwrap().send(returned.len()).unwrap();
                }
            },
        ))
        .unwrap();
    for id in 0..4 {
        consumer.deliver(message(id)).unwrap();
    }
    assert_eq!(rx.recv_timeout(LONG).unwrap(), 0);
    assert!(consumer.is_closed());
    client.close();
}

// ---- listener dispatch --------------------------------------------------------------------

#[test]
fn a_listener_gets_every_message_in_order_on_the_pinned_listener_thread() {
    for subscription_type in [
        SubscriptionType::Exclusive,
        SubscriptionType::Failover,
        SubscriptionType::Shared,
    ] {
        const MESSAGES: u64 = if cfg!(miri) { 200 } else { 10_000 };
        let client = client(8);
        let (consumer, seen) = recording_consumer(&client, subscription_type);
        for id in 0..MESSAGES {
            consumer.deliver(message(id)).unwrap();
        }
        wait_for_seen(&seen, MESSAGES as usize);
        let snapshot = seen.snapshot();
        assert_eq!(seen.ids(), (0..MESSAGES).collect::<Vec<_>>());
        assert!(snapshot
            .iter()
            .all(|(thread, _, _)| *thread == snapshot[0].0));
        assert!(snapshot[0].0.starts_with("pulsar-external-listener-"));
        client.close();
    }
}

#[test]
fn key_shared_keeps_each_keys_order_across_8_listener_threads_for_100000_messages() {
    const MESSAGES: u64 = if cfg!(miri) { 800 } else { 100_000 };
    const KEYS: u64 = if cfg!(miri) { 40 } else { 1_000 };
    let client = client(8);
    let (consumer, seen) = recording_consumer(&client, SubscriptionType::KeyShared);
    for id in 0..MESSAGES {
        let key = format!("key-{}", (id * 7_919) % KEYS);
        consumer.deliver(message(id).with_key(key)).unwrap();
    }
    wait_for_seen(&seen, MESSAGES as usize);
    let snapshot = seen.snapshot();
    assert_eq!(
        snapshot.len(),
        MESSAGES as usize,
        "every message exactly once"
    );
    let mut per_key: HashMap<String, (String, Vec<u64>)> = HashMap::new();
    for (thread, id, key) in snapshot {
        let (key_thread, ids) = per_key
            .entry(key.unwrap())
            .or_insert_with(|| (thread.clone(), Vec::new()));
        assert_eq!(*key_thread, thread, "one key, one listener thread");
        ids.push(id);
    }
    assert_eq!(per_key.len(), KEYS as usize);
    for (key, (_, ids)) in &per_key {
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{key} out of order");
        assert_eq!(ids.len(), (MESSAGES / KEYS) as usize);
    }
    let threads: HashSet<_> = per_key.values().map(|(thread, _)| thread.clone()).collect();
    assert_eq!(threads.len(), 8, "keys spread over all 8 listener threads");
    assert_eq!(consumer.queued_messages(), 0);
    client.close();
}

#[test]
fn key_shared_hands_each_key_to_the_listener_executor_pulsar_picks() {
    let client = client(8);
    let (consumer, seen) = recording_consumer(&client, SubscriptionType::KeyShared);
    let keys = ["key-1", "key-42", "order-12345", "Hello, world!", "ab"];
    for (id, key) in keys.iter().enumerate() {
        consumer.deliver(message(id as u64).with_key(*key)).unwrap();
    }
    wait_for_seen(&seen, keys.len());
    let external = client.external_executor_provider();
    for (thread, id, _) in seen.snapshot() {
        let key = keys[id as usize];
        assert_eq!(
            thread,
            external.get_executor_for_bytes(key.as_bytes()).name(),
            "key {key:?}"
        );
    }
    client.close();
}

#[test]
fn the_ordering_key_decides_over_the_key_and_keyless_messages_route_as_none_key() {
    let client = client(8);
    let (consumer, seen) = recording_consumer(&client, SubscriptionType::KeyShared);
    consumer
        .deliver(message(0).with_key("key-1").with_ordering_key(*b"ab"))
        .unwrap();
    consumer.deliver(message(1)).unwrap();
    wait_for_seen(&seen, 2);
    let external = client.external_executor_provider();
    let by_id: BTreeMap<u64, String> = seen
        .snapshot()
        .into_iter()
        .map(|(thread, id, _)| (id, thread))
        .collect();
    assert_eq!(by_id[&0], external.get_executor_for_bytes(b"ab").name());
    assert_eq!(
        by_id[&1],
        external.get_executor_for_bytes(b"NONE_KEY").name()
    );
    client.close();
}

#[test]
fn a_panicking_listener_does_not_stop_delivery() {
    let client = client(1);
    let seen = Seen::default();
    let recorder = seen.clone();
    let consumer = client
        .new_consumer(ConsumerOptions::new("panicky").message_listener(
            move |_: &Consumer, m: Message| {
                if id_of(&m) % 10 == 0 {
                    panic!("listener failed on {}", id_of(&m));
                }
                recorder.record(&m);
            },
        ))
        .unwrap();
    const MESSAGES: u64 = if cfg!(miri) { 100 } else { 1_000 };
    for id in 0..MESSAGES {
        consumer.deliver(message(id)).unwrap();
    }
    wait_for_seen(&seen, (MESSAGES - MESSAGES / 10) as usize);
    quiesce(client.external_executor_provider());
    assert_eq!(
        seen.ids(),
        (0..MESSAGES).filter(|id| id % 10 != 0).collect::<Vec<_>>()
    );
    assert_eq!(consumer.listener_panics(), MESSAGES / 10);
    client.close();
}

// ---- races --------------------------------------------------------------------------------

#[test]
fn close_racing_deliver_loses_nothing_and_hands_nothing_twice() {
    const ROUNDS: usize = if cfg!(miri) { 3 } else { 40 };
    const FEEDERS: u64 = 3;
    const PER_FEEDER: u64 = if cfg!(miri) { 60 } else { 2_000 };
    for round in 0..ROUNDS {
        let client = client(4);
        let subscription_type = if round % 2 == 0 {
            SubscriptionType::KeyShared
        } else {
            SubscriptionType::Shared
        };
        let (consumer, seen) = recording_consumer(&client, subscription_type);
        let barrier = Arc::new(Barrier::new(FEEDERS as usize + 1));
        let feeders: Vec<_> = (0..FEEDERS)
            .map(|feeder| {
                let (consumer, barrier) = (consumer.clone(), Arc::clone(&barrier));
                thread::spawn(move || {
                    barrier.wait();
                    let (mut accepted, mut rejected) = (Vec::new(), Vec::new());
                    for i in 0..PER_FEEDER {
                        let id = feeder * PER_FEEDER + i;
                        let key = format!("k{}", id % 13);
                        match consumer.deliver(message(id).with_key(key)) {
                            Ok(()) => accepted.push(id),
                            Err(error) => rejected.push(id_of(&error.into_message())),
                        }
                    }
                    (accepted, rejected)
                })
            })
            .collect();
        barrier.wait();
        for _ in 0..round * (PER_FEEDER as usize / 40) {
            thread::yield_now(); // vary how far the feeders got
        }
        let returned: Vec<u64> = consumer.close().iter().map(id_of).collect();
        let (mut accepted, mut rejected) = (Vec::new(), Vec::new());
        for feeder in feeders {
            let (a, r) = feeder.join().unwrap();
            accepted.extend(a);
            rejected.extend(r);
        }
        // In-flight listener calls finish before the client's executors terminate.
        client.close();
        let mut handed_or_returned = seen.ids();
        handed_or_returned.extend(&returned);
        handed_or_returned.sort_unstable();
        accepted.sort_unstable();
        assert_eq!(
            handed_or_returned, accepted,
            "round {round}: each accepted message once"
        );
        let mut offered = accepted;
        offered.extend(rejected);
        offered.sort_unstable();
        assert_eq!(offered, (0..FEEDERS * PER_FEEDER).collect::<Vec<_>>());
    }
}

#[test]
fn close_racing_receive_loses_nothing_and_hands_nothing_twice() {
    const ROUNDS: usize = if cfg!(miri) { 3 } else { 40 };
    const MESSAGES: u64 = if cfg!(miri) { 200 } else { 5_000 };
    for round in 0..ROUNDS {
        let client = client(1);
        let consumer = client
            .new_consumer(ConsumerOptions::new("receivers"))
            .unwrap();
        for id in 0..MESSAGES {
            consumer.deliver(message(id)).unwrap();
        }
        let receivers: Vec<_> = (0..2)
            .map(|_| {
                let consumer = consumer.clone();
                thread::spawn(move || {
                    let mut received = Vec::new();
                    while let Ok(m) = consumer.receive() {
                        received.push(id_of(&m));
                    }
                    received
                })
            })
            .collect();
        for _ in 0..round * (MESSAGES as usize / 250) {
            thread::yield_now();
        }
        let mut all: Vec<u64> = consumer.close().iter().map(id_of).collect();
        for receiver in receivers {
            all.extend(receiver.join().unwrap());
        }
        all.sort_unstable();
        assert_eq!(all, (0..MESSAGES).collect::<Vec<_>>(), "round {round}");
        client.close();
    }
}

// ---- executors ----------------------------------------------------------------------------

#[test]
fn messages_wait_for_a_shut_down_listener_executor_and_close_returns_them() {
    let internal = ExecutorProvider::new(1, "internal").unwrap();
    let external = ExecutorProvider::new(1, "listener").unwrap();
    let seen = Seen::default();
    let recorder = seen.clone();
    let consumer = Consumer::new(
        ConsumerOptions::new("orphaned")
            .message_listener(move |_: &Consumer, m: Message| recorder.record(&m)),
        ConsumerExecutors::from_providers(&internal, &external),
    );
    external.shutdown_now();
    for id in 0..5 {
        consumer.deliver(message(id)).unwrap();
    }
    quiesce(&internal);
    assert_eq!(seen.len(), 0);
    assert_eq!(consumer.queued_messages(), 5);
    let returned: Vec<u64> = consumer.close().iter().map(id_of).collect();
    assert_eq!(returned, (0..5).collect::<Vec<_>>());
    internal.shutdown_now();
}

/// A thread fed through a standard channel, counting the jobs it was given.
#[derive(Debug)]
struct ChannelExecutor {
    sender: Mutex<Option<mpsc::Sender<ConsumerJob>>>,
    jobs: AtomicUsize,
}

impl ChannelExecutor {
    fn start() -> (Arc<Self>, thread::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel::<ConsumerJob>();
        let worker = thread::spawn(move || rx.iter().for_each(ConsumerJob::run));
        let executor = Arc::new(Self {
            sender: Mutex::new(Some(tx)),
            jobs: AtomicUsize::new(0),
        });
        (executor, worker)
    }

    fn stop(&self) {
        self.sender.lock().unwrap().take();
    }
}

impl ConsumerExecutor for ChannelExecutor {
    fn execute_job(&self, job: ConsumerJob) -> Result<(), JobRejected> {
        self.jobs.fetch_add(1, Ordering::Relaxed);
        match &*self.sender.lock().unwrap() {
            Some(sender) => sender.send(job).map_err(|_| JobRejected::ShutDown),
            None => Err(JobRejected::ShutDown),
        }
    }
}

#[test]
fn a_consumer_dispatches_on_any_consumer_executor() {
    let (internal, internal_worker) = ChannelExecutor::start();
    let (listener, listener_worker) = ChannelExecutor::start();
    let seen = Seen::default();
    let recorder = seen.clone();
    let consumer = Consumer::new(
        ConsumerOptions::new("custom")
            .message_listener(move |_: &Consumer, m: Message| recorder.record(&m)),
        ConsumerExecutors::new(
            Arc::clone(&internal) as Arc<dyn ConsumerExecutor>,
            vec![Arc::clone(&listener) as Arc<dyn ConsumerExecutor>],
            0,
        ),
    );
    const MESSAGES: u64 = if cfg!(miri) { 100 } else { 1_000 };
    let _ = format!("{consumer:?}");
    for id in 0..MESSAGES {
        consumer.deliver(message(id)).unwrap();
    }
    wait_for_seen(&seen, MESSAGES as usize);
    assert_eq!(seen.ids(), (0..MESSAGES).collect::<Vec<_>>());
    assert_eq!(
        listener.jobs.load(Ordering::Relaxed),
        MESSAGES as usize,
        "one job per message"
    );
    let triggers = internal.jobs.load(Ordering::Relaxed);
    assert!(
        (1..=MESSAGES as usize).contains(&triggers),
        "at most one trigger per delivery: {triggers}"
    );
    assert!(consumer.close().is_empty());
    internal.stop();
    listener.stop();
    internal_worker.join().unwrap();
    listener_worker.join().unwrap();
}
