//! `ByteBufferCollector`: a growable byte buffer, pooled through a `Recycler`.

use crate::pool::pooled::Pooled;
use crate::pool::recycler::Recycler;
use bytes::{Buf, Bytes};
use std::fmt;
use std::ops::Deref;
use std::sync::LazyLock;

/// Smallest capacity a collector grows to on its first write.
const MIN_GROWTH: usize = 64;

/// The alignment of a collector's first byte: a cache line. Copies into a buffer are runs of
/// vector stores (64 bytes each with AVX-512); a buffer whose bytes start part-way into a line
/// makes every store of a line-sized entry straddle two lines. `malloc` places a buffer 16
/// bytes into a line as often as on one, and a pooled buffer keeps its placement for the life
/// of the process: in the AppendEntries bench (256 entries of 512 B per batch, 2 threads)
/// processes whose two buffers both started on a line built a batch in 3.0 µs, the others (16,
/// 32 or 48 bytes in) in 3.3-5.1 µs, and which a process got decided whether pooled beat copy.
const LINE: usize = 64;

/// Bytes to skip from `ptr` to the next cache-line boundary.
#[inline]
fn padding_before_line(ptr: *const u8) -> usize {
    (LINE - (ptr as usize) % LINE) % LINE
}

/// Settings of a collector pool (see [`ByteBufferCollector::new_recycler`]).
///
/// # Examples
///
/// ```
/// use pulsar_common::pool::{ByteBufferCollector, CollectorPoolConfig};
///
/// let small = CollectorPoolConfig {
///     max_collectors_per_thread: 4,
///     max_pooled_capacity: 64 * 1024,
///     max_retained_bytes_per_thread: 128 * 1024,
/// };
/// let recycler = ByteBufferCollector::new_recycler(small);
/// assert_eq!(recycler.max_retained_bytes_per_thread(), 128 * 1024);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectorPoolConfig {
    /// Most collectors a thread's pool keeps (SOFAJRaft: 256).
    pub max_collectors_per_thread: usize,
    /// A returned collector whose buffer is larger than this gives the buffer up (the
    /// collector itself is still pooled, empty). SOFAJRaft: 4 MiB.
    pub max_pooled_capacity: usize,
    /// Most buffer bytes a thread's pool keeps, summed over its collectors. SOFAJRaft had no
    /// such cap (256 x 4 MiB = 1 GiB per thread); ours defaults to 16 MiB.
    pub max_retained_bytes_per_thread: usize,
}

impl Default for CollectorPoolConfig {
    fn default() -> Self {
        Self {
            max_collectors_per_thread: 256,
            max_pooled_capacity: ByteBufferCollector::MAX_POOLED_CAPACITY,
            max_retained_bytes_per_thread:
                ByteBufferCollector::DEFAULT_MAX_RETAINED_BYTES_PER_THREAD,
        }
    }
}

/// The process-wide collector pool behind [`ByteBufferCollector::allocate_by_recycler`].
static DEFAULT_RECYCLER: LazyLock<Recycler<ByteBufferCollector>> =
    LazyLock::new(|| ByteBufferCollector::new_recycler(CollectorPoolConfig::default()));

/// A growable byte buffer for assembling a message (SOFAJRaft's `ByteBufferCollector`), with
/// geometric growth, and pooling through a [`Recycler`]:
/// [`allocate_by_recycler`](Self::allocate_by_recycler) reuses a pooled collector whose
/// buffer is already large enough, so building same-sized messages in a loop allocates
/// nothing once warm.
///
/// - **Growth**: when a write does not fit, capacity becomes
///   `max(needed, 2 x capacity, 64)`: amortised O(1) per byte (SOFAJRaft grew by
///   `max(needed, 1024)`, O(n^2) copying for many small puts).
/// - **Placement**: the bytes start on a cache line (64 bytes), so copies of line-sized
///   entries do not straddle lines; the buffer allocates 63 bytes more than its capacity, room
///   for the padding in front of them.
/// - **Pooling**: on return the buffer is cleared; one larger than
///   [`MAX_POOLED_CAPACITY`](Self::MAX_POOLED_CAPACITY) (4 MiB) is freed instead, and the
///   pool's byte cap bounds what a thread keeps in all (16 MiB by default).
///
/// # Examples
///
/// ```
/// use pulsar_common::pool::ByteBufferCollector;
///
/// let mut batch = ByteBufferCollector::allocate_by_recycler(4096);
/// for entry in [&b"first"[..], b"second"] {
///     batch.put_u32(entry.len() as u32);
///     batch.put(entry);
/// }
/// assert_eq!(batch.len(), 4 + 5 + 4 + 6);
/// assert_eq!(&batch[..4], &[0, 0, 0, 5]);
/// drop(batch); // back to this thread's pool, cleared, its 4096 bytes kept
///
/// let reused = ByteBufferCollector::allocate_by_recycler(1024);
/// assert!(reused.is_empty() && reused.capacity() >= 4096);
/// ```
#[derive(Default)]
pub struct ByteBufferCollector {
    /// `buffer[start..]` are the bytes written; `buffer[..start]` (fewer than [`LINE`] bytes)
    /// only moves them onto a cache line.
    buffer: Vec<u8>,
    start: usize,
    /// Bytes that fit from `start` without growing: the Vec's own capacity is at least
    /// `capacity + LINE - 1`, so that the bytes can be moved onto a line wherever the
    /// allocator puts them.
    capacity: usize,
}

impl ByteBufferCollector {
    /// Buffers larger than this are freed, not pooled (SOFAJRaft's 4 MiB).
    pub const MAX_POOLED_CAPACITY: usize = 4 * 1024 * 1024;

    /// Default byte cap of a thread's collector pool.
    pub const DEFAULT_MAX_RETAINED_BYTES_PER_THREAD: usize = 16 * 1024 * 1024;

    /// An empty collector; allocates nothing until the first write.
    pub fn new() -> Self {
        Self::default()
    }

    /// A fresh (unpooled) collector with room for `size` bytes.
    pub fn allocate(size: usize) -> Self {
        let mut collector = Self::new();
        if size > 0 {
            collector.set_capacity(size);
        }
        collector
    }

    /// A collector from the calling thread's pool in the process-wide recycler (default
    /// [`CollectorPoolConfig`]), with room for at least `size` bytes.
    pub fn allocate_by_recycler(size: usize) -> Pooled<Self> {
        Self::allocate_from(&DEFAULT_RECYCLER, size)
    }

    /// An empty collector from `recycler` with room for at least `size` bytes: a pooled
    /// buffer that is large enough is kept, a smaller one is replaced by a fresh buffer of
    /// exactly `size`. The collector is cleared here too, so a recycler built without
    /// [`new_recycler`](Self::new_recycler)'s reset hook never hands out an earlier message's
    /// bytes.
    pub fn allocate_from(recycler: &Recycler<Self>, size: usize) -> Pooled<Self> {
        let mut collector = recycler.get();
        collector.clear();
        if collector.capacity < size {
            // Free the small buffer first, so the allocator may reuse its memory.
            collector.release_buffer();
            collector.set_capacity(size);
        }
        collector
    }

    /// The process-wide recycler used by [`allocate_by_recycler`](Self::allocate_by_recycler).
    pub fn default_recycler() -> &'static Recycler<Self> {
        &DEFAULT_RECYCLER
    }

    /// A recycler of collectors: clears returned buffers, frees those over
    /// `config.max_pooled_capacity`, and counts capacities against
    /// `config.max_retained_bytes_per_thread`.
    pub fn new_recycler(config: CollectorPoolConfig) -> Recycler<Self> {
        let max_pooled = config.max_pooled_capacity;
        Recycler::builder(Self::new)
            .max_objects_per_thread(config.max_collectors_per_thread)
            .max_retained_bytes_per_thread(config.max_retained_bytes_per_thread)
            .reset(move |collector: &mut Self| collector.reset_for_pool(max_pooled))
            .retained_bytes(|collector: &Self| collector.capacity())
            .build()
    }

    /// Clears the buffer, or frees it when larger than `max_pooled`.
    fn reset_for_pool(&mut self, max_pooled: usize) {
        if self.capacity > max_pooled {
            self.release_buffer();
        } else {
            self.clear();
        }
    }

    /// Frees the buffer: an empty collector again.
    fn release_buffer(&mut self) {
        *self = Self::new();
    }

    /// Appends `bytes`, growing geometrically if needed.
    #[inline]
    pub fn put(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        self.buffer.extend_from_slice(bytes);
    }

    /// Appends one byte.
    #[inline]
    pub fn put_u8(&mut self, value: u8) {
        self.reserve(1);
        self.buffer.push(value);
    }

    /// Appends a big-endian `u32` (a length prefix, say).
    #[inline]
    pub fn put_u32(&mut self, value: u32) {
        self.put(&value.to_be_bytes());
    }

    /// Appends a big-endian `u64`.
    #[inline]
    pub fn put_u64(&mut self, value: u64) {
        self.put(&value.to_be_bytes());
    }

    /// Makes room for `additional` more bytes: capacity becomes at least
    /// `max(len + additional, 2 x capacity, 64)` when it must grow.
    ///
    /// # Panics
    ///
    /// If the length would overflow `usize` (as `Vec` does); every `put` reserves this way.
    #[inline]
    pub fn reserve(&mut self, additional: usize) {
        let needed = self
            .len()
            .checked_add(additional)
            .expect("capacity overflow");
        if needed > self.capacity {
            self.grow(needed);
        }
    }

    #[cold]
    fn grow(&mut self, needed: usize) {
        let target = needed.max(self.capacity.saturating_mul(2)).max(MIN_GROWTH);
        self.set_capacity(target);
    }

    /// Makes room for `capacity` bytes (at least `len`) from a cache line, keeping the bytes
    /// written. The allocator may grow the buffer in place (nothing moves) or move it; a
    /// move that lands on another offset in a line is followed by a shift of the bytes onto
    /// the line.
    fn set_capacity(&mut self, capacity: usize) {
        let len = self.len();
        debug_assert!(capacity >= len);
        let room = capacity.checked_add(LINE - 1).expect("capacity overflow");
        // `room >= start + len`: `start < LINE` and `capacity >= len`.
        self.buffer.reserve_exact(room - self.buffer.len());
        let start = padding_before_line(self.buffer.as_ptr());
        if start != self.start {
            let end = start + len; // <= room <= the Vec's capacity: no reallocation
            if end > self.buffer.len() {
                self.buffer.resize(end, 0);
            }
            self.buffer.copy_within(self.start..self.start + len, start);
            self.buffer.truncate(end);
            self.start = start;
        }
        self.capacity = capacity;
    }

    /// Bytes written.
    #[inline]
    pub fn len(&self) -> usize {
        self.buffer.len() - self.start
    }

    /// Whether nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the buffer can hold without growing.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The bytes written.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        &self.buffer[self.start..]
    }

    /// Forgets the bytes written, keeping the capacity.
    pub fn clear(&mut self) {
        self.buffer.truncate(self.start);
    }

    /// The bytes written as a `Vec`, in the collector's buffer (a pooled collector is
    /// detached from its pool with [`Pooled::detach`] first). The bytes are moved to the
    /// front of the buffer first when they do not start there (the cache-line placement): a
    /// copy of `len` bytes; [`into_bytes`](Self::into_bytes) never copies.
    pub fn into_vec(self) -> Vec<u8> {
        let Self {
            mut buffer, start, ..
        } = self;
        buffer.drain(..start);
        buffer
    }

    /// The bytes written as [`Bytes`], without copying; the buffer leaves the collector.
    pub fn into_bytes(self) -> Bytes {
        let mut bytes = Bytes::from(self.buffer);
        bytes.advance(self.start);
        bytes
    }
}

impl Clone for ByteBufferCollector {
    /// A collector holding a copy of the bytes written, with room for just them.
    fn clone(&self) -> Self {
        let mut copy = Self::allocate(self.len());
        copy.put(self.as_slice());
        copy
    }
}

impl PartialEq for ByteBufferCollector {
    /// Whether both hold the same bytes.
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for ByteBufferCollector {}

impl Deref for ByteBufferCollector {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for ByteBufferCollector {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Extend<u8> for ByteBufferCollector {
    fn extend<I: IntoIterator<Item = u8>>(&mut self, iter: I) {
        for byte in iter {
            self.put_u8(byte);
        }
    }
}

impl<'a> Extend<&'a u8> for ByteBufferCollector {
    fn extend<I: IntoIterator<Item = &'a u8>>(&mut self, iter: I) {
        self.extend(iter.into_iter().copied());
    }
}

impl std::io::Write for ByteBufferCollector {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.put(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl fmt::Debug for ByteBufferCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ByteBufferCollector")
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}
