//! Allocation counts of `GrowableArrayBlockingQueue`, deterministic and asserted: a new queue
//! allocates nothing until its first `put`; the first `put` allocates one block, and the
//! puts and takes that stay within it allocate nothing; a queue dropped unused frees nothing.
//! One test per binary: the counting allocator is process-wide.

use pulsar_common::collections::GrowableArrayBlockingQueue;
use pulsar_testkit::alloc::{self, CountingAllocator};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// (allocations, frees) by every thread of the process so far.
fn counts() -> (u64, u64) {
    let now = alloc::snapshot();
    (now.allocations, now.frees)
}

#[test]
fn a_queue_allocates_its_first_block_on_its_first_put_and_nothing_more_within_it() {
    // An idle queue (a consumer's receive queue that never receives) costs nothing but itself.
    let before = counts();
    let unused = GrowableArrayBlockingQueue::<[u64; 8]>::new();
    assert_eq!(unused.len(), 0);
    assert_eq!(unused.poll(), None);
    drop(unused);
    assert_eq!(counts(), before, "an unused queue allocated or freed");

    let queue = GrowableArrayBlockingQueue::<[u64; 8]>::new();
    let (allocations, frees) = counts();
    queue.put([1; 8]).unwrap();
    assert_eq!(
        counts(),
        (allocations + 1, frees),
        "the first put allocates one block"
    );
    // Within the first block (well under its 127 slots, and the 64-slot capacity), nothing
    // more: puts, takes, polls, a drain.
    let mut out = Vec::with_capacity(64);
    let steady = counts();
    for n in 0..50 {
        queue.put([n; 8]).unwrap();
    }
    assert_eq!(queue.take(), Some([1; 8]));
    assert_eq!(queue.poll(), Some([0; 8]));
    assert_eq!(queue.drain_to(&mut out, usize::MAX), 49);
    assert_eq!(
        counts(),
        steady,
        "puts, takes and a drain within the first block"
    );
    drop(out);
    drop(queue);
    let (_, frees_after) = counts();
    assert!(frees_after > frees, "the block is freed with the queue");
}
