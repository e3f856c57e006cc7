//! `BatchSourceExecutor`: drives a `BatchSource`: a triggerer makes discovery run on the discovery executor; readers prepare and read the discovered tasks in order (Pulsar's `BatchSourceExecutor`).

use crate::component::threads::ComponentThreads;
use crate::component::user_code::{call_user, catch_user, drop_user};
use crate::component::{ComponentExecutor, CLOSE_TIMEOUT};
use crate::functions::{BatchSource, TaskEmitter};
use crate::functions::{DiscoveryTrigger, DiscoveryTriggerer, TriggerOutcome};
use crate::functions::{EmitError, ReadError, SourceError};
use parking_lot::{Condvar, Mutex};
use pulsar_common::executors::RejectReason;
use pulsar_common::executors::ThreadFactory;
use std::collections::VecDeque;
use std::fmt;
use std::panic;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// The pool name of the discovery thread: `batch-source-discovery-{pool_id}-1`.
pub const BATCH_SOURCE_DISCOVERY_POOL_NAME: &str = "batch-source-discovery";

/// How long `close` waits for a running discovery to finish, by default.
pub const DEFAULT_DISCOVERY_CLOSE_TIMEOUT: Duration = CLOSE_TIMEOUT;

/// Drives a [`BatchSource`] (Pulsar's `BatchSourceExecutor`).
///
/// - **Discovery** runs on the executor's discovery thread (`batch-source-discovery-{pool}-1`,
///   started on the first trigger), never on the thread that fires the trigger, and one at a
///   time: a trigger while a discovery is queued or running is dropped
///   ([`TriggerOutcome::AlreadyRunning`]).
/// - **Tasks** that discovery emits are queued in order; [`read`](Self::read) prepares them one
///   after the other and returns their records in order (Pulsar keeps them in an intermediate
///   topic; here the queue is in memory).
/// - **A discovery failure** (error or panic) is stored and returned once, by the next read
///   that needs a new task ([`ReadError::Discovery`]); reading then goes on.
/// - [`close`](Self::close) stops the triggerer, wakes blocked readers with
///   [`ReadError::Closed`], drops the queued tasks, shuts the executor down, waits (bounded)
///   for a running discovery, and closes the source.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{
///     BatchSource, BatchSourceExecutor, OnDemandTriggerer, SourceError, TaskEmitter, TriggerOutcome,
/// };
/// use std::sync::Mutex;
///
/// /// Discovers two "files" of three lines each.
/// struct Files {
///     lines: Mutex<Vec<String>>,
/// }
///
/// impl BatchSource for Files {
///     type Task = &'static str;
///     type Record = String;
///
///     fn discover(&self, emitter: &mut TaskEmitter<'_, &'static str>) -> Result<(), SourceError> {
///         emitter.emit("a.txt")?;
///         emitter.emit("b.txt")?;
///         Ok(())
///     }
///
///     fn prepare(&self, file: &'static str) -> Result<(), SourceError> {
///         *self.lines.lock().unwrap() = (1..=3).rev().map(|n| format!("{file}:{n}")).collect();
///         Ok(())
///     }
///
///     fn read_next(&self) -> Result<Option<String>, SourceError> {
///         Ok(self.lines.lock().unwrap().pop())
///     }
/// }
///
/// let triggerer = OnDemandTriggerer::new();
/// let trigger = triggerer.handle();
/// let executor =
///     BatchSourceExecutor::builder(Files { lines: Mutex::new(Vec::new()) }, triggerer).build();
///
/// assert_eq!(trigger.trigger(), TriggerOutcome::Started); // discovery runs on its own thread
/// let records: Vec<String> = (0..6).map(|_| executor.read().unwrap()).collect();
/// assert_eq!(records, ["a.txt:1", "a.txt:2", "a.txt:3", "b.txt:1", "b.txt:2", "b.txt:3"]);
/// assert!(executor.try_read().unwrap().is_none()); // nothing more for now
/// executor.close();
/// ```
pub struct BatchSourceExecutor<S: BatchSource> {
    shared: Arc<Shared<S>>,
    /// Taken (and stopped) by `close`.
    triggerer: Mutex<Option<Box<dyn DiscoveryTriggerer>>>,
    /// Set by the first `close`: later calls return at once, reads fail fast.
    closing: AtomicBool,
    close_timeout: Duration,
    /// Set while a thread is inside `read` / `try_read` (one reader at a time).
    reading: AtomicBool,
    /// A task is prepared and not yet read to its end. Only the reader holding `reading`
    /// touches it (its Acquire/Release order these accesses).
    prepared: AtomicBool,
}

/// What the executor shares with its discovery task and its trigger.
struct Shared<S: BatchSource> {
    source: S,
    executor: ComponentExecutor,
    state: Mutex<State<S::Task>>,
    /// Readers wait here for a task, a discovery error, or close.
    changed: Condvar,
}

struct State<T> {
    /// Discovered, not yet prepared; in emission order.
    tasks: VecDeque<T>,
    /// The first discovery failure not yet returned by a read.
    discovery_error: Option<SourceError>,
    /// A discovery is queued or running (set by a trigger, cleared when `discover` returns).
    discovering: bool,
    /// Set by `close`: triggers are inactive, emits and reads fail.
    closed: bool,
}

impl<S: BatchSource> BatchSourceExecutor<S> {
    /// A builder for an executor driving `source`, whose discovery `triggerer` fires.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{BatchSource, SourceError, TaskEmitter};
    /// # struct Empty;
    /// # impl BatchSource for Empty {
    /// #     type Task = ();
    /// #     type Record = ();
    /// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> { Ok(()) }
    /// #     fn prepare(&self, _: ()) -> Result<(), SourceError> { Ok(()) }
    /// #     fn read_next(&self) -> Result<Option<()>, SourceError> { Ok(None) }
    /// # }
    /// use pulsar_server::functions::{BatchSourceExecutor, OnDemandTriggerer};
    /// use std::time::Duration;
    ///
    /// let executor = BatchSourceExecutor::builder(Empty, OnDemandTriggerer::new())
    ///     .close_timeout(Duration::from_secs(5))
    ///     .build();
    /// assert!(!executor.is_closed());
    /// ```
    pub fn builder(source: S, triggerer: impl DiscoveryTriggerer) -> BatchSourceExecutorBuilder<S> {
        BatchSourceExecutorBuilder {
            source,
            triggerer: Box::new(triggerer),
            factory: None,
            close_timeout: DEFAULT_DISCOVERY_CLOSE_TIMEOUT,
        }
    }

    /// The next record: reads the prepared task; when it is done, prepares the next queued
    /// task; when none is queued, waits for discovery to find one.
    ///
    /// # Errors
    ///
    /// [`ReadError::Discovery`] once after a discovery failed (checked whenever a new task is
    /// needed, before the queue); [`ReadError::Prepare`] / [`ReadError::Read`] when the source
    /// fails or panics; [`ReadError::Closed`] after (or during) [`close`](Self::close), also
    /// when the source call failed while the executor was closing;
    /// [`ReadError::ConcurrentRead`] if another thread is reading.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{BatchSource, TaskEmitter};
    /// # struct Failing;
    /// # impl BatchSource for Failing {
    /// #     type Task = ();
    /// #     type Record = ();
    /// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> {
    /// #         Err(SourceError::new("discovery phase failed"))
    /// #     }
    /// #     fn prepare(&self, _: ()) -> Result<(), SourceError> { Ok(()) }
    /// #     fn read_next(&self) -> Result<Option<()>, SourceError> { Ok(None) }
    /// # }
    /// use pulsar_server::functions::{BatchSourceExecutor, OnDemandTriggerer, ReadError, SourceError};
    ///
    /// let triggerer = OnDemandTriggerer::new();
    /// let trigger = triggerer.handle();
    /// let executor = BatchSourceExecutor::builder(Failing, triggerer).build();
    /// trigger.trigger();
    /// match executor.read() {
    ///     Err(ReadError::Discovery(error)) => assert_eq!(error.to_string(), "discovery phase failed"),
    ///     other => panic!("unexpected {other:?}"),
    /// }
    /// ```
    pub fn read(&self) -> Result<S::Record, ReadError> {
        self.read_inner(true)
            .map(|record| record.expect("a blocking read returns a record"))
    }

    /// Like [`read`](Self::read), but returns `Ok(None)` instead of waiting when the prepared
    /// task is done and no task is queued. (`read_next` of the prepared task may still block.)
    ///
    /// # Errors
    ///
    /// As for [`read`](Self::read).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{BatchSource, SourceError, TaskEmitter};
    /// # struct Empty;
    /// # impl BatchSource for Empty {
    /// #     type Task = ();
    /// #     type Record = ();
    /// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> { Ok(()) }
    /// #     fn prepare(&self, _: ()) -> Result<(), SourceError> { Ok(()) }
    /// #     fn read_next(&self) -> Result<Option<()>, SourceError> { Ok(None) }
    /// # }
    /// use pulsar_server::functions::{BatchSourceExecutor, OnDemandTriggerer};
    ///
    /// let executor = BatchSourceExecutor::builder(Empty, OnDemandTriggerer::new()).build();
    /// assert!(executor.try_read().unwrap().is_none());
    /// ```
    pub fn try_read(&self) -> Result<Option<S::Record>, ReadError> {
        self.read_inner(false)
    }

    fn read_inner(&self, block: bool) -> Result<Option<S::Record>, ReadError> {
        let _reading = ReadingGuard::enter(&self.reading).ok_or(ReadError::ConcurrentRead)?;
        let source = &self.shared.source;
        loop {
            if self.closing.load(Ordering::Acquire) {
                return Err(ReadError::Closed);
            }
            if self.prepared.load(Ordering::Relaxed) {
                let error = match catch_user("BatchSource::read_next", || source.read_next()) {
                    Ok(Ok(Some(record))) => return Ok(Some(record)),
                    Ok(Ok(None)) => {
                        self.prepared.store(false, Ordering::Relaxed);
                        continue;
                    }
                    Ok(Err(error)) => error,
                    Err(payload) => SourceError::panicked(payload),
                };
                return Err(self.closed_or(ReadError::Read(error)));
            }
            let task = {
                let mut state = self.shared.state.lock();
                loop {
                    if state.closed {
                        return Err(ReadError::Closed);
                    }
                    if let Some(error) = state.discovery_error.take() {
                        return Err(ReadError::Discovery(error));
                    }
                    if let Some(task) = state.tasks.pop_front() {
                        break task;
                    }
                    if !block {
                        return Ok(None);
                    }
                    self.shared.changed.wait(&mut state);
                }
            };
            let error = match catch_user("BatchSource::prepare", || source.prepare(task)) {
                Ok(Ok(())) => {
                    self.prepared.store(true, Ordering::Relaxed);
                    continue;
                }
                Ok(Err(error)) => error,
                Err(payload) => SourceError::panicked(payload),
            };
            return Err(self.closed_or(ReadError::Prepare(error)));
        }
    }

    /// A source call that failed while the executor was closing failed because of the close
    /// (the push adapter's queue was closed under a blocked reader, say): report `Closed`.
    fn closed_or(&self, error: ReadError) -> ReadError {
        if self.closing.load(Ordering::Acquire) {
            ReadError::Closed
        } else {
            error
        }
    }

    /// Discovered tasks waiting to be prepared.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{BatchSource, SourceError, TaskEmitter};
    /// # struct Empty;
    /// # impl BatchSource for Empty {
    /// #     type Task = ();
    /// #     type Record = ();
    /// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> { Ok(()) }
    /// #     fn prepare(&self, _: ()) -> Result<(), SourceError> { Ok(()) }
    /// #     fn read_next(&self) -> Result<Option<()>, SourceError> { Ok(None) }
    /// # }
    /// use pulsar_server::functions::{BatchSourceExecutor, OnDemandTriggerer};
    ///
    /// let executor = BatchSourceExecutor::builder(Empty, OnDemandTriggerer::new()).build();
    /// assert_eq!(executor.queued_tasks(), 0);
    /// ```
    pub fn queued_tasks(&self) -> usize {
        self.shared.state.lock().tasks.len()
    }

    /// Whether a discovery is queued or running.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{BatchSource, SourceError, TaskEmitter};
    /// # struct Empty;
    /// # impl BatchSource for Empty {
    /// #     type Task = ();
    /// #     type Record = ();
    /// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> { Ok(()) }
    /// #     fn prepare(&self, _: ()) -> Result<(), SourceError> { Ok(()) }
    /// #     fn read_next(&self) -> Result<Option<()>, SourceError> { Ok(None) }
    /// # }
    /// use pulsar_server::functions::{BatchSourceExecutor, OnDemandTriggerer};
    ///
    /// let executor = BatchSourceExecutor::builder(Empty, OnDemandTriggerer::new()).build();
    /// assert!(!executor.is_discovering());
    /// ```
    pub fn is_discovering(&self) -> bool {
        self.shared.state.lock().discovering
    }

    /// The threads this executor started (its executor thread, once started), to check after
    /// [`close`](Self::close) that none is left.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{BatchSource, SourceError, TaskEmitter};
    /// # struct Empty;
    /// # impl BatchSource for Empty {
    /// #     type Task = ();
    /// #     type Record = ();
    /// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> { Ok(()) }
    /// #     fn prepare(&self, _: ()) -> Result<(), SourceError> { Ok(()) }
    /// #     fn read_next(&self) -> Result<Option<()>, SourceError> { Ok(None) }
    /// # }
    /// use pulsar_server::functions::{BatchSourceExecutor, OnDemandTriggerer};
    ///
    /// let triggerer = OnDemandTriggerer::new();
    /// let trigger = triggerer.handle();
    /// let executor = BatchSourceExecutor::builder(Empty, triggerer).build();
    /// trigger.trigger(); // the first discovery starts the executor thread
    /// use std::time::Duration;
    ///
    /// let threads = executor.threads();
    /// executor.close();
    /// assert!(threads.await_exit(Duration::from_secs(10)));
    /// assert_eq!(threads.live_count(), 0);
    /// ```
    pub fn threads(&self) -> ComponentThreads {
        self.shared.executor.threads()
    }

    /// Whether [`close`](Self::close) has been called.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{BatchSource, SourceError, TaskEmitter};
    /// # struct Empty;
    /// # impl BatchSource for Empty {
    /// #     type Task = ();
    /// #     type Record = ();
    /// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> { Ok(()) }
    /// #     fn prepare(&self, _: ()) -> Result<(), SourceError> { Ok(()) }
    /// #     fn read_next(&self) -> Result<Option<()>, SourceError> { Ok(None) }
    /// # }
    /// use pulsar_server::functions::{BatchSourceExecutor, OnDemandTriggerer};
    ///
    /// let executor = BatchSourceExecutor::builder(Empty, OnDemandTriggerer::new()).build();
    /// executor.close();
    /// assert!(executor.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Closes: stops the triggerer, marks the executor closed (blocked and later reads return
    /// [`ReadError::Closed`], a running discovery's emits are refused, later triggers are
    /// [`TriggerOutcome::Inactive`]), drops the queued tasks, shuts the discovery executor
    /// down and waits for a running discovery (at most the close timeout, 10 s by default),
    /// then calls [`BatchSource::close`]. Idempotent; `Drop` calls it.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{BatchSource, SourceError, TaskEmitter};
    /// # struct Empty;
    /// # impl BatchSource for Empty {
    /// #     type Task = ();
    /// #     type Record = ();
    /// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> { Ok(()) }
    /// #     fn prepare(&self, _: ()) -> Result<(), SourceError> { Ok(()) }
    /// #     fn read_next(&self) -> Result<Option<()>, SourceError> { Ok(None) }
    /// # }
    /// use pulsar_server::functions::{BatchSourceExecutor, OnDemandTriggerer, ReadError, TriggerOutcome};
    ///
    /// let triggerer = OnDemandTriggerer::new();
    /// let trigger = triggerer.handle();
    /// let executor = BatchSourceExecutor::builder(Empty, triggerer).build();
    /// executor.close();
    /// executor.close(); // no effect
    /// assert_eq!(trigger.trigger(), TriggerOutcome::Inactive);
    /// assert!(matches!(executor.read(), Err(ReadError::Closed)));
    /// ```
    pub fn close(&self) {
        if self.closing.swap(true, Ordering::AcqRel) {
            return;
        }
        let triggerer = self.triggerer.lock().take();
        if let Some(mut triggerer) = triggerer {
            call_user("DiscoveryTriggerer::stop", || triggerer.stop());
            drop_user(triggerer, "the discovery triggerer");
        }
        let queued = {
            let mut state = self.shared.state.lock();
            state.closed = true;
            std::mem::take(&mut state.tasks)
        };
        self.shared.changed.notify_all();
        let dropped_tasks = queued.len();
        drop_user(queued, "queued batch source tasks");
        // A discovery still running at the timeout is warned about; the source closes anyway.
        self.shared
            .executor
            .close_after_queued(self.close_timeout, "a discovery");
        let source = &self.shared.source;
        if let Some(Err(error)) = call_user("BatchSource::close", || source.close()) {
            tracing::warn!(%error, "closing the batch source failed");
        }
        tracing::info!(dropped_tasks, "batch source executor closed");
    }
}

impl<S: BatchSource> Shared<S> {
    /// The trigger: queues a discovery unless one is queued or running, or the executor is
    /// closed. Runs on the firing thread; never runs `discover` there.
    fn fire(weak: &Weak<Self>, reason: &str) -> TriggerOutcome {
        let Some(this) = weak.upgrade() else {
            return TriggerOutcome::Inactive;
        };
        {
            let mut state = this.state.lock();
            if state.closed {
                return TriggerOutcome::Inactive;
            }
            if state.discovering {
                tracing::debug!(reason, "discovery already in progress; trigger dropped");
                return TriggerOutcome::AlreadyRunning;
            }
            state.discovering = true;
        }
        let task = Arc::clone(&this);
        // Outside the lock: the first task starts the thread (the thread factory is user code).
        match this.executor.execute(move || task.discover()) {
            Ok(()) => {
                tracing::debug!(reason, "discovery triggered");
                TriggerOutcome::Started
            }
            Err(rejected) => {
                tracing::warn!(%rejected, reason, "discovery not started");
                let outcome = match rejected.reason() {
                    RejectReason::ThreadStartFailed(_) => TriggerOutcome::ThreadStartFailed,
                    _ => TriggerOutcome::Inactive,
                };
                drop(rejected);
                this.state.lock().discovering = false;
                outcome
            }
        }
    }

    /// Discovery task, on the discovery thread.
    fn discover(&self) {
        {
            let mut state = self.state.lock();
            if state.closed {
                // Closed between the trigger and now: discover nothing.
                state.discovering = false;
                return;
            }
        }
        let mut sink = |task| self.push_task(task);
        let mut emitter = TaskEmitter::new(&mut sink);
        let outcome = catch_user("BatchSource::discover", || {
            self.source.discover(&mut emitter)
        });
        let emitted = emitter.emitted();
        let failure = match outcome {
            Ok(Ok(())) => None,
            Ok(Err(error)) => Some(error),
            Err(payload) => Some(SourceError::panicked(payload)),
        };
        let failed = failure.as_ref().map(ToString::to_string);
        // Stored and `discovering` cleared under one lock: a reader that sees the error may
        // trigger again at once.
        let superseded = {
            let mut state = self.state.lock();
            state.discovering = false;
            match failure {
                Some(error) if state.discovery_error.is_none() => {
                    state.discovery_error = Some(error);
                    None
                }
                other => other,
            }
        };
        self.changed.notify_all();
        match failed {
            None => tracing::debug!(emitted, "discovery finished"),
            Some(error) if superseded.is_none() => {
                tracing::warn!(%error, emitted, "discovery failed; the next read returns the error")
            }
            Some(error) => tracing::warn!(
                %error,
                emitted,
                "discovery failed while an earlier failure is still unread; this one is dropped"
            ),
        }
        drop_user(superseded, "a superseded discovery error");
    }

    /// The emitter's sink: queues a task for the readers.
    fn push_task(&self, task: S::Task) -> Result<(), EmitError<S::Task>> {
        let mut state = self.state.lock();
        if state.closed {
            return Err(EmitError(task));
        }
        state.tasks.push_back(task);
        drop(state);
        self.changed.notify_all();
        Ok(())
    }
}

/// Marks a thread as the reader; released on every return path.
struct ReadingGuard<'a>(&'a AtomicBool);

impl<'a> ReadingGuard<'a> {
    fn enter(flag: &'a AtomicBool) -> Option<Self> {
        flag.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| ReadingGuard(flag))
    }
}

impl Drop for ReadingGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl<S: BatchSource> Drop for BatchSourceExecutor<S> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<S: BatchSource> fmt::Debug for BatchSourceExecutor<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (queued, discovering) = {
            let state = self.shared.state.lock();
            (state.tasks.len(), state.discovering)
        };
        f.debug_struct("BatchSourceExecutor")
            .field("executor", &self.shared.executor.name())
            .field("queued_tasks", &queued)
            .field("discovering", &discovering)
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// Settings of a [`BatchSourceExecutor`].
///
/// # Examples
///
/// ```
/// # use pulsar_server::functions::{BatchSource, SourceError, TaskEmitter};
/// # struct Empty;
/// # impl BatchSource for Empty {
/// #     type Task = ();
/// #     type Record = ();
/// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> { Ok(()) }
/// #     fn prepare(&self, _: ()) -> Result<(), SourceError> { Ok(()) }
/// #     fn read_next(&self) -> Result<Option<()>, SourceError> { Ok(None) }
/// # }
/// use pulsar_common::executors::NamedThreadFactory;
/// use pulsar_server::functions::{BatchSourceExecutor, OnDemandTriggerer};
/// use std::time::Duration;
///
/// let executor = BatchSourceExecutor::builder(Empty, OnDemandTriggerer::new())
///     .thread_factory(NamedThreadFactory::new("s3-discovery"))
///     .close_timeout(Duration::from_secs(30))
///     .build();
/// # drop(executor);
/// ```
pub struct BatchSourceExecutorBuilder<S: BatchSource> {
    source: S,
    triggerer: Box<dyn DiscoveryTriggerer>,
    factory: Option<Arc<dyn ThreadFactory>>,
    close_timeout: Duration,
}

impl<S: BatchSource> BatchSourceExecutorBuilder<S> {
    /// Where the discovery thread comes from (default: a
    /// [`NamedThreadFactory`](pulsar_common::executors::NamedThreadFactory) for
    /// [`BATCH_SOURCE_DISCOVERY_POOL_NAME`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{BatchSource, SourceError, TaskEmitter};
    /// # struct Empty;
    /// # impl BatchSource for Empty {
    /// #     type Task = ();
    /// #     type Record = ();
    /// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> { Ok(()) }
    /// #     fn prepare(&self, _: ()) -> Result<(), SourceError> { Ok(()) }
    /// #     fn read_next(&self) -> Result<Option<()>, SourceError> { Ok(None) }
    /// # }
    /// use pulsar_common::executors::NamedThreadFactory;
    /// use pulsar_server::functions::{BatchSourceExecutor, OnDemandTriggerer};
    ///
    /// let builder = BatchSourceExecutor::builder(Empty, OnDemandTriggerer::new());
    /// let _executor = builder.thread_factory(NamedThreadFactory::new("discovery")).build();
    /// ```
    pub fn thread_factory(mut self, factory: impl ThreadFactory) -> Self {
        self.factory = Some(Arc::new(factory));
        self
    }

    /// How long [`close`](BatchSourceExecutor::close) waits for a running discovery (default
    /// [`DEFAULT_DISCOVERY_CLOSE_TIMEOUT`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{BatchSource, SourceError, TaskEmitter};
    /// # struct Empty;
    /// # impl BatchSource for Empty {
    /// #     type Task = ();
    /// #     type Record = ();
    /// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> { Ok(()) }
    /// #     fn prepare(&self, _: ()) -> Result<(), SourceError> { Ok(()) }
    /// #     fn read_next(&self) -> Result<Option<()>, SourceError> { Ok(None) }
    /// # }
    /// use pulsar_server::functions::{BatchSourceExecutor, OnDemandTriggerer};
    /// use std::time::Duration;
    ///
    /// let builder = BatchSourceExecutor::builder(Empty, OnDemandTriggerer::new());
    /// let _executor = builder.close_timeout(Duration::from_secs(1)).build();
    /// ```
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// Builds the executor and starts the triggerer (on this thread). No thread starts until
    /// the first trigger.
    ///
    /// # Panics
    ///
    /// If the triggerer's `start` panics (the executor is shut down first).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{BatchSource, SourceError, TaskEmitter};
    /// # struct Empty;
    /// # impl BatchSource for Empty {
    /// #     type Task = ();
    /// #     type Record = ();
    /// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> { Ok(()) }
    /// #     fn prepare(&self, _: ()) -> Result<(), SourceError> { Ok(()) }
    /// #     fn read_next(&self) -> Result<Option<()>, SourceError> { Ok(None) }
    /// # }
    /// use pulsar_server::functions::{BatchSourceExecutor, OnDemandTriggerer};
    ///
    /// let executor = BatchSourceExecutor::builder(Empty, OnDemandTriggerer::new()).build();
    /// assert!(!executor.is_discovering());
    /// ```
    pub fn build(self) -> BatchSourceExecutor<S> {
        let executor = ComponentExecutor::with_factory_or_named(
            self.factory,
            BATCH_SOURCE_DISCOVERY_POOL_NAME,
        );
        let shared = Arc::new(Shared {
            source: self.source,
            executor,
            state: Mutex::new(State {
                tasks: VecDeque::new(),
                discovery_error: None,
                discovering: false,
                closed: false,
            }),
            changed: Condvar::new(),
        });
        let weak = Arc::downgrade(&shared);
        let trigger = DiscoveryTrigger::new(move |reason| Shared::fire(&weak, reason));
        let mut triggerer = self.triggerer;
        if let Err(payload) = catch_user("DiscoveryTriggerer::start", || triggerer.start(trigger)) {
            shared.executor.shutdown_now();
            panic::resume_unwind(payload);
        }
        BatchSourceExecutor {
            shared,
            triggerer: Mutex::new(Some(triggerer)),
            closing: AtomicBool::new(false),
            close_timeout: self.close_timeout,
            reading: AtomicBool::new(false),
            prepared: AtomicBool::new(false),
        }
    }
}

impl<S: BatchSource> fmt::Debug for BatchSourceExecutorBuilder<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchSourceExecutorBuilder")
            .field("custom_thread_factory", &self.factory.is_some())
            .field("close_timeout", &self.close_timeout)
            .finish_non_exhaustive()
    }
}
