//! `Message`: what a consumer receives — payload, key, ordering key.

use crate::consumer::inline_bytes::{InlineBytes, InlineStr};
use std::fmt;

/// The key Key_Shared dispatch routes a message without a key by (Pulsar's `NONE_KEY`).
pub const NONE_KEY: &[u8] = b"NONE_KEY";

/// A message as a consumer sees it.
///
/// Payloads and keys of up to 22 bytes are stored inside the message itself, so a small
/// message costs no heap allocation; longer ones are one allocation each. An ordering key (rare:
/// it only refines Key_Shared routing) is always one allocation: keeping it out of line makes a
/// message 64 bytes, one cache line, instead of 72 — a message crosses cores twice on its way
/// to a listener, and the `consumer_dispatch` benchmark measured ~4-9% more throughput for the
/// smaller message.
///
/// # Examples
///
/// ```
/// use pulsar_client::{Message, NONE_KEY};
///
/// let message = Message::new(b"payload").with_key("user-7");
/// assert_eq!(message.payload(), b"payload");
/// assert_eq!(message.key(), Some("user-7"));
/// assert_eq!(message.routing_key_bytes(), b"user-7");
///
/// // The ordering key wins over the key; no key at all routes as "NONE_KEY".
/// assert_eq!(message.with_ordering_key(b"o").routing_key_bytes(), b"o");
/// assert_eq!(Message::new([]).routing_key_bytes(), NONE_KEY);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Message {
    payload: InlineBytes,
    key: Option<InlineStr>,
    ordering_key: Option<Box<[u8]>>,
}

impl Message {
    /// A message with a copy of `payload` and no key.
    #[inline]
    pub fn new(payload: impl AsRef<[u8]>) -> Self {
        Self {
            payload: InlineBytes::copy_from(payload.as_ref()),
            key: None,
            ordering_key: None,
        }
    }

    /// A message that takes `payload` over (a long payload is not copied).
    pub fn from_vec(payload: Vec<u8>) -> Self {
        Self {
            payload: InlineBytes::from_vec(payload),
            key: None,
            ordering_key: None,
        }
    }

    /// Sets the (partition) key.
    #[inline]
    pub fn with_key(mut self, key: impl AsRef<str>) -> Self {
        self.key = Some(InlineStr::copy_from(key.as_ref()));
        self
    }

    /// Sets the ordering key (it decides Key_Shared routing when present). Allocates once.
    pub fn with_ordering_key(mut self, ordering_key: impl AsRef<[u8]>) -> Self {
        self.ordering_key = Some(ordering_key.as_ref().into());
        self
    }

    /// The payload.
    pub fn payload(&self) -> &[u8] {
        self.payload.as_slice()
    }

    /// The payload, by value.
    pub fn into_payload(self) -> Vec<u8> {
        self.payload.into_vec()
    }

    /// The key, if any.
    pub fn key(&self) -> Option<&str> {
        self.key.as_ref().map(InlineStr::as_str)
    }

    /// The ordering key, if any.
    pub fn ordering_key(&self) -> Option<&[u8]> {
        self.ordering_key.as_deref()
    }

    /// The bytes Key_Shared dispatch routes by (Pulsar's `peekMessageKey`): the ordering key,
    /// else the key's UTF-8 bytes, else [`NONE_KEY`].
    #[inline]
    pub fn routing_key_bytes(&self) -> &[u8] {
        match (&self.ordering_key, &self.key) {
            (Some(ordering_key), _) => ordering_key,
            (None, Some(key)) => key.as_bytes(),
            (None, None) => NONE_KEY,
        }
    }
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Message")
            .field("payload_len", &self.payload.as_slice().len())
            .field("key", &self.key)
            .field("ordering_key", &self.ordering_key)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Message>(), 64);
    }
}
