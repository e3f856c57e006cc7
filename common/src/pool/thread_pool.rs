//! One thread's pool of one recycler: `LocalPool` (the owner's free list, in its thread-local
//! table) and `Origin` (what other threads reach: the return queue and the counters).

use crate::pool::return_queue::ReturnQueue;
use crate::pool::shared::{Shared, Totals};
use crate::pool::stats::ThreadPoolStats;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// The shared half of a thread's pool. Every object handed out by the pool points here, so
/// another thread can give it back to its origin's queue.
pub(crate) struct Origin<T> {
    pub(crate) shared: Arc<Shared<T>>,
    pub(crate) queue: ReturnQueue<T>,
    /// Counters written only by the owner thread (a load and a store: no read-modify-write on
    /// the hot path); read by `stats` from any thread.
    hits: AtomicU64,
    misses: AtomicU64,
    recycled_local: AtomicU64,
    refused_local: AtomicU64,
    /// Mirror of the owner's credit (objects 0 or 1, and bytes), written by the owner only, so
    /// that `stats` can tell retained objects from the reservation the owner holds.
    credit_objects: AtomicUsize,
    credit_bytes: AtomicUsize,
}

/// Adds one to a counter that only the calling thread writes.
#[inline]
fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

impl<T> Origin<T> {
    /// Objects and bytes the pool retains now: the reservations less the owner's credit.
    pub(crate) fn retained(&self) -> (usize, usize) {
        let (objects, bytes) = self.queue.retained();
        (
            objects.saturating_sub(self.credit_objects.load(Ordering::Relaxed)),
            bytes.saturating_sub(self.credit_bytes.load(Ordering::Relaxed)),
        )
    }

    /// Counts an object the factory made for this pool's owner. Owner thread only (the
    /// counter has one writer).
    pub(crate) fn count_miss(&self) {
        bump(&self.misses);
    }

    /// The counters of this pool, remote ones read under the queue's lock.
    pub(crate) fn totals(&self) -> Totals {
        let remote = self.queue.counts();
        Totals {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            recycled: self.recycled_local.load(Ordering::Relaxed) + remote.accepted,
            dropped: self.refused_local.load(Ordering::Relaxed) + remote.refused_full,
            released: 0,
        }
    }
}

/// Pushes onto a list that never holds more than `cap` items (the pool's reservations
/// guarantee it), growing its storage the way `Vec` does (doubling, from 4) but never past
/// `cap` slots: a cap of 300 costs at most 300 slots, not the 512 plain doubling reaches.
/// Growth is the slow path; a push into spare room is one `Vec::push`.
#[inline]
pub(crate) fn push_within<V>(list: &mut Vec<V>, item: V, cap: usize) {
    if list.len() == list.capacity() {
        let target = (list.capacity() * 2).max(4).min(cap).max(list.len() + 1);
        list.reserve_exact(target - list.len());
    }
    debug_assert!(
        list.len() < cap,
        "the reservations keep a pool within its cap"
    );
    list.push(item);
}

/// A free object: the value, its measured bytes, and its pool. Each object keeps its
/// `Arc<Origin>` for as long as it circulates in one pool (Netty's per-object handle), so a
/// same-thread get and return clone and drop no `Arc`.
type Free<T> = (T, usize, Arc<Origin<T>>);

/// The owner's half: the free list, touched only by the thread whose table holds it.
pub(crate) struct LocalPool<T> {
    /// Free objects; the most recently returned is reused first.
    free: Vec<Free<T>>,
    origin: Arc<Origin<T>>,
    /// The reservation (its bytes) of the last object taken from the free list, kept for the
    /// next return on this thread instead of being given back: a get and a return on the
    /// owner thread then touch no shared counter. At most one object's worth; the counters
    /// still bound what is retained, since they only ever count more than it.
    credit: Option<usize>,
}

impl<T> LocalPool<T> {
    /// A new, empty pool for the calling thread, registered with the recycler.
    pub(crate) fn new(shared: &Arc<Shared<T>>) -> Self {
        let origin = Arc::new(Origin {
            shared: Arc::clone(shared),
            queue: ReturnQueue::new(shared.max_objects_per_thread, shared.max_bytes_per_thread),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            recycled_local: AtomicU64::new(0),
            refused_local: AtomicU64::new(0),
            credit_objects: AtomicUsize::new(0),
            credit_bytes: AtomicUsize::new(0),
        });
        shared.register(&origin);
        Self {
            free: Vec::new(),
            origin,
            credit: None,
        }
    }

    pub(crate) fn origin(&self) -> &Arc<Origin<T>> {
        &self.origin
    }

    /// Takes a free object and its pool handle (after moving in what other threads returned,
    /// if the free list is empty), counting a hit; on `None` the caller calls the factory and,
    /// once it has returned an object, counts the miss ([`Origin::count_miss`]): a factory
    /// that panics hands out nothing, so it counts nothing.
    #[inline]
    pub(crate) fn take(&mut self) -> Option<(T, Arc<Origin<T>>)> {
        if self.free.is_empty() {
            let (free, origin) = (&mut self.free, &self.origin);
            let cap = origin.queue.max_objects();
            origin.queue.drain_with(|value, bytes| {
                push_within(free, (value, bytes, Arc::clone(origin)), cap);
            });
        }
        match self.free.pop() {
            Some((value, bytes, origin)) => {
                // The object's reservation becomes the credit; an older credit is given back.
                if let Some(previous) = self.credit.replace(bytes) {
                    self.origin.queue.release(1, previous);
                }
                self.publish_credit();
                bump(&self.origin.hits);
                Some((value, origin))
            }
            None => {
                // A miss: the object the credit was kept for went elsewhere (typically it is
                // returned from another thread, which cannot use the credit). Kept, the credit
                // would refuse those returns for as long as this thread only gets: with a cap
                // of one object, every one of them, forever.
                if let Some(credit) = self.credit.take() {
                    self.origin.queue.release(1, credit);
                    self.publish_credit();
                }
                None
            }
        }
    }

    /// Keeps an object the owner thread returned (with its handle to this pool), unless a
    /// cap would be passed.
    ///
    /// # Errors
    ///
    /// The object and handle, refused by a cap (and counted); the caller drops them.
    #[inline]
    pub(crate) fn put(
        &mut self,
        value: T,
        bytes: usize,
        origin: Arc<Origin<T>>,
    ) -> Result<(), (T, Arc<Origin<T>>)> {
        debug_assert!(Arc::ptr_eq(&origin, &self.origin));
        let queue = &self.origin.queue;
        let accepted = match self.credit.take() {
            // The credit covers it: give back only the bytes it does not need.
            Some(credit) if bytes <= credit => {
                queue.release(0, credit - bytes);
                true
            }
            Some(credit) => {
                let fits = queue.try_reserve_bytes(bytes - credit);
                if !fits {
                    queue.release(1, credit);
                }
                fits
            }
            None => queue.try_reserve(bytes),
        };
        self.publish_credit();
        if accepted {
            let cap = self.origin.queue.max_objects();
            push_within(&mut self.free, (value, bytes, origin), cap);
            bump(&self.origin.recycled_local);
            Ok(())
        } else {
            bump(&self.origin.refused_local);
            Err((value, origin))
        }
    }

    /// Mirrors the credit for `stats` (plain stores: the owner is the only writer).
    #[inline]
    fn publish_credit(&self) {
        let (objects, bytes) = self.credit.map_or((0, 0), |bytes| (1, bytes));
        self.origin.credit_objects.store(objects, Ordering::Relaxed);
        self.origin.credit_bytes.store(bytes, Ordering::Relaxed);
    }

    pub(crate) fn stats(&self) -> ThreadPoolStats {
        let totals = self.origin.totals();
        let (size, retained_bytes) = self.origin.retained();
        ThreadPoolStats {
            size,
            queued: self.origin.queue.counts().queued,
            retained_bytes,
            capacity: self.origin.queue.max_objects(),
            byte_capacity: self.origin.queue.max_bytes(),
            free_list_slots: self.free.capacity(),
            hits: totals.hits,
            misses: totals.misses,
            recycled: totals.recycled,
            dropped: totals.dropped,
        }
    }
}

impl<T> Drop for LocalPool<T> {
    /// The owner thread exited (or the recycler was dropped): close the return queue so no
    /// object is ever stranded there, fold the counters into the recycler's totals, and free
    /// every retained object — after every lock is released, since `T::drop` is user code.
    fn drop(&mut self) {
        let queued = self.origin.queue.close();
        let free = std::mem::take(&mut self.free);
        let released = queued.len() + free.len();
        let bytes = queued.iter().map(|(_, bytes)| bytes).sum::<usize>()
            + free.iter().map(|(_, bytes, _)| bytes).sum::<usize>();
        let (credit_objects, credit_bytes) = self.credit.take().map_or((0, 0), |b| (1, b));
        self.publish_credit();
        self.origin
            .queue
            .release(released + credit_objects, bytes + credit_bytes);
        self.origin.shared.retire(&self.origin, released);
        drop(queued);
        drop(free);
    }
}
