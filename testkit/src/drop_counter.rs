//! `DropCounter`: counts how many times values carrying it were dropped (and
//! [`PanickingToken`]: a counted value whose `Drop` panics).

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

    /// A value whose drop this counter counts, and which then panics (unless the thread is
    /// already panicking): a capture that makes dropping a task fail.
    pub fn panicking_token(&self) -> PanickingToken {
        PanickingToken(Arc::clone(&self.0))
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

/// A value counted by its [`DropCounter`] when dropped, whose `Drop` then panics with
/// [`PanickingToken::MESSAGE`] (unless the thread is already unwinding, where a second panic
/// would abort).
#[derive(Debug)]
pub struct PanickingToken(Arc<AtomicUsize>);

impl PanickingToken {
    /// The message of the panic its `Drop` raises.
    pub const MESSAGE: &'static str = "PanickingToken dropped";
}

impl Drop for PanickingToken {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        if !std::thread::panicking() {
            panic!("{}", Self::MESSAGE);
        }
    }
}
