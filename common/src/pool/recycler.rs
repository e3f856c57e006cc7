//! `Recycler<T>`: per-thread object pools with bounded cross-thread return.

use crate::pool::pooled::{Home, Pooled};
use crate::pool::shared::{Factory, Measure, ResetHook, Shared};
use crate::pool::stats::{RecyclerStats, ThreadPoolStats};
use crate::pool::thread_pool::LocalPool;
use crate::pool::thread_slots;
use std::fmt;
use std::sync::Arc;

/// Objects kept per thread by default (Netty's and SOFAJRaft's `maxCapacityPerThread`).
pub const DEFAULT_MAX_OBJECTS_PER_THREAD: usize = 4096;

/// Per-thread object pools (Netty's `Recycler` as redesigned in 4.1.71): each thread takes
/// objects from its own pool without synchronisation; an object given back on another thread
/// goes to its origin thread's bounded return queue.
///
/// - **Caps, never passed**: a thread's pool (free list plus return queue) holds at most
///   `max_objects_per_thread` objects and `max_retained_bytes_per_thread` bytes (measured by
///   the `retained_bytes` hook when an object comes back). A return that would pass a cap is
///   dropped, not queued. `max_objects_per_thread(0)` disables pooling.
/// - **Reset before reuse**: the `reset` hook runs on the returning thread, before the object
///   is measured and pooled, and never under an internal lock.
/// - **No double return**: objects are handed out as [`Pooled`] guards that own them; giving
///   one back consumes the guard.
/// - **Thread exit releases**: when a thread exits its pool is freed, its return queue is
///   closed (nothing can be stranded there), and later returns to it are dropped.
/// - **Metrics**: [`stats`](Self::stats) for the recycler, [`thread_stats`](Self::thread_stats)
///   for the calling thread's pool.
///
/// Clones share the pools. When the last clone is dropped, the calling thread's pool is freed
/// at once; other threads free theirs when they exit or next create a pool, and objects given
/// back after that are dropped. The protocol is described in `README.md` beside this file.
///
/// # Examples
///
/// ```
/// use pulsar_common::pool::Recycler;
///
/// let recycler = Recycler::builder(|| Vec::<u8>::with_capacity(1024))
///     .max_objects_per_thread(64)
///     .max_retained_bytes_per_thread(16 * 1024)
///     .retained_bytes(|buffer| buffer.capacity())
///     .reset(|buffer| buffer.clear())
///     .build();
///
/// let mut buffer = recycler.get();
/// buffer.extend_from_slice(b"entry");
/// drop(buffer); // cleared, back in this thread's pool
///
/// let again = recycler.get();
/// assert!(again.is_empty());
/// assert_eq!(recycler.stats().hits, 1);
/// ```
pub struct Recycler<T: Send + 'static> {
    handle: Arc<RecyclerHandle<T>>,
}

/// What the `Recycler` clones share; its `Drop` is "the last clone went away".
struct RecyclerHandle<T: Send + 'static> {
    shared: Arc<Shared<T>>,
}

impl<T: Send + 'static> Drop for RecyclerHandle<T> {
    fn drop(&mut self) {
        self.shared.key.retire();
        thread_slots::remove(&self.shared.key);
    }
}

impl<T: Send + 'static> Clone for Recycler<T> {
    fn clone(&self) -> Self {
        Self {
            handle: Arc::clone(&self.handle),
        }
    }
}

impl<T: Send + 'static> Recycler<T> {
    /// A recycler with the default caps ([`DEFAULT_MAX_OBJECTS_PER_THREAD`], no byte cap) and
    /// no reset hook.
    pub fn new(factory: impl Fn() -> T + Send + Sync + 'static) -> Self {
        Self::builder(factory).build()
    }

    /// A builder for caps and hooks; `factory` makes an object when a pool is empty.
    pub fn builder(factory: impl Fn() -> T + Send + Sync + 'static) -> RecyclerBuilder<T> {
        RecyclerBuilder {
            factory: Box::new(factory),
            reset: None,
            measure: None,
            max_objects_per_thread: DEFAULT_MAX_OBJECTS_PER_THREAD,
            max_bytes_per_thread: usize::MAX,
        }
    }

    /// An object from the calling thread's pool, or a new one from the factory.
    ///
    /// The factory runs outside every internal lock; if it panics, the panic reaches the
    /// caller and nothing is counted (no object was handed out).
    ///
    /// Called while the thread is exiting (from a thread-local destructor, after the thread's
    /// pools are gone), it hands out an object with no pool: counted as a miss, and counted
    /// as `dropped` when it is given back, so the identity of [`RecyclerStats`] still holds.
    #[inline]
    pub fn get(&self) -> Pooled<T> {
        let shared = &self.handle.shared;
        let make_pool = || LocalPool::new(shared);
        let taken = thread_slots::with_pool(&shared.key, &make_pool, |local| {
            local.take().ok_or_else(|| Arc::clone(local.origin()))
        });
        match taken {
            Some(Ok((value, origin))) => Pooled::new(value, Home::Pool(origin)),
            Some(Err(origin)) => {
                let value = shared.create();
                origin.count_miss(); // on the owner thread: `origin` is this thread's pool
                Pooled::new(value, Home::Pool(origin))
            }
            None => {
                // The thread is exiting (its table is gone) or the table is busy (a `get`
                // from a destructor the table runs): hand out an object with no pool.
                let value = shared.create();
                shared.count_unpooled_miss();
                Pooled::new(value, Home::Unpooled(Arc::clone(shared)))
            }
        }
    }

    /// The recycler's counters, summed over all threads.
    pub fn stats(&self) -> RecyclerStats {
        self.handle.shared.stats()
    }

    /// The calling thread's pool (all zero counters, with the caps, if it has none yet).
    pub fn thread_stats(&self) -> ThreadPoolStats {
        let shared = &self.handle.shared;
        thread_slots::with_existing_pool(shared.key.slot(), |local: &mut LocalPool<T>| {
            local.stats()
        })
        .unwrap_or(ThreadPoolStats {
            capacity: shared.max_objects_per_thread,
            byte_capacity: shared.max_bytes_per_thread,
            ..ThreadPoolStats::default()
        })
    }

    /// The per-thread object cap.
    pub fn max_objects_per_thread(&self) -> usize {
        self.handle.shared.max_objects_per_thread
    }

    /// The per-thread byte cap (`usize::MAX` when unbounded).
    pub fn max_retained_bytes_per_thread(&self) -> usize {
        self.handle.shared.max_bytes_per_thread
    }
}

impl<T: Send + 'static> fmt::Debug for Recycler<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recycler")
            .field("type", &std::any::type_name::<T>())
            .field("max_objects_per_thread", &self.max_objects_per_thread())
            .field(
                "max_retained_bytes_per_thread",
                &self.max_retained_bytes_per_thread(),
            )
            .field("stats", &self.stats())
            .finish()
    }
}

/// Settings of a [`Recycler`], fixed once built.
///
/// # Examples
///
/// ```
/// use pulsar_common::pool::Recycler;
///
/// let disabled = Recycler::builder(String::new).max_objects_per_thread(0).build();
/// drop(disabled.get());
/// assert_eq!(disabled.stats().dropped, 1); // nothing is ever kept
/// ```
pub struct RecyclerBuilder<T: Send + 'static> {
    factory: Factory<T>,
    reset: Option<ResetHook<T>>,
    measure: Option<Measure<T>>,
    max_objects_per_thread: usize,
    max_bytes_per_thread: usize,
}

impl<T: Send + 'static> RecyclerBuilder<T> {
    /// Most objects a thread's pool keeps (default [`DEFAULT_MAX_OBJECTS_PER_THREAD`]); 0
    /// disables pooling.
    pub fn max_objects_per_thread(mut self, objects: usize) -> Self {
        self.max_objects_per_thread = objects;
        self
    }

    /// Most bytes a thread's pool keeps, as measured by [`retained_bytes`](Self::retained_bytes)
    /// (default: unbounded). An object alone over the cap is never kept.
    pub fn max_retained_bytes_per_thread(mut self, bytes: usize) -> Self {
        self.max_bytes_per_thread = bytes;
        self
    }

    /// Runs on every returned object before it is measured and pooled (clear a buffer, drop
    /// an oversized one). Runs on the returning thread, outside internal locks. If it panics,
    /// the object is dropped and counted in `dropped`.
    pub fn reset(mut self, reset: impl Fn(&mut T) + Send + Sync + 'static) -> Self {
        self.reset = Some(Box::new(reset));
        self
    }

    /// How many bytes a returned object holds (a buffer's capacity, say), after the reset hook;
    /// counted against the byte cap. Default: 0 for every object.
    pub fn retained_bytes(mut self, measure: impl Fn(&T) -> usize + Send + Sync + 'static) -> Self {
        self.measure = Some(Box::new(measure));
        self
    }

    /// Builds the recycler. No pool exists until a thread first calls `get`.
    pub fn build(self) -> Recycler<T> {
        Recycler {
            handle: Arc::new(RecyclerHandle {
                shared: Arc::new(Shared::new(
                    self.factory,
                    self.reset,
                    self.measure,
                    self.max_objects_per_thread,
                    self.max_bytes_per_thread,
                )),
            }),
        }
    }
}

impl<T: Send + 'static> fmt::Debug for RecyclerBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecyclerBuilder")
            .field("max_objects_per_thread", &self.max_objects_per_thread)
            .field("max_retained_bytes_per_thread", &self.max_bytes_per_thread)
            .field("reset", &self.reset.is_some())
            .field("retained_bytes", &self.measure.is_some())
            .finish()
    }
}
