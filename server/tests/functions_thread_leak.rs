//! No thread left behind: each functions-runtime component, used and closed, leaves the process's thread count where it was. One test per binary: thread counts are process-wide.

mod functions_support;

use functions_support::{thread_count, wait_for_thread_count_at_most, LONG};
use pulsar_server::functions::{
    BatchSource, BatchSourceExecutor, FunctionInstance, FunctionOutput, OnDemandTriggerer,
    PeriodicTriggerer, Producer, ProducerCache, ProducerFuture, SourceError, TaskEmitter,
    TriggerOutcome,
};
use pulsar_server::threads::ComponentThreads;
use std::sync::mpsc;
use std::time::Duration;

struct Noop;

impl Producer for Noop {
    type Message = ();
    fn send(&self, _: ()) -> ProducerFuture {
        Box::pin(std::future::ready(Ok(())))
    }
    fn flush(&self) -> ProducerFuture {
        Box::pin(std::future::ready(Ok(())))
    }
    fn close(&self) -> ProducerFuture {
        Box::pin(std::future::ready(Ok(())))
    }
}

struct OneTask;

impl BatchSource for OneTask {
    type Task = ();
    type Record = u8;
    fn discover(&self, emitter: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> {
        emitter.emit(())?;
        Ok(())
    }
    fn prepare(&self, _: ()) -> Result<(), SourceError> {
        Ok(())
    }
    fn read_next(&self) -> Result<Option<u8>, SourceError> {
        Ok(Some(1))
    }
}

/// Closed: the component's one thread (named `{pool}-…`) has exited, and the process is back
/// at `baseline` threads.
fn assert_left_nothing(threads: &ComponentThreads, pool: &str, baseline: usize) {
    assert!(threads.await_exit(LONG), "{threads:?}");
    let names = threads.names();
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(names[0].starts_with(&format!("{pool}-")), "{names:?}");
    let now = wait_for_thread_count_at_most(baseline, LONG);
    assert_eq!(now, baseline, "threads before: {baseline}, after: {now}");
}

#[test]
fn every_functions_component_closed_leaves_no_thread_behind() {
    let baseline = thread_count();

    // FunctionInstance: its thread starts with the first async result.
    for round in 0..20 {
        let (tx, rx) = mpsc::channel();
        let mut instance = FunctionInstance::builder(
            |n: &u32| {
                let n = *n;
                FunctionOutput::from_future(async move { Ok(n) })
            },
            move |done| tx.send(done.record).unwrap(),
        )
        .build();
        instance.process(round).unwrap();
        assert_eq!(rx.recv_timeout(LONG).unwrap(), round);
        let threads = instance.threads();
        instance.close();
        assert_left_nothing(&threads, "function-instance", baseline);
    }

    // ProducerCache: its thread starts with the first removal.
    for _ in 0..20 {
        let cache: ProducerCache<u8, Noop> = ProducerCache::builder().max_size(1).build();
        cache.get_or_create("t", 1, || Ok::<_, ()>(Noop)).unwrap();
        cache.get_or_create("t", 2, || Ok::<_, ()>(Noop)).unwrap(); // evicts 1
        let threads = cache.threads();
        assert_eq!(cache.close().closed, 2);
        assert_left_nothing(&threads, "producer-cache", baseline);
    }

    // BatchSourceExecutor, on demand: its thread starts with the first discovery.
    for _ in 0..20 {
        let triggerer = OnDemandTriggerer::new();
        let trigger = triggerer.handle();
        let executor = BatchSourceExecutor::builder(OneTask, triggerer).build();
        assert_eq!(trigger.trigger(), TriggerOutcome::Started);
        assert_eq!(executor.read().unwrap(), 1);
        let threads = executor.threads();
        executor.close();
        assert_left_nothing(&threads, "batch-source-discovery", baseline);
    }

    // BatchSourceExecutor with a periodic triggerer that owns its scheduler: close stops both.
    for _ in 0..20 {
        let triggerer = PeriodicTriggerer::with_own_scheduler(Duration::from_millis(1));
        let executor = BatchSourceExecutor::builder(OneTask, triggerer).build();
        assert_eq!(executor.read().unwrap(), 1);
        let threads = executor.threads();
        executor.close();
        assert_left_nothing(&threads, "batch-source-discovery", baseline);
    }
}
