//! The consumer's synchronisation primitives: `parking_lot`'s mutex and std's atomics normally,
//! loom's under `--cfg loom`, so that the loom models in `loom_tests.rs` run the real dispatch
//! code (the receive queue from `pulsar-common` switches the same way).

#[cfg(not(loom))]
mod imp {
    pub(crate) use parking_lot::Mutex;
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};

    /// loom's mutex with `parking_lot`'s signature (no poisoning).
    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
            self.0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        }
    }
}

pub(crate) use imp::*;
