//! Pinning a thread: the thread then may run on the one CPU it was pinned to, and nowhere
//! else. (Run on a thread of its own, so the test harness's threads stay unpinned.)

use microbench::affinity::{allowed_cpus, pin_current_thread};

#[test]
fn a_pinned_thread_may_run_on_its_cpu_only() {
    let cpus = allowed_cpus();
    if !cfg!(target_os = "linux") {
        assert!(cpus.is_empty(), "nothing is read off Linux");
        assert!(!pin_current_thread(0), "nothing is pinned off Linux");
        return;
    }
    assert!(!cpus.is_empty(), "a running thread may run somewhere");
    assert!(
        cpus.windows(2).all(|w| w[0] < w[1]),
        "in increasing order: {cpus:?}"
    );
    let last = *cpus.last().expect("not empty");
    let seen = std::thread::spawn(move || {
        let pinned = pin_current_thread(last);
        (pinned, allowed_cpus())
    })
    .join()
    .expect("the pinning thread");
    assert_eq!(seen, (true, vec![last]));
    assert!(
        !pin_current_thread(usize::MAX),
        "a CPU beyond the set's size is refused, not a fault"
    );
    assert_eq!(allowed_cpus(), cpus, "the test's own thread was left alone");
}
