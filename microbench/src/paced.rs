//! Paced streams for the latency examples: the spacings to run (from the command line) and a
//! busy-wait pacing that keeps the producer on its core between items.

use std::time::Instant;

/// The spacings, in nanoseconds, given on the command line (`cargo run --example .. -- 250
/// 500`), or `defaults` when none is.
///
/// # Panics
///
/// If an argument is not a whole number of nanoseconds.
pub fn spacings_from_args(defaults: &[u64]) -> Vec<u64> {
    let spacings: Vec<u64> = std::env::args()
        .skip(1)
        .map(|arg| arg.parse().expect("a spacing in nanoseconds"))
        .collect();
    if spacings.is_empty() {
        defaults.to_vec()
    } else {
        spacings
    }
}

/// Busy-waits until `at` (a paced producer does not sleep: a sleep's wake-up would be the
/// pacing's error).
pub fn spin_until(at: Instant) {
    while Instant::now() < at {
        std::hint::spin_loop();
    }
}
