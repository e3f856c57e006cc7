//! The consumer's synchronisation primitives: `parking_lot`'s mutex and std's atomics normally
//! (std's mutex under Miri), loom's under `--cfg loom`, so that the loom models in `loom_tests.rs` run the real dispatch
//! code (the receive queue from `pulsar-common` switches the same way).

#[cfg(not(any(loom, miri)))]
mod imp {
    pub(crate) use parking_lot::Mutex;
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
}

/// A mutex with `parking_lot`'s signature (no poisoning) over another back-end: loom's, or
/// std's under Miri (parking_lot_core's unlock path forms a reference to a waiter that may
/// have gone, which Miri reports; see `pulsar_common`'s `sync::plain`).
#[cfg(any(loom, miri))]
macro_rules! poison_free_mutex {
    ($raw:ident) => {
        #[derive(Debug)]
        pub(crate) struct Mutex<T>($raw::sync::Mutex<T>);

        impl<T> Mutex<T> {
            pub(crate) fn new(value: T) -> Self {
                Self($raw::sync::Mutex::new(value))
            }

            pub(crate) fn lock(&self) -> $raw::sync::MutexGuard<'_, T> {
                self.0
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
            }
        }
    };
}

#[cfg(all(miri, not(loom)))]
mod imp {
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
    poison_free_mutex!(std);
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
    poison_free_mutex!(loom);
}

pub(crate) use imp::*;

/// Offers the core to another runnable thread (a routing pass with a small batch does, see
/// `batch_top_up.rs`); nothing in loom's models, which choose the schedules themselves.
#[cfg(not(loom))]
pub(crate) fn offer_core() {
    std::thread::yield_now();
}

/// Offers the core to another runnable thread; nothing in loom's models.
#[cfg(loom)]
pub(crate) fn offer_core() {}

/// The clock of the routing pass's yield rule (`batch_top_up.rs`).
#[cfg(not(loom))]
pub(crate) fn now() -> std::time::Instant {
    std::time::Instant::now()
}

/// The clock of the routing pass's yield rule, frozen in loom's models so that every schedule
/// takes the same branches.
#[cfg(loom)]
pub(crate) fn now() -> std::time::Instant {
    static FROZEN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *FROZEN.get_or_init(std::time::Instant::now)
}
