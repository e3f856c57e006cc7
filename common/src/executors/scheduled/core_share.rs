//! `CoreShare`: a `ScheduledHandle`'s hold on its executor's core, which its `cancel` locks.
//! Like an `Arc` clone it keeps the core alive while the handle lives, but arming a timer costs
//! no read-modify-write of a shared count: `arm` hands out shares it takes in batches.
//!
//! # The protocol
//!
//! - `HandleShares::outstanding` counts the shares that exist: those handles hold plus the
//!   spare ones the core keeps for the next arms. While it is not zero, the shares, all
//!   together, own **one** strong reference of the core: the arm that raises it from zero takes
//!   that reference; whoever brings it back to zero lets go of it.
//! - `arm`, under the queue lock and only while the executor runs, gives each new handle one
//!   spare share. When none is left it takes [`BATCH`] more with one `fetch_add`.
//! - A handle gives its share up when it is dropped, with one `fetch_sub`, as an `Arc` clone
//!   would. The handle that brings the count to zero lets go of the strong reference, which may
//!   free the core.
//! - The shutdown (`shutdown`, `shutdown_now`, under the queue lock) gives the spare shares up:
//!   no arm can take them any more. The shutdown's caller holds its own strong reference, so
//!   giving the spares up never frees the core under its own lock.
//!
//! So a timer costs one read-modify-write of the core's line (the handle's drop) where an
//! `Arc` clone cost two. A won `cancel` cannot give the share back to the spares at once (which
//! would make the whole timer free of them): the handle may be shared, another thread may be
//! inside its `cancel` with the core in hand, and a recycled share could be spent or given up
//! at shutdown while that thread still uses the core. Measured on 2 cores: the arm's
//! `Arc::clone` was most of the two operations' cost (see "Measured and not kept" in
//! the `README.md` beside this file).

use crate::executors::executor_core::RUNNING;
use crate::executors::scheduled::timers::ScheduledCore;
use crate::sync::{fence, Arc, AtomicUsize, Ordering};
use std::ops::Deref;
use std::ptr::NonNull;

/// Shares taken at once when the spares run out.
pub(crate) const BATCH: usize = 64;

/// The shares of one core (a field of its `Timers`).
pub(crate) struct HandleShares {
    /// Shares that exist: held by handles, or spare. See the module docs.
    outstanding: AtomicUsize,
    /// Spare shares (counted in `outstanding`). Read and written only under the queue lock,
    /// with plain loads and stores, and only while the executor runs.
    spare: AtomicUsize,
}

impl HandleShares {
    pub(crate) fn new() -> Self {
        Self {
            outstanding: AtomicUsize::new(0),
            spare: AtomicUsize::new(0),
        }
    }

    /// A share for the handle of a timer just armed. Caller holds the queue lock, and the
    /// executor runs (the arm was admitted under that lock).
    pub(crate) fn take(core: &Arc<ScheduledCore>, run: u8) -> CoreShare {
        debug_assert_eq!(run, RUNNING, "shares are handed out only while running");
        let shares = &core.between.shares;
        let mut spare = shares.spare.load(Ordering::Relaxed);
        if spare == 0 {
            // Relaxed as `Arc::clone`: the caller's own reference keeps the core alive.
            if shares.outstanding.fetch_add(BATCH, Ordering::Relaxed) == 0 {
                // The shares' strong reference, let go of in `release`.
                std::mem::forget(Arc::clone(core));
            }
            spare = BATCH;
        }
        shares.spare.store(spare - 1, Ordering::Relaxed);
        let core = NonNull::new(Arc::as_ptr(core).cast_mut()).expect("an Arc is not null");
        CoreShare { core }
    }

    /// At shutdown, under the queue lock: gives the spare shares up (none is handed out once
    /// the executor stopped running). Idempotent.
    pub(crate) fn give_up_spares(core: &Arc<ScheduledCore>) {
        let shares = &core.between.shares;
        let spare = shares.spare.load(Ordering::Relaxed);
        if spare == 0 {
            return;
        }
        shares.spare.store(0, Ordering::Relaxed);
        // SAFETY: the pointer is `Arc::as_ptr`'s, and the spares are the core's own shares,
        // given up here once (`spare` is zero after). The caller's reference keeps the core
        // alive through the call whatever `release` does.
        #[allow(unsafe_code)]
        unsafe {
            release(Arc::as_ptr(core), spare);
        }
    }

    /// Shares that exist (held and spare), for tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn outstanding(&self) -> usize {
        self.outstanding.load(Ordering::Acquire)
    }
}

/// Gives up `n` shares of the core at `core`; the last share given up lets go of the shares'
/// strong reference.
///
/// # Safety
///
/// `core` is the core's `Arc::as_ptr` pointer, and the caller owns `n` shares of it, which it
/// gives up here (and never uses again).
#[allow(unsafe_code)]
unsafe fn release(core: *const ScheduledCore, n: usize) {
    // SAFETY: the caller's shares keep the core alive until this `fetch_sub` gives them up.
    // (The reference is a local, not an argument: once another thread may free the core it
    // is not used again, as in `Arc`'s drop.)
    let shares: &HandleShares = unsafe { &(*core).between.shares };
    let outstanding = &shares.outstanding;
    if outstanding.fetch_sub(n, Ordering::Release) != n {
        return;
    }
    // As `Arc`'s drop: every use of the core through another share happens before the free.
    fence(Ordering::Acquire);
    // SAFETY: the count reached zero, so the strong reference the shares owned (taken when it
    // left zero, `HandleShares::take`) is this call's to let go of; `core` is `Arc::as_ptr`'s.
    unsafe { Arc::decrement_strong_count(core) };
}

/// One handle's share of its executor's core: derefs to the core while the handle lives.
pub(crate) struct CoreShare {
    /// `Arc::as_ptr` of the core (its provenance covers the `Arc`'s counts).
    core: NonNull<ScheduledCore>,
}

// SAFETY: a share stands for an `Arc<ScheduledCore>` clone, which is `Send` and `Sync` because
// the core is (every field of it is a lock, an atomic or immutable).
#[allow(unsafe_code)]
unsafe impl Send for CoreShare where Arc<ScheduledCore>: Send {}
// SAFETY: as for `Send`.
#[allow(unsafe_code)]
unsafe impl Sync for CoreShare where Arc<ScheduledCore>: Sync {}

impl Deref for CoreShare {
    type Target = ScheduledCore;

    #[inline]
    fn deref(&self) -> &ScheduledCore {
        // SAFETY: the share, owned until `drop`, keeps `outstanding` above zero, so the
        // shares' strong reference keeps the core alive.
        #[allow(unsafe_code)]
        unsafe {
            self.core.as_ref()
        }
    }
}

impl Drop for CoreShare {
    fn drop(&mut self) {
        // SAFETY: the pointer is `Arc::as_ptr`'s; this share is given up once, here.
        #[allow(unsafe_code)]
        unsafe {
            release(self.core.as_ptr(), 1);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::executors::{ScheduledExecutor, ThreadFactory};
    use pulsar_testkit::DropCounter;
    use std::sync::mpsc::{channel, Receiver, Sender};
    use std::thread::{self, JoinHandle};
    use std::time::Duration;

    /// Starts workers whose thread reports when the worker's body returned, which drops the
    /// body's reference of the core with it.
    struct ReportingFactory(Sender<()>);

    impl ThreadFactory for ReportingFactory {
        fn new_thread(
            &self,
            body: Box<dyn FnOnce() + Send + 'static>,
        ) -> std::io::Result<JoinHandle<()>> {
            let done = self.0.clone();
            Ok(thread::spawn(move || {
                body();
                let _ = done.send(());
            }))
        }
    }

    fn executor() -> (ScheduledExecutor, Receiver<()>) {
        let (done, worker_gone) = channel();
        (ScheduledExecutor::new(ReportingFactory(done)), worker_gone)
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn arms_take_shares_in_batches_holding_one_strong_reference_and_shutdown_gives_the_spares_up() {
        let (executor, worker_gone) = executor();
        let core = std::sync::Arc::downgrade(executor.core());
        let first = executor.schedule(HOUR, || ()).unwrap();
        let shares = || executor.core().between.shares.outstanding();
        assert_eq!(shares(), BATCH);
        // The executor's, the worker's and the shares' references.
        assert_eq!(core.strong_count(), 3);
        let more: Vec<_> = (0..2 * BATCH)
            .map(|_| executor.schedule(HOUR, || ()).unwrap())
            .collect();
        assert_eq!(shares(), 3 * BATCH, "two more batches");
        assert_eq!(
            core.strong_count(),
            3,
            "still one reference for all the shares"
        );
        drop(first);
        drop(more);
        assert_eq!(shares(), BATCH - 1, "the spares are left");
        drop(executor.shutdown_now()); // hands the timers back as tasks; dropped, they cancel
        assert_eq!(shares(), 0, "the spares given up");
        worker_gone.recv().unwrap();
        assert_eq!(core.strong_count(), 1, "only the executor's is left");
    }

    #[test]
    fn a_handle_keeps_the_core_alive_after_its_executor_and_worker_are_gone_and_frees_it_last() {
        let (executor, worker_gone) = executor();
        let core = std::sync::Arc::downgrade(executor.core());
        let drops = DropCounter::new();
        let token = drops.token();
        let handle = executor.schedule(HOUR, move || drop(token)).unwrap();
        assert!(handle.cancel());
        assert_eq!(drops.drops(), 1, "the cancel dropped the closure");
        drop(executor); // shuts it down; the worker exits with nothing armed
        worker_gone.recv().unwrap();
        assert_eq!(core.strong_count(), 1, "the handle's share keeps the core");
        // The handle still reaches its core (Miri reports a use after free if the share did
        // not keep it): a second cancel looks at the queue and reports that the timer is
        // already cancelled.
        assert!(!handle.cancel());
        assert!(handle.is_cancelled());
        drop(handle);
        assert_eq!(core.strong_count(), 0, "the last share freed the core");
    }

    #[test]
    fn handles_dropped_on_other_threads_free_the_core_once() {
        let (executor, worker_gone) = executor();
        let core = std::sync::Arc::downgrade(executor.core());
        let count = if cfg!(miri) { 20 } else { 2_000 };
        let handles: Vec<_> = (0..count)
            .map(|i| {
                let delay = if i % 2 == 0 { HOUR } else { Duration::ZERO };
                executor.schedule(delay, || ()).unwrap()
            })
            .collect();
        let mut halves = handles.into_iter().partition::<Vec<_>, _>(|h| h.is_done());
        let other = thread::spawn({
            let handles = std::mem::take(&mut halves.0);
            move || drop(handles)
        });
        drop(executor.shutdown_now());
        drop(executor);
        drop(halves.1);
        other.join().unwrap();
        worker_gone.recv().unwrap();
        assert_eq!(
            core.strong_count(),
            0,
            "freed once every share and owner is gone"
        );
    }
}
