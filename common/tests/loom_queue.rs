//! loom models of the queue's wake-up protocol: put/take hand-off, the first block's
//! installation by racing first puts, terminate vs take, and `poll_timeout` vs put and
//! terminate.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p pulsar-common
//! --release --test loom_queue` (`cargo xtask test` does).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use pulsar_common::collections::{GrowableArrayBlockingQueue, PollTimeoutError};
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

/// Two producers race the first put of a new queue (each may allocate a first block; one is
/// installed, the other goes spare) while a taker waits: both items arrive, once each.
#[test]
fn loom_racing_first_puts_install_one_first_block_and_lose_no_item() {
    loom::model(|| {
        let queue = Arc::new(GrowableArrayBlockingQueue::new());
        let producers: Vec<_> = [1, 2]
            .into_iter()
            .map(|item| {
                let queue = Arc::clone(&queue);
                thread::spawn(move || queue.put(item).unwrap())
            })
            .collect();
        let mut got = vec![queue.take().unwrap(), queue.take().unwrap()];
        for producer in producers {
            producer.join().unwrap();
        }
        got.sort_unstable();
        assert_eq!(got, vec![1, 2]);
        assert!(queue.is_empty());
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
        assert_eq!(queue.put(8).unwrap_err().into_inner(), 8);
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
fn loom_poll_timeout_racing_put_and_terminate_returns_the_item_or_leaves_it_queued() {
    loom::model(|| {
        let queue = Arc::new(GrowableArrayBlockingQueue::new());
        let taker = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.poll_timeout(Duration::from_secs(60)))
        };
        queue.put(1).unwrap();
        queue.terminate();
        match taker.join().unwrap() {
            Ok(item) => {
                assert_eq!(item, 1);
                assert!(queue.is_empty());
            }
            // loom has no clock: a timed wait may end early, leaving the item queued.
            Err(PollTimeoutError::Timeout) => assert_eq!(queue.poll(), Some(1)),
            // The item was queued before the terminate: "terminated and empty" cannot be seen.
            Err(PollTimeoutError::Terminated) => panic!("Terminated reported over a queued item"),
        }
    });
}

#[test]
fn loom_a_taker_and_drain_to_racing_puts_see_every_item_once_and_in_order() {
    loom::model(|| {
        // Two slots: the producer's second put grows the ring while the others take.
        let queue = Arc::new(GrowableArrayBlockingQueue::with_capacity(2));
        queue.put(1).unwrap();
        let producer = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || {
                queue.put(2).unwrap();
                queue.put(3).unwrap();
            })
        };
        let taker = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.poll())
        };
        let mut drained = Vec::new();
        queue.drain_to(&mut drained, 1);
        producer.join().unwrap();
        let taken = taker.join().unwrap();
        assert!(queue.capacity() >= queue.len());
        queue.drain_to(&mut drained, usize::MAX);
        assert!(
            drained.windows(2).all(|pair| pair[0] < pair[1]),
            "drained out of order: {drained:?}"
        );
        let mut all = drained;
        all.extend(taken);
        all.sort_unstable();
        assert_eq!(all, vec![1, 2, 3]);
    });
}
