//! No thread leak: create, use and drop 200 executors in both lifecycle modes; the process's
//! thread count returns to where it was. One test per binary: thread counts are process-wide.

mod support;

use pulsar_common::executors::{NamedThreadFactory, PulsarExecutors};
use std::time::Duration;
use support::{thread_count, wait_for_thread_count_at_most, LONG};

#[test]
fn two_hundred_executors_used_and_dropped_leave_no_thread_behind() {
    let baseline = thread_count();
    for i in 0..200 {
        let auto_shutdown = i % 2 == 0;
        let executor = PulsarExecutors::new_single_thread_executor_with_auto_shutdown(
            NamedThreadFactory::new("leak-check"),
            auto_shutdown,
        );
        assert_eq!(executor.submit(move || i).unwrap().join().unwrap(), i);
        executor.execute(|| ()).unwrap();
        match i % 4 {
            // Owner-managed: shut down explicitly (both modes allow it).
            0 | 1 => {
                executor.shutdown();
                assert!(executor.await_termination(LONG));
            }
            // Auto shutdown on: just dropped. Auto shutdown off and forgotten: dropped with a
            // warning, still shut down.
            _ => drop(executor),
        }
    }
    let now = wait_for_thread_count_at_most(baseline, Duration::from_secs(60));
    assert_eq!(now, baseline, "threads before: {baseline}, after: {now}");
}
