//! Submit-to-run latency of the single-thread executor's `execute`: a ping-pong (one task in
//! flight, the submitter spinning until it ran) and paced streams (one task every `spacing`
//! nanoseconds, a busy-wait pacing), printing p50 / p90 / p99. It shows what the worker's
//! waits between takes cost a task that is not part of a burst.
//!
//! ```text
//! cargo run --release -p microbench --example execute_stream_latency -- 0 100 250 500 1000
//! ```
//! (`0`: the ping-pong.)

use microbench::paced;
use pulsar_common::executors::PulsarExecutors;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Tasks per spacing.
const TASKS: usize = 100_000;

fn main() {
    let spacings = paced::spacings_from_args(&[0, 100, 250, 500, 1_000, 2_000]);
    let executor = PulsarExecutors::new_single_thread_executor();
    executor.submit(|| ()).unwrap().join().unwrap();
    let origin = Instant::now();
    for spacing in spacings {
        let latencies: Arc<Vec<AtomicU64>> =
            Arc::new((0..TASKS).map(|_| AtomicU64::new(0)).collect());
        let ran = Arc::new(AtomicUsize::new(0));
        let mut next = Instant::now();
        for index in 0..TASKS {
            if spacing > 0 {
                paced::spin_until(next);
                next += Duration::from_nanos(spacing);
            }
            let (latencies, ran_by_task) = (Arc::clone(&latencies), Arc::clone(&ran));
            let queued = origin.elapsed().as_nanos() as u64;
            executor
                .execute(move || {
                    let now = origin.elapsed().as_nanos() as u64;
                    latencies[index].store(now - queued, Ordering::Relaxed);
                    ran_by_task.store(index + 1, Ordering::Release);
                })
                .expect("the executor runs");
            if spacing == 0 {
                while ran.load(Ordering::Acquire) != index + 1 {
                    std::hint::spin_loop();
                }
            }
        }
        executor.submit(|| ()).unwrap().join().unwrap();
        let mut sorted: Vec<u64> = latencies
            .iter()
            .map(|l| l.load(Ordering::Relaxed))
            .collect();
        sorted.sort_unstable();
        let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q) as usize] as f64 / 1e3;
        let label = if spacing == 0 {
            "ping-pong".to_string()
        } else {
            format!("spacing {spacing} ns")
        };
        println!(
            "{label}: p50 {:.2} us, p90 {:.2} us, p99 {:.2} us",
            at(0.5),
            at(0.9),
            at(0.99)
        );
    }
    executor.shutdown();
    assert!(executor.await_termination(Duration::from_secs(10)));
}
