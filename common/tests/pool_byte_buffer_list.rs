//! `RecyclableByteBufferList`: counting, zero-copy slices, flattening, and pooled reuse that
//! releases every slice and bounds the slot array.
#![cfg(not(loom))]

use bytes::Bytes;
use pulsar_common::pool::{ByteBufferCollector, ListPoolConfig, RecyclableByteBufferList};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Backing memory for a `Bytes` that reports when the last reference to it is gone.
struct Owned {
    data: Vec<u8>,
    drops: Arc<AtomicUsize>,
}

impl AsRef<[u8]> for Owned {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn tracked(data: &[u8], drops: &Arc<AtomicUsize>) -> Bytes {
    Bytes::from_owner(Owned {
        data: data.to_vec(),
        drops: Arc::clone(drops),
    })
}

#[test]
fn add_counts_slices_and_bytes() {
    let mut list = RecyclableByteBufferList::new();
    assert!(list.is_empty());
    list.add(Bytes::from_static(b"abc"));
    list.add(Bytes::from_static(b""));
    list.add(Bytes::from_static(b"de"));
    assert_eq!((list.len(), list.byte_len()), (3, 5));
}

#[test]
fn slices_are_shared_not_copied() {
    let body = Bytes::from(vec![1u8; 64]);
    let mut list = RecyclableByteBufferList::with_capacity(4);
    list.add(body.slice(8..16));
    assert_eq!(list.as_slices()[0].as_ptr(), body[8..].as_ptr());
}

#[test]
fn copy_to_concatenates_in_order() {
    let mut list = RecyclableByteBufferList::new();
    for part in [&b"one"[..], b"-", b"two"] {
        list.add(Bytes::copy_from_slice(part));
    }
    let mut collector = ByteBufferCollector::new();
    collector.put(b">");
    list.copy_to(&mut collector);
    assert_eq!(collector.as_slice(), b">one-two");
    assert_eq!(&list.to_bytes()[..], b"one-two");
    let parts: Vec<&[u8]> = list.iter().map(|slice| &slice[..]).collect();
    assert_eq!(parts, [&b"one"[..], b"-", b"two"]);
}

#[test]
fn to_bytes_of_a_single_slice_is_that_slice() {
    let only = Bytes::from(vec![9u8; 32]);
    let mut list = RecyclableByteBufferList::new();
    list.add(only.clone());
    assert_eq!(list.to_bytes().as_ptr(), only.as_ptr());
    assert!(RecyclableByteBufferList::new().to_bytes().is_empty());
}

#[test]
fn a_returned_list_releases_every_slice_and_comes_back_empty() {
    let recycler = RecyclableByteBufferList::new_recycler(ListPoolConfig::default());
    let drops = Arc::new(AtomicUsize::new(0));
    let mut list = recycler.get();
    for i in 0..5u8 {
        list.add(tracked(&[i; 10], &drops));
    }
    let slots = list.as_slices().as_ptr();
    drop(list);
    assert_eq!(drops.load(Ordering::SeqCst), 5, "slices released on return");
    let again = recycler.get();
    assert_eq!((again.len(), again.byte_len()), (0, 0));
    assert_eq!(again.as_slices().as_ptr(), slots, "slot array kept");
}

#[test]
fn a_returned_list_with_too_many_slots_frees_its_array() {
    let recycler = RecyclableByteBufferList::new_recycler(ListPoolConfig {
        max_lists_per_thread: 8,
        max_pooled_slots: 16,
    });
    let mut list = recycler.get();
    for _ in 0..100 {
        list.add(Bytes::from_static(b"x"));
    }
    drop(list);
    assert_eq!(recycler.thread_stats().retained_bytes, 0);
    assert_eq!(recycler.get().as_slices().len(), 0);
}

#[test]
fn new_instance_comes_from_the_process_wide_pool() {
    let mut list = RecyclableByteBufferList::new_instance();
    list.add(Bytes::from_static(b"abc"));
    drop(list);
    let pool = RecyclableByteBufferList::default_recycler().thread_stats();
    assert_eq!((pool.size, pool.capacity), (1, 512));
    assert!(RecyclableByteBufferList::new_instance().is_empty());
}
