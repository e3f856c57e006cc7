//! `IoRuntime`: the small runtime (one `zk-io` thread) that drives the async ZooKeeper client,
//! and the blocking facade the synchronous components call through.
//!
//! `zookeeper-client` is async and spawns its session task on the runtime current at connect
//! time; it does its network I/O through `async-io`, so this runtime only has to poll that task
//! and the session's watch pumps. Callers block on one operation at a time with
//! [`IoRuntime::block_on`], which polls the operation on the caller's thread with a deadline
//! (an `async-io` timer, so it works whatever state the runtime is in).

use crate::component::threads::ComponentThreads;
use crate::component::CLOSE_TIMEOUT;
use parking_lot::Mutex;
use std::fmt;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::{Handle, Runtime};

/// Process-wide runtime counter, for thread names `zk-io-{pool_id}-{n}`.
static NEXT_POOL_ID: AtomicUsize = AtomicUsize::new(1);

/// The operation did not finish within its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Elapsed;

/// A one-thread tokio runtime named `zk-io`, shut down explicitly.
pub(crate) struct IoRuntime {
    /// `None` once shut down.
    runtime: Mutex<Option<Runtime>>,
    handle: Handle,
}

impl IoRuntime {
    /// Starts the runtime; its thread is recorded in `threads`.
    pub(crate) fn start(threads: &ComponentThreads) -> io::Result<Self> {
        let pool_id = NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed);
        let next_thread = Arc::new(AtomicUsize::new(1));
        let threads = threads.clone();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(1)
            .thread_name_fn(move || {
                let n = next_thread.fetch_add(1, Ordering::Relaxed);
                format!("zk-io-{pool_id}-{n}")
            })
            .on_thread_start(move || threads.register_current_thread())
            .build()?;
        let handle = runtime.handle().clone();
        Ok(Self {
            runtime: Mutex::new(Some(runtime)),
            handle,
        })
    }

    /// Runs `future` to completion on the calling thread, within this runtime's context (so
    /// the client can spawn its tasks here), giving up after `timeout`.
    ///
    /// # Panics
    ///
    /// If called from within an async runtime's thread (blocking there would stall it); the
    /// components never do.
    pub(crate) fn block_on<F: Future>(
        &self,
        future: F,
        timeout: Duration,
    ) -> Result<F::Output, Elapsed> {
        let deadline = async move {
            async_io::Timer::after(timeout).await;
            None
        };
        let work = async move { Some(future.await) };
        self.handle
            .block_on(futures_lite::future::or(work, deadline))
            .ok_or(Elapsed)
    }

    /// Spawns a task on the runtime; `None` once it is shut down.
    pub(crate) fn spawn<F>(&self, future: F) -> Option<tokio::task::JoinHandle<()>>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let guard = self.runtime.lock();
        guard.as_ref().map(|runtime| runtime.spawn(future))
    }

    /// Stops the runtime: its tasks are dropped and its thread exits (waited for up to 10 s,
    /// unless called from the runtime's own thread). Idempotent.
    pub(crate) fn shutdown(&self) {
        let Some(runtime) = self.runtime.lock().take() else {
            return;
        };
        if Handle::try_current().is_ok() {
            // On a runtime thread a blocking wait would panic.
            runtime.shutdown_background();
        } else {
            runtime.shutdown_timeout(CLOSE_TIMEOUT);
        }
    }
}

impl Drop for IoRuntime {
    fn drop(&mut self) {
        // Never blocks in `Drop`: the thread is told to stop and exits on its own.
        if let Some(runtime) = self.runtime.get_mut().take() {
            runtime.shutdown_background();
        }
    }
}

impl fmt::Debug for IoRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IoRuntime")
            .field("running", &self.runtime.lock().is_some())
            .finish()
    }
}
