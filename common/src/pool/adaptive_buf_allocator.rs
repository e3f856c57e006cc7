//! `AdaptiveBufAllocator`: predicts the next buffer size from the sizes recently needed.

use crate::pool::byte_buffer_collector::ByteBufferCollector;
use crate::pool::pooled::Pooled;
use crate::pool::recycler::Recycler;
use crate::pool::size_table::{ceil_index, floor_index, SIZE_TABLE};
use std::fmt;

/// Table steps a guess grows by when a record reaches it.
const INDEX_INCREMENT: usize = 4;
/// Table steps a guess shrinks by after two consecutive small records.
const INDEX_DECREMENT: usize = 1;

/// Predicts how large the next buffer should be (Netty's `AdaptiveRecvByteBufAllocator`, as
/// SOFAJRaft ported it, with the fixes Netty made later).
///
/// Guesses move along [`SIZE_TABLE`]: when a recorded size reaches the
/// guess, it jumps 4 table steps up; when two records in a row fit in the size one step
/// below, it goes 1 step down. Growing fast and shrinking slowly avoids reallocations while
/// still giving memory back after a burst. Differences from the 2019 port:
///
/// - the shrink test compares against the size one step down (`index - 1`), not two
///   (netty#9555);
/// - the initial index is rounded *down* to a table size not above `initial`;
/// - every guess is clamped to `[minimum, maximum]`, so a bound that is not a table size is
///   still honoured (netty#13722, #13882), and a shrink never raises the guess.
///
/// The allocator is the immutable configuration; each stream of buffers (a connection, a
/// replication peer) takes its own [`AdaptiveHandle`] with [`new_handle`](Self::new_handle).
///
/// # Examples
///
/// ```
/// use pulsar_common::pool::AdaptiveBufAllocator;
///
/// let allocator = AdaptiveBufAllocator::default(); // 64 ..= 524_288, starting at 512
/// let mut handle = allocator.new_handle();
/// assert_eq!(handle.guess(), 512);
///
/// handle.record(600); // reached the guess: grow 4 steps (512 -> 8192)
/// assert_eq!(handle.guess(), 8192);
///
/// handle.record(100); // one small record: no change yet
/// handle.record(100); // two in a row: shrink one step
/// assert_eq!(handle.guess(), 4096);
///
/// let collector = handle.allocate();
/// assert!(collector.capacity() >= 4096);
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct AdaptiveBufAllocator {
    minimum: usize,
    initial: usize,
    maximum: usize,
    /// Index of the smallest table size `>= minimum`.
    min_index: usize,
    /// Index of the largest table size `<= maximum` (never below `min_index`).
    max_index: usize,
    /// Index of the largest table size `<= initial` (rounded down).
    initial_index: usize,
}

impl AdaptiveBufAllocator {
    /// SOFAJRaft's default smallest guess.
    pub const DEFAULT_MINIMUM: usize = 64;
    /// SOFAJRaft's default first guess.
    pub const DEFAULT_INITIAL: usize = 512;
    /// SOFAJRaft's default largest guess.
    pub const DEFAULT_MAXIMUM: usize = 524_288;

    /// An allocator whose guesses start at `initial` and stay within `[minimum, maximum]`.
    ///
    /// # Panics
    ///
    /// If `minimum` is 0, `initial < minimum` or `maximum < initial`.
    pub fn new(minimum: usize, initial: usize, maximum: usize) -> Self {
        assert!(minimum > 0, "minimum must be positive, got {minimum}");
        assert!(
            initial >= minimum,
            "initial ({initial}) must be at least minimum ({minimum})"
        );
        assert!(
            maximum >= initial,
            "maximum ({maximum}) must be at least initial ({initial})"
        );
        let min_index = ceil_index(minimum);
        let max_index = floor_index(maximum).max(min_index);
        let initial_index = floor_index(initial).min(max_index);
        Self {
            minimum,
            initial,
            maximum,
            min_index,
            max_index,
            initial_index,
        }
    }

    /// A fresh predictor starting at the initial guess.
    pub fn new_handle(&self) -> AdaptiveHandle {
        AdaptiveHandle {
            allocator: *self,
            index: self.initial_index,
            next_size: self.clamp(SIZE_TABLE[self.initial_index]),
            decrease_now: false,
        }
    }

    /// The smallest guess.
    pub fn minimum(&self) -> usize {
        self.minimum
    }

    /// The size the first guess is derived from.
    pub fn initial(&self) -> usize {
        self.initial
    }

    /// The largest guess.
    pub fn maximum(&self) -> usize {
        self.maximum
    }

    fn clamp(&self, size: usize) -> usize {
        size.clamp(self.minimum, self.maximum)
    }
}

impl Default for AdaptiveBufAllocator {
    /// `new(64, 512, 524_288)`, SOFAJRaft's defaults.
    fn default() -> Self {
        Self::new(
            Self::DEFAULT_MINIMUM,
            Self::DEFAULT_INITIAL,
            Self::DEFAULT_MAXIMUM,
        )
    }
}

impl fmt::Debug for AdaptiveBufAllocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdaptiveBufAllocator")
            .field("minimum", &self.minimum)
            .field("initial", &self.initial)
            .field("maximum", &self.maximum)
            .finish()
    }
}

/// One stream's size predictor, made by [`AdaptiveBufAllocator::new_handle`] (SOFAJRaft's
/// `AdaptiveBufAllocator.Handle`): [`guess`](Self::guess) the next size, then
/// [`record`](Self::record) the size actually needed.
///
/// Not shared between threads: each stream owns its handle (it is `Send`, plain data).
///
/// # Examples
///
/// ```
/// use pulsar_common::pool::AdaptiveBufAllocator;
///
/// let mut handle = AdaptiveBufAllocator::new(64, 1024, 65_536).new_handle();
/// for batch in [3000, 3000, 200, 200] {
///     let mut buffer = handle.allocate_by_recycler(); // pooled, at least `guess()` bytes
///     buffer.put(&vec![0u8; batch]);
///     handle.record(buffer.len());
/// }
/// // 3000 reached 1024: up 4 steps to 16384; 3000 and 200 then fit in 8192: down one step.
/// assert_eq!(handle.guess(), 8192);
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct AdaptiveHandle {
    allocator: AdaptiveBufAllocator,
    /// Position in the size table.
    index: usize,
    /// `SIZE_TABLE[index]` clamped to `[minimum, maximum]`: what `guess` returns.
    next_size: usize,
    /// Whether the previous record was small: a second one in a row shrinks the guess.
    decrease_now: bool,
}

impl AdaptiveHandle {
    /// The predicted size of the next buffer, within `[minimum, maximum]`.
    pub fn guess(&self) -> usize {
        self.next_size
    }

    /// Records the size a buffer actually needed.
    ///
    /// - `actual <= SIZE_TABLE[index - 1]` twice in a row: the guess goes one step down (never
    ///   below the minimum's step).
    /// - otherwise, `actual >= guess()`: the guess goes four steps up (never above the
    ///   maximum's step), and the small-record streak is forgotten.
    /// - otherwise the guess stays.
    pub fn record(&mut self, actual: usize) {
        let a = &self.allocator;
        if actual <= SIZE_TABLE[self.index.saturating_sub(INDEX_DECREMENT)] {
            if self.decrease_now {
                let lowered = self.index.saturating_sub(INDEX_DECREMENT).max(a.min_index);
                // A handle that started below the minimum's step (initial rounded down) keeps
                // its index: a shrink must not raise the guess.
                self.index = lowered.min(self.index);
                self.next_size = a.clamp(SIZE_TABLE[self.index]);
                self.decrease_now = false;
            } else {
                self.decrease_now = true;
            }
        } else if actual >= self.next_size {
            self.index = (self.index + INDEX_INCREMENT).min(a.max_index);
            self.next_size = a.clamp(SIZE_TABLE[self.index]);
            self.decrease_now = false;
        }
    }

    /// A fresh, unpooled collector with room for [`guess`](Self::guess) bytes.
    pub fn allocate(&self) -> ByteBufferCollector {
        ByteBufferCollector::allocate(self.guess())
    }

    /// A collector from the process-wide pool (see
    /// [`ByteBufferCollector::allocate_by_recycler`]) with room for at least
    /// [`guess`](Self::guess) bytes.
    pub fn allocate_by_recycler(&self) -> Pooled<ByteBufferCollector> {
        ByteBufferCollector::allocate_by_recycler(self.guess())
    }

    /// As [`allocate_by_recycler`](Self::allocate_by_recycler), from `recycler`.
    pub fn allocate_from(
        &self,
        recycler: &Recycler<ByteBufferCollector>,
    ) -> Pooled<ByteBufferCollector> {
        ByteBufferCollector::allocate_from(recycler, self.guess())
    }

    /// The allocator this handle was made from.
    pub fn allocator(&self) -> &AdaptiveBufAllocator {
        &self.allocator
    }
}

impl fmt::Debug for AdaptiveHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdaptiveHandle")
            .field("guess", &self.next_size)
            .field("index", &self.index)
            .field("decrease_now", &self.decrease_now)
            .finish()
    }
}
