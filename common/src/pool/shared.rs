//! `Shared`: what every thread's pool of one recycler shares — hooks, caps, recycler-wide
//! counters, and the registry of live pools that `stats` sums.

use crate::pool::stats::RecyclerStats;
use crate::pool::thread_pool::Origin;
use crate::pool::thread_slots::SlotKey;
use crate::sync::plain::Mutex;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

pub(crate) type Factory<T> = Box<dyn Fn() -> T + Send + Sync>;
pub(crate) type ResetHook<T> = Box<dyn Fn(&mut T) + Send + Sync>;
pub(crate) type Measure<T> = Box<dyn Fn(&T) -> usize + Send + Sync>;

/// Counters of pools that have been released, kept so `stats` stays exact after threads exit.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Totals {
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    pub(crate) recycled: u64,
    pub(crate) dropped: u64,
    pub(crate) released: u64,
}

/// The live pools (weakly: a pool's owner thread holds it) and the totals of released ones.
pub(crate) struct Registry<T> {
    pub(crate) live: Vec<Weak<Origin<T>>>,
    pub(crate) retired: Totals,
}

/// One recycler's configuration and recycler-wide state. Kept alive by its `Recycler`
/// handles, by every thread's pool and by every object handed out.
pub(crate) struct Shared<T> {
    /// This recycler's slot in every thread's table (freed when this is dropped).
    pub(crate) key: SlotKey,
    factory: Factory<T>,
    reset: Option<ResetHook<T>>,
    measure: Option<Measure<T>>,
    pub(crate) max_objects_per_thread: usize,
    pub(crate) max_bytes_per_thread: usize,
    /// Lock order: `registry`, then a pool's return queue.
    pub(crate) registry: Mutex<Registry<T>>,
    /// Returns dropped outside any pool's caps: closed pool, dropped recycler, panics.
    dropped_orphans: AtomicU64,
    /// Objects handed out without a pool (the thread's table was gone or busy).
    unpooled_misses: AtomicU64,
    detached: AtomicU64,
}

impl<T> Shared<T> {
    pub(crate) fn new(
        factory: Factory<T>,
        reset: Option<ResetHook<T>>,
        measure: Option<Measure<T>>,
        max_objects_per_thread: usize,
        max_bytes_per_thread: usize,
    ) -> Self {
        Self {
            key: SlotKey::allocate(),
            factory,
            reset,
            measure,
            max_objects_per_thread,
            max_bytes_per_thread,
            registry: Mutex::new(Registry {
                live: Vec::new(),
                retired: Totals::default(),
            }),
            dropped_orphans: AtomicU64::new(0),
            unpooled_misses: AtomicU64::new(0),
            detached: AtomicU64::new(0),
        }
    }

    /// Calls the factory (user code: the caller holds no lock or table borrow).
    pub(crate) fn create(&self) -> T {
        (self.factory)()
    }

    /// Runs the reset hook and measures the object (user code: no lock or borrow held).
    /// A panic in either is caught: the object is dropped, counted, and `None` returned.
    pub(crate) fn prepare(&self, mut value: T) -> Option<(T, usize)> {
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            if let Some(reset) = &self.reset {
                reset(&mut value);
            }
            self.measure.as_ref().map_or(0, |measure| measure(&value))
        }));
        match outcome {
            Ok(bytes) => Some((value, bytes)),
            Err(payload) => {
                tracing::error!(
                    panic = crate::executors::panic_message(payload.as_ref()),
                    "a recycler's reset or retained-bytes hook panicked; the object is dropped"
                );
                self.count_orphan_drop();
                drop(value);
                None
            }
        }
    }

    pub(crate) fn count_orphan_drop(&self) {
        self.dropped_orphans.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_unpooled_miss(&self) {
        self.unpooled_misses.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_detached(&self) {
        self.detached.fetch_add(1, Ordering::Relaxed);
    }

    /// Registers a new pool.
    pub(crate) fn register(&self, origin: &Arc<Origin<T>>) {
        let mut registry = self.registry.lock();
        registry.live.retain(|weak| weak.strong_count() > 0);
        registry.live.push(Arc::downgrade(origin));
    }

    /// Folds a released pool's final counters into the totals and forgets it.
    pub(crate) fn retire(&self, origin: &Arc<Origin<T>>, released: usize) {
        let mut registry = self.registry.lock();
        let counts = origin.totals();
        let retired = &mut registry.retired;
        retired.hits += counts.hits;
        retired.misses += counts.misses;
        retired.recycled += counts.recycled;
        retired.dropped += counts.dropped;
        retired.released += released as u64;
        let me = Arc::as_ptr(origin);
        registry
            .live
            .retain(|weak| weak.strong_count() > 0 && !std::ptr::eq(weak.as_ptr(), me));
    }

    /// Sums the released totals and every live pool.
    pub(crate) fn stats(&self) -> RecyclerStats {
        let registry = self.registry.lock();
        let retired = registry.retired;
        let mut stats = RecyclerStats {
            hits: retired.hits,
            misses: retired.misses + self.unpooled_misses.load(Ordering::Relaxed),
            recycled: retired.recycled,
            dropped: retired.dropped + self.dropped_orphans.load(Ordering::Relaxed),
            detached: self.detached.load(Ordering::Relaxed),
            released: retired.released,
            ..RecyclerStats::default()
        };
        for origin in registry.live.iter().filter_map(Weak::upgrade) {
            let counts = origin.totals();
            let (objects, bytes) = origin.retained();
            stats.hits += counts.hits;
            stats.misses += counts.misses;
            stats.recycled += counts.recycled;
            stats.dropped += counts.dropped;
            stats.retained += objects as u64;
            stats.retained_bytes += bytes as u64;
            stats.threads += 1;
        }
        stats
    }
}
