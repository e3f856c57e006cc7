//! CPU burners: they burn until stopped, their thread clocks count what they burned, and a
//! probe that excludes them reports the workload's CPU time without theirs.
//!
//! One test in this binary, so that no other test's CPU time lands in the process clock.

use microbench::burners::CpuBurners;
use microbench::Probe;
use std::thread;
use std::time::{Duration, Instant};

/// Parks (not spinning, so this thread adds little CPU time) until `burners` have used
/// `amount` more CPU time than `from`, or fails at a generous deadline.
fn wait_for_burn(burners: &CpuBurners, from: Duration, amount: Duration) -> Duration {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let burned = burners.cpu_time().expect("burner clocks") - from;
        if burned >= amount {
            return burned;
        }
        assert!(Instant::now() < deadline, "the burner did not run");
        thread::park_timeout(Duration::from_millis(1));
    }
}

#[test]
fn burners_burn_until_stopped_and_a_probe_leaves_their_cpu_time_out() {
    let burners = CpuBurners::start(1);
    let expected = if cfg!(target_os = "linux") && microbench::burners::pinning() {
        1
    } else {
        0
    };
    assert_eq!(burners.pinned(), expected, "pinned only when asked for");
    let Some(start) = burners.cpu_time() else {
        return; // no thread CPU clocks on this platform
    };
    let mut probe = Probe::new().excluding_cpu_of(burners.clocks());
    let mut burned = Duration::ZERO;
    probe.sample(1, 1, None, |_| {
        let began = Instant::now();
        burned = wait_for_burn(&burners, start, Duration::from_millis(50));
        began.elapsed()
    });
    let sample = probe.samples()[0];
    let workload = sample.cpu.expect("process clock");
    assert!(
        workload < burned / 2,
        "the probe counted the burner: {workload:?} of the workload's CPU while the burner \
         used {burned:?}"
    );
    let loops = burners.stop();
    assert_eq!(loops.len(), 1);
    assert!(loops[0] > 0, "the burner looped");
}
