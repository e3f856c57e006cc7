//! loom models of the queue's two-lock protocol: put/take hand-off through the tail and head
//! counts, the parked-taker wake-up, growth and trim (both locks) racing with producers and
//! takers, terminate vs take, and the store-buffering handshake with a caller's flag. Spinning
//! is compiled out under loom: every empty take parks.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p pulsar-common
//! --release --test loom_queue` (`cargo xtask test` does).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use pulsar_common::collections::GrowableArrayBlockingQueue;
use std::time::Duration;

#[test]
fn loom_take_sees_every_put_in_order() {
    loom::model(|| {
        let queue = Arc::new(GrowableArrayBlockingQueue::with_capacity(1));
        let producer = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || {
                queue.put(1).unwrap();
                queue.put(2).unwrap(); // grows the one-slot ring
            })
        };
        assert_eq!(queue.take(), Some(1));
        assert_eq!(queue.take(), Some(2));
        producer.join().unwrap();
    });
}

#[test]
fn loom_terminate_wakes_a_blocked_taker_and_keeps_queued_items() {
    loom::model(|| {
        let queue = Arc::new(GrowableArrayBlockingQueue::new());
        let taker = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || {
                let mut got = Vec::new();
                while let Some(item) = queue.take() {
                    got.push(item);
                }
                got
            })
        };
        queue.put(7).unwrap();
        queue.terminate();
        assert_eq!(queue.put(8), Err(8));
        assert_eq!(taker.join().unwrap(), vec![7]);
    });
}

#[test]
fn loom_two_takers_share_two_items() {
    loom::model(|| {
        let queue = Arc::new(GrowableArrayBlockingQueue::new());
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let queue = Arc::clone(&queue);
                thread::spawn(move || queue.take())
            })
            .collect();
        queue.put(1).unwrap();
        queue.put(2).unwrap();
        let mut got: Vec<_> = takers
            .into_iter()
            .map(|t| t.join().unwrap().unwrap())
            .collect();
        got.sort();
        assert_eq!(got, vec![1, 2]);
    });
}

#[test]
fn loom_two_producers_grow_a_one_slot_ring_while_a_taker_takes() {
    loom::model(|| {
        let queue = Arc::new(GrowableArrayBlockingQueue::with_capacity(1));
        let producers: Vec<_> = [[1, 2], [10, 20]]
            .into_iter()
            .map(|items| {
                let queue = Arc::clone(&queue);
                thread::spawn(move || {
                    for item in items {
                        queue.put(item).unwrap();
                    }
                })
            })
            .collect();
        let got: Vec<i32> = (0..4).map(|_| queue.take().unwrap()).collect();
        for producer in producers {
            producer.join().unwrap();
        }
        let ones: Vec<_> = got.iter().copied().filter(|&i| i < 10).collect();
        let tens: Vec<_> = got.iter().copied().filter(|&i| i >= 10).collect();
        assert_eq!(ones, vec![1, 2], "each producer's items arrive in order");
        assert_eq!(tens, vec![10, 20], "each producer's items arrive in order");
        assert!(queue.is_empty());
    });
}

#[test]
fn loom_poll_timeout_is_woken_by_a_put() {
    loom::model(|| {
        let queue = Arc::new(GrowableArrayBlockingQueue::new());
        let producer = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.put(5).unwrap())
        };
        // loom never lets the timeout fire: only the put can end this wait.
        assert_eq!(queue.poll_timeout(Duration::from_secs(60)), Some(5));
        producer.join().unwrap();
    });
}

#[test]
fn loom_trim_races_with_put_and_take_without_losing_an_item() {
    loom::model(|| {
        let queue = Arc::new(GrowableArrayBlockingQueue::with_capacity(128));
        let producer = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || {
                queue.put(1).unwrap();
                queue.put(2).unwrap();
            })
        };
        let taker = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.take())
        };
        let freed = queue.trim();
        assert!(freed == 0 || freed == 64, "freed {freed}");
        producer.join().unwrap();
        assert_eq!(taker.join().unwrap(), Some(1));
        let mut rest = Vec::new();
        assert_eq!(queue.drain_to(&mut rest, 10), 1);
        assert_eq!(rest, vec![2]);
        assert_eq!(queue.capacity(), 128 - freed);
    });
}

#[test]
fn loom_a_taker_that_finds_the_queue_empty_after_raising_a_flag_is_seen_by_the_producer() {
    // The store-buffering handshake the client's consumer relies on: "put, then read the
    // flag" against "raise the flag, then find the queue empty": at least one side must see
    // the other's write, as with a single lock.
    use loom::sync::atomic::{AtomicBool, Ordering};
    loom::model(|| {
        let queue = Arc::new(GrowableArrayBlockingQueue::new());
        let flag = Arc::new(AtomicBool::new(false));
        let producer = {
            let (queue, flag) = (Arc::clone(&queue), Arc::clone(&flag));
            thread::spawn(move || {
                queue.put(1).unwrap();
                flag.load(Ordering::Acquire)
            })
        };
        flag.swap(true, Ordering::AcqRel);
        let taken = queue.poll();
        let producer_saw_flag = producer.join().unwrap();
        assert!(
            taken.is_some() || producer_saw_flag,
            "the item was missed and the producer did not see the flag"
        );
    });
}
