//! `CachePadded`: keeps a value written by one pair of threads off the cache lines of others.

use std::ops::Deref;

/// A value aligned (and so padded) to 128 bytes, two cache lines on x86 (the adjacent-line
/// prefetcher pairs them), so that writes to it do not invalidate its neighbours' lines.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct CachePadded<T>(pub(crate) T);

impl<T> Deref for CachePadded<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}
