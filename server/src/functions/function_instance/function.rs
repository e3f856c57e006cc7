//! `Function`: the user function a `FunctionInstance` runs, and `FunctionOutput`, what it returns (a value now, or a future).

use crate::functions::FunctionError;
use parking_lot::Mutex;
use pulsar_common::executors::TaskHandle;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// A result that arrives later: a boxed, sendable future.
pub type AsyncOutput<O> = Pin<Box<dyn Future<Output = Result<O, FunctionError>> + Send>>;

/// A user function: called once per record, on the thread that calls
/// [`FunctionInstance::process`](crate::functions::FunctionInstance::process).
///
/// Any `FnMut(&R) -> FunctionOutput<O> + Send + 'static` closure is a `Function`.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{Function, FunctionError, FunctionOutput};
///
/// struct Exclaim {
///     closed: bool,
/// }
///
/// impl Function<String, String> for Exclaim {
///     fn process(&mut self, input: &String) -> FunctionOutput<String> {
///         FunctionOutput::ok(format!("{input}!"))
///     }
///
///     fn close(&mut self) -> Result<(), FunctionError> {
///         self.closed = true;
///         Ok(())
///     }
/// }
///
/// let mut function = Exclaim { closed: false };
/// match function.process(&"hello".to_owned()) {
///     FunctionOutput::Ready(Ok(value)) => assert_eq!(value, "hello!"),
///     _ => unreachable!(),
/// }
/// ```
pub trait Function<R, O>: Send + 'static {
    /// Processes one record: returns its result now ([`FunctionOutput::Ready`]) or a future of
    /// it ([`FunctionOutput::Async`]). A panic here becomes that record's
    /// [`FunctionError::Panicked`] result; the instance keeps going.
    fn process(&mut self, record: &R) -> FunctionOutput<O>;

    /// Called once by [`FunctionInstance::close`](crate::functions::FunctionInstance::close),
    /// before the instance's executor is shut down. The default does nothing.
    ///
    /// # Errors
    ///
    /// An error is logged; the instance closes anyway.
    fn close(&mut self) -> Result<(), FunctionError> {
        Ok(())
    }
}

impl<R, O, F> Function<R, O> for F
where
    F: FnMut(&R) -> FunctionOutput<O> + Send + 'static,
{
    fn process(&mut self, record: &R) -> FunctionOutput<O> {
        self(record)
    }
}

/// What a [`Function`] returns for one record.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::FunctionOutput;
/// use pulsar_common::executors::PulsarExecutors;
///
/// let now: FunctionOutput<u32> = FunctionOutput::ok(7);
/// let failed: FunctionOutput<u32> = FunctionOutput::err("not a number");
/// let later: FunctionOutput<u32> = FunctionOutput::from_future(async { Ok(7) });
///
/// let executor = PulsarExecutors::new_single_thread_executor();
/// let on_executor: FunctionOutput<u32> =
///     FunctionOutput::from_task(executor.submit(|| 7).unwrap());
/// # executor.shutdown();
/// assert!(now.is_ready() && failed.is_ready() && !later.is_ready() && !on_executor.is_ready());
/// ```
pub enum FunctionOutput<O> {
    /// The result, computed synchronously; returned to the caller of `process`.
    Ready(Result<O, FunctionError>),
    /// A result that arrives later; given to the instance's result consumer, on the instance's
    /// executor, once it is ready (in input order, unless ordering is off).
    Async(AsyncOutput<O>),
}

impl<O> FunctionOutput<O> {
    /// A value, now.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::FunctionOutput;
    ///
    /// assert!(FunctionOutput::ok("done").is_ready());
    /// ```
    pub fn ok(value: O) -> Self {
        FunctionOutput::Ready(Ok(value))
    }

    /// A failure, now (Pulsar's user exception).
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{FunctionError, FunctionOutput};
    ///
    /// match FunctionOutput::<u32>::err("bad input") {
    ///     FunctionOutput::Ready(Err(FunctionError::Failed(error))) => {
    ///         assert_eq!(error.to_string(), "bad input")
    ///     }
    ///     _ => unreachable!(),
    /// }
    /// ```
    pub fn err(error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        FunctionOutput::Ready(Err(FunctionError::failed(error)))
    }

    /// A result that arrives later, from any future. The instance polls it on its executor
    /// thread; its waker may be called from any thread.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::FunctionOutput;
    ///
    /// let output = FunctionOutput::from_future(async { Ok::<_, _>(6 * 7) });
    /// assert!(!output.is_ready());
    /// ```
    pub fn from_future<F>(future: F) -> Self
    where
        F: Future<Output = Result<O, FunctionError>> + Send + 'static,
    {
        FunctionOutput::Async(Box::pin(future))
    }

    /// A result computed by a task on an executor: its value, or
    /// [`FunctionError::Panicked`] if it panicked, or [`FunctionError::Abandoned`] if it was
    /// cancelled or rejected.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_common::executors::PulsarExecutors;
    /// use pulsar_server::functions::FunctionOutput;
    ///
    /// let executor = PulsarExecutors::new_single_thread_executor();
    /// let output = FunctionOutput::from_task(executor.submit(|| "computed").unwrap());
    /// assert!(!output.is_ready());
    /// executor.shutdown();
    /// ```
    pub fn from_task(handle: TaskHandle<O>) -> Self
    where
        O: Send + 'static,
    {
        FunctionOutput::Async(Box::pin(async move {
            handle.await.map_err(FunctionError::from_task_error)
        }))
    }

    /// A result completed by hand (Java's `CompletableFuture`): the function keeps or hands
    /// off the [`ResultCompleter`] and returns the output. Dropping the completer without
    /// completing it yields [`FunctionError::Abandoned`].
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::FunctionOutput;
    ///
    /// let (completer, output) = FunctionOutput::<u32>::completable();
    /// assert!(!output.is_ready());
    /// completer.complete(Ok(42)); // from any thread, at any time
    /// ```
    pub fn completable() -> (ResultCompleter<O>, Self)
    where
        O: Send + 'static,
    {
        let slot = Arc::new(Mutex::new(Completion::Waiting(None)));
        let completer = ResultCompleter {
            slot: Arc::clone(&slot),
        };
        (
            completer,
            FunctionOutput::Async(Box::pin(Completable { slot })),
        )
    }

    /// Whether this is a result now (`Ready`) rather than a future.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::FunctionOutput;
    ///
    /// assert!(FunctionOutput::ok(1).is_ready());
    /// ```
    pub fn is_ready(&self) -> bool {
        matches!(self, FunctionOutput::Ready(_))
    }
}

impl<O> fmt::Debug for FunctionOutput<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FunctionOutput::Ready(Ok(_)) => f.write_str("Ready(Ok(..))"),
            FunctionOutput::Ready(Err(error)) => f.debug_tuple("Ready").field(error).finish(),
            FunctionOutput::Async(_) => f.write_str("Async(..)"),
        }
    }
}

/// The state a [`ResultCompleter`] shares with its future.
enum Completion<O> {
    /// Not completed yet; the waker of the last poll.
    Waiting(Option<Waker>),
    /// Completed (or abandoned); not yet taken by the future.
    Done(Result<O, FunctionError>),
    /// Taken by the future.
    Taken,
}

/// Completes the result of a [`FunctionOutput::completable`] output, from any thread.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{FunctionError, FunctionOutput};
///
/// let (completer, _output) = FunctionOutput::<u32>::completable();
/// std::thread::spawn(move || completer.complete(Err(FunctionError::failed("timed out"))))
///     .join()
///     .unwrap();
/// ```
pub struct ResultCompleter<O> {
    slot: Arc<Mutex<Completion<O>>>,
}

impl<O> ResultCompleter<O> {
    /// Completes the result (and wakes whoever waits for it).
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::FunctionOutput;
    ///
    /// let (completer, _output) = FunctionOutput::completable();
    /// completer.complete(Ok("value"));
    /// ```
    pub fn complete(self, result: Result<O, FunctionError>) {
        self.fill(result);
    }

    fn fill(&self, result: Result<O, FunctionError>) {
        let waker = {
            let mut slot = self.slot.lock();
            match &mut *slot {
                Completion::Waiting(waker) => {
                    let waker = waker.take();
                    *slot = Completion::Done(result);
                    waker
                }
                // Completed already: `complete` consumes the completer, so only `Drop` gets here.
                _ => None,
            }
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<O> Drop for ResultCompleter<O> {
    fn drop(&mut self) {
        self.fill(Err(FunctionError::Abandoned));
    }
}

impl<O> fmt::Debug for ResultCompleter<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let completed = !matches!(*self.slot.lock(), Completion::Waiting(_));
        f.debug_struct("ResultCompleter")
            .field("completed", &completed)
            .finish()
    }
}

/// The future side of [`FunctionOutput::completable`].
struct Completable<O> {
    slot: Arc<Mutex<Completion<O>>>,
}

impl<O> Future for Completable<O> {
    type Output = Result<O, FunctionError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut slot = self.slot.lock();
        match std::mem::replace(&mut *slot, Completion::Taken) {
            Completion::Done(result) => Poll::Ready(result),
            Completion::Waiting(waker) => {
                let waker = match waker {
                    Some(waker) if waker.will_wake(cx.waker()) => waker,
                    _ => cx.waker().clone(),
                };
                *slot = Completion::Waiting(Some(waker));
                Poll::Pending
            }
            Completion::Taken => panic!("a completable result was polled after it was ready"),
        }
    }
}
