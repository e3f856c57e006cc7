//! loom models of the consumer's dispatch protocols, on the real code (`sync.rs` switches the
//! consumer's mutexes and atomics to loom's, and `pulsar-common`'s receive queue switches the
//! same way):
//!
//! - the trigger protocol (`dispatch.rs`): a message delivered while the router resets the
//!   trigger flag and polls is never stranded in the receive queue — including through the
//!   fast path where `deliver` only *loads* the flag;
//! - close racing deliver and routing: every accepted message is handed to the listener or
//!   returned by `close`, exactly once;
//! - the listener jobs' lifetime protocol (`ticket.rs`): a lane's job count falling to 0 on a
//!   listener thread while the router adds a new share never frees the consumer early or
//!   twice, and the last release frees it exactly once — also when unrun jobs are dropped on
//!   two threads at once.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p pulsar-client
//! --release --lib loom` (`cargo xtask test` does).

use crate::consumer::{
    Consumer, ConsumerExecutor, ConsumerExecutors, ConsumerJob, ConsumerOptions, JobRejected,
    Message, SubscriptionType,
};
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use std::collections::VecDeque;
use std::sync::Arc;

/// An executor the model drives by hand: `execute_job` queues, `run_one` runs the oldest job.
#[derive(Debug)]
struct ManualExecutor {
    jobs: loom::sync::Mutex<VecDeque<ConsumerJob>>,
}

impl ManualExecutor {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            jobs: loom::sync::Mutex::new(VecDeque::new()),
        })
    }

    /// Runs the oldest queued job, if any.
    fn run_one(&self) -> bool {
        let job = self.jobs.lock().unwrap().pop_front();
        match job {
            Some(job) => {
                job.run();
                true
            }
            None => false,
        }
    }
}

impl ConsumerExecutor for ManualExecutor {
    fn execute_job(&self, job: ConsumerJob) -> Result<(), JobRejected> {
        self.jobs.lock().unwrap().push_back(job);
        Ok(())
    }
}

/// Counts what the listener saw, and when the consumer's state (which owns the listener) was
/// dropped.
struct Counters {
    seen: AtomicUsize,
    freed: AtomicUsize,
}

struct FreedToken(Arc<Counters>);

impl Drop for FreedToken {
    fn drop(&mut self) {
        self.0.freed.fetch_add(1, Ordering::SeqCst);
    }
}

struct Model {
    internal: Arc<ManualExecutor>,
    listener: Arc<ManualExecutor>,
    counters: Arc<Counters>,
    consumer: Consumer,
}

impl Model {
    fn new() -> Self {
        let internal = ManualExecutor::new();
        let listener = ManualExecutor::new();
        let counters = Arc::new(Counters {
            seen: AtomicUsize::new(0),
            freed: AtomicUsize::new(0),
        });
        let token = FreedToken(Arc::clone(&counters));
        let consumer = Consumer::new(
            ConsumerOptions::new("loom")
                .subscription_type(SubscriptionType::Shared)
                .message_listener(move |_: &Consumer, _: Message| {
                    assert_eq!(token.0.freed.load(Ordering::SeqCst), 0);
                    token.0.seen.fetch_add(1, Ordering::SeqCst);
                }),
            ConsumerExecutors::new(
                Arc::clone(&internal) as Arc<dyn ConsumerExecutor>,
                vec![Arc::clone(&listener) as Arc<dyn ConsumerExecutor>],
                0,
            ),
        );
        Self {
            internal,
            listener,
            counters,
            consumer,
        }
    }

    /// Runs every job either executor holds (and whatever those queue) until none is left.
    fn drain(&self) {
        while self.internal.run_one() || self.listener.run_one() {}
    }

    fn seen(&self) -> usize {
        self.counters.seen.load(Ordering::SeqCst)
    }
}

#[test]
fn loom_a_message_delivered_while_the_router_resets_the_trigger_is_never_stranded() {
    loom::model(|| {
        let model = Model::new();
        model.consumer.deliver(Message::new([0])).unwrap(); // queues the trigger
        let feeder = {
            let consumer = model.consumer.clone();
            thread::spawn(move || consumer.deliver(Message::new([1])).unwrap())
        };
        // The internal executor runs that trigger while the feeder delivers.
        assert!(model.internal.run_one());
        feeder.join().unwrap();
        model.drain();
        assert_eq!(
            model.seen(),
            2,
            "a delivered message stayed in the receive queue"
        );
        assert!(model.consumer.close().is_empty());
    });
}

#[test]
fn loom_two_feeders_racing_the_router_strand_nothing() {
    loom::model(|| {
        let model = Model::new();
        let feeders: Vec<_> = (0..2u8)
            .map(|i| {
                let consumer = model.consumer.clone();
                thread::spawn(move || consumer.deliver(Message::new([i])).unwrap())
            })
            .collect();
        let router = {
            let internal = Arc::clone(&model.internal);
            thread::spawn(move || internal.run_one())
        };
        feeders.into_iter().for_each(|f| f.join().unwrap());
        router.join().unwrap();
        model.drain();
        assert_eq!(
            model.seen(),
            2,
            "a delivered message stayed in the receive queue"
        );
    });
}

#[test]
fn loom_close_racing_deliver_and_routing_hands_every_message_out_exactly_once() {
    loom::model(|| {
        let model = Model::new();
        model.consumer.deliver(Message::new([0])).unwrap();
        let feeder = {
            let consumer = model.consumer.clone();
            thread::spawn(move || consumer.deliver(Message::new([1])).is_ok())
        };
        let router = {
            let internal = Arc::clone(&model.internal);
            thread::spawn(move || internal.run_one())
        };
        let returned = model.consumer.close().len();
        let accepted = 1 + usize::from(feeder.join().unwrap());
        router.join().unwrap();
        model.drain();
        assert_eq!(model.seen() + returned, accepted);
    });
}

#[test]
fn loom_the_last_listener_job_racing_a_new_share_frees_the_consumer_once_and_never_early() {
    loom::model(|| {
        let model = Model::new();
        model.consumer.deliver(Message::new([0])).unwrap();
        assert!(model.internal.run_one()); // one listener job: the lane's count goes 0 -> 1
        let listener_thread = {
            let listener = Arc::clone(&model.listener);
            // Runs the job: the count falls 1 -> 0 (unless the new share came first).
            thread::spawn(move || assert!(listener.run_one()))
        };
        // Meanwhile a new share: the count rises again, from 0 or from 1.
        model.consumer.deliver(Message::new([1])).unwrap();
        assert!(model.internal.run_one());
        let Model {
            internal,
            listener,
            counters,
            consumer,
        } = model;
        drop(consumer); // the last handle: only the jobs keep the state alive now
        listener_thread.join().unwrap();
        assert_eq!(
            counters.freed.load(Ordering::SeqCst),
            0,
            "a job is still queued"
        );
        while internal.run_one() || listener.run_one() {}
        assert_eq!(counters.seen.load(Ordering::SeqCst), 2);
        assert_eq!(counters.freed.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn loom_unrun_listener_jobs_dropped_on_two_threads_at_once_free_the_consumer_exactly_once() {
    loom::model(|| {
        let model = Model::new();
        model.consumer.deliver(Message::new([0])).unwrap();
        model.consumer.deliver(Message::new([1])).unwrap(); // coalesced into the same trigger
        assert!(model.internal.run_one()); // one pass: two listener jobs, the count 0 -> 2
        let Model {
            internal,
            listener,
            counters,
            consumer,
        } = model;
        drop(consumer); // only the two jobs keep the state alive now
        let mut jobs = std::mem::take(&mut *listener.jobs.lock().unwrap());
        assert_eq!(jobs.len(), 2);
        let first = jobs.pop_front().unwrap();
        let dropper = thread::spawn(move || drop(first));
        drop(jobs); // the second, racing the first
        dropper.join().unwrap();
        assert_eq!(counters.freed.load(Ordering::SeqCst), 1);
        assert_eq!(
            counters.seen.load(Ordering::SeqCst),
            0,
            "unrun jobs deliver nothing"
        );
        assert!(!internal.run_one() && !listener.run_one());
    });
}
