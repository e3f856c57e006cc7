//! GrowableArrayBlockingQueue as a specification: smoke, capacity, timeouts, terminate,
//! stress, drops, and a proptest model against `VecDeque`.

mod support;

use proptest::prelude::*;
use pulsar_common::collections::{GrowableArrayBlockingQueue, PollTimeoutError};
use std::collections::VecDeque;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};
use support::{DropCounter, LONG};

#[test]
fn put_then_poll_is_fifo() {
    let queue = GrowableArrayBlockingQueue::new();
    assert!(queue.is_empty());
    for i in 0..10 {
        queue.put(i).unwrap();
    }
    assert_eq!(queue.len(), 10);
    for i in 0..10 {
        assert_eq!(queue.poll(), Some(i));
    }
    assert_eq!(queue.poll(), None);
}

#[test]
fn new_has_64_slots_and_with_capacity_rounds_up() {
    assert_eq!(GrowableArrayBlockingQueue::<u8>::new().capacity(), 64);
    assert_eq!(
        GrowableArrayBlockingQueue::<u8>::with_capacity(5).capacity(),
        8
    );
    assert_eq!(
        GrowableArrayBlockingQueue::<u8>::with_capacity(0).capacity(),
        1
    );
}

/// A capacity above the largest power of two saturates there instead of wrapping to 0 (a
/// queue of capacity 0 could never grow: its first `put` spun forever; a debug build panicked
/// on the overflow). Audit of 2026-12-07.
#[test]
fn with_capacity_saturates_at_the_largest_power_of_two_and_stays_usable() {
    let largest = 1usize << (usize::BITS - 1);
    for requested in [largest - 1, largest, largest + 1, usize::MAX] {
        let queue = GrowableArrayBlockingQueue::with_capacity(requested);
        assert_eq!(queue.capacity(), largest, "requested {requested}");
        for i in 0..300 {
            queue.put(i).unwrap();
        }
        let taken: Vec<i32> = (0..300).map(|_| queue.take().unwrap()).collect();
        assert_eq!(taken, (0..300).collect::<Vec<_>>());
    }
}

#[test]
fn growth_doubles_and_keeps_order_across_wrap_around() {
    let queue = GrowableArrayBlockingQueue::with_capacity(4);
    let mut expected = VecDeque::new();
    let mut next = 0;
    // Wrap the head around a few times before growing.
    for _ in 0..3 {
        for _ in 0..3 {
            queue.put(next).unwrap();
            expected.push_back(next);
            next += 1;
        }
        for _ in 0..2 {
            assert_eq!(queue.poll(), expected.pop_front());
        }
    }
    for _ in 0..20 {
        queue.put(next).unwrap();
        expected.push_back(next);
        next += 1;
    }
    assert_eq!(queue.capacity(), 32);
    assert_eq!(queue.to_vec(), Vec::from(expected.clone()));
    let mut drained = Vec::new();
    assert_eq!(queue.drain_to(&mut drained, usize::MAX), expected.len());
    assert_eq!(drained, Vec::from(expected));
}

#[test]
fn take_blocks_until_an_item_arrives() {
    let queue = Arc::new(GrowableArrayBlockingQueue::new());
    let ready = Arc::new(Barrier::new(2));
    let taker = {
        let (queue, ready) = (Arc::clone(&queue), Arc::clone(&ready));
        thread::spawn(move || {
            ready.wait();
            queue.take()
        })
    };
    ready.wait();
    queue.put(7).unwrap();
    assert_eq!(taker.join().unwrap(), Some(7));
}

#[test]
fn poll_timeout_times_out_on_an_empty_queue_and_returns_an_item_when_one_comes() {
    let queue = GrowableArrayBlockingQueue::<u32>::new();
    let start = Instant::now();
    assert_eq!(
        queue.poll_timeout(Duration::from_millis(20)),
        Err(PollTimeoutError::Timeout)
    );
    assert!(
        start.elapsed() >= Duration::from_millis(20),
        "returned before its timeout"
    );
    queue.put(3).unwrap();
    assert_eq!(queue.poll_timeout(Duration::from_millis(20)), Ok(3));
    assert_eq!(
        queue.poll_timeout(Duration::ZERO),
        Err(PollTimeoutError::Timeout)
    );
}

#[test]
fn poll_timeout_tells_a_terminated_queue_from_a_timeout_after_the_last_item() {
    let queue = GrowableArrayBlockingQueue::new();
    queue.put(1).unwrap();
    queue.terminate();
    assert_eq!(queue.poll_timeout(Duration::ZERO), Ok(1));
    let start = Instant::now();
    let error = queue.poll_timeout(LONG).unwrap_err();
    assert!(start.elapsed() < LONG, "waited on a terminated queue");
    assert_eq!(error, PollTimeoutError::Terminated);
    assert!(error.is_terminated() && !error.is_timeout());
    assert_eq!(error.to_string(), "the queue is terminated and empty");
    assert!(PollTimeoutError::Timeout.is_timeout());
    assert_eq!(
        PollTimeoutError::Timeout.to_string(),
        "timed out waiting on an empty queue"
    );
}

#[test]
fn put_on_a_terminated_queue_hands_the_item_back_in_a_put_error() {
    let queue = GrowableArrayBlockingQueue::new();
    queue.terminate();
    let error = queue.put(String::from("late")).unwrap_err();
    assert_eq!(error.to_string(), "put on a terminated queue");
    assert_eq!(format!("{error:?}"), "PutError(..)");
    assert_eq!(error.into_inner(), "late");
}

#[test]
fn both_errors_fit_a_boxed_send_sync_error_without_t_debug_or_t_sync() {
    // Neither `Debug` nor `Sync`: the error must still be a `dyn Error + Send + Sync`.
    struct NotDebugNotSync(#[allow(dead_code)] std::cell::Cell<u8>);
    let queue = GrowableArrayBlockingQueue::new();
    queue.terminate();
    let Err(put) = queue.put(NotDebugNotSync(std::cell::Cell::new(1))) else {
        panic!("a terminated queue accepted an item");
    };
    let put: Box<dyn std::error::Error + Send + Sync> = Box::new(put);
    assert_eq!(put.to_string(), "put on a terminated queue");
    let Err(poll) = queue.poll_timeout(Duration::ZERO) else {
        panic!("an item from a queue that never held one");
    };
    let poll: Box<dyn std::error::Error + Send + Sync> = Box::new(poll);
    assert_eq!(poll.to_string(), "the queue is terminated and empty");
}

#[test]
fn terminate_wakes_every_blocked_taker_and_rejects_puts() {
    let queue = Arc::new(GrowableArrayBlockingQueue::<u32>::new());
    let ready = Arc::new(Barrier::new(5));
    let takers: Vec<_> = (0..4)
        .map(|i| {
            let (queue, ready) = (Arc::clone(&queue), Arc::clone(&ready));
            thread::spawn(move || {
                ready.wait();
                if i % 2 == 0 {
                    queue.take().ok_or(PollTimeoutError::Terminated)
                } else {
                    queue.poll_timeout(LONG)
                }
            })
        })
        .collect();
    ready.wait();
    queue.terminate();
    for taker in takers {
        assert_eq!(taker.join().unwrap(), Err(PollTimeoutError::Terminated));
    }
    assert!(queue.is_terminated());
    assert_eq!(queue.put(9).unwrap_err().into_inner(), 9);
}

#[test]
fn items_queued_before_terminate_can_still_be_taken() {
    let queue = GrowableArrayBlockingQueue::new();
    queue.put(1).unwrap();
    queue.put(2).unwrap();
    queue.terminate();
    assert_eq!(queue.take(), Some(1));
    assert_eq!(queue.poll(), Some(2));
    assert_eq!(queue.take(), None);
}

#[test]
fn drain_to_moves_at_most_max_in_order() {
    let queue = GrowableArrayBlockingQueue::new();
    for i in 0..10 {
        queue.put(i).unwrap();
    }
    let mut out = vec![100];
    assert_eq!(queue.drain_to(&mut out, 4), 4);
    assert_eq!(out, vec![100, 0, 1, 2, 3]);
    assert_eq!(queue.drain_to(&mut out, 0), 0);
    assert_eq!(queue.len(), 6);
}

#[test]
fn trim_follows_pulsars_rule() {
    // 1024 slots holding 150 items, wrapped -> 512.
    let queue = GrowableArrayBlockingQueue::with_capacity(1024);
    for i in 0..1000 {
        queue.put(i).unwrap();
    }
    for _ in 0..1000 {
        queue.poll();
    }
    for i in 0..150 {
        queue.put(i).unwrap();
    }
    assert_eq!(queue.trim(), 512);
    assert_eq!(queue.capacity(), 512);
    assert_eq!(queue.to_vec(), (0..150).collect::<Vec<_>>());
    // 256 / 65 -> no change; 256 / 64 -> 128.
    let queue = GrowableArrayBlockingQueue::with_capacity(256);
    for i in 0..65 {
        queue.put(i).unwrap();
    }
    assert_eq!(queue.trim(), 0);
    queue.poll();
    assert_eq!(queue.trim(), 128);
    // An emptied burst goes back to 64.
    let queue = GrowableArrayBlockingQueue::new();
    let burst = if cfg!(miri) { 2_000 } else { 100_000 };
    for i in 0..burst {
        queue.put(i).unwrap();
    }
    queue.clear();
    assert!(queue.trim() > 0);
    assert_eq!(queue.capacity(), 64);
}

#[test]
fn clear_drops_every_item_once_and_keeps_the_queue_usable() {
    let drops = DropCounter::new();
    let queue = GrowableArrayBlockingQueue::new();
    for _ in 0..100 {
        queue.put(drops.token()).unwrap();
    }
    queue.clear();
    assert_eq!(drops.drops(), 100);
    assert!(queue.is_empty());
    queue.put(drops.token()).unwrap();
    assert_eq!(queue.len(), 1);
}

/// Racing first puts on new queues: each racer may allocate a first block; one is installed
/// and the others go spare, freed with the queue (Miri's leak check sees a lost one). Every
/// item arrives once, and a taker already waiting on the empty queue gets one of them.
#[test]
fn racing_first_puts_on_a_new_queue_lose_no_item_and_leak_no_block() {
    const PRODUCERS: usize = 4;
    let rounds = if cfg!(miri) { 4 } else { 300 };
    for _ in 0..rounds {
        let queue = Arc::new(GrowableArrayBlockingQueue::new());
        let start = Arc::new(Barrier::new(PRODUCERS + 1));
        let taker = {
            let (queue, start) = (Arc::clone(&queue), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                queue.take()
            })
        };
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|n| {
                let (queue, start) = (Arc::clone(&queue), Arc::clone(&start));
                thread::spawn(move || {
                    start.wait();
                    queue.put(n).unwrap();
                })
            })
            .collect();
        for producer in producers {
            producer.join().unwrap();
        }
        let mut got = vec![taker.join().unwrap().expect("an item")];
        queue.drain_to(&mut got, usize::MAX);
        got.sort_unstable();
        assert_eq!(got, (0..PRODUCERS).collect::<Vec<_>>());
    }
}

#[test]
fn every_item_is_dropped_exactly_once_including_on_queue_drop() {
    let drops = DropCounter::new();
    {
        let queue = GrowableArrayBlockingQueue::with_capacity(2);
        for _ in 0..1000 {
            queue.put(drops.token()).unwrap();
        }
        for _ in 0..300 {
            drop(queue.poll().unwrap());
        }
        let mut out = Vec::new();
        queue.drain_to(&mut out, 200);
        drop(out);
        queue.terminate();
        let rejected = queue.put(drops.token()).unwrap_err().into_inner();
        drop(rejected);
        assert_eq!(drops.drops(), 501);
        let snapshot_len = queue.len();
        assert_eq!(snapshot_len, 500);
    }
    assert_eq!(drops.drops(), 1001);
}

/// Starts `producers` threads; producer `p` puts `(p, 0)`, `(p, 1)`, ... up to
/// `(p, per_producer - 1)`.
fn spawn_producers(
    queue: &Arc<GrowableArrayBlockingQueue<(usize, usize)>>,
    producers: usize,
    per_producer: usize,
) -> Vec<thread::JoinHandle<()>> {
    (0..producers)
        .map(|p| {
            let queue = Arc::clone(queue);
            thread::spawn(move || {
                for i in 0..per_producer {
                    queue.put((p, i)).unwrap();
                }
            })
        })
        .collect()
}

/// Asserts that one taker's items hold each producer's items in increasing order.
fn assert_in_producer_order(items: &[(usize, usize)]) {
    let mut last = std::collections::HashMap::new();
    for &(p, i) in items {
        if let Some(previous) = last.insert(p, i) {
            assert!(i > previous, "producer {p}: {i} after {previous}");
        }
    }
}

#[test]
fn four_producers_one_hundred_thousand_each_arrive_complete_and_in_producer_order() {
    const PRODUCERS: usize = 4;
    const PER_PRODUCER: usize = if cfg!(miri) { 1_000 } else { 100_000 };
    let queue = Arc::new(GrowableArrayBlockingQueue::new());
    let producers = spawn_producers(&queue, PRODUCERS, PER_PRODUCER);
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let queue = Arc::clone(&queue);
            thread::spawn(move || {
                let mut items = Vec::new();
                while let Some(item) = queue.take() {
                    items.push(item);
                }
                assert_in_producer_order(&items);
                items.len()
            })
        })
        .collect();
    for producer in producers {
        producer.join().unwrap();
    }
    queue.terminate();
    let total: usize = consumers.into_iter().map(|c| c.join().unwrap()).sum();
    assert_eq!(total, PRODUCERS * PER_PRODUCER);
}

/// Blocking takers spin holding the head lock and take what they know is there without
/// reading the tail; a `poll_timeout` taker and a taker that polls and drains contend for that
/// lock meanwhile. Every item is taken exactly once, each taker sees each producer's items in
/// order, and every taker ends once the queue is terminated and empty.
#[test]
fn blocking_timed_and_draining_takers_racing_producers_take_every_item_once() {
    const PRODUCERS: usize = 3;
    const PER_PRODUCER: usize = if cfg!(miri) { 300 } else { 50_000 };
    let queue = Arc::new(GrowableArrayBlockingQueue::new());
    let producers = spawn_producers(&queue, PRODUCERS, PER_PRODUCER);
    let blocking = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || {
            let mut items = Vec::new();
            while let Some(item) = queue.take() {
                items.push(item);
            }
            items
        })
    };
    let timed = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || {
            let mut items = Vec::new();
            loop {
                match queue.poll_timeout(Duration::from_millis(1)) {
                    Ok(item) => items.push(item),
                    Err(PollTimeoutError::Timeout) => {}
                    Err(PollTimeoutError::Terminated) => return items,
                }
            }
        })
    };
    let draining = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || {
            let mut items = Vec::new();
            loop {
                if let Some(item) = queue.poll() {
                    items.push(item);
                }
                queue.drain_to(&mut items, 7);
                if queue.is_terminated() && queue.is_empty() {
                    return items;
                }
                thread::yield_now();
            }
        })
    };
    for producer in producers {
        producer.join().unwrap();
    }
    queue.terminate();
    let mut taken = vec![vec![false; PER_PRODUCER]; PRODUCERS];
    let mut total = 0;
    for taker in [blocking, timed, draining] {
        let items = taker.join().unwrap();
        assert_in_producer_order(&items);
        for (p, i) in items {
            assert!(!taken[p][i], "({p}, {i}) taken twice");
            taken[p][i] = true;
            total += 1;
        }
    }
    assert_eq!(total, PRODUCERS * PER_PRODUCER, "every item taken");
    assert!(queue.is_empty());
}

#[test]
fn two_producers_with_a_concurrent_trimmer_keep_every_element_in_order() {
    // Under Miri (~10^4 times slower) fewer elements, the same assertions.
    const PER_PRODUCER: usize = if cfg!(miri) { 500 } else { 20_000 };
    let queue = Arc::new(GrowableArrayBlockingQueue::new());
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let trimmer = {
        let (queue, done) = (Arc::clone(&queue), Arc::clone(&done));
        thread::spawn(move || {
            let mut freed = 0;
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                freed += queue.trim();
                thread::yield_now();
            }
            freed
        })
    };
    let producers: Vec<_> = (0..2)
        .map(|p| {
            let queue = Arc::clone(&queue);
            thread::spawn(move || {
                for i in 0..PER_PRODUCER {
                    queue.put((p, i)).unwrap();
                }
            })
        })
        .collect();
    let mut next = [0usize; 2];
    for _ in 0..2 * PER_PRODUCER {
        let (p, i) = queue.take().unwrap();
        assert_eq!(i, next[p], "producer {p} out of order");
        next[p] += 1;
    }
    for producer in producers {
        producer.join().unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    trimmer.join().unwrap();
    assert_eq!(next, [PER_PRODUCER; 2]);
    assert!(queue.is_empty());
}

#[derive(Debug, Clone)]
enum Op {
    Put(u32),
    Poll,
    DrainTo(usize),
    Trim,
    ToVec,
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => any::<u32>().prop_map(Op::Put),
        3 => Just(Op::Poll),
        1 => (0usize..40).prop_map(Op::DrainTo),
        1 => Just(Op::Trim),
        1 => Just(Op::ToVec),
        1 => Just(Op::Clear),
    ]
}

/// Operations per generated case: fewer under Miri (each op is interpreted, ~10^4x slower).
const MAX_OPS: usize = if cfg!(miri) { 100 } else { 400 };

proptest! {
    #![proptest_config(support::proptest_config())]

    /// The queue behaves as a `VecDeque` under any sequence of operations, growth, wrap-around
    /// and trim included, and its capacity stays a power of two that holds every item.
    #[test]
    fn behaves_like_a_vecdeque(initial in 0usize..70, ops in proptest::collection::vec(op(), 0..MAX_OPS)) {
        let queue = GrowableArrayBlockingQueue::with_capacity(initial);
        let mut model = VecDeque::new();
        for op in ops {
            match op {
                Op::Put(v) => { queue.put(v).unwrap(); model.push_back(v); }
                Op::Poll => prop_assert_eq!(queue.poll(), model.pop_front()),
                Op::DrainTo(max) => {
                    let mut out = Vec::new();
                    let n = queue.drain_to(&mut out, max);
                    let expected: Vec<_> = model.drain(..max.min(model.len())).collect();
                    prop_assert_eq!(n, expected.len());
                    prop_assert_eq!(out, expected);
                }
                Op::Trim => {
                    let before = queue.capacity();
                    let freed = queue.trim();
                    let after = queue.capacity();
                    prop_assert_eq!(before - after, freed);
                    if freed > 0 {
                        prop_assert!(before > 64 && model.len() <= before / 4);
                        prop_assert_eq!(after, (2 * model.len()).max(64).next_power_of_two());
                    }
                }
                Op::ToVec => prop_assert_eq!(queue.to_vec(), Vec::from(model.clone())),
                Op::Clear => { queue.clear(); model.clear(); }
            }
            prop_assert_eq!(queue.len(), model.len());
            let capacity = queue.capacity();
            prop_assert!(capacity.is_power_of_two() && capacity >= model.len());
        }
    }
}
