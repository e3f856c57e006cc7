//! Arm-to-run latency of a paced stream of zero-delay timers: one producer arms a
//! `schedule(Duration::ZERO, ..)` timer every `spacing` nanoseconds (a busy-wait pacing), 50,000
//! per spacing, and prints the p50 / p90 / p99 latency from arming to running. The probe behind
//! the latency table in `common/src/executors/scheduled/due_stream.rs`.
//!
//! ```text
//! cargo run --release -p microbench --example zero_delay_stream_latency -- 250 500 1000 2000
//! ```

use microbench::paced;
use pulsar_common::executors::{NamedThreadFactory, ScheduledExecutor};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Timers armed per spacing.
const TIMERS: usize = 50_000;

fn main() {
    let spacings = paced::spacings_from_args(&[250, 500, 1_000, 2_000, 4_000, 8_000]);
    let executor = ScheduledExecutor::new(NamedThreadFactory::new("zero-delay-latency"));
    // Start the worker before measuring.
    executor
        .schedule(Duration::ZERO, || ())
        .expect("a new executor accepts timers")
        .join()
        .expect("the first timer ran");
    for spacing in spacings {
        let latencies = Arc::new(Mutex::new(Vec::with_capacity(TIMERS)));
        let mut next = Instant::now();
        for _ in 0..TIMERS {
            paced::spin_until(next);
            next += Duration::from_nanos(spacing);
            let latencies = Arc::clone(&latencies);
            let armed = Instant::now();
            executor
                .schedule(Duration::ZERO, move || {
                    latencies.lock().unwrap().push(armed.elapsed());
                })
                .expect("the executor runs");
        }
        // FIFO among zero-delay timers: this one runs after all of them.
        executor
            .schedule(Duration::ZERO, || ())
            .expect("the executor runs")
            .join()
            .expect("the last timer ran");
        let mut latencies = std::mem::take(&mut *latencies.lock().unwrap());
        latencies.sort();
        let at = |q: f64| {
            let index = ((latencies.len() - 1) as f64 * q) as usize;
            latencies[index].as_secs_f64() * 1e6
        };
        println!(
            "spacing {spacing} ns: p50 {:.2} us, p90 {:.2} us, p99 {:.2} us",
            at(0.5),
            at(0.9),
            at(0.99)
        );
    }
    executor.shutdown();
    assert!(executor.await_termination(Duration::from_secs(10)));
}
