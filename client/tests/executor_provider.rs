//! ExecutorProvider and ScheduledExecutorProvider as a specification: construction, lazy
//! threads and their names, picking (round robin, by key, by key bytes as Pulsar does), and
//! shutdown.

mod support;

use pulsar_client::{ExecutorProvider, ScheduledExecutorProvider};
use std::collections::HashSet;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;
use support::{capture_warnings, LONG};

/// The name of the thread executor `index` of `provider` runs on (starting it).
fn thread_of(provider: &ExecutorProvider, index: usize) -> String {
    provider.executors()[index]
        .submit(|| thread::current().name().unwrap().to_owned())
        .unwrap()
        .join()
        .unwrap()
}

/// Splits `{pool_name}-{pool_id}-{n}` into `(pool_id, n)`.
fn pool_id_and_n(thread_name: &str, pool_name: &str) -> (u64, usize) {
    let rest = thread_name
        .strip_prefix(pool_name)
        .and_then(|rest| rest.strip_prefix('-'))
        .unwrap_or_else(|| panic!("{thread_name} does not start with {pool_name}-"));
    let (pool_id, n) = rest.split_once('-').expect("pool id and thread number");
    (pool_id.parse().unwrap(), n.parse().unwrap())
}

// ---- construction and laziness ------------------------------------------------------------

#[test]
fn zero_threads_is_a_clear_error() {
    let error = ExecutorProvider::new(0, "pulsar-client-internal").unwrap_err();
    assert_eq!(error.pool_name(), "pulsar-client-internal");
    assert!(error.to_string().contains("at least one thread"), "{error}");
    let error = ScheduledExecutorProvider::new(0, "pulsar-client-scheduled").unwrap_err();
    assert_eq!(error.pool_name(), "pulsar-client-scheduled");
}

#[test]
fn a_provider_that_is_never_used_starts_no_thread() {
    let provider = ExecutorProvider::new(4, "never-used").unwrap();
    let scheduled = ScheduledExecutorProvider::new(2, "never-used-scheduled").unwrap();
    let _ = format!("{provider:?} {scheduled:?}");
    assert_eq!(provider.len(), 4);
    assert!(!provider.is_empty());
    // An executor reports its worker thread's name once it has one.
    assert!(provider
        .executors()
        .iter()
        .all(|executor| !executor.name().starts_with("never-used")));
    assert!(scheduled
        .executors()
        .iter()
        .all(|executor| !executor.name().starts_with("never-used")));
    provider.shutdown_now();
    scheduled.shutdown_now();
    assert!(provider.executors().iter().all(|e| e.is_terminated()));
    assert!(scheduled.executors().iter().all(|e| e.is_terminated()));
}

#[test]
fn executor_i_runs_on_thread_pool_name_pool_id_i_plus_one() {
    let provider = ExecutorProvider::new(3, "pulsar-external-listener").unwrap();
    let other = ExecutorProvider::new(1, "pulsar-external-listener").unwrap();
    // Start them out of order: the number follows the index, not the start order.
    let names: Vec<_> = [2, 0, 1].map(|i| (i, thread_of(&provider, i))).into();
    let mut pool_ids = HashSet::new();
    for (index, name) in names {
        let (pool_id, n) = pool_id_and_n(&name, "pulsar-external-listener");
        assert_eq!(n, index + 1, "{name}");
        pool_ids.insert(pool_id);
    }
    assert_eq!(pool_ids.len(), 1, "one pool id per provider");
    let (other_id, _) = pool_id_and_n(&thread_of(&other, 0), "pulsar-external-listener");
    assert!(
        !pool_ids.contains(&other_id),
        "pool ids are unique per provider"
    );
    provider.shutdown_now();
    other.shutdown_now();
}

// ---- picking ------------------------------------------------------------------------------

#[test]
fn get_executor_is_round_robin_in_index_order() {
    let provider = ExecutorProvider::new(3, "round-robin").unwrap();
    for round in 0..7 {
        let picked = provider.get_executor();
        assert!(std::ptr::eq(picked, &provider.executors()[round % 3]));
    }
}

#[test]
fn get_executor_for_bytes_picks_the_index_pulsars_java_client_picks() {
    // (key, N, index) computed on Java 17 with Pulsar's Murmur3_32Hash and ExecutorProvider.
    let cases: &[(&str, usize, usize)] = &[
        ("key-42", 8, 7),
        ("key-1", 7, 6),
        ("NONE_KEY", 8, 3),
        ("order-12345", 7, 0),
        ("Hello, world!", 3, 1),
        ("ab", 16, 15),
        ("\u{6d88}\u{606f}", 16, 8),
        ("", 5, 0),
    ];
    for &(key, n, expected) in cases {
        let provider = ExecutorProvider::new(n, "murmur").unwrap();
        let picked = provider.get_executor_for_bytes(key.as_bytes());
        assert!(
            std::ptr::eq(picked, &provider.executors()[expected]),
            "key {key:?} with {n} executors"
        );
        let scheduled = ScheduledExecutorProvider::new(n, "murmur-scheduled").unwrap();
        assert!(std::ptr::eq(
            scheduled.get_executor_for_bytes(key.as_bytes()),
            &scheduled.executors()[expected]
        ));
    }
}

#[test]
fn get_executor_for_key_is_stable_and_spreads_keys() {
    let provider = ExecutorProvider::new(8, "by-key").unwrap();
    let mut used = HashSet::new();
    for key in 0..1_000u32 {
        let first = provider.get_executor_for_key(&key) as *const _;
        assert!(std::ptr::eq(first, provider.get_executor_for_key(&key)));
        let index = provider
            .executors()
            .iter()
            .position(|executor| std::ptr::eq(executor, first))
            .expect("a reference into executors()");
        used.insert(index);
    }
    assert_eq!(used.len(), 8, "a thousand keys use every executor");
}

#[test]
fn one_keys_tasks_run_in_order_on_one_thread() {
    let provider = ExecutorProvider::new(4, "one-key").unwrap();
    let (tx, rx) = mpsc::channel();
    for i in 0..100 {
        let tx = tx.clone();
        provider
            .get_executor_for_bytes(b"user-17")
            .execute(move || {
                tx.send((i, thread::current().name().unwrap().to_owned()))
                    .unwrap()
            })
            .unwrap();
    }
    let seen: Vec<_> = rx.iter().take(100).collect();
    assert_eq!(
        seen.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        (0..100).collect::<Vec<_>>()
    );
    assert!(seen.iter().all(|(_, thread)| *thread == seen[0].1));
    provider.shutdown_now();
}

// ---- shutdown -----------------------------------------------------------------------------

/// Occupies `executor` until the returned sender is used (or dropped).
fn block(executor: &pulsar_common::executors::SingleThreadExecutor) -> mpsc::Sender<()> {
    let (release, blocked) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel();
    executor
        .execute(move || {
            started_tx.send(()).unwrap();
            let _ = blocked.recv();
        })
        .unwrap();
    started.recv().unwrap();
    release
}

#[test]
fn shutdown_now_stops_every_executor_and_returns_the_tasks_that_never_started() {
    let provider = ExecutorProvider::new(2, "stop").unwrap();
    let releases = [
        block(&provider.executors()[0]),
        block(&provider.executors()[1]),
    ];
    provider.executors()[0].execute(|| ()).unwrap();
    provider.executors()[0].execute(|| ()).unwrap();
    provider.executors()[1].execute(|| ()).unwrap();
    // Both workers are busy: every queued task is still unstarted when it stops them.
    let (unstarted, _) = capture_warnings(|| provider.shutdown_now_timeout(Duration::ZERO));
    assert_eq!(unstarted.len(), 3);
    assert!(provider.is_shutdown());
    assert!(provider.get_executor().execute(|| ()).is_err());
    drop(releases);
    assert!(provider
        .executors()
        .iter()
        .all(|e| e.await_termination(LONG)));
}

#[test]
fn shutdown_now_warns_naming_the_thread_that_did_not_terminate_in_time() {
    let provider = ExecutorProvider::new(2, "stuck-pool").unwrap();
    let release = block(&provider.executors()[1]);
    let stuck_thread = provider.executors()[1].name();
    let (_, warnings) =
        capture_warnings(|| provider.shutdown_now_timeout(Duration::from_millis(1)));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains(&stuck_thread), "{warnings:?}");
    assert!(warnings[0].contains("stuck-pool"), "{warnings:?}");
    release.send(()).unwrap();
    assert!(provider.executors()[1].await_termination(LONG));
}

#[test]
fn a_scheduled_provider_has_the_same_shape_and_its_shutdown_stops_timers() {
    let provider = ScheduledExecutorProvider::new(3, "pulsar-client-scheduled").unwrap();
    assert_eq!(provider.len(), 3);
    for round in 0..6 {
        assert!(std::ptr::eq(
            provider.get_executor(),
            &provider.executors()[round % 3]
        ));
    }
    let key = provider.get_executor_for_key("consumer-1") as *const _;
    assert!(std::ptr::eq(
        key,
        provider.get_executor_for_key("consumer-1")
    ));
    let periodic = provider.executors()[0]
        .schedule_at_fixed_rate(Duration::ZERO, Duration::from_millis(1), || ())
        .unwrap();
    let delayed = provider.executors()[1]
        .schedule(Duration::from_secs(3600), || "later")
        .unwrap();
    let name = provider.executors()[2]
        .schedule(Duration::ZERO, || {
            thread::current().name().unwrap().to_owned()
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(name.starts_with("pulsar-client-scheduled-") && name.ends_with("-3"));
    let unstarted = provider.shutdown_now();
    assert_eq!(unstarted.len(), 1, "the delayed one-shot timer comes back");
    assert!(periodic.is_cancelled());
    drop(unstarted);
    assert!(delayed.is_cancelled());
    assert!(provider.is_shutdown());
    assert!(provider.executors().iter().all(|e| e.is_terminated()));
}

// ---- statistics ---------------------------------------------------------------------------

#[test]
fn a_provider_sums_the_stats_of_its_executors_whatever_their_kind() {
    let provider = ExecutorProvider::new(4, "stats-internal").unwrap();
    let handles: Vec<_> = (0..40)
        .map(|i| {
            provider
                .get_executor()
                .submit(move || assert!(i % 20 != 0))
                .unwrap()
        })
        .collect();
    let panicked = handles.into_iter().filter_map(|h| h.join().err()).count();
    assert_eq!(panicked, 2);
    let scheduled = ScheduledExecutorProvider::new(2, "stats-scheduled").unwrap();
    let timers: Vec<_> = (0..6)
        .map(|i| {
            scheduled
                .get_executor()
                .schedule(Duration::ZERO, move || i)
                .unwrap()
        })
        .collect();
    assert_eq!(
        timers.into_iter().map(|t| t.join().unwrap()).sum::<i32>(),
        15
    );
    assert!(provider.shutdown_now().is_empty());
    assert!(scheduled.shutdown_now().is_empty());
    let stats = provider.stats();
    assert_eq!(
        (
            stats.submitted,
            stats.completed,
            stats.panicked,
            stats.pending
        ),
        (40, 40, 2, 0),
        "{stats:?}"
    );
    let sum: pulsar_common::executors::ExecutorStats =
        provider.executors().iter().map(|e| e.stats()).sum();
    assert_eq!(stats, sum);
    assert_eq!(scheduled.stats().completed, 6);
}
