//! `DropCounter`: counts how many times values carrying it were dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Counts the drops of the [`Token`]s it hands out.
#[derive(Clone, Default, Debug)]
pub struct DropCounter(Arc<AtomicUsize>);

impl DropCounter {
    /// A counter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// A value whose drop this counter counts.
    pub fn token(&self) -> Token {
        Token(Arc::clone(&self.0))
    }

    /// Tokens dropped so far.
    pub fn drops(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A value counted by its [`DropCounter`] when dropped.
#[derive(Debug)]
pub struct Token(Arc<AtomicUsize>);

impl Drop for Token {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}
