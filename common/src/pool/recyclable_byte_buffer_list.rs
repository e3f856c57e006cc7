//! `RecyclableByteBufferList`: a pooled list of `Bytes` slices that counts their total length.

use crate::pool::byte_buffer_collector::ByteBufferCollector;
use crate::pool::pooled::Pooled;
use crate::pool::recycler::Recycler;
use bytes::{Bytes, BytesMut};
use std::fmt;
use std::mem;
use std::sync::LazyLock;

/// Slots a list reserves on its first `add`.
const INITIAL_SLOTS: usize = 8;

/// Settings of a list pool (see [`RecyclableByteBufferList::new_recycler`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListPoolConfig {
    /// Most lists a thread's pool keeps (SOFAJRaft: 512).
    pub max_lists_per_thread: usize,
    /// A returned list with more slots than this frees its slot array (SOFAJRaft's never
    /// shrank). Default 1024.
    pub max_pooled_slots: usize,
}

impl Default for ListPoolConfig {
    fn default() -> Self {
        Self {
            max_lists_per_thread: 512,
            max_pooled_slots: 1024,
        }
    }
}

static DEFAULT_RECYCLER: LazyLock<Recycler<RecyclableByteBufferList>> =
    LazyLock::new(|| RecyclableByteBufferList::new_recycler(ListPoolConfig::default()));

/// A list of [`Bytes`] slices with their total length (SOFAJRaft's `RecyclableByteBufferList`):
/// the zero-copy way to assemble a message from parts that already exist — each `add` is a
/// reference-count increment, no bytes are copied until (unless) the list is
/// [flattened](Self::copy_to).
///
/// Pooled through a [`Recycler`] ([`new_instance`](Self::new_instance)): a returned list is
/// cleared — which releases every slice it held — and keeps its slot array unless that has
/// grown past the pool's limit.
///
/// # Examples
///
/// ```
/// use bytes::Bytes;
/// use pulsar_common::pool::RecyclableByteBufferList;
///
/// let header = Bytes::from_static(b"hdr:");
/// let body = Bytes::from(vec![7u8; 100]);
/// let mut list = RecyclableByteBufferList::new_instance();
/// list.add(header.clone());
/// list.add(body.slice(..10)); // a view, no copy
/// assert_eq!((list.len(), list.byte_len()), (2, 14));
/// assert_eq!(&list.to_bytes()[..4], b"hdr:");
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RecyclableByteBufferList {
    slices: Vec<Bytes>,
    /// Sum of `slices[i].len()`.
    byte_len: usize,
}

impl RecyclableByteBufferList {
    /// An empty list; allocates nothing until the first `add`.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty list with room for `slices` slices.
    pub fn with_capacity(slices: usize) -> Self {
        Self {
            slices: Vec::with_capacity(slices),
            byte_len: 0,
        }
    }

    /// An empty list from the calling thread's pool in the process-wide recycler.
    pub fn new_instance() -> Pooled<Self> {
        DEFAULT_RECYCLER.get()
    }

    /// The process-wide recycler used by [`new_instance`](Self::new_instance).
    pub fn default_recycler() -> &'static Recycler<Self> {
        &DEFAULT_RECYCLER
    }

    /// A recycler of lists: clears returned lists (releasing their slices) and frees slot
    /// arrays over `config.max_pooled_slots`; counts slot-array bytes against no byte cap
    /// (the object cap bounds them: `max_lists x max_pooled_slots x 32` bytes).
    pub fn new_recycler(config: ListPoolConfig) -> Recycler<Self> {
        let max_slots = config.max_pooled_slots;
        Recycler::builder(Self::new)
            .max_objects_per_thread(config.max_lists_per_thread)
            .reset(move |list: &mut Self| list.reset_for_pool(max_slots))
            .retained_bytes(|list: &Self| list.slices.capacity() * mem::size_of::<Bytes>())
            .build()
    }

    fn reset_for_pool(&mut self, max_slots: usize) {
        if self.slices.capacity() > max_slots {
            self.slices = Vec::new();
        } else {
            self.slices.clear();
        }
        self.byte_len = 0;
    }

    /// Appends a slice (no copy: `Bytes` is reference-counted).
    #[inline]
    pub fn add(&mut self, slice: Bytes) {
        if self.slices.capacity() == 0 {
            self.slices.reserve(INITIAL_SLOTS);
        }
        self.byte_len += slice.len();
        self.slices.push(slice);
    }

    /// Total bytes of all slices (SOFAJRaft's `getCapacity`).
    pub fn byte_len(&self) -> usize {
        self.byte_len
    }

    /// Number of slices.
    pub fn len(&self) -> usize {
        self.slices.len()
    }

    /// Whether the list holds no slice.
    pub fn is_empty(&self) -> bool {
        self.slices.is_empty()
    }

    /// The slices, in order.
    pub fn as_slices(&self) -> &[Bytes] {
        &self.slices
    }

    /// Iterates over the slices, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Bytes> {
        self.slices.iter()
    }

    /// Releases every slice, keeping the slot array.
    pub fn clear(&mut self) {
        self.slices.clear();
        self.byte_len = 0;
    }

    /// Copies every slice, in order, onto the end of `collector`.
    pub fn copy_to(&self, collector: &mut ByteBufferCollector) {
        collector.reserve(self.byte_len);
        for slice in &self.slices {
            collector.put(slice);
        }
    }

    /// The concatenation as one [`Bytes`]: the slice itself when there is exactly one (no
    /// copy), else one new buffer.
    pub fn to_bytes(&self) -> Bytes {
        match self.slices.as_slice() {
            [] => Bytes::new(),
            [only] => only.clone(),
            many => {
                let mut out = BytesMut::with_capacity(self.byte_len);
                for slice in many {
                    out.extend_from_slice(slice);
                }
                out.freeze()
            }
        }
    }
}

impl<'a> IntoIterator for &'a RecyclableByteBufferList {
    type Item = &'a Bytes;
    type IntoIter = std::slice::Iter<'a, Bytes>;

    fn into_iter(self) -> Self::IntoIter {
        self.slices.iter()
    }
}

impl fmt::Debug for RecyclableByteBufferList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecyclableByteBufferList")
            .field("slices", &self.slices.len())
            .field("byte_len", &self.byte_len)
            .finish()
    }
}
