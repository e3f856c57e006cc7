//! `DecidedOnce`: a yes-or-no fact about the machine, found out on first use and then read
//! with one load (whether the kernel offers `membarrier(2)`'s expedited barrier, whether the
//! CPU has `PREFETCHW`).

use std::sync::atomic::{AtomicU8, Ordering};

const UNKNOWN: u8 = 0;
const YES: u8 = 1;
const NO: u8 = 2;

/// A yes-or-no answer, decided by the first [`get`](Self::get) and kept.
///
/// Racing first callers may each decide: the deciding closure must give every caller the same
/// answer (and whatever it does must be safe to do twice), as reading a CPU feature or
/// registering idempotently with the kernel does.
pub(crate) struct DecidedOnce(AtomicU8);

impl DecidedOnce {
    /// Not decided yet.
    pub(crate) const fn new() -> Self {
        Self(AtomicU8::new(UNKNOWN))
    }

    /// The answer, running `decide` for it the first time. The acquire load pairs with the
    /// release store of the decision, so what `decide` did is visible to every caller that
    /// reads its answer.
    #[inline]
    pub(crate) fn get(&self, decide: impl FnOnce() -> bool) -> bool {
        match self.0.load(Ordering::Acquire) {
            YES => true,
            NO => false,
            _ => self.decide(decide),
        }
    }

    /// Whether an answer has been decided (a relaxed look; it decides nothing).
    pub(crate) fn is_decided(&self) -> bool {
        self.0.load(Ordering::Relaxed) != UNKNOWN
    }

    #[cold]
    #[inline(never)]
    fn decide(&self, decide: impl FnOnce() -> bool) -> bool {
        let yes = decide();
        self.0.store(if yes { YES } else { NO }, Ordering::Release);
        yes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn the_first_get_decides_and_later_ones_read_the_answer() {
        for answer in [true, false] {
            let fact = DecidedOnce::new();
            let decisions = Cell::new(0);
            let decide = || {
                decisions.set(decisions.get() + 1);
                answer
            };
            assert!(!fact.is_decided());
            assert_eq!(fact.get(decide), answer);
            assert!(fact.is_decided());
            assert_eq!(fact.get(decide), answer);
            assert_eq!(fact.get(|| !answer), answer, "decided: not asked again");
            assert_eq!(decisions.get(), 1);
        }
    }
}
