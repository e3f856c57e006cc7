//! `InlineBytes` / `InlineStr`: a message's payload and keys, stored inline when short.

use std::fmt;

/// Bytes stored in place up to this length (the size of a `Vec<u8>`, less the tag and length).
pub(crate) const INLINE_CAPACITY: usize = 22;

/// Bytes kept inline when they fit in [`INLINE_CAPACITY`] (no allocation), boxed otherwise.
/// 24 bytes, like a `Vec<u8>`; safe code only.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum InlineBytes {
    Inline {
        len: u8,
        bytes: [u8; INLINE_CAPACITY],
    },
    Heap(Box<[u8]>),
}

impl InlineBytes {
    /// Copies `bytes` (inline when short).
    #[inline]
    pub(crate) fn copy_from(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE_CAPACITY {
            let mut inline = [0u8; INLINE_CAPACITY];
            inline[..bytes.len()].copy_from_slice(bytes);
            InlineBytes::Inline {
                len: bytes.len() as u8,
                bytes: inline,
            }
        } else {
            InlineBytes::Heap(bytes.into())
        }
    }

    /// Takes `bytes` over without copying a long payload (a short one is copied inline).
    pub(crate) fn from_vec(bytes: Vec<u8>) -> Self {
        if bytes.len() <= INLINE_CAPACITY {
            Self::copy_from(&bytes)
        } else {
            InlineBytes::Heap(bytes.into_boxed_slice())
        }
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            InlineBytes::Inline { len, bytes } => &bytes[..usize::from(*len)],
            InlineBytes::Heap(bytes) => bytes,
        }
    }

    pub(crate) fn into_vec(self) -> Vec<u8> {
        match self {
            InlineBytes::Inline { .. } => self.as_slice().to_vec(),
            InlineBytes::Heap(bytes) => bytes.into_vec(),
        }
    }
}

impl fmt::Debug for InlineBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_slice(), f)
    }
}

/// A string kept inline when its UTF-8 fits in [`INLINE_CAPACITY`] bytes, boxed otherwise.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum InlineStr {
    /// Invariant: the bytes are valid UTF-8 (they come from a `&str`).
    Inline(InlineBytes),
    Heap(Box<str>),
}

impl InlineStr {
    #[inline]
    pub(crate) fn copy_from(text: &str) -> Self {
        if text.len() <= INLINE_CAPACITY {
            InlineStr::Inline(InlineBytes::copy_from(text.as_bytes()))
        } else {
            InlineStr::Heap(text.into())
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            // At most 22 bytes to validate; the invariant makes the `expect` unreachable.
            InlineStr::Inline(bytes) => {
                std::str::from_utf8(bytes.as_slice()).expect("copied from a str")
            }
            InlineStr::Heap(text) => text,
        }
    }

    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            InlineStr::Inline(bytes) => bytes.as_slice(),
            InlineStr::Heap(text) => text.as_bytes(),
        }
    }
}

impl fmt::Debug for InlineStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_bytes_stay_inline_and_long_ones_are_boxed() {
        let short = InlineBytes::copy_from(&[7; INLINE_CAPACITY]);
        assert!(matches!(short, InlineBytes::Inline { .. }));
        assert_eq!(short.as_slice(), [7; INLINE_CAPACITY]);
        let long = InlineBytes::copy_from(&[8; INLINE_CAPACITY + 1]);
        assert!(matches!(long, InlineBytes::Heap(_)));
        assert_eq!(long.as_slice(), [8; INLINE_CAPACITY + 1]);
        assert_eq!(InlineBytes::copy_from(b"").as_slice(), b"");
    }

    #[test]
    fn a_long_vec_is_taken_over_and_given_back() {
        let payload: Vec<u8> = (0..100).collect();
        let bytes = InlineBytes::from_vec(payload.clone());
        assert_eq!(bytes.clone().into_vec(), payload);
        assert_eq!(InlineBytes::from_vec(vec![1, 2]).into_vec(), [1, 2]);
    }

    #[test]
    fn strings_round_trip_inline_and_boxed() {
        for text in ["", "key-1", "\u{6d88}\u{606f}", &"x".repeat(40)] {
            let stored = InlineStr::copy_from(text);
            assert_eq!(stored.as_str(), text);
            assert_eq!(stored.as_bytes(), text.as_bytes());
        }
    }

    #[test]
    fn the_inline_forms_are_no_larger_than_a_vec() {
        assert_eq!(
            std::mem::size_of::<InlineBytes>(),
            std::mem::size_of::<Vec<u8>>()
        );
        assert_eq!(
            std::mem::size_of::<Option<InlineStr>>(),
            std::mem::size_of::<Vec<u8>>()
        );
    }
}
