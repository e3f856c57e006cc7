//! `SingleThreadExecutor`: the plain single-worker executor (nothing between batches).

use crate::executors::between_batches::NoTimers;
use crate::executors::single_worker_executor::SingleWorkerExecutor;

/// A single-thread executor: one worker thread, started lazily, runs the tasks in FIFO order.
///
/// Made by [`PulsarExecutors`](crate::executors::PulsarExecutors). Clones share one executor;
/// nothing can reconfigure it once made.
///
/// - **Allocation-lean**: a closure capturing up to three machine words (an `Arc` and two
///   `usize`, say) is stored inline in its ring slot, so once the ring has grown to fit,
///   [`execute`](Self::execute) allocates nothing. Larger closures are boxed.
/// - **Futures**: [`spawn`](SingleWorkerExecutor::spawn) polls a future on the worker, again
///   each time it is woken, queued like any task; [`submit`](Self::submit) and `spawn` return a
///   [`TaskHandle`](crate::executors::TaskHandle) to join, await or
///   [`cancel`](crate::executors::TaskHandle::cancel).
/// - **Unbounded admission**: `execute` never blocks; tasks are rejected (and handed back)
///   only after shutdown.
/// - **Panics** never stop the executor: a panicking `execute`d task is reported to the thread
///   factory's [`on_task_panic`](crate::executors::ThreadFactory::on_task_panic); a
///   `submit`ted one to its [`TaskHandle`](crate::executors::TaskHandle).
/// - **Shutdown**: [`shutdown`](Self::shutdown) lets queued tasks run;
///   [`shutdown_now`](Self::shutdown_now) hands them back. For every task offered concurrently
///   with either, exactly one holds: it ran, `shutdown_now` returned it, or it was rejected.
///   The running task is never interrupted (Rust has no thread interruption): it finishes.
/// - **Lifecycle**: with `auto_shutdown_on_drop` (the default), dropping the last clone shuts
///   the executor down gracefully: accepted tasks still run, then the thread exits. Without
///   it, the owner is expected to shut it down; if the last clone is dropped anyway, the
///   executor still shuts down gracefully and logs a warning naming itself. `Drop` never
///   blocks.
/// - **Memory back after a burst**: once the worker has been idle for the configured period
///   (1 s by default) it trims the queue back to at most 64 slots; no global trimmer thread.
/// - **No busy idling**: an idle worker spins briefly (at most tens of microseconds, less
///   while spinning does not pay, never yielding; a few yields once spinning stops paying,
///   on a machine busier than its cores), then parks; producers make no wake-up call while
///   the worker is awake.
///
/// A task that holds a clone of its own executor keeps it alive (as in Java, where the queue
/// is reachable from the worker): shut such executors down explicitly.
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::PulsarExecutors;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let executor = PulsarExecutors::new_single_thread_executor();
/// let counter = Arc::new(AtomicUsize::new(0));
/// for _ in 0..100 {
///     let counter = Arc::clone(&counter);
///     executor.execute(move || {
///         counter.fetch_add(1, Ordering::Relaxed);
///     }).unwrap();
/// }
/// executor.shutdown(); // the 100 queued tasks still run
/// assert!(executor.await_termination(Duration::from_secs(10)));
/// assert_eq!(counter.load(Ordering::Relaxed), 100);
/// ```
pub type SingleThreadExecutor = SingleWorkerExecutor<NoTimers>;
