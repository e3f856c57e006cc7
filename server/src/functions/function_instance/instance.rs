//! `FunctionInstance`: runs a user function per record and emits asynchronous results on its own executor (Pulsar's `JavaInstance`).
//!
//! # Design
//!
//! `process` runs on the caller's thread: it takes a permit (at most `max_pending` async
//! results outstanding), calls the function, and for a synchronous result gives the permit back
//! and returns the result. An asynchronous result gets the next sequence number and a slot in
//! `Shared::slots`, and its future is spawned on the executor (`function-instance`) inside an
//! `AsyncResult`, with `SingleThreadExecutor::spawn`: the executor polls it there, and again
//! each time it is woken. When the future is ready, `AsyncResult` stores the result in its slot
//! and the emitter hands every result that may go out now to the consumer: in input order (the
//! run of ready slots starting at `next_to_emit`), or, with ordering off, that one result. The
//! permit comes back after the consumer returns.
//!
//! Because polls, emission and the close drain all run on one single-thread executor, they
//! never race with each other; the locks only guard against `process` (which inserts slots).
//! The consumer and the futures are user code: the consumer is taken out of its place before
//! it is called and put back afterwards; a future's poll and drop go through the panic
//! boundary. At close the drain cancels (drops) the futures still outstanding through their
//! spawned tasks' handles, kept in their slots.

use crate::component::threads::ComponentThreads;
use crate::component::user_code::{call_user, catch_user, drop_user};
use crate::component::{ComponentExecutor, CLOSE_TIMEOUT};
use crate::functions::{AsyncOutput, Function, FunctionOutput};
use crate::functions::{FunctionError, ProcessError};
use parking_lot::{Condvar, Mutex};
use pulsar_common::executors::{TaskHandle, ThreadFactory};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

/// The pool name of the instance's executor thread: `function-instance-{pool_id}-1`.
pub const FUNCTION_INSTANCE_POOL_NAME: &str = "function-instance";

/// Asynchronous results that may be outstanding by default (Pulsar's
/// `maxPendingAsyncRequests`).
pub const DEFAULT_MAX_PENDING: usize = 1000;

/// How long `close` waits for the executor to finish its queued work, by default.
pub const DEFAULT_FUNCTION_CLOSE_TIMEOUT: Duration = CLOSE_TIMEOUT;

/// A record with its function's result.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::ExecutionResult;
///
/// let result: ExecutionResult<&str, usize> = ExecutionResult { record: "abc", result: Ok(3) };
/// assert_eq!(result.result.unwrap(), 3);
/// ```
pub struct ExecutionResult<R, O> {
    /// The record given to `process`.
    pub record: R,
    /// Its result: the function's value, or why there is none.
    pub result: Result<O, FunctionError>,
}

impl<R, O> fmt::Debug for ExecutionResult<R, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let result: Result<&str, &FunctionError> = match &self.result {
            Ok(_) => Ok(".."),
            Err(error) => Err(error),
        };
        f.debug_struct("ExecutionResult")
            .field("result", &result)
            .finish_non_exhaustive()
    }
}

/// What [`FunctionInstance::process`] did with a record.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{FunctionInstance, FunctionOutput, Processed};
///
/// let mut instance =
///     FunctionInstance::builder(|n: &u32| FunctionOutput::ok(n * 2), |_async_result| {}).build();
/// match instance.process(21).unwrap() {
///     Processed::Completed(done) => assert_eq!(done.result.unwrap(), 42),
///     Processed::Pending => unreachable!("the function is synchronous"),
/// }
/// ```
pub enum Processed<R, O> {
    /// The function returned synchronously (or failed, or panicked): here is the result.
    Completed(ExecutionResult<R, O>),
    /// The function returned a future: its result goes to the result consumer later.
    Pending,
}

impl<R, O> fmt::Debug for Processed<R, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Processed::Completed(result) => f.debug_tuple("Completed").field(result).finish(),
            Processed::Pending => f.write_str("Pending"),
        }
    }
}

/// The user's consumer of asynchronous results; called on the instance's executor thread.
type ResultConsumer<R, O> = Box<dyn FnMut(ExecutionResult<R, O>) + Send>;

/// Runs a user [`Function`] per record (Pulsar's `JavaInstance`).
///
/// - **Synchronous** results come back from [`process`](Self::process) at once.
/// - **Asynchronous** results ([`FunctionOutput::Async`]) are polled on the instance's
///   executor (thread `function-instance-{pool}-1`, started on the first async result) and
///   given to the result consumer there: in input order by default, or as they complete with
///   [`preserve_order(false)`](FunctionInstanceBuilder::preserve_order).
/// - **Back-pressure**: at most `max_pending` asynchronous results are outstanding (accepted,
///   not yet emitted). Beyond it [`process`](Self::process) blocks until one is emitted and
///   [`try_process`](Self::try_process) hands the record back with [`ProcessError::Full`].
///   Either way the function is not called until a permit is free, so a synchronous record
///   also waits behind a full window.
/// - **Failures**: a function (or future) that returns an error or panics yields an error
///   result for that record; the instance keeps going.
/// - **Every accepted record gets exactly one result**: from `process`, or from the consumer —
///   including records still outstanding at [`close`](Self::close), which get
///   [`FunctionError::Abandoned`] (unless they are ready by then).
///
/// `process` and `close` take `&mut self`: one driver thread owns the instance, as the
/// instance runnable owns a `JavaInstance`. The consumer must not block forever: `close` waits
/// for it (bounded).
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{FunctionInstance, FunctionOutput, Processed};
/// use std::sync::mpsc;
///
/// let (results, emitted) = mpsc::channel();
/// let mut instance = FunctionInstance::builder(
///     |word: &String| {
///         let word = word.clone();
///         FunctionOutput::from_future(async move { Ok(word.len()) })
///     },
///     move |result| results.send((result.record, result.result.unwrap())).unwrap(),
/// )
/// .max_pending(100)
/// .build();
///
/// for word in ["a", "bb", "ccc"] {
///     assert!(matches!(instance.process(word.to_owned()).unwrap(), Processed::Pending));
/// }
/// let lengths: Vec<_> = emitted.iter().take(3).collect();
/// assert_eq!(lengths, [("a".to_owned(), 1), ("bb".to_owned(), 2), ("ccc".to_owned(), 3)]);
/// instance.close(); // closes the function, then shuts the executor down
/// ```
pub struct FunctionInstance<R, O>
where
    R: Send + 'static,
    O: Send + 'static,
{
    function: Box<dyn Function<R, O>>,
    shared: Arc<Shared<R, O>>,
    /// The sequence number of the next asynchronous result (input order).
    next_seq: u64,
    closed: bool,
    close_timeout: Duration,
}

/// What the instance shares with its executor's tasks and spawned results.
struct Shared<R, O> {
    executor: ComponentExecutor,
    preserve_order: bool,
    max_pending: usize,
    /// Asynchronous results not yet emitted, by sequence number.
    slots: Mutex<Slots<R, O>>,
    /// Outstanding asynchronous results (permits taken, not yet given back); `0..=max_pending`.
    outstanding: Mutex<usize>,
    /// Signalled when `outstanding` falls.
    permit_freed: Condvar,
    /// The consumer; `None` while it is being called (on the executor) and after close.
    consumer: Mutex<Option<ResultConsumer<R, O>>>,
}

struct Slots<R, O> {
    by_seq: HashMap<u64, Slot<R, O>>,
    /// In-order mode: the sequence number of the next result to emit.
    next_to_emit: u64,
}

struct Slot<R, O> {
    record: R,
    /// The spawned `AsyncResult` driving the future (set once `spawn` returns): the close
    /// drain cancels it, dropping a future that is still outstanding.
    task: Option<TaskHandle<()>>,
    /// Set once the future is ready.
    result: Option<Result<O, FunctionError>>,
}

impl<R, O> FunctionInstance<R, O>
where
    R: Send + 'static,
    O: Send + 'static,
{
    /// A builder for an instance running `function`, whose asynchronous results go to
    /// `on_result` (called on the instance's executor thread; a panic there is logged and the
    /// instance goes on).
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{FunctionInstance, FunctionOutput};
    ///
    /// let instance = FunctionInstance::builder(
    ///     |input: &String| FunctionOutput::ok(input.to_uppercase()),
    ///     |result| println!("async result: {:?}", result.result),
    /// )
    /// .max_pending(16)
    /// .build();
    /// assert_eq!(instance.outstanding(), 0);
    /// ```
    pub fn builder(
        function: impl Function<R, O>,
        on_result: impl FnMut(ExecutionResult<R, O>) + Send + 'static,
    ) -> FunctionInstanceBuilder<R, O> {
        FunctionInstanceBuilder {
            function: Box::new(function),
            consumer: Box::new(on_result),
            max_pending: DEFAULT_MAX_PENDING,
            preserve_order: true,
            factory: None,
            close_timeout: DEFAULT_FUNCTION_CLOSE_TIMEOUT,
        }
    }

    /// Runs the function on `record`, waiting first while `max_pending` asynchronous results
    /// are outstanding.
    ///
    /// It waits for the consumer to be handed a result, so a future that never completes
    /// blocks it for good once the window is full: use [`try_process`](Self::try_process) to
    /// reject instead.
    ///
    /// # Errors
    ///
    /// [`ProcessError::Closed`] with the record after [`close`](Self::close).
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{FunctionInstance, FunctionOutput, Processed};
    ///
    /// let mut instance = FunctionInstance::builder(
    ///     |n: &i32| if *n >= 0 { FunctionOutput::ok(*n) } else { FunctionOutput::err("negative") },
    ///     |_| {},
    /// )
    /// .build();
    /// let Processed::Completed(failed) = instance.process(-1).unwrap() else { unreachable!() };
    /// assert_eq!(failed.record, -1);
    /// assert_eq!(failed.result.unwrap_err().message(), "negative");
    /// ```
    pub fn process(&mut self, record: R) -> Result<Processed<R, O>, ProcessError<R>> {
        if self.closed {
            return Err(ProcessError::Closed(record));
        }
        self.shared.acquire_permit();
        Ok(self.run(record))
    }

    /// Like [`process`](Self::process), but never waits.
    ///
    /// # Errors
    ///
    /// [`ProcessError::Full`] with the record, without calling the function, when
    /// `max_pending` asynchronous results are outstanding; [`ProcessError::Closed`] after
    /// [`close`](Self::close).
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{FunctionInstance, FunctionOutput, ProcessError};
    ///
    /// let mut completers = Vec::new();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let mut instance = FunctionInstance::builder(
    ///     move |_: &u32| {
    ///         let (completer, output) = FunctionOutput::<u32>::completable();
    ///         tx.send(completer).unwrap();
    ///         output
    ///     },
    ///     |_| {},
    /// )
    /// .max_pending(1)
    /// .build();
    /// instance.try_process(1).unwrap();
    /// completers.push(rx.recv().unwrap());
    /// assert!(matches!(instance.try_process(2), Err(ProcessError::Full(2))));
    /// instance.close(); // record 1 is reported as abandoned
    /// ```
    pub fn try_process(&mut self, record: R) -> Result<Processed<R, O>, ProcessError<R>> {
        if self.closed {
            return Err(ProcessError::Closed(record));
        }
        if !self.shared.try_acquire_permit() {
            return Err(ProcessError::Full(record));
        }
        Ok(self.run(record))
    }

    /// Calls the function (holding a permit) and registers an asynchronous result.
    fn run(&mut self, record: R) -> Processed<R, O> {
        let function = &mut self.function;
        let future = match catch_user("Function::process", || function.process(&record)) {
            Ok(FunctionOutput::Async(future)) => future,
            Ok(FunctionOutput::Ready(result)) => {
                self.shared.release_permits(1);
                return Processed::Completed(ExecutionResult { record, result });
            }
            Err(payload) => {
                self.shared.release_permits(1);
                return Processed::Completed(ExecutionResult {
                    record,
                    result: Err(FunctionError::Panicked(payload)),
                });
            }
        };
        let seq = self.next_seq;
        self.shared.slots.lock().by_seq.insert(
            seq,
            Slot {
                record,
                task: None,
                result: None,
            },
        );
        let async_result = AsyncResult {
            shared: Arc::downgrade(&self.shared),
            seq,
            future: Some(future),
        };
        match self.shared.executor.spawn(async_result) {
            Ok(task) => {
                self.next_seq += 1;
                // Kept for the close drain, unless the result went out already.
                if let Some(slot) = self.shared.slots.lock().by_seq.get_mut(&seq) {
                    slot.task = Some(task);
                }
                Processed::Pending
            }
            Err(rejected) => {
                // Only a failed thread start gets here (the executor is shut down by `close`
                // alone). The sequence number is not used, so in-order emission is unaffected.
                tracing::error!(%rejected, "the function instance's executor refused an async result");
                drop_user(rejected, "an async function result");
                let slot = self.shared.slots.lock().by_seq.remove(&seq);
                let slot = slot.expect("the slot inserted above");
                self.shared.release_permits(1);
                Processed::Completed(ExecutionResult {
                    record: slot.record,
                    result: Err(FunctionError::Abandoned),
                })
            }
        }
    }

    /// Asynchronous results accepted and not yet handed to the consumer.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{FunctionInstance, FunctionOutput};
    ///
    /// let instance = FunctionInstance::builder(|_: &()| FunctionOutput::ok(()), |_| {}).build();
    /// assert_eq!(instance.outstanding(), 0);
    /// ```
    pub fn outstanding(&self) -> usize {
        *self.shared.outstanding.lock()
    }

    /// The threads this instance started (its executor thread, once started), to check after
    /// [`close`](Self::close) that none is left.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{FunctionInstance, FunctionOutput};
    ///
    /// let mut instance =
    ///     FunctionInstance::builder(|_: &()| FunctionOutput::from_future(async { Ok(()) }), |_| {})
    ///         .build();
    /// instance.process(()).unwrap(); // an async result starts the executor thread
    /// use std::time::Duration;
    ///
    /// let threads = instance.threads();
    /// instance.close();
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
    /// use pulsar_server::functions::{FunctionInstance, FunctionOutput};
    ///
    /// let mut instance = FunctionInstance::builder(|_: &()| FunctionOutput::ok(()), |_| {}).build();
    /// instance.close();
    /// assert!(instance.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Closes the function ([`Function::close`]), then shuts the executor down: results
    /// already queued for emission still go out (in order), every other outstanding record
    /// gets [`FunctionError::Abandoned`], then the consumer is dropped and the thread exits.
    /// Waits for that at most the close timeout (10 s by default; a warning is logged if the
    /// consumer is still busy). Idempotent; `Drop` calls it.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{FunctionInstance, FunctionOutput, ProcessError};
    ///
    /// let mut instance = FunctionInstance::builder(|_: &()| FunctionOutput::ok(()), |_| {}).build();
    /// instance.close();
    /// instance.close(); // no effect
    /// assert!(matches!(instance.process(()), Err(ProcessError::Closed(()))));
    /// ```
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        let function = &mut self.function;
        if let Some(Err(error)) = call_user("Function::close", || function.close()) {
            tracing::warn!(%error, "closing the function failed");
        }
        let outstanding = self.outstanding();
        if outstanding > 0 {
            // Queued behind the polls already queued: results ready by then go out first.
            let shared = Arc::clone(&self.shared);
            if let Err(rejected) = self
                .shared
                .executor
                .execute(move || Shared::abandon_outstanding(&shared))
            {
                tracing::error!(%rejected, outstanding, "cannot report the outstanding results at close");
            }
        } else {
            // Nothing outstanding: no emission is running, so the consumer can go now.
            let consumer = self.shared.consumer.lock().take();
            drop_user(consumer, "the result consumer");
        }
        self.shared
            .executor
            .close_after_queued(self.close_timeout, "a result consumer");
        tracing::debug!(outstanding, "function instance closed");
    }
}

impl<R, O> Shared<R, O>
where
    R: Send + 'static,
    O: Send + 'static,
{
    fn acquire_permit(&self) {
        let mut outstanding = self.outstanding.lock();
        while *outstanding >= self.max_pending {
            self.permit_freed.wait(&mut outstanding);
        }
        *outstanding += 1;
    }

    fn try_acquire_permit(&self) -> bool {
        let mut outstanding = self.outstanding.lock();
        if *outstanding >= self.max_pending {
            return false;
        }
        *outstanding += 1;
        true
    }

    fn release_permits(&self, n: usize) {
        let mut outstanding = self.outstanding.lock();
        debug_assert!(*outstanding >= n, "more permits released than taken");
        *outstanding -= n;
        drop(outstanding);
        self.permit_freed.notify_all();
    }

    /// On the executor, once the future of slot `seq` is ready: stores its result and emits
    /// what may go out now.
    fn complete_slot(this: &Arc<Self>, seq: u64, result: Result<O, FunctionError>) {
        let ready = {
            let mut slots = this.slots.lock();
            if this.preserve_order {
                if let Some(slot) = slots.by_seq.get_mut(&seq) {
                    slot.result = Some(result);
                }
                slots.take_in_order()
            } else {
                slots
                    .by_seq
                    .remove(&seq)
                    .map(|slot| ExecutionResult {
                        record: slot.record,
                        result,
                    })
                    .into_iter()
                    .collect()
            }
        };
        Self::emit(this, ready);
    }

    /// Hands `results` to the consumer, in order, then gives their permits back. Runs on the
    /// executor thread only, so emissions never overlap.
    fn emit(this: &Arc<Self>, results: Vec<ExecutionResult<R, O>>) {
        if results.is_empty() {
            return;
        }
        let n = results.len();
        let mut consumer = this.consumer.lock().take();
        for result in results {
            match consumer.as_mut() {
                Some(consumer) => {
                    call_user("the result consumer", || consumer(result));
                }
                None => drop_user(result, "an async function result"),
            }
        }
        *this.consumer.lock() = consumer;
        this.release_permits(n);
    }

    /// Executor task queued by `close`: every result still outstanding goes out now, in input
    /// order (ready ones with their value, the others as `Abandoned`, their futures cancelled:
    /// dropped, and never polled again); then the consumer is dropped.
    fn abandon_outstanding(this: &Arc<Self>) {
        let mut remaining: Vec<(u64, Slot<R, O>)> = this.slots.lock().by_seq.drain().collect();
        remaining.sort_unstable_by_key(|(seq, _)| *seq);
        let abandoned = remaining.iter().filter(|(_, s)| s.result.is_none()).count();
        let results = remaining
            .into_iter()
            .map(|(_, slot)| {
                if let Some(task) = slot.task {
                    // On the executor's own thread no future is being polled: each is between
                    // polls, and the cancel drops it here (its drop is user code).
                    call_user("an async function result", || task.cancel());
                }
                ExecutionResult {
                    record: slot.record,
                    result: slot.result.unwrap_or(Err(FunctionError::Abandoned)),
                }
            })
            .collect();
        if abandoned > 0 {
            tracing::info!(abandoned, "function instance closed with async results outstanding; they are reported as abandoned");
        }
        Self::emit(this, results);
        let consumer = this.consumer.lock().take();
        drop_user(consumer, "the result consumer");
    }
}

impl<R, O> Slots<R, O> {
    /// In-order mode: removes the run of ready results that starts at `next_to_emit`.
    fn take_in_order(&mut self) -> Vec<ExecutionResult<R, O>> {
        let mut ready = Vec::new();
        while self
            .by_seq
            .get(&self.next_to_emit)
            .is_some_and(|slot| slot.result.is_some())
        {
            let slot = self
                .by_seq
                .remove(&self.next_to_emit)
                .expect("checked above");
            ready.push(ExecutionResult {
                record: slot.record,
                result: slot.result.expect("checked above"),
            });
            self.next_to_emit += 1;
        }
        ready
    }
}

/// One asynchronous result, spawned on the instance's executor: polls the function's future
/// (through the panic boundary) and, once it is ready, completes its slot. Holds the instance
/// weakly (a future that outlives the instance must not keep it alive).
struct AsyncResult<R, O> {
    shared: Weak<Shared<R, O>>,
    seq: u64,
    /// `None` once ready.
    future: Option<AsyncOutput<O>>,
}

impl<R, O> Future for AsyncResult<R, O>
where
    R: Send + 'static,
    O: Send + 'static,
{
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(future) = self.future.as_mut() else {
            return Poll::Ready(());
        };
        let result = match catch_user("an async function result's poll", || {
            future.as_mut().poll(cx)
        }) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(result)) => result,
            Err(payload) => Err(FunctionError::Panicked(payload)),
        };
        drop_user(self.future.take(), "an async function result");
        if let Some(shared) = self.shared.upgrade() {
            Shared::complete_slot(&shared, self.seq, result);
        }
        Poll::Ready(())
    }
}

impl<R, O> Drop for AsyncResult<R, O> {
    fn drop(&mut self) {
        // A cancelled (or rejected) result: its future's drop is user code.
        drop_user(self.future.take(), "an async function result");
    }
}

impl<R, O> Drop for FunctionInstance<R, O>
where
    R: Send + 'static,
    O: Send + 'static,
{
    fn drop(&mut self) {
        self.close();
    }
}

impl<R, O> fmt::Debug for FunctionInstance<R, O>
where
    R: Send + 'static,
    O: Send + 'static,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionInstance")
            .field("executor", &self.shared.executor.name())
            .field("max_pending", &self.shared.max_pending)
            .field("preserve_order", &self.shared.preserve_order)
            .field("outstanding", &*self.shared.outstanding.lock())
            .field("closed", &self.closed)
            .finish()
    }
}

/// Settings of a [`FunctionInstance`].
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::NamedThreadFactory;
/// use pulsar_server::functions::{FunctionInstance, FunctionOutput};
/// use std::time::Duration;
///
/// let instance = FunctionInstance::builder(|n: &u64| FunctionOutput::ok(*n), |_| {})
///     .max_pending(64)
///     .preserve_order(false)
///     .thread_factory(NamedThreadFactory::new("my-function"))
///     .close_timeout(Duration::from_secs(30))
///     .build();
/// # drop(instance);
/// ```
pub struct FunctionInstanceBuilder<R, O> {
    function: Box<dyn Function<R, O>>,
    consumer: ResultConsumer<R, O>,
    max_pending: usize,
    preserve_order: bool,
    factory: Option<Arc<dyn ThreadFactory>>,
    close_timeout: Duration,
}

impl<R, O> FunctionInstanceBuilder<R, O>
where
    R: Send + 'static,
    O: Send + 'static,
{
    /// At most this many asynchronous results outstanding (default
    /// [`DEFAULT_MAX_PENDING`]).
    ///
    /// # Panics
    ///
    /// If `max_pending` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{FunctionInstance, FunctionOutput};
    ///
    /// let builder = FunctionInstance::builder(|_: &()| FunctionOutput::ok(()), |_| {});
    /// let _instance = builder.max_pending(8).build();
    /// ```
    pub fn max_pending(mut self, max_pending: usize) -> Self {
        assert!(max_pending > 0, "max_pending must be at least 1");
        self.max_pending = max_pending;
        self
    }

    /// Whether asynchronous results are emitted in input order (default `true`); with
    /// `false` each goes out as soon as it completes.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{FunctionInstance, FunctionOutput};
    ///
    /// let builder = FunctionInstance::builder(|_: &()| FunctionOutput::ok(()), |_| {});
    /// let _instance = builder.preserve_order(false).build();
    /// ```
    pub fn preserve_order(mut self, preserve_order: bool) -> Self {
        self.preserve_order = preserve_order;
        self
    }

    /// Where the executor thread comes from (default: a
    /// [`NamedThreadFactory`](pulsar_common::executors::NamedThreadFactory) for
    /// [`FUNCTION_INSTANCE_POOL_NAME`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_common::executors::NamedThreadFactory;
    /// use pulsar_server::functions::{FunctionInstance, FunctionOutput};
    ///
    /// let builder = FunctionInstance::builder(|_: &()| FunctionOutput::ok(()), |_| {});
    /// let _instance = builder.thread_factory(NamedThreadFactory::new("fn-orders")).build();
    /// ```
    pub fn thread_factory(mut self, factory: impl ThreadFactory) -> Self {
        self.factory = Some(Arc::new(factory));
        self
    }

    /// How long [`close`](FunctionInstance::close) waits for the executor to terminate
    /// (default [`DEFAULT_FUNCTION_CLOSE_TIMEOUT`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{FunctionInstance, FunctionOutput};
    /// use std::time::Duration;
    ///
    /// let builder = FunctionInstance::builder(|_: &()| FunctionOutput::ok(()), |_| {});
    /// let _instance = builder.close_timeout(Duration::from_secs(1)).build();
    /// ```
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// Builds the instance. No thread starts until the first asynchronous result.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{FunctionInstance, FunctionOutput};
    ///
    /// let instance = FunctionInstance::builder(|_: &()| FunctionOutput::ok(()), |_| {}).build();
    /// assert!(!instance.is_closed());
    /// ```
    pub fn build(self) -> FunctionInstance<R, O> {
        let executor =
            ComponentExecutor::with_factory_or_named(self.factory, FUNCTION_INSTANCE_POOL_NAME);
        FunctionInstance {
            function: self.function,
            shared: Arc::new(Shared {
                executor,
                preserve_order: self.preserve_order,
                max_pending: self.max_pending,
                slots: Mutex::new(Slots {
                    by_seq: HashMap::new(),
                    next_to_emit: 0,
                }),
                outstanding: Mutex::new(0),
                permit_freed: Condvar::new(),
                consumer: Mutex::new(Some(self.consumer)),
            }),
            next_seq: 0,
            closed: false,
            close_timeout: self.close_timeout,
        }
    }
}

impl<R, O> fmt::Debug for FunctionInstanceBuilder<R, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionInstanceBuilder")
            .field("max_pending", &self.max_pending)
            .field("preserve_order", &self.preserve_order)
            .field("custom_thread_factory", &self.factory.is_some())
            .field("close_timeout", &self.close_timeout)
            .finish_non_exhaustive()
    }
}
