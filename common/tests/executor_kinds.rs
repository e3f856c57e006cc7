//! What both executor kinds do the same way — they are one core — specified once and run over
//! each through the `Executor` trait: the drop policy (`auto_shutdown_on_drop` on and off) and
//! the idle trim after a burst.

mod support;

use pulsar_common::executors::{
    Executor, PulsarExecutors, ScheduledExecutor, SingleThreadExecutor,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};
use support::{capture_warnings, CountingFactory, Latch, LONG};

/// Occupies the worker until the returned sender is used (or dropped).
fn block_worker<E: Executor>(executor: &E) -> mpsc::Sender<()> {
    support::block_worker_with(|task| executor.execute(task).unwrap())
}

// ---- the drop policy ------------------------------------------------------------------------

/// With auto shutdown off, dropping the last clone without a shutdown warns once, naming the
/// executor, and still shuts it down gracefully: the queued tasks run.
fn dropped_without_shutdown_warns_naming_it_and_still_runs_queued_tasks<E: Executor>(
    executor: E,
    factory: &CountingFactory,
    pool_name: &str,
) {
    let release = block_worker(&executor);
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..5 {
        let ran = Arc::clone(&ran);
        executor
            .execute(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
    }
    let name = executor.name();
    assert!(name.starts_with(pool_name), "{name}");
    let ((), warnings) = capture_warnings(|| drop(executor));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains(&name), "{warnings:?}");
    release.send(()).unwrap();
    factory.wait_finished(1, LONG);
    assert_eq!(ran.load(Ordering::SeqCst), 5, "queued tasks were not lost");
}

#[test]
fn a_single_thread_executor_without_auto_shutdown_warns_when_dropped_and_runs_its_queue() {
    let factory = CountingFactory::new("forgetful-component");
    let executor =
        PulsarExecutors::new_single_thread_executor_with_auto_shutdown(Arc::clone(&factory), false);
    assert!(!executor.auto_shutdown_on_drop());
    dropped_without_shutdown_warns_naming_it_and_still_runs_queued_tasks(
        executor,
        &factory,
        "forgetful-component-",
    );
}

#[test]
fn a_scheduled_executor_without_auto_shutdown_warns_when_dropped_and_runs_its_queue() {
    let factory = CountingFactory::new("forgetful-scheduler");
    let executor = ScheduledExecutor::builder()
        .thread_factory(Arc::clone(&factory))
        .auto_shutdown_on_drop(false)
        .build();
    assert!(!executor.auto_shutdown_on_drop());
    dropped_without_shutdown_warns_naming_it_and_still_runs_queued_tasks(
        executor,
        &factory,
        "forgetful-scheduler-",
    );
}

/// A `tracing` subscriber whose every event panics (a broken layer: user code).
struct PanickingSubscriber;

impl tracing::Subscriber for PanickingSubscriber {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {
        panic!("the tracing layer panics");
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The drop's warning panicking (a broken tracing layer) neither unwinds out of `Drop` nor
/// keeps the executor from shutting down: the queued tasks run and the worker exits. (Audit of
/// 2026-12-07, second pass: the warning came first, so its panic skipped the shutdown and the
/// worker stayed parked for good.)
fn a_panicking_warning_still_shuts_the_dropped_executor_down<E: Executor>(
    executor: E,
    factory: &CountingFactory,
) {
    let release = block_worker(&executor);
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    executor
        .execute(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tracing::subscriber::with_default(PanickingSubscriber, || drop(executor))
    }));
    assert!(dropped.is_ok(), "nothing unwinds out of the drop");
    release.send(()).unwrap();
    factory.wait_finished(1, LONG);
    assert_eq!(ran.load(Ordering::SeqCst), 1, "the queued task ran");
}

#[test]
fn a_panicking_tracing_layer_does_not_keep_a_dropped_executor_from_shutting_down() {
    let factory = CountingFactory::new("panicking-layer");
    let plain =
        PulsarExecutors::new_single_thread_executor_with_auto_shutdown(Arc::clone(&factory), false);
    a_panicking_warning_still_shuts_the_dropped_executor_down(plain, &factory);
    let factory = CountingFactory::new("panicking-layer-scheduled");
    let scheduled = ScheduledExecutor::builder()
        .thread_factory(Arc::clone(&factory))
        .auto_shutdown_on_drop(false)
        .build();
    a_panicking_warning_still_shuts_the_dropped_executor_down(scheduled, &factory);
}

/// With auto shutdown on (the default), dropping the last clone shuts down without a warning.
fn dropped_with_auto_shutdown_warns_nothing<E: Executor>(executor: E, factory: &CountingFactory) {
    executor.execute(|| ()).unwrap();
    let ((), warnings) = capture_warnings(|| drop(executor));
    assert!(warnings.is_empty(), "{warnings:?}");
    factory.wait_finished(1, LONG);
}

#[test]
fn auto_shutdown_on_drops_without_a_warning() {
    let factory = CountingFactory::new("auto");
    let plain = SingleThreadExecutor::with_thread_factory(Arc::clone(&factory));
    assert!(plain.auto_shutdown_on_drop());
    dropped_with_auto_shutdown_warns_nothing(plain, &factory);
    let factory = CountingFactory::new("auto-scheduled");
    let scheduled = ScheduledExecutor::with_thread_factory(Arc::clone(&factory));
    assert!(scheduled.auto_shutdown_on_drop());
    dropped_with_auto_shutdown_warns_nothing(scheduled, &factory);
}

// ---- idle trim ------------------------------------------------------------------------------

/// After a burst, once the worker has been idle for the builder's period, the queue is back to
/// at most 64 slots — read directly and in the stats — and the executor still works.
fn memory_is_given_back_after_a_burst_once_idle<E: Executor>(
    executor: E,
    queue_capacity: impl Fn(&E) -> usize,
) {
    let release = block_worker(&executor);
    // Under Miri (~10^4 times slower) fewer tasks, the same assertions.
    let burst = if cfg!(miri) { 1_000 } else { 100_000 };
    let latch = Latch::new(burst);
    for _ in 0..burst {
        let latch = Arc::clone(&latch);
        executor.execute(move || latch.count_down()).unwrap();
    }
    assert!(queue_capacity(&executor) >= burst);
    release.send(()).unwrap();
    latch.wait(LONG);
    // The worker swapped the burst into its batch before running it: the stats saw it then.
    assert!(executor.stats().queue_capacity >= burst);
    // The worker trims once it has been idle for 20 ms; wait for that (bounded), not a sleep.
    let deadline = Instant::now() + LONG;
    while executor.stats().queue_capacity > 64 && Instant::now() < deadline {
        thread::yield_now();
    }
    let capacity = queue_capacity(&executor);
    assert!(capacity <= 64, "capacity {capacity}");
    assert_eq!(executor.stats().queue_capacity, capacity);
    assert_eq!(executor.submit(|| 1).unwrap().join().unwrap(), 1);
}

#[test]
fn a_single_thread_executor_gives_memory_back_after_a_burst_once_idle() {
    let executor = PulsarExecutors::builder()
        .idle_trim_after(Some(Duration::from_millis(20)))
        .build();
    memory_is_given_back_after_a_burst_once_idle(executor, SingleThreadExecutor::queue_capacity);
}

#[test]
fn a_scheduled_executor_gives_memory_back_after_a_burst_once_idle() {
    let executor = ScheduledExecutor::builder()
        .idle_trim_after(Some(Duration::from_millis(20)))
        .build();
    memory_is_given_back_after_a_burst_once_idle(executor, ScheduledExecutor::queue_capacity);
}

/// Starts worker threads whose `tracing` subscriber panics at every event.
struct PanickingLayerThreads;

impl pulsar_common::executors::ThreadFactory for PanickingLayerThreads {
    fn new_thread(
        &self,
        body: Box<dyn FnOnce() + Send + 'static>,
    ) -> std::io::Result<thread::JoinHandle<()>> {
        thread::Builder::new()
            .name("panicking-layer-worker".to_owned())
            .spawn(move || tracing::subscriber::with_default(PanickingSubscriber, body))
    }
}

/// The idle trim's debug log panicking on the worker (a broken tracing layer) does not end the
/// worker loop: the queue is trimmed and the executor keeps running tasks. (Audit of
/// 2026-12-07, second pass: the panic unwound out of the loop, which marked the executor
/// terminated, so the next task was refused as if it had been shut down.)
#[test]
fn a_panicking_tracing_layer_on_the_worker_does_not_end_it_at_the_idle_trim() {
    let executor = PulsarExecutors::builder()
        .thread_factory(PanickingLayerThreads)
        .idle_trim_after(Some(Duration::from_millis(20)))
        .build();
    memory_is_given_back_after_a_burst_once_idle(executor, SingleThreadExecutor::queue_capacity);
    let scheduled = ScheduledExecutor::builder()
        .thread_factory(PanickingLayerThreads)
        .idle_trim_after(Some(Duration::from_millis(20)))
        .build();
    memory_is_given_back_after_a_burst_once_idle(scheduled, ScheduledExecutor::queue_capacity);
}
