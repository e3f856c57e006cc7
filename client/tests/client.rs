//! PulsarClient and ClientBuilder as a specification: the providers a client creates, shared
//! providers, the pairing rule, and what `close` shuts down.

mod support;

use pulsar_client::{
    ClientBuildError, Consumer, ConsumerOptions, ExecutorProvider, Message, NewConsumerError,
    PulsarClient, ScheduledExecutorProvider, EXTERNAL_POOL_NAME, INTERNAL_POOL_NAME,
    SCHEDULED_POOL_NAME,
};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{message, LONG};

struct Shared {
    internal: Arc<ExecutorProvider>,
    external: Arc<ExecutorProvider>,
    scheduled: Arc<ScheduledExecutorProvider>,
}

fn shared_providers() -> Shared {
    Shared {
        internal: Arc::new(ExecutorProvider::new(2, "broker-internal").unwrap()),
        external: Arc::new(ExecutorProvider::new(2, "broker-listener").unwrap()),
        scheduled: Arc::new(ScheduledExecutorProvider::new(1, "broker-scheduled").unwrap()),
    }
}

fn client_on(shared: &Shared) -> PulsarClient {
    PulsarClient::builder()
        .internal_executor_provider(Arc::clone(&shared.internal))
        .external_executor_provider(Arc::clone(&shared.external))
        .scheduled_executor_provider(Arc::clone(&shared.scheduled))
        .build()
        .unwrap()
}

/// A consumer of `client` whose listener forwards payload ids to the returned receiver.
fn listening_consumer(client: &PulsarClient, name: &str) -> (Consumer, mpsc::Receiver<u64>) {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let consumer = client
        .new_consumer(ConsumerOptions::new(name).message_listener(
            move |_: &Consumer, m: Message| {
                let _ = tx.lock().unwrap().send(support::id_of(&m));
            },
        ))
        .unwrap();
    (consumer, rx)
}

// ---- what a client creates ----------------------------------------------------------------

#[test]
fn a_client_creates_its_three_providers_with_pulsars_names_and_thread_counts() {
    let client = PulsarClient::builder()
        .num_io_threads(3)
        .num_listener_threads(5)
        .build()
        .unwrap();
    assert_eq!(client.internal_executor_provider().len(), 3);
    assert_eq!(
        client.internal_executor_provider().pool_name(),
        INTERNAL_POOL_NAME
    );
    assert_eq!(client.external_executor_provider().len(), 5);
    assert_eq!(
        client.external_executor_provider().pool_name(),
        EXTERNAL_POOL_NAME
    );
    assert_eq!(client.scheduled_executor_provider().len(), 3);
    assert_eq!(
        client.scheduled_executor_provider().pool_name(),
        SCHEDULED_POOL_NAME
    );
    assert!(client.owns_internal_and_external_providers());
    assert!(client.owns_scheduled_provider());
    let _ = format!("{client:?} {:?}", PulsarClient::builder());
    client.close();
}

#[test]
fn defaults_are_one_io_thread_and_one_listener_thread() {
    let client = PulsarClient::builder().build().unwrap();
    assert_eq!(client.internal_executor_provider().len(), 1);
    assert_eq!(client.external_executor_provider().len(), 1);
    assert_eq!(client.scheduled_executor_provider().len(), 1);
    client.close();
}

#[test]
fn zero_threads_is_a_clear_error() {
    let error = PulsarClient::builder()
        .num_listener_threads(0)
        .build()
        .unwrap_err();
    match &error {
        ClientBuildError::InvalidThreadCount(inner) => {
            assert_eq!(inner.pool_name(), EXTERNAL_POOL_NAME)
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(error.to_string().contains(EXTERNAL_POOL_NAME));
}

// ---- given providers ----------------------------------------------------------------------

#[test]
fn internal_and_external_providers_are_given_together_or_not_at_all() {
    let shared = shared_providers();
    let error = PulsarClient::builder()
        .internal_executor_provider(Arc::clone(&shared.internal))
        .build()
        .unwrap_err();
    assert_eq!(
        error,
        ClientBuildError::UnpairedExecutorProviders {
            internal_given: true
        }
    );
    assert!(error.to_string().contains("both must be given or neither"));
    let error = PulsarClient::builder()
        .external_executor_provider(Arc::clone(&shared.external))
        .build()
        .unwrap_err();
    assert_eq!(
        error,
        ClientBuildError::UnpairedExecutorProviders {
            internal_given: false
        }
    );
}

#[test]
fn a_client_uses_the_providers_it_is_given() {
    let shared = shared_providers();
    let client = client_on(&shared);
    assert!(Arc::ptr_eq(
        client.internal_executor_provider(),
        &shared.internal
    ));
    assert!(Arc::ptr_eq(
        client.external_executor_provider(),
        &shared.external
    ));
    assert!(Arc::ptr_eq(
        client.scheduled_executor_provider(),
        &shared.scheduled
    ));
    assert!(!client.owns_internal_and_external_providers());
    assert!(!client.owns_scheduled_provider());
    client.close();
}

#[test]
fn a_scheduled_provider_may_be_given_alone() {
    let shared = shared_providers();
    let client = PulsarClient::builder()
        .scheduled_executor_provider(Arc::clone(&shared.scheduled))
        .build()
        .unwrap();
    assert!(client.owns_internal_and_external_providers());
    assert!(!client.owns_scheduled_provider());
    client.close();
    assert!(client.internal_executor_provider().is_shutdown());
    assert!(!shared.scheduled.is_shutdown());
}

// ---- close --------------------------------------------------------------------------------

#[test]
fn close_shuts_down_exactly_the_providers_the_client_created() {
    let own = PulsarClient::builder().build().unwrap();
    own.close();
    assert!(own.internal_executor_provider().is_shutdown());
    assert!(own.external_executor_provider().is_shutdown());
    assert!(own.scheduled_executor_provider().is_shutdown());

    let shared = shared_providers();
    let guest = client_on(&shared);
    guest.close();
    assert!(!shared.internal.is_shutdown());
    assert!(!shared.external.is_shutdown());
    assert!(!shared.scheduled.is_shutdown());
}

#[test]
fn two_clients_share_providers_and_closing_one_leaves_the_other_working() {
    let shared = shared_providers();
    let first = client_on(&shared);
    let second = client_on(&shared);
    let (first_consumer, first_seen) = listening_consumer(&first, "first");
    let (second_consumer, second_seen) = listening_consumer(&second, "second");
    first_consumer.deliver(message(1)).unwrap();
    second_consumer.deliver(message(2)).unwrap();
    assert_eq!(first_seen.recv_timeout(LONG).unwrap(), 1);
    assert_eq!(second_seen.recv_timeout(LONG).unwrap(), 2);

    first.close();
    assert!(first.is_closed());
    assert!(first_consumer.is_closed(), "a client closes its consumers");
    assert!(first_consumer.deliver(message(3)).is_err());

    // The second client, its consumer and the shared providers still work.
    for id in 10..20 {
        second_consumer.deliver(message(id)).unwrap();
    }
    let ids: Vec<u64> = second_seen.iter().take(10).collect();
    assert_eq!(ids, (10..20).collect::<Vec<_>>());
    let (third_consumer, third_seen) = listening_consumer(&second, "third");
    third_consumer.deliver(message(30)).unwrap();
    assert_eq!(third_seen.recv_timeout(LONG).unwrap(), 30);
    let timer = second
        .scheduled_executor_provider()
        .get_executor()
        .schedule(Duration::from_millis(1), || "still scheduling")
        .unwrap();
    assert_eq!(timer.join().unwrap(), "still scheduling");

    second.close();
    assert!(
        !shared.internal.is_shutdown(),
        "the providers' owner stops them"
    );
    shared.internal.shutdown_now();
    shared.external.shutdown_now();
    shared.scheduled.shutdown_now();
}

#[test]
fn close_returns_what_the_clients_consumers_had_not_handed_out() {
    let client = PulsarClient::builder().build().unwrap();
    let a = client.new_consumer(ConsumerOptions::new("a")).unwrap();
    let b = client.new_consumer(ConsumerOptions::new("b")).unwrap();
    a.deliver(message(1)).unwrap();
    a.deliver(message(2)).unwrap();
    b.deliver(message(3)).unwrap();
    assert_eq!(support::id_of(&a.receive().unwrap()), 1);
    let returned: Vec<u64> = client.close().iter().map(support::id_of).collect();
    assert_eq!(returned, [2, 3]);
    assert!(client.close().is_empty(), "close is idempotent");
}

#[test]
fn a_closed_client_makes_no_consumer() {
    let client = PulsarClient::builder().build().unwrap();
    client.close();
    assert_eq!(
        client
            .new_consumer(ConsumerOptions::new("late"))
            .unwrap_err(),
        NewConsumerError::ClientClosed
    );
}

#[test]
fn consumers_are_pinned_round_robin_across_the_listener_pool() {
    let client = PulsarClient::builder()
        .num_listener_threads(3)
        .build()
        .unwrap();
    let mut threads = std::collections::HashSet::new();
    let mut consumers = Vec::new();
    for i in 0..3 {
        let (consumer, seen) = {
            let (tx, rx) = mpsc::channel();
            let tx = Mutex::new(tx);
            let consumer = client
                .new_consumer(ConsumerOptions::new(format!("c{i}")).message_listener(
                    move |_: &Consumer, _: Message| {
                        let name = std::thread::current().name().unwrap().to_owned();
                        let _ = tx.lock().unwrap().send(name);
                    },
                ))
                .unwrap();
            (consumer, rx)
        };
        consumer.deliver(message(i)).unwrap();
        threads.insert(seen.recv_timeout(LONG).unwrap());
        consumers.push(consumer);
    }
    assert_eq!(
        threads.len(),
        3,
        "three consumers, three listener threads: {threads:?}"
    );
    client.close();
}
