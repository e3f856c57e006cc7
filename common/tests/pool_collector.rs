//! `ByteBufferCollector`: writes, geometric growth, the cache-line placement of the bytes
//! (and a proptest model against a `Vec<u8>`), pooled reuse, the 4 MiB and per-thread byte
//! caps, and zero allocations per batch once warm (counted per thread).
#![cfg(not(loom))]

use proptest::prelude::*;
use pulsar_common::pool::{
    AdaptiveBufAllocator, ByteBufferCollector, CollectorPoolConfig, Recycler,
};
use pulsar_testkit::alloc::{self, CountingAllocator};

/// Counts allocations per thread, so tests running in parallel do not see each other's.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Allocations (reallocations included) the calling thread made while `f` ran.
fn allocations_in(f: impl FnOnce()) -> u64 {
    alloc::measure_thread(f).1.allocations
}

/// One replication batch: `entries` length-prefixed entries of `size` bytes.
fn build_batch(collector: &mut ByteBufferCollector, entries: usize, entry: &[u8]) {
    for _ in 0..entries {
        collector.put_u32(entry.len() as u32);
        collector.put(entry);
    }
}

// ---- writing ----------------------------------------------------------------------------

#[test]
fn writes_are_appended_in_order() {
    let mut collector = ByteBufferCollector::new();
    collector.put(b"ab");
    collector.put_u8(b'c');
    collector.put_u32(0x0102_0304);
    collector.put_u64(5);
    collector.extend(b"xy");
    assert_eq!(
        collector.as_slice(),
        b"abc\x01\x02\x03\x04\0\0\0\0\0\0\0\x05xy"
    );
    assert_eq!(collector.len(), 17);
}

#[test]
fn a_new_collector_allocates_nothing_until_written() {
    assert_eq!(allocations_in(|| drop(ByteBufferCollector::new())), 0);
}

#[test]
fn growth_is_geometric() {
    let mut collector = ByteBufferCollector::new();
    let mut capacities = vec![collector.capacity()];
    // Under Miri (~10^4 times slower) 4 KiB of writes instead of 1 MiB, the same rule.
    let writes: usize = if cfg!(miri) { 1 << 12 } else { 1 << 20 };
    for _ in 0..writes {
        collector.put_u8(1);
        if collector.capacity() != *capacities.last().unwrap() {
            capacities.push(collector.capacity());
        }
    }
    // 0, then 64 doubling up to `writes`: 15 growths for a million one-byte writes.
    let growths = writes.trailing_zeros() - 64u32.trailing_zeros() + 1;
    let expected: Vec<usize> = std::iter::once(0)
        .chain((0..growths).map(|k| 64 << k))
        .collect();
    assert_eq!(capacities, expected);
}

#[test]
fn a_write_larger_than_double_grows_to_exactly_what_it_needs() {
    let mut collector = ByteBufferCollector::allocate(100);
    collector.put(&[0; 1000]);
    assert_eq!(collector.capacity(), 1000);
}

#[test]
fn into_bytes_hands_the_buffer_over_without_copying() {
    let mut collector = ByteBufferCollector::allocate(16);
    collector.put(b"payload");
    assert_eq!(line_offset(&collector), 0);
    let address = collector.as_slice().as_ptr();
    let bytes = collector.into_bytes();
    assert_eq!(bytes.as_ptr(), address);
    assert_eq!(&bytes[..], b"payload");
}

// ---- placement --------------------------------------------------------------------------

/// Where a collector's bytes start, as an offset into a 64-byte cache line.
fn line_offset(collector: &ByteBufferCollector) -> usize {
    collector.as_slice().as_ptr() as usize % 64
}

#[test]
fn the_bytes_start_on_a_cache_line_however_the_buffer_was_made_or_grown() {
    for size in [1usize, 16, 100, 1024, 4096, 300_000] {
        let mut collector = ByteBufferCollector::allocate(size);
        assert_eq!(line_offset(&collector), 0, "allocate({size})");
        // Growth by the allocator in place or by a move, many times over.
        let mut expected = Vec::new();
        for i in 0..(size * 3).min(200_000) {
            collector.put_u8(i as u8);
            expected.push(i as u8);
            assert_eq!(
                line_offset(&collector),
                0,
                "allocate({size}), {} bytes",
                i + 1
            );
        }
        assert_eq!(collector.as_slice(), &expected[..]);
    }
    let recycler = ByteBufferCollector::new_recycler(CollectorPoolConfig::default());
    for size in [10usize, 5000, 100, 70_000] {
        let mut pooled = ByteBufferCollector::allocate_from(&recycler, size);
        assert_eq!(line_offset(&pooled), 0, "pooled, {size}");
        pooled.put(&vec![1; size * 2]);
        assert_eq!(line_offset(&pooled), 0, "pooled, grown from {size}");
    }
}

#[test]
fn clones_and_comparisons_see_only_the_bytes_written() {
    let mut collector = ByteBufferCollector::allocate(10);
    collector.put(b"abc");
    let copy = collector.clone();
    assert_eq!(copy.as_slice(), b"abc");
    assert_eq!(line_offset(&copy), 0);
    assert_eq!(copy, collector);
    let mut other = ByteBufferCollector::new();
    other.put(b"abc");
    assert_eq!(
        other, collector,
        "equal bytes, other capacity and placement"
    );
    other.put_u8(b'd');
    assert_ne!(other, collector);
}

/// One step of the model test.
#[derive(Debug, Clone)]
enum Step {
    Put(Vec<u8>),
    PutU8(u8),
    PutU64(u64),
    Reserve(usize),
    Clear,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 0..3000).prop_map(Step::Put),
        2 => any::<u8>().prop_map(Step::PutU8),
        1 => any::<u64>().prop_map(Step::PutU64),
        1 => (0usize..20_000).prop_map(Step::Reserve),
        1 => Just(Step::Clear),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 256 },
        ..ProptestConfig::default()
    })]

    /// Against a `Vec<u8>`: after every step the collector holds exactly the model's bytes,
    /// from a cache line, its capacity covers them (and any reserve), and it grows only when
    /// a write does not fit; at the end both hand-overs give the model's bytes.
    #[test]
    fn a_collector_behaves_as_a_vec_of_its_bytes(
        initial in 0usize..5000,
        steps in prop::collection::vec(step(), 1..60),
        as_bytes in any::<bool>(),
    ) {
        let mut collector = ByteBufferCollector::allocate(initial);
        let mut model: Vec<u8> = Vec::new();
        for step in steps {
            let capacity_before = collector.capacity();
            let needed = match &step {
                Step::Put(bytes) => { collector.put(bytes); model.extend_from_slice(bytes); model.len() }
                Step::PutU8(byte) => { collector.put_u8(*byte); model.push(*byte); model.len() }
                Step::PutU64(value) => {
                    collector.put_u64(*value);
                    model.extend_from_slice(&value.to_be_bytes());
                    model.len()
                }
                Step::Reserve(additional) => { collector.reserve(*additional); model.len() + additional }
                Step::Clear => { collector.clear(); model.clear(); 0 }
            };
            prop_assert_eq!(collector.as_slice(), &model[..]);
            prop_assert_eq!(collector.len(), model.len());
            prop_assert!(collector.capacity() >= needed);
            if needed <= capacity_before {
                prop_assert_eq!(collector.capacity(), capacity_before, "grew without need");
            }
            if collector.capacity() > 0 {
                prop_assert_eq!(line_offset(&collector), 0);
            }
        }
        if as_bytes {
            prop_assert_eq!(&collector.into_bytes()[..], &model[..]);
        } else {
            prop_assert_eq!(collector.into_vec(), model);
        }
    }
}

// ---- pooling ----------------------------------------------------------------------------

#[test]
fn allocate_by_recycler_reuses_a_buffer_that_is_large_enough() {
    let recycler = ByteBufferCollector::new_recycler(CollectorPoolConfig::default());
    let mut first = ByteBufferCollector::allocate_from(&recycler, 4096);
    first.put(b"old");
    let address = first.as_slice().as_ptr();
    drop(first);
    let second = ByteBufferCollector::allocate_from(&recycler, 1000);
    assert!(second.is_empty(), "cleared on return");
    assert_eq!(second.as_slice().as_ptr(), address, "same buffer");
    assert_eq!(second.capacity(), 4096);
}

/// A recycler built without `new_recycler`'s clearing hook (any `Recycler<ByteBufferCollector>`
/// the API accepts): `allocate_from` still hands out an empty collector, never the bytes of
/// the message written before (audit of 2026-12-07: the next message went out as "secrethi").
#[test]
fn allocate_from_a_recycler_without_a_reset_hook_hands_out_an_empty_collector() {
    let recycler = Recycler::new(ByteBufferCollector::new);
    let mut first = ByteBufferCollector::allocate_from(&recycler, 64);
    first.put(b"secret");
    drop(first);
    let mut second = ByteBufferCollector::allocate_from(&recycler, 64);
    assert!(second.is_empty());
    second.put(b"hi");
    assert_eq!(second.as_slice(), b"hi");
    assert_eq!(recycler.stats().hits, 1, "the same collector, reused");
    let handle = AdaptiveBufAllocator::default().new_handle();
    drop(second);
    let third = handle.allocate_from(&recycler);
    assert!(third.is_empty(), "the adaptive handle's path too");
}

#[test]
fn allocate_by_recycler_replaces_a_smaller_buffer_with_one_of_exactly_the_size() {
    let recycler = ByteBufferCollector::new_recycler(CollectorPoolConfig::default());
    drop(ByteBufferCollector::allocate_from(&recycler, 100));
    let bigger = ByteBufferCollector::allocate_from(&recycler, 5000);
    assert_eq!(bigger.capacity(), 5000);
    assert_eq!(recycler.stats().hits, 1, "the collector itself is reused");
}

#[test]
fn a_buffer_over_4_mib_is_freed_on_return_and_the_collector_pooled_empty() {
    let recycler = ByteBufferCollector::new_recycler(CollectorPoolConfig::default());
    let mut big = ByteBufferCollector::allocate_from(&recycler, 1024);
    big.put(&vec![0; ByteBufferCollector::MAX_POOLED_CAPACITY + 1]);
    drop(big);
    let pool = recycler.thread_stats();
    assert_eq!((pool.size, pool.retained_bytes), (1, 0));
    assert_eq!(recycler.get().capacity(), 0);
}

#[test]
fn a_buffer_of_exactly_4_mib_is_kept() {
    let recycler = ByteBufferCollector::new_recycler(CollectorPoolConfig::default());
    drop(ByteBufferCollector::allocate_from(
        &recycler,
        ByteBufferCollector::MAX_POOLED_CAPACITY,
    ));
    assert_eq!(
        recycler.thread_stats().retained_bytes,
        ByteBufferCollector::MAX_POOLED_CAPACITY
    );
}

#[test]
fn retained_bytes_per_thread_stay_within_the_cap_after_a_burst() {
    const MIB: usize = 1024 * 1024;
    let recycler = ByteBufferCollector::new_recycler(CollectorPoolConfig {
        max_collectors_per_thread: 256,
        max_pooled_capacity: 4 * MIB,
        max_retained_bytes_per_thread: MIB,
    });
    let burst: Vec<_> = (0..64)
        .map(|_| ByteBufferCollector::allocate_from(&recycler, 256 * 1024))
        .collect();
    drop(burst);
    let pool = recycler.thread_stats();
    assert_eq!((pool.size, pool.retained_bytes), (4, MIB));
    assert_eq!(pool.dropped, 60);
    assert_eq!(recycler.stats().retained_bytes, MIB as u64);
}

#[test]
fn the_default_pool_keeps_at_most_16_mib_per_thread() {
    let recycler = ByteBufferCollector::default_recycler();
    assert_eq!(recycler.max_retained_bytes_per_thread(), 16 * 1024 * 1024);
    assert_eq!(recycler.max_objects_per_thread(), 256);
}

// ---- zero allocations once warm ---------------------------------------------------------

/// Steady batches measured after the warm-up; under Miri (~10^4 times slower) fewer, the
/// same zero.
const STEADY_BATCHES: usize = if cfg!(miri) { 5 } else { 100 };

#[test]
fn building_same_sized_batches_from_the_pool_allocates_nothing_once_warm() {
    let recycler = ByteBufferCollector::new_recycler(CollectorPoolConfig::default());
    for size in [16usize, 64, 128, 256, 512, 1024, 2048] {
        let entry = vec![7u8; size];
        let batch_bytes = 256 * (4 + size);
        let one_batch = || {
            let mut collector = ByteBufferCollector::allocate_from(&recycler, 1024);
            build_batch(&mut collector, 256, &entry);
            assert_eq!(collector.len(), batch_bytes);
        };
        one_batch(); // warm: the pool and the buffer grow once
        let steady = allocations_in(|| (0..STEADY_BATCHES).for_each(|_| one_batch()));
        assert_eq!(steady, 0, "entry size {size}");
    }
}

#[test]
fn a_pooled_batch_sized_by_the_adaptive_guess_allocates_nothing_once_the_guess_settles() {
    let recycler = ByteBufferCollector::new_recycler(CollectorPoolConfig::default());
    let mut handle = AdaptiveBufAllocator::default().new_handle();
    let entry = vec![7u8; 512];
    let mut one_batch = || {
        let mut collector = handle.allocate_from(&recycler);
        build_batch(&mut collector, 256, &entry);
        handle.record(collector.len());
    };
    for _ in 0..10 {
        one_batch();
    }
    assert_eq!(
        allocations_in(|| (0..STEADY_BATCHES).for_each(|_| one_batch())),
        0
    );
}

#[test]
fn a_fresh_collector_per_batch_allocates_on_every_batch() {
    let entry = vec![7u8; 64];
    let allocations = allocations_in(|| {
        for _ in 0..10 {
            let mut collector = ByteBufferCollector::allocate(1024);
            build_batch(&mut collector, 256, &entry);
        }
    });
    // 1 KiB doubling to 17 KiB+: one allocation and five growths per batch.
    assert_eq!(allocations, 10 * 6);
}

#[test]
fn a_pooled_collector_can_be_used_through_a_plain_recycler_handle() {
    let recycler: Recycler<ByteBufferCollector> =
        ByteBufferCollector::new_recycler(CollectorPoolConfig::default());
    let mut collector = recycler.get();
    collector.put(b"x");
    let kept = collector.detach().into_vec();
    assert_eq!(kept, b"x");
}
