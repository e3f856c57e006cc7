//! `round_trip`: how long two threads take to hand an atomic back and forth, the cost of moving
//! a cache line from one core to the other and back.
//!
//! Every hand-off the benches measure (a queue item, an executor task, a latch) moves cache
//! lines between cores, so this one figure says much of what a machine will make of them: the
//! same VM type has measured ~175 ns per round trip on an Intel Xeon host, where the lock-free
//! paths that win on cheaper transfers lost several ratios. The report states it beside the
//! CPU model so that runs on different hosts are not read as one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Round trips per measurement.
const ROUND_TRIPS: u64 = 20_000;
/// Measurements; the median is reported.
const MEASUREMENTS: usize = 5;

/// The median time of one round trip (one thread stores, the other sees it and stores back,
/// the first sees that), or `None` on a single CPU, where it would measure the scheduler.
pub(crate) fn round_trip() -> Option<Duration> {
    if thread::available_parallelism().map_or(true, |n| n.get() < 2) {
        return None;
    }
    let mut samples: Vec<Duration> = (0..MEASUREMENTS).map(|_| measure()).collect();
    samples.sort();
    Some(samples[MEASUREMENTS / 2])
}

/// One measurement of [`ROUND_TRIPS`] round trips; the time of one.
fn measure() -> Duration {
    let flag = Arc::new(AtomicU64::new(0));
    let echo = {
        let flag = Arc::clone(&flag);
        thread::spawn(move || {
            for i in 0..ROUND_TRIPS {
                wait_for(&flag, 2 * i + 1);
                flag.store(2 * i + 2, Ordering::Release);
            }
        })
    };
    // The first round trip, which also waits for the echo thread to start, is not timed.
    flag.store(1, Ordering::Release);
    wait_for(&flag, 2);
    let start = Instant::now();
    for i in 1..ROUND_TRIPS {
        flag.store(2 * i + 1, Ordering::Release);
        wait_for(&flag, 2 * i + 2);
    }
    let elapsed = start.elapsed();
    echo.join().expect("the echo thread does not panic");
    elapsed / (ROUND_TRIPS - 1) as u32
}

/// Spins until `flag` holds `value`.
fn wait_for(flag: &AtomicU64, value: u64) {
    while flag.load(Ordering::Acquire) != value {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_is_measured_on_two_cpus_and_not_on_one() {
        let cpus = thread::available_parallelism().map_or(1, |n| n.get());
        match round_trip() {
            Some(time) => {
                assert!(cpus >= 2);
                // A cache line crosses cores in tens to hundreds of nanoseconds; a figure of
                // zero or of milliseconds would mean the loop measured nothing or the
                // scheduler.
                assert!(
                    time > Duration::ZERO && time < Duration::from_millis(1),
                    "{time:?}"
                );
            }
            None => assert_eq!(cpus, 1),
        }
    }
}
