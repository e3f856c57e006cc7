//! `RecyclerStats` and `ThreadPoolStats`: what a recycler and one thread's pool report.

/// A recycler's counters, summed over every thread that has had a pool (exited ones too).
///
/// Each counter is exact; a snapshot taken while other threads use the recycler may mix
/// moments. Once no thread is using it, with `outstanding` objects still handed out:
///
/// - `hits + misses == recycled + dropped + detached + outstanding`
/// - `retained == recycled - hits - released`
///
/// # Examples
///
/// ```
/// use pulsar_common::pool::Recycler;
///
/// let recycler = Recycler::new(Vec::<u8>::new);
/// drop(recycler.get()); // miss, then recycled
/// drop(recycler.get()); // hit, then recycled
/// let stats = recycler.stats();
/// assert_eq!((stats.hits, stats.misses, stats.recycled), (1, 1, 2));
/// assert_eq!(stats.retained, 1);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecyclerStats {
    /// `get`s served from a pool.
    pub hits: u64,
    /// `get`s that called the factory.
    pub misses: u64,
    /// Returns accepted into a pool (the thread's own, or its origin's return queue).
    pub recycled: u64,
    /// Returns refused and dropped: over a cap, to a pool whose thread has exited, after the
    /// recycler was dropped, during a panic, or when the reset hook panicked.
    pub dropped: u64,
    /// Objects taken out of circulation with [`Pooled::detach`](super::Pooled::detach).
    pub detached: u64,
    /// Pooled objects freed because their thread exited (or the recycler was dropped).
    pub released: u64,
    /// Objects in pools now (free lists plus return queues).
    pub retained: u64,
    /// Bytes of those objects, as measured when they were returned.
    pub retained_bytes: u64,
    /// Threads that have a pool now.
    pub threads: usize,
}

/// The calling thread's pool: what it holds, its caps, and its own counters.
///
/// # Examples
///
/// ```
/// use pulsar_common::pool::Recycler;
///
/// let recycler = Recycler::builder(|| Vec::<u8>::with_capacity(100))
///     .max_objects_per_thread(8)
///     .retained_bytes(|buffer| buffer.capacity())
///     .build();
/// let buffers: Vec<_> = (0..3).map(|_| recycler.get()).collect();
/// drop(buffers);
/// let pool = recycler.thread_stats();
/// assert_eq!((pool.size, pool.capacity, pool.retained_bytes), (3, 8, 300));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadPoolStats {
    /// Objects retained: the free list plus those other threads returned, not yet taken.
    pub size: usize,
    /// Of `size`, the objects waiting in the return queue.
    pub queued: usize,
    /// Bytes retained, as measured when each object was returned.
    pub retained_bytes: usize,
    /// The object cap (`max_objects_per_thread`).
    pub capacity: usize,
    /// The byte cap (`max_retained_bytes_per_thread`).
    pub byte_capacity: usize,
    /// Slots allocated for the free list: it grows as needed, doubling, but never past
    /// `capacity` (a cap of 300 objects allocates at most 300 slots).
    pub free_list_slots: usize,
    /// `get`s on this thread served from the pool.
    pub hits: u64,
    /// `get`s on this thread that called the factory.
    pub misses: u64,
    /// Returns this pool accepted (from its own thread or others).
    pub recycled: u64,
    /// Returns this pool refused because a cap was reached.
    pub dropped: u64,
}
