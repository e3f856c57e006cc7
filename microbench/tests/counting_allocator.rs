//! The counting allocator counts every allocation, free and reallocation with its bytes, per
//! thread and for the whole process.

use microbench::alloc::{self, AllocStats, CountingAllocator};
use std::hint::black_box;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

/// What the calling thread alone did while running `f`.
fn on_this_thread(f: impl FnOnce()) -> AllocStats {
    let before = alloc::thread_snapshot();
    f();
    alloc::thread_snapshot().since(&before)
}

#[test]
fn the_allocator_reports_itself_installed() {
    assert!(alloc::is_active());
}

#[test]
fn an_allocation_and_its_free_are_counted_with_their_bytes() {
    let stats = on_this_thread(|| drop(black_box(Box::new([0u8; 100]))));
    assert_eq!(stats.allocations, 1);
    assert_eq!(stats.bytes_allocated, 100);
    assert_eq!(stats.frees, 1);
    assert_eq!(stats.bytes_freed, 100);
    assert_eq!(stats.live_bytes(), 0);
}

#[test]
fn realloc_growth_counts_as_one_allocation_and_its_growth_as_bytes() {
    let mut v: Vec<u8> = Vec::with_capacity(16);
    let grown = on_this_thread(|| v.reserve_exact(64 - v.len()));
    assert_eq!(v.capacity(), 64);
    assert_eq!(grown.allocations, 1);
    assert_eq!(grown.reallocations, 1);
    assert_eq!(grown.bytes_allocated, 48, "only the growth counts");
    assert_eq!(grown.frees, 0);
    let shrunk = on_this_thread(|| v.shrink_to(32));
    assert_eq!(shrunk.reallocations, 1);
    assert_eq!(shrunk.bytes_freed, 32, "shrinkage counts as freed bytes");
    let dropped = on_this_thread(|| drop(v));
    assert_eq!(dropped.bytes_freed, 32);
}

#[test]
fn zeroed_allocations_are_counted() {
    let stats = on_this_thread(|| drop(black_box(vec![0u64; 32])));
    assert_eq!(stats.allocations, 1);
    assert_eq!(stats.bytes_allocated, 256);
}

#[test]
fn other_threads_count_in_their_own_slots_and_in_the_process_snapshot() {
    let before = alloc::snapshot();
    let theirs = std::thread::spawn(|| on_this_thread(|| drop(black_box(Box::new([0u8; 1000])))))
        .join()
        .unwrap();
    let process = alloc::snapshot().since(&before);
    assert_eq!(theirs.allocations, 1);
    assert_eq!(theirs.bytes_allocated, 1000);
    assert!(
        process.allocations >= 1,
        "the process snapshot sums every thread"
    );
    assert!(process.bytes_allocated >= 1000);
}
