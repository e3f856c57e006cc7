//! loom models of the executor's protocols: execute (one task or a batch) vs `shutdown_now`
//! (nothing lost, nothing twice), execute vs graceful shutdown (every accepted task runs), and
//! the park/wake-up handshake (a parked worker is never left asleep with work queued: loom
//! reports the deadlock if it is).
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p pulsar-common
//! --release --lib loom` (`cargo xtask test` does).

use super::between_batches::NoTimers;
use super::executor_core::ExecutorCore;

type PlainCore = ExecutorCore<NoTimers>;
use super::raw_task::RawTask;
use crate::sync::{Arc, AtomicUsize, Ordering};
use loom::thread;

fn counting_task(ran: &Arc<AtomicUsize>) -> RawTask {
    let ran = Arc::clone(ran);
    RawTask::new(move || {
        ran.fetch_add(1, Ordering::SeqCst);
    })
}

fn start_worker(core: &Arc<PlainCore>) -> thread::JoinHandle<()> {
    let core = Arc::clone(core);
    thread::spawn(move || PlainCore::run_worker(&core))
}

#[test]
fn loom_execute_racing_shutdown_now_loses_nothing_and_runs_nothing_twice() {
    loom::model(|| {
        let core = Arc::new(PlainCore::new_started_for_loom(1));
        let worker = start_worker(&core);
        let ran = Arc::new(AtomicUsize::new(0));
        let producer = {
            let (core, ran) = (Arc::clone(&core), Arc::clone(&ran));
            thread::spawn(move || {
                let mut accepted = 0;
                for _ in 0..2 {
                    if PlainCore::enqueue(&core, counting_task(&ran)).is_ok() {
                        accepted += 1;
                    }
                }
                accepted
            })
        };
        let returned = PlainCore::shutdown_now(&core);
        let accepted = producer.join().unwrap();
        worker.join().unwrap();
        let returned = returned.len();
        assert_eq!(ran.load(Ordering::SeqCst) + returned, accepted);
    });
}

#[test]
fn loom_execute_racing_graceful_shutdown_runs_every_accepted_task() {
    loom::model(|| {
        let core = Arc::new(PlainCore::new_started_for_loom(1));
        let worker = start_worker(&core);
        let ran = Arc::new(AtomicUsize::new(0));
        let producer = {
            let (core, ran) = (Arc::clone(&core), Arc::clone(&ran));
            thread::spawn(move || {
                let mut accepted = 0;
                for _ in 0..2 {
                    if PlainCore::enqueue(&core, counting_task(&ran)).is_ok() {
                        accepted += 1;
                    }
                }
                accepted
            })
        };
        PlainCore::shutdown(&core);
        let accepted = producer.join().unwrap();
        worker.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), accepted);
    });
}

#[test]
fn loom_a_parked_worker_is_woken_by_the_next_task() {
    loom::model(|| {
        let core = Arc::new(PlainCore::new_started_for_loom(1));
        let worker = start_worker(&core);
        let ran = Arc::new(AtomicUsize::new(0));
        PlainCore::enqueue(&core, counting_task(&ran)).unwrap();
        let second = {
            let (core, ran) = (Arc::clone(&core), Arc::clone(&ran));
            thread::spawn(move || PlainCore::enqueue(&core, counting_task(&ran)).is_ok())
        };
        assert!(second.join().unwrap());
        // Both tasks must run before the worker can exit: a lost wake-up deadlocks here.
        PlainCore::shutdown(&core);
        worker.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 2);
    });
}

#[test]
fn loom_a_batch_racing_shutdown_now_is_taken_whole_or_refused_whole() {
    loom::model(|| {
        let core = Arc::new(PlainCore::new_started_for_loom(1));
        let worker = start_worker(&core);
        let ran = Arc::new(AtomicUsize::new(0));
        let producer = {
            let (core, ran) = (Arc::clone(&core), Arc::clone(&ran));
            thread::spawn(move || {
                let mut batch = vec![counting_task(&ran), counting_task(&ran)];
                match PlainCore::enqueue_all(&core, &mut batch) {
                    Ok(()) => {
                        assert!(batch.is_empty());
                        2
                    }
                    Err(_) => {
                        assert_eq!(batch.len(), 2, "a refused batch stays with the caller");
                        0
                    }
                }
            })
        };
        let returned = PlainCore::shutdown_now(&core);
        let accepted = producer.join().unwrap();
        worker.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst) + returned.len(), accepted);
    });
}

/// The claim handshake alone (`task_batch.rs`): three tasks queued before the worker starts,
/// so it takes them as one batch, announcing each, while `shutdown_now` steals. Each task runs
/// or comes back, once. (A mutant without the claim fence on either side fails this model: a
/// task both runs and comes back.)
#[test]
fn loom_a_running_batch_racing_shutdown_now_hands_each_task_to_one_side() {
    loom::model(|| {
        let core = Arc::new(PlainCore::new_started_for_loom(4));
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..3 {
            assert!(PlainCore::enqueue(&core, counting_task(&ran)).is_ok());
        }
        let worker = start_worker(&core);
        let returned = PlainCore::shutdown_now(&core);
        worker.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst) + returned.len(), 3);
        for task in returned {
            task.run();
        }
        assert_eq!(ran.load(Ordering::SeqCst), 3, "each task ran once in all");
    });
}
