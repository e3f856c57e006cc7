//! The unbounded queues under test (`queue` bench), behind one trait ([`Queue`]): ours
//! (`GrowableArrayBlockingQueue`), crossbeam unbounded, flume unbounded and std mpsc.

use pulsar_common::collections::GrowableArrayBlockingQueue;
use std::sync::{mpsc, Arc};

/// An unbounded multi-producer queue with a blocking single consumer, carrying `u64`s.
pub trait Queue: 'static {
    /// The name in reports.
    const NAME: &'static str;
    /// What each producer thread holds (one clone each).
    type Producer: Clone + Send + 'static;
    /// What the consumer thread holds.
    type Consumer: Send + 'static;

    /// A new, empty queue.
    fn channel() -> (Self::Producer, Self::Consumer);

    /// Appends `item`; never blocks.
    fn push(producer: &Self::Producer, item: u64);

    /// Removes the head, blocking until there is one.
    fn pop(consumer: &mut Self::Consumer) -> u64;
}

/// Runs something generic over each queue type.
pub trait QueueVisitor {
    /// Called once per queue type, in the order of [`NAMES`].
    fn visit<Q: Queue>(&mut self);
}

/// The queues' names, in report order (the baseline, crossbeam, first; ours last).
pub const NAMES: [&str; 4] = [
    CrossbeamQueue::NAME,
    StdMpscQueue::NAME,
    FlumeQueue::NAME,
    PulsarQueue::NAME,
];

/// Visits every queue type, in the order of [`NAMES`].
pub fn visit_all(visitor: &mut impl QueueVisitor) {
    visitor.visit::<CrossbeamQueue>();
    visitor.visit::<StdMpscQueue>();
    visitor.visit::<FlumeQueue>();
    visitor.visit::<PulsarQueue>();
}

/// `std::sync::mpsc::channel`.
#[derive(Debug)]
pub struct StdMpscQueue;

impl Queue for StdMpscQueue {
    const NAME: &'static str = "std_mpsc";
    type Producer = mpsc::Sender<u64>;
    type Consumer = mpsc::Receiver<u64>;

    fn channel() -> (Self::Producer, Self::Consumer) {
        mpsc::channel()
    }

    #[inline]
    fn push(producer: &Self::Producer, item: u64) {
        producer
            .send(item)
            .expect("the consumer outlives the producers");
    }

    #[inline]
    fn pop(consumer: &mut Self::Consumer) -> u64 {
        consumer.recv().expect("the producers outlive the consumer")
    }
}

/// `crossbeam_channel::unbounded` (the baseline: the queue to beat).
#[derive(Debug)]
pub struct CrossbeamQueue;

impl Queue for CrossbeamQueue {
    const NAME: &'static str = "crossbeam";
    type Producer = crossbeam_channel::Sender<u64>;
    type Consumer = crossbeam_channel::Receiver<u64>;

    fn channel() -> (Self::Producer, Self::Consumer) {
        crossbeam_channel::unbounded()
    }

    #[inline]
    fn push(producer: &Self::Producer, item: u64) {
        producer
            .send(item)
            .expect("the consumer outlives the producers");
    }

    #[inline]
    fn pop(consumer: &mut Self::Consumer) -> u64 {
        consumer.recv().expect("the producers outlive the consumer")
    }
}

/// `flume::unbounded`.
#[derive(Debug)]
pub struct FlumeQueue;

impl Queue for FlumeQueue {
    const NAME: &'static str = "flume";
    type Producer = flume::Sender<u64>;
    type Consumer = flume::Receiver<u64>;

    fn channel() -> (Self::Producer, Self::Consumer) {
        flume::unbounded()
    }

    #[inline]
    fn push(producer: &Self::Producer, item: u64) {
        producer
            .send(item)
            .expect("the consumer outlives the producers");
    }

    #[inline]
    fn pop(consumer: &mut Self::Consumer) -> u64 {
        consumer.recv().expect("the producers outlive the consumer")
    }
}

/// Ours: `pulsar_common::collections::GrowableArrayBlockingQueue` (64 initial slots).
#[derive(Debug)]
pub struct PulsarQueue;

impl Queue for PulsarQueue {
    const NAME: &'static str = "pulsar";
    type Producer = Arc<GrowableArrayBlockingQueue<u64>>;
    type Consumer = Arc<GrowableArrayBlockingQueue<u64>>;

    fn channel() -> (Self::Producer, Self::Consumer) {
        let queue = Arc::new(GrowableArrayBlockingQueue::new());
        (Arc::clone(&queue), queue)
    }

    #[inline]
    fn push(producer: &Self::Producer, item: u64) {
        if producer.put(item).is_err() {
            panic!("the queue is never terminated while producing");
        }
    }

    #[inline]
    fn pop(consumer: &mut Self::Consumer) -> u64 {
        consumer
            .take()
            .expect("the queue is never terminated while consuming")
    }
}
