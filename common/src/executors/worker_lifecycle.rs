//! `WorkerLifecycle`: what every executor core shares with its one worker thread — the run
//! state's lock-free mirror, termination signalling, naming, thread start, the panic boundary
//! and the bounded idle spin: the parts of `ExecutorCore` that do not depend on its queue.

use crate::executors::executor_core::TERMINATED;
use crate::executors::raw_task::{JobOutcome, RawTask};
use crate::executors::thread_factory::ThreadFactory;
#[cfg(not(loom))]
use crate::executors::thread_factory::ThreadFactoryPanicked;
use crate::sync::{AtomicU8, Condvar, Mutex, MutexGuard, Ordering};
use std::any::Any;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::OnceLock;
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

/// Executor ids start at 1: 0 in [`CURRENT_EXECUTOR`] means "not a worker thread".
static NEXT_EXECUTOR_ID: AtomicU64 = AtomicU64::new(1);

std::thread_local! {
    /// The id of the executor whose worker loop this thread is running, or 0. Set by
    /// [`WorkerLifecycle::enter_worker`] for the duration of the loop (a factory's thread may
    /// outlive the loop and do other things). Read only on blocking paths (a handle's `join`
    /// whose result is not ready), to refuse a wait that could never end: never per task.
    static CURRENT_EXECUTOR: Cell<u64> = const { Cell::new(0) };
}

/// How many nested payloads [`drop_panic_payload`] drops before it gives up and leaks one.
const NESTED_PAYLOAD_DROPS: usize = 8;

/// Drops a caught panic's payload inside a panic guard of its own: a payload whose `Drop`
/// panics must not unwind out of the boundary that caught it. The payload of that second
/// panic is dropped the same way, and so on; only a chain longer than
/// [`NESTED_PAYLOAD_DROPS`] (a payload whose every drop panics anew) is cut by leaking the
/// last payload, since dropping it could panic forever.
pub(crate) fn drop_panic_payload(payload: Box<dyn Any + Send>) {
    let mut payload = payload;
    for _ in 0..NESTED_PAYLOAD_DROPS {
        match panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            Ok(()) => return,
            Err(nested) => payload = nested,
        }
    }
    std::mem::forget(payload);
}

/// Runs `log` (a `tracing` call the executor makes on its own account, outside any task) so
/// that a panicking tracing layer cannot unwind out of it: the panic is caught and its payload
/// dropped ([`drop_panic_payload`]). Used where an unwind would leave the executor's state
/// half-changed (a worker loop that ends without its task, a start left `Starting`, a drop
/// that skips its shutdown).
pub(crate) fn log_guarded(log: impl FnOnce()) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(log)) {
        drop_panic_payload(payload);
    }
}

/// The lifecycle half of an executor core.
pub(crate) struct WorkerLifecycle {
    /// Mirror of the run state kept under the core's queue lock (written only through
    /// [`set_run`](Self::set_run) while holding it): lock-free `is_shutdown`/`is_terminated`.
    run: AtomicU8,
    /// `await_termination` waits here, with the core's queue lock.
    termination: Condvar,
    factory: std::sync::Arc<dyn ThreadFactory>,
    /// `{kind}#{id}` names the executor in logs until its thread has a name.
    kind: &'static str,
    id: u64,
    /// The worker thread's name, once started.
    thread_name: OnceLock<String>,
    /// The worker thread's id, once it runs: `await_termination` on it returns at once.
    worker_thread: OnceLock<ThreadId>,
    /// Set by the first thread that enters the worker loop. A thread factory that starts a
    /// thread and then fails or panics leaves a body running that the core counted as not
    /// started, and a later start runs another: whichever enters second returns at once, so
    /// the single-worker contract of `TaskBatch::claim` holds whatever the factory does.
    worker_claimed: AtomicBool,
}

/// Marks the current thread as an executor's worker until dropped (see [`CURRENT_EXECUTOR`]).
pub(crate) struct WorkerGuard {
    previous: u64,
}

impl Drop for WorkerGuard {
    fn drop(&mut self) {
        let previous = self.previous;
        let _ = CURRENT_EXECUTOR.try_with(|current| current.set(previous));
    }
}

impl WorkerLifecycle {
    pub(crate) fn new(
        factory: std::sync::Arc<dyn ThreadFactory>,
        kind: &'static str,
        run: u8,
    ) -> Self {
        Self {
            run: AtomicU8::new(run),
            termination: Condvar::new(),
            factory,
            kind,
            id: NEXT_EXECUTOR_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            thread_name: OnceLock::new(),
            worker_thread: OnceLock::new(),
            worker_claimed: AtomicBool::new(false),
        }
    }

    /// Whether the calling thread is running this executor's worker loop: a blocking wait for
    /// a result this executor has yet to produce would then never end. One thread-local read;
    /// call it only on a blocking path.
    pub(crate) fn is_current_worker(&self) -> bool {
        is_worker_of(self.id)
    }

    /// This executor's process-unique id (what [`is_worker_of`] compares).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// A name for logs: the worker thread's name once it exists.
    pub(crate) fn name(&self) -> String {
        match self.thread_name.get() {
            Some(name) => name.clone(),
            None => format!("{}#{}", self.kind, self.id),
        }
    }

    /// The run state, read without the lock.
    #[inline]
    pub(crate) fn run_state(&self) -> u8 {
        self.run.load(Ordering::Acquire)
    }

    /// The run state for spin exit tests (a hint).
    #[inline]
    pub(crate) fn run_state_hint(&self) -> u8 {
        self.run.load(Ordering::Relaxed)
    }

    /// Moves the locked run state `slot` to `run` and mirrors it. Caller holds the queue lock.
    pub(crate) fn set_run(&self, slot: &mut u8, run: u8) {
        *slot = run;
        self.run.store(run, Ordering::Release);
    }

    /// Marks the executor terminated and wakes every `await_termination`. Caller holds the
    /// queue lock.
    pub(crate) fn mark_terminated(&self, slot: &mut u8) {
        self.set_run(slot, TERMINATED);
        self.termination.notify_all();
    }

    /// Waits until the state `run_of` reads under `queue` is `TERMINATED`, at most `timeout`.
    /// On the worker thread itself it returns at once (the worker cannot outlive itself).
    pub(crate) fn await_termination<Q>(
        &self,
        queue: &Mutex<Q>,
        run_of: impl Fn(&Q) -> u8,
        timeout: Duration,
    ) -> bool {
        if self.worker_thread.get() == Some(&thread::current().id()) {
            return self.run_state() == TERMINATED;
        }
        let deadline = Instant::now().checked_add(timeout);
        let mut guard: MutexGuard<'_, Q> = queue.lock();
        while run_of(&guard) != TERMINATED {
            match deadline {
                None => guard = self.termination.wait(guard),
                Some(deadline) => {
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    if remaining.is_zero() {
                        return false;
                    }
                    guard = self.termination.wait_timeout(guard, remaining).0;
                }
            }
        }
        true
    }

    /// Starts the worker thread with the thread factory (user code: call it without locks).
    ///
    /// A factory that panics is a failed start like one that returns `Err`: the panic is
    /// caught here and becomes an `io::Error` wrapping [`ThreadFactoryPanicked`] (its message;
    /// the payload is dropped inside a guard). So every path that starts a thread — the lazy
    /// start, the restart at `shutdown` — sees an ordinary error and puts the worker slot back
    /// to `NotStarted`, and no unwind can leave it `Starting`.
    #[cfg(not(loom))]
    pub(crate) fn spawn(&self, body: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
        let factory = &*self.factory;
        let started = panic::catch_unwind(AssertUnwindSafe(move || factory.new_thread(body)));
        let handle = match started {
            Ok(started) => started?,
            Err(payload) => {
                let error = ThreadFactoryPanicked::from_payload(payload.as_ref());
                drop_panic_payload(payload);
                return Err(std::io::Error::other(error));
            }
        };
        if let Some(name) = handle.thread().name() {
            let _ = self.thread_name.set(name.to_owned());
        }
        Ok(())
    }

    /// Under loom the models run the worker themselves.
    #[cfg(loom)]
    pub(crate) fn spawn(&self, _body: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
        Err(std::io::Error::other("no thread factory under loom"))
    }

    /// Called first thing on the worker thread. `None` if another thread already entered the
    /// worker loop (a factory that started a thread and then reported failure): the caller
    /// returns at once. Otherwise the guard marks this thread as the executor's worker until
    /// the loop ends.
    #[must_use]
    pub(crate) fn enter_worker(&self) -> Option<WorkerGuard> {
        if self
            .worker_claimed
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            log_guarded(
                || tracing::error!(executor = %self.name(), "a second worker thread was started (the thread factory started a thread but reported failure); it exits at once"),
            );
            return None;
        }
        let _ = self.worker_thread.set(thread::current().id());
        let previous = CURRENT_EXECUTOR
            .try_with(|current| current.replace(self.id))
            .unwrap_or(0);
        Some(WorkerGuard { previous })
    }

    /// Runs a task at the one panic boundary: a panic goes to the factory's hook. Returns how
    /// the task ended (a submitted task catches its own panic and says so).
    #[inline]
    pub(crate) fn run_task(&self, task: RawTask) -> JobOutcome {
        match panic::catch_unwind(AssertUnwindSafe(|| task.run())) {
            Ok(outcome) => outcome,
            Err(payload) => {
                self.report_panic(payload);
                JobOutcome::Panicked
            }
        }
    }

    /// Hands a caught panic to the thread factory's hook. The hook should not panic; if it
    /// does, its panic is caught and its payload dropped inside a guard too
    /// ([`drop_panic_payload`]), so nothing the hook does can unwind into the worker loop.
    pub(crate) fn report_panic(&self, payload: Box<dyn Any + Send>) {
        let factory = &*self.factory;
        if let Err(hook_panic) =
            panic::catch_unwind(AssertUnwindSafe(move || factory.on_task_panic(payload)))
        {
            drop_panic_payload(hook_panic);
        }
    }

    /// Drops tasks an executor still holds when it is dropped (no worker ever ran them), each
    /// at the panic boundary: a closure whose captures panic in `Drop` is reported to the
    /// factory's hook like a task that panicked, and every other task is still dropped, once.
    pub(crate) fn drop_stranded(&self, tasks: impl Iterator<Item = RawTask>) {
        for task in tasks {
            self.guarded(move || drop(task));
        }
    }

    /// Runs `f` (which runs or drops user code outside the worker loop: a closure dropped at
    /// shutdown or by `Drop`) at the panic boundary: a panic goes to the factory's hook, so a
    /// shutdown finishes every step and a `Drop` never unwinds.
    pub(crate) fn guarded(&self, f: impl FnOnce()) {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(f)) {
            self.report_panic(payload);
        }
    }
}

/// Whether the calling thread is running the worker loop of the executor with id `id`.
pub(crate) fn is_worker_of(id: u64) -> bool {
    CURRENT_EXECUTOR
        .try_with(|current| current.get() == id)
        .unwrap_or(false)
}
