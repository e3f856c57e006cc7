//! `Recycler`: reuse, caps, reset hook, cross-thread return, thread exit, drops, panics.
#![cfg(not(loom))]

use pulsar_common::pool::{Pooled, Recycler, RecyclerStats};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::thread;

/// A pooled object that knows its identity, its size in bytes, and reports its drop.
struct Token {
    id: u64,
    bytes: usize,
    /// Set by the test while the token is handed out; cleared by the reset hook.
    dirty: bool,
    drops: Arc<AtomicUsize>,
}

impl Drop for Token {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// A recycler of tokens numbered 0, 1, 2, ... with the given caps, measuring `Token::bytes`
/// and clearing `dirty` on reset; plus its drop counter.
fn tokens(max_objects: usize, max_bytes: usize) -> (Recycler<Token>, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    let next_id = Arc::new(AtomicU64::new(0));
    let factory_drops = Arc::clone(&drops);
    let recycler = Recycler::builder(move || Token {
        id: next_id.fetch_add(1, Ordering::SeqCst),
        bytes: 0,
        dirty: false,
        drops: Arc::clone(&factory_drops),
    })
    .max_objects_per_thread(max_objects)
    .max_retained_bytes_per_thread(max_bytes)
    .retained_bytes(|token| token.bytes)
    .reset(|token| token.dirty = false)
    .build();
    (recycler, drops)
}

fn drops(counter: &AtomicUsize) -> usize {
    counter.load(Ordering::SeqCst)
}

/// Asserts the documented identity `hits + misses == recycled + dropped + detached +
/// outstanding`: every object handed out was counted once on its return, or is still out.
fn assert_identity<T: Send + 'static>(recycler: &Recycler<T>, outstanding: u64) {
    let stats = recycler.stats();
    assert_eq!(
        stats.hits + stats.misses,
        stats.recycled + stats.dropped + stats.detached + outstanding,
        "{stats:?} with {outstanding} outstanding"
    );
}

thread_local! {
    /// A closure to run when this thread's thread-locals are destroyed (see [`at_exit`]).
    static AT_EXIT: std::cell::RefCell<AtExit> = const { std::cell::RefCell::new(AtExit(None)) };
}

/// Runs its closure when dropped: during thread exit, as the thread-local [`AT_EXIT`].
struct AtExit(Option<Box<dyn FnOnce()>>);

impl Drop for AtExit {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// Runs `f` from a thread-local destructor when the calling thread exits. Thread-local
/// destructors run in reverse order of first use, so registered *before* the thread first
/// uses a recycler, `f` runs after the thread's pool table is gone; registered after, before.
fn at_exit(f: impl FnOnce() + 'static) {
    AT_EXIT.with(|slot| slot.borrow_mut().0 = Some(Box::new(f)));
}

// ---- smoke ------------------------------------------------------------------------------

#[test]
fn get_on_an_empty_pool_calls_the_factory_and_counts_a_miss() {
    let (recycler, _) = tokens(8, usize::MAX);
    let token = recycler.get();
    assert_eq!(token.id, 0);
    assert!(token.is_pooled());
    let stats = recycler.stats();
    assert_eq!((stats.hits, stats.misses, stats.threads), (0, 1, 1));
}

#[test]
fn an_object_returned_on_its_own_thread_is_handed_out_again() {
    let (recycler, drops_seen) = tokens(8, usize::MAX);
    drop(recycler.get());
    let again = recycler.get();
    assert_eq!(again.id, 0);
    let stats = recycler.stats();
    assert_eq!((stats.hits, stats.misses, stats.recycled), (1, 1, 1));
    assert_eq!(drops(&drops_seen), 0);
}

#[test]
fn the_most_recently_returned_object_is_reused_first() {
    let (recycler, _) = tokens(8, usize::MAX);
    let (a, b, c) = (recycler.get(), recycler.get(), recycler.get());
    drop(a);
    drop(c);
    drop(b);
    let order: Vec<u64> = (0..3).map(|_| recycler.get().detach().id).collect();
    assert_eq!(order, [1, 2, 0]);
}

#[test]
fn recycle_gives_the_object_back_like_drop() {
    let (recycler, _) = tokens(8, usize::MAX);
    recycler.get().recycle();
    assert_eq!(recycler.thread_stats().size, 1);
    assert_eq!(recycler.get().id, 0);
}

#[test]
fn detach_takes_the_object_out_of_circulation_for_good() {
    let (recycler, drops_seen) = tokens(8, usize::MAX);
    let token: Token = recycler.get().detach();
    assert_eq!(recycler.thread_stats().size, 0);
    drop(token);
    assert_eq!(drops(&drops_seen), 1);
    let stats = recycler.stats();
    assert_eq!((stats.detached, stats.recycled, stats.dropped), (1, 0, 0));
    assert_eq!(recycler.get().id, 1, "the detached object is not reused");
}

#[test]
fn the_thread_pool_reports_its_caps_before_first_use() {
    let (recycler, _) = tokens(7, 700);
    let pool = recycler.thread_stats();
    assert_eq!((pool.size, pool.capacity, pool.byte_capacity), (0, 7, 700));
    assert_eq!(recycler.stats().threads, 0);
}

// ---- caps -------------------------------------------------------------------------------

#[test]
fn returns_beyond_the_object_cap_are_dropped_not_kept() {
    let (recycler, drops_seen) = tokens(2, usize::MAX);
    let held: Vec<Pooled<Token>> = (0..5).map(|_| recycler.get()).collect();
    drop(held);
    let pool = recycler.thread_stats();
    assert_eq!((pool.size, pool.recycled, pool.dropped), (2, 2, 3));
    assert_eq!(drops(&drops_seen), 3);
    assert_eq!(recycler.stats().dropped, 3);
}

#[test]
fn returns_beyond_the_byte_cap_are_dropped_not_kept() {
    let (recycler, drops_seen) = tokens(100, 100);
    let mut held: Vec<Pooled<Token>> = (0..4).map(|_| recycler.get()).collect();
    for token in &mut held {
        token.bytes = 40;
    }
    drop(held);
    let pool = recycler.thread_stats();
    assert_eq!((pool.size, pool.retained_bytes, pool.dropped), (2, 80, 2));
    assert_eq!(drops(&drops_seen), 2);
}

#[test]
fn taking_an_object_gives_its_bytes_back_to_the_cap() {
    let (recycler, _) = tokens(100, 100);
    let mut token = recycler.get();
    token.bytes = 100;
    drop(token);
    assert_eq!(recycler.thread_stats().retained_bytes, 100);
    let token = recycler.get();
    assert_eq!(recycler.thread_stats().retained_bytes, 0);
    drop(token);
    assert_eq!(recycler.thread_stats().retained_bytes, 100);
}

#[test]
fn an_object_alone_over_the_byte_cap_is_never_kept() {
    let (recycler, drops_seen) = tokens(100, 100);
    let mut token = recycler.get();
    token.bytes = 101;
    drop(token);
    assert_eq!(recycler.thread_stats().size, 0);
    assert_eq!(drops(&drops_seen), 1);
}

#[test]
fn a_zero_object_cap_disables_pooling() {
    let (recycler, drops_seen) = tokens(0, usize::MAX);
    for _ in 0..3 {
        drop(recycler.get());
    }
    let stats = recycler.stats();
    assert_eq!((stats.hits, stats.misses, stats.dropped), (0, 3, 3));
    assert_eq!(drops(&drops_seen), 3);
}

#[test]
fn a_cap_of_300_objects_never_allocates_more_than_300_free_list_slots() {
    let (recycler, drops_seen) = tokens(300, usize::MAX);
    let held: Vec<Pooled<Token>> = (0..400).map(|_| recycler.get()).collect();
    drop(held);
    let pool = recycler.thread_stats();
    assert_eq!((pool.size, pool.recycled, pool.dropped), (300, 300, 100));
    assert!(
        pool.free_list_slots <= 300,
        "{} slots for a cap of 300",
        pool.free_list_slots
    );
    assert_eq!(drops(&drops_seen), 100);
    assert_identity(&recycler, 0);
}

#[test]
fn objects_returned_by_other_threads_never_grow_the_free_list_past_the_cap() {
    let (recycler, _) = tokens(300, usize::MAX);
    let held: Vec<Pooled<Token>> = (0..300).map(|_| recycler.get()).collect();
    thread::spawn(move || drop(held)).join().unwrap();
    assert_eq!(recycler.thread_stats().queued, 300);
    drop(recycler.get()); // drains the 300 queued objects onto the free list
    let pool = recycler.thread_stats();
    assert_eq!((pool.size, pool.queued), (300, 0));
    assert!(pool.free_list_slots <= 300, "{}", pool.free_list_slots);
    assert_identity(&recycler, 0);
}

// ---- reset hook -------------------------------------------------------------------------

#[test]
fn the_reset_hook_runs_before_an_object_is_reused() {
    let (recycler, _) = tokens(8, usize::MAX);
    let mut token = recycler.get();
    token.dirty = true;
    drop(token);
    assert!(!recycler.get().dirty);
}

#[test]
fn the_reset_hook_runs_on_the_returning_thread() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let recycler = Recycler::builder(|| 0u8)
        .reset(move |_| {
            log.lock()
                .unwrap()
                .push(thread::current().name().map(str::to_owned))
        })
        .build();
    let object = recycler.get();
    thread::Builder::new()
        .name("returner".into())
        .spawn(move || drop(object))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), [Some("returner".to_owned())]);
}

#[test]
fn a_panicking_reset_hook_drops_the_object_and_counts_it() {
    let drops_seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&drops_seen);
    let recycler = Recycler::builder(move || Token {
        id: 0,
        bytes: 0,
        dirty: false,
        drops: Arc::clone(&counter),
    })
    .reset(|token| {
        if token.dirty {
            panic!("cannot reset a dirty token");
        }
    })
    .build();
    let mut token = recycler.get();
    token.dirty = true;
    drop(token); // does not panic
    assert_eq!(drops(&drops_seen), 1);
    let stats = recycler.stats();
    assert_eq!((stats.dropped, stats.recycled, stats.retained), (1, 0, 0));
    drop(recycler.get()); // still usable
    assert_eq!(recycler.stats().recycled, 1);
}

#[test]
fn a_factory_that_panics_reaches_the_caller_and_leaves_the_pool_usable() {
    let fail = Arc::new(AtomicBool::new(true));
    let should_fail = Arc::clone(&fail);
    let recycler = Recycler::new(move || {
        if should_fail.swap(false, Ordering::SeqCst) {
            panic!("factory failed");
        }
        7u32
    });
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| recycler.get()));
    assert!(outcome.is_err());
    assert_eq!(recycler.stats().misses, 0, "no object was handed out");
    assert_eq!(*recycler.get(), 7);
    assert_eq!(recycler.stats().misses, 1);
    assert_identity(&recycler, 0);
}

#[test]
fn an_object_dropped_while_its_holder_panics_is_dropped_without_running_the_reset_hook() {
    let resets = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&resets);
    let recycler = Recycler::builder(|| 0u8)
        .reset(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    let held = recycler.get();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _held = held;
        panic!("holder fails");
    }));
    assert!(outcome.is_err());
    assert_eq!(resets.load(Ordering::SeqCst), 0);
    assert_eq!(recycler.stats().dropped, 1);
    assert_eq!(recycler.thread_stats().size, 0);
}

#[test]
fn the_owner_keeps_room_for_the_object_it_took_last() {
    // Cap 1. The owner takes the pooled object; its place is kept for it (the credit), so
    // its own return is kept, whatever was returned meanwhile.
    let (recycler, drops_seen) = tokens(1, usize::MAX);
    drop(recycler.get());
    for _ in 0..3 {
        let mine = recycler.get();
        assert_eq!(
            recycler.thread_stats().size,
            0,
            "the credit is not counted as held"
        );
        drop(mine);
        let pool = recycler.thread_stats();
        assert_eq!(
            (pool.size, pool.dropped),
            (1, 0),
            "the owner's return is kept"
        );
    }
    assert_eq!(recycler.thread_stats().hits, 3);
    assert_eq!(drops(&drops_seen), 0);
}

#[test]
fn a_miss_gives_the_credit_back() {
    // Cap 1. After a hit the owner holds the credit; a miss means its object went elsewhere,
    // so the credit is given back and a return from another thread finds room.
    let (recycler, drops_seen) = tokens(1, usize::MAX);
    drop(recycler.get());
    let mine = recycler.get(); // hit: the credit
    let stranger = recycler.get(); // miss: the credit is given back
    thread::spawn(move || drop(stranger)).join().unwrap();
    assert_eq!(
        recycler.thread_stats().size,
        1,
        "the stranger's return was kept"
    );
    drop(mine); // now over the cap: refused
    let pool = recycler.thread_stats();
    assert_eq!((pool.size, pool.dropped), (1, 1));
    assert_eq!(drops(&drops_seen), 1);
}

/// Build here, send there: the owner only gets, and every object is returned from another
/// thread. With a cap of one object (or one object's bytes), a credit kept across misses
/// refused every return after the first hit, for good (audit of 2026-12-07: 1 hit in 10).
/// Given back on a miss, every other get hits.
#[test]
fn objects_returned_from_other_threads_keep_being_recycled_under_a_one_object_cap() {
    for (max_objects, max_bytes) in [(1, usize::MAX), (usize::MAX, 1024)] {
        let (recycler, _) = tokens(max_objects, max_bytes);
        for _ in 0..10 {
            let mut token = recycler.get();
            token.bytes = 1024; // a buffer of 1 KiB, measured on its return
            thread::spawn(move || drop(token)).join().unwrap();
        }
        let pool = recycler.thread_stats();
        assert_eq!(
            (pool.hits, pool.misses),
            (5, 5),
            "caps ({max_objects}, {max_bytes}): every other get hits"
        );
        assert_identity(&recycler, 0);
    }
}

// ---- cross-thread return ----------------------------------------------------------------

#[test]
fn an_object_returned_on_another_thread_goes_back_to_its_origin_pool() {
    let (recycler, _) = tokens(8, usize::MAX);
    let token = recycler.get();
    let returner = recycler.clone();
    thread::spawn(move || {
        drop(token);
        // The returning thread got no pool of its own.
        assert_eq!(returner.thread_stats().size, 0);
    })
    .join()
    .unwrap();
    let pool = recycler.thread_stats();
    assert_eq!((pool.size, pool.queued), (1, 1));
    assert_eq!(recycler.get().id, 0, "the origin reuses it");
    assert_eq!(recycler.thread_stats().queued, 0);
    assert_eq!(recycler.stats().threads, 1);
}

#[test]
fn cross_thread_returns_beyond_the_cap_are_dropped_not_queued() {
    let (recycler, drops_seen) = tokens(3, usize::MAX);
    let held: Vec<Pooled<Token>> = (0..10).map(|_| recycler.get()).collect();
    thread::spawn(move || drop(held)).join().unwrap();
    let pool = recycler.thread_stats();
    assert_eq!((pool.size, pool.queued, pool.dropped), (3, 3, 7));
    assert_eq!(drops(&drops_seen), 7);
}

#[test]
fn returns_from_other_threads_and_the_owner_share_one_cap() {
    let (recycler, _) = tokens(4, usize::MAX);
    let mut held: Vec<Pooled<Token>> = (0..6).map(|_| recycler.get()).collect();
    let remote: Vec<Pooled<Token>> = held.drain(..3).collect();
    thread::spawn(move || drop(remote)).join().unwrap();
    drop(held); // only one more fits
    let pool = recycler.thread_stats();
    assert_eq!((pool.size, pool.queued, pool.dropped), (4, 3, 2));
}

#[test]
fn four_threads_returning_100_000_objects_each_are_accounted_exactly() {
    const RETURNERS: usize = 4;
    // Miri runs this ~10^4 times slower: fewer objects, the same assertions.
    const PER_RETURNER: usize = if cfg!(miri) { 500 } else { 100_000 };
    const CAP: usize = 256;
    let drops_seen = Arc::new(AtomicUsize::new(0));
    let next_id = AtomicU64::new(0);
    let counter = Arc::clone(&drops_seen);
    /// Marks whether the object is handed out: the pool must never hand out a marked one.
    struct Lent {
        in_use: AtomicBool,
        _token: Token,
    }
    let recycler = Recycler::builder(move || Lent {
        in_use: AtomicBool::new(false),
        _token: Token {
            id: next_id.fetch_add(1, Ordering::Relaxed),
            bytes: 0,
            dirty: false,
            drops: Arc::clone(&counter),
        },
    })
    .max_objects_per_thread(CAP)
    .build();

    let mut senders = Vec::new();
    let mut returners = Vec::new();
    for _ in 0..RETURNERS {
        let (send, receive) = mpsc::sync_channel::<Pooled<Lent>>(64);
        senders.push(send);
        returners.push(thread::spawn(move || {
            for lent in receive {
                lent.in_use.store(false, Ordering::Release);
                drop(lent);
            }
        }));
    }
    for i in 0..RETURNERS * PER_RETURNER {
        let lent = recycler.get();
        assert!(
            !lent.in_use.swap(true, Ordering::AcqRel),
            "an object was handed out twice"
        );
        senders[i % RETURNERS].send(lent).unwrap();
    }
    drop(senders);
    for returner in returners {
        returner.join().unwrap();
    }

    let total = (RETURNERS * PER_RETURNER) as u64;
    let RecyclerStats {
        hits,
        misses,
        recycled,
        dropped,
        detached,
        released,
        retained,
        threads,
        ..
    } = recycler.stats();
    assert_eq!(hits + misses, total);
    assert_eq!(recycled + dropped, total);
    assert_eq!((detached, released, threads), (0, 0, 1));
    assert_eq!(retained, recycled - hits);
    assert!(retained <= CAP as u64);
    assert_eq!(recycler.thread_stats().size as u64, retained);
    // Every object made is either still pooled or was dropped exactly once.
    assert_eq!(drops(&drops_seen) as u64, misses - retained);
    assert_eq!(dropped, misses - retained);
    assert_identity(&recycler, 0);
}

// ---- thread exit ------------------------------------------------------------------------

#[test]
fn a_thread_exit_releases_its_pool() {
    let (recycler, drops_seen) = tokens(16, usize::MAX);
    let worker = recycler.clone();
    thread::spawn(move || {
        let held: Vec<Pooled<Token>> = (0..5).map(|_| worker.get()).collect();
        drop(held);
        assert_eq!(worker.thread_stats().size, 5);
    })
    .join()
    .unwrap();
    assert_eq!(drops(&drops_seen), 5);
    let stats = recycler.stats();
    assert_eq!((stats.released, stats.retained, stats.threads), (5, 0, 0));
    assert_eq!(
        (stats.misses, stats.recycled),
        (5, 5),
        "counters survive the exit"
    );
    assert_identity(&recycler, 0);
}

#[test]
fn objects_queued_for_an_exited_thread_are_released_with_its_pool() {
    let (recycler, drops_seen) = tokens(16, usize::MAX);
    let worker = recycler.clone();
    let (lend, borrowed) = mpsc::channel::<Vec<Pooled<Token>>>();
    let returned = Arc::new(Barrier::new(2));
    let worker_returned = Arc::clone(&returned);
    let owner = thread::spawn(move || {
        lend.send((0..3).map(|_| worker.get()).collect()).unwrap();
        worker_returned.wait(); // the main thread has given them back
        assert_eq!(worker.thread_stats().queued, 3);
    });
    drop(borrowed.recv().unwrap()); // queued for the owner
    returned.wait();
    owner.join().unwrap();
    assert_eq!(drops(&drops_seen), 3);
    let stats = recycler.stats();
    assert_eq!((stats.recycled, stats.released, stats.retained), (3, 3, 0));
    assert_identity(&recycler, 0);
}

#[test]
fn returns_to_a_pool_whose_thread_has_exited_are_dropped() {
    let (recycler, drops_seen) = tokens(16, usize::MAX);
    let worker = recycler.clone();
    let outlived = thread::spawn(move || worker.get()).join().unwrap();
    assert_eq!(recycler.stats().threads, 0);
    assert_identity(&recycler, 1);
    drop(outlived);
    assert_identity(&recycler, 0);
    assert_eq!(drops(&drops_seen), 1);
    let stats = recycler.stats();
    assert_eq!((stats.dropped, stats.recycled, stats.retained), (1, 0, 0));
    assert_eq!(
        recycler.thread_stats().size,
        0,
        "not adopted by this thread"
    );
}

#[test]
fn an_object_got_during_thread_exit_is_counted_when_given_back() {
    let (recycler, drops_seen) = tokens(16, usize::MAX);
    let worker = recycler.clone();
    let (out, kept) = mpsc::channel::<(bool, Pooled<Token>)>();
    thread::spawn(move || {
        let late = worker.clone();
        // Registered first, so it runs after the thread's pool table is gone.
        at_exit(move || {
            let gone = late.get(); // no pool left: lent unpooled
            let pooled = gone.is_pooled();
            drop(gone); // given back during the exit
            out.send((pooled, late.get())).unwrap(); // and one that outlives the thread
        });
        drop(worker.get());
    })
    .join()
    .unwrap();
    let (pooled, outlived) = kept.recv().unwrap();
    assert!(!pooled, "the thread's pools were gone");
    assert!(!outlived.is_pooled());
    assert_identity(&recycler, 1);
    drop(outlived);
    assert_identity(&recycler, 0);
    let stats = recycler.stats();
    assert_eq!((stats.misses, stats.recycled, stats.dropped), (3, 1, 2));
    assert_eq!(drops(&drops_seen), 3, "every object made was dropped once");
}

#[test]
fn an_object_given_back_during_thread_exit_is_counted() {
    let (recycler, drops_seen) = tokens(16, usize::MAX);
    let worker = recycler.clone();
    thread::spawn(move || {
        let (slot, later) = mpsc::channel::<Pooled<Token>>();
        // Registered before the pool exists: runs after the pool table is gone.
        at_exit(move || drop(later.recv().unwrap()));
        slot.send(worker.get()).unwrap();
    })
    .join()
    .unwrap();
    assert_identity(&recycler, 0);
    let stats = recycler.stats();
    assert_eq!((stats.misses, stats.dropped), (1, 1));
    assert_eq!(drops(&drops_seen), 1);
}

#[test]
fn gets_and_returns_from_a_destructor_that_runs_before_the_pool_table_is_gone_are_counted() {
    let (recycler, drops_seen) = tokens(16, usize::MAX);
    let worker = recycler.clone();
    thread::spawn(move || {
        drop(worker.get()); // the pool table exists first: destroyed after `at_exit`'s
        let late = worker.clone();
        at_exit(move || {
            let reused = late.get();
            assert!(reused.is_pooled());
            drop(reused);
            drop(late.get());
        });
    })
    .join()
    .unwrap();
    assert_identity(&recycler, 0);
    let stats = recycler.stats();
    assert_eq!((stats.hits, stats.recycled, stats.released), (2, 3, 1));
    assert_eq!(drops(&drops_seen), 1);
}

// ---- dropping the recycler --------------------------------------------------------------

#[test]
fn dropping_the_recycler_frees_this_threads_pool_at_once() {
    let (recycler, drops_seen) = tokens(16, usize::MAX);
    let held: Vec<Pooled<Token>> = (0..4).map(|_| recycler.get()).collect();
    drop(held);
    assert_eq!(drops(&drops_seen), 0);
    drop(recycler);
    assert_eq!(drops(&drops_seen), 4);
}

#[test]
fn objects_returned_after_the_recycler_is_dropped_are_dropped() {
    let (recycler, drops_seen) = tokens(16, usize::MAX);
    let outstanding = recycler.get();
    drop(recycler);
    assert_eq!(drops(&drops_seen), 0);
    drop(outstanding);
    assert_eq!(drops(&drops_seen), 1);
}

#[test]
fn a_thread_sweeps_pools_of_dropped_recyclers_when_it_next_creates_a_pool() {
    let (recycler, drops_seen) = tokens(16, usize::MAX);
    let worker = recycler.clone();
    let (go, wait) = mpsc::channel::<Recycler<Token>>();
    let (pooled, pooled_seen) = mpsc::channel::<()>();
    let other = thread::spawn(move || {
        drop(worker.get()); // this thread now holds one pooled token
        drop(worker);
        pooled.send(()).unwrap();
        let next = wait.recv().unwrap();
        drop(next.get()); // creating a pool sweeps the dead one
    });
    pooled_seen.recv().unwrap();
    drop(recycler);
    assert_eq!(drops(&drops_seen), 0, "still held by the other thread");
    let (another, _) = tokens(16, usize::MAX);
    go.send(another).unwrap();
    other.join().unwrap();
    assert_eq!(drops(&drops_seen), 1);
}

// ---- Send and Debug ---------------------------------------------------------------------

#[test]
fn recyclers_and_pooled_objects_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Recycler<Vec<u8>>>();
    send_sync::<Pooled<Vec<u8>>>();
}

#[test]
fn debug_shows_the_settings_and_the_value() {
    let recycler = Recycler::builder(|| 5u8).max_objects_per_thread(3).build();
    let text = format!("{recycler:?}");
    assert!(text.contains("max_objects_per_thread: 3"), "{text}");
    assert!(format!("{:?}", recycler.get()).contains("value: 5"));
}
