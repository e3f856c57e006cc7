//! The error types of the functions-runtime components: one per operation, handing back what the caller gave.

use pulsar_common::executors::{panic_message, TaskError};
use std::any::Any;
use std::error::Error;
use std::fmt;

/// A boxed error from user code: anything that converts into it (`&str`, `String`, any
/// `std::error::Error + Send + Sync`) can be given to the constructors below.
type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// Why a user function produced no value for a record.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::FunctionError;
///
/// let error = FunctionError::failed("bad input");
/// assert_eq!(error.to_string(), "the function failed: bad input");
/// assert!(!error.is_panic());
/// ```
#[derive(thiserror::Error)]
pub enum FunctionError {
    /// The function (or its future) returned this error.
    #[error("the function failed: {0}")]
    Failed(#[source] BoxError),
    /// The function (or its future, while polled) panicked; the payload given to `panic!`.
    #[error("the function panicked: {}", panic_message(.0.as_ref()))]
    Panicked(Box<dyn Any + Send>),
    /// The result was never produced: its [`ResultCompleter`](crate::functions::ResultCompleter)
    /// or task was dropped unrun, or the instance was closed while it was outstanding.
    #[error("the result was abandoned before it was produced")]
    Abandoned,
}

impl FunctionError {
    /// A `Failed` error from anything that converts into a boxed error.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::FunctionError;
    ///
    /// let parse = "x".parse::<u32>().unwrap_err();
    /// assert!(FunctionError::failed(parse).to_string().contains("invalid digit"));
    /// ```
    pub fn failed(error: impl Into<BoxError>) -> Self {
        FunctionError::Failed(error.into())
    }

    /// Whether the function panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::FunctionError;
    ///
    /// assert!(FunctionError::Panicked(Box::new("boom")).is_panic());
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self, FunctionError::Panicked(_))
    }

    /// The panic message, or the error's message, or `"abandoned"`.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::FunctionError;
    ///
    /// assert_eq!(FunctionError::Panicked(Box::new("boom")).message(), "boom");
    /// assert_eq!(FunctionError::failed("no").message(), "no");
    /// ```
    pub fn message(&self) -> String {
        match self {
            FunctionError::Failed(error) => error.to_string(),
            FunctionError::Panicked(payload) => panic_message(payload.as_ref()).to_owned(),
            FunctionError::Abandoned => "abandoned".to_owned(),
        }
    }

    /// `Panicked` keeps the payload; `Cancelled` and `Rejected` tasks never produced a value.
    pub(crate) fn from_task_error(error: TaskError) -> Self {
        match error.into_panic() {
            Some(payload) => FunctionError::Panicked(payload),
            None => FunctionError::Abandoned,
        }
    }
}

impl fmt::Debug for FunctionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FunctionError::Failed(error) => f.debug_tuple("Failed").field(error).finish(),
            FunctionError::Panicked(payload) => f
                .debug_tuple("Panicked")
                .field(&panic_message(payload.as_ref()))
                .finish(),
            FunctionError::Abandoned => f.write_str("Abandoned"),
        }
    }
}

/// Why [`FunctionInstance::process`](crate::functions::FunctionInstance::process) or
/// [`try_process`](crate::functions::FunctionInstance::try_process) did not take a record; the
/// record comes back. `Debug` does not require `R: Debug`.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{FunctionInstance, FunctionOutput, ProcessError};
///
/// let mut instance =
///     FunctionInstance::builder(|n: &u32| FunctionOutput::ok(n + 1), |_result| {}).build();
/// instance.close();
/// match instance.process(7) {
///     Err(ProcessError::Closed(record)) => assert_eq!(record, 7),
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
#[derive(thiserror::Error)]
pub enum ProcessError<R> {
    /// `max_pending` asynchronous results are outstanding (only from `try_process`; `process`
    /// waits instead). The function was not called.
    #[error("record not processed: max_pending asynchronous results are outstanding")]
    Full(R),
    /// The instance was closed. The function was not called.
    #[error("record not processed: the function instance is closed")]
    Closed(R),
}

impl<R> ProcessError<R> {
    /// The record that was not processed.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::ProcessError;
    ///
    /// assert_eq!(ProcessError::Full("r1").into_record(), "r1");
    /// ```
    pub fn into_record(self) -> R {
        match self {
            ProcessError::Full(record) | ProcessError::Closed(record) => record,
        }
    }
}

impl<R> fmt::Debug for ProcessError<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcessError::Full(_) => f.write_str("Full(..)"),
            ProcessError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

/// An error a [`Producer`](crate::functions::Producer) reports from `send`, `flush` or `close`.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::ProducerError;
///
/// let error = ProducerError::new("broker unavailable");
/// assert_eq!(error.to_string(), "producer error: broker unavailable");
/// ```
#[derive(Debug, thiserror::Error)]
#[error("producer error: {error}")]
pub struct ProducerError {
    #[source]
    error: BoxError,
}

impl ProducerError {
    /// Wraps anything that converts into a boxed error.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::ProducerError;
    ///
    /// let io = std::io::Error::other("connection reset");
    /// assert!(ProducerError::new(io).to_string().contains("connection reset"));
    /// ```
    pub fn new(error: impl Into<BoxError>) -> Self {
        Self {
            error: error.into(),
        }
    }
}

/// Why [`ProducerCache::get_or_create`](crate::functions::ProducerCache::get_or_create) gave no
/// producer. `Debug` does not require `E: Debug`.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::GetProducerError;
///
/// let error: GetProducerError<std::io::Error> = GetProducerError::Closed;
/// assert_eq!(error.to_string(), "the producer cache is closed");
/// ```
#[derive(thiserror::Error)]
pub enum GetProducerError<E> {
    /// The cache was closed (before the call, or while the producer was being created; a
    /// producer created meanwhile is flushed and closed by the cache).
    #[error("the producer cache is closed")]
    Closed,
    /// The `create` closure failed with this error; nothing was cached.
    #[error("the producer could not be created")]
    Create(E),
}

impl<E> fmt::Debug for GetProducerError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GetProducerError::Closed => f.write_str("Closed"),
            GetProducerError::Create(_) => f.write_str("Create(..)"),
        }
    }
}

/// An error from a [`BatchSource`](crate::functions::BatchSource) (discovery, prepare, read or
/// close), or the panic of one of those calls.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::SourceError;
///
/// let error = SourceError::new("discovery phase failed");
/// assert_eq!(error.to_string(), "discovery phase failed");
/// assert!(!error.is_panic());
/// ```
#[derive(thiserror::Error)]
#[error(transparent)]
pub struct SourceError {
    kind: SourceErrorKind,
}

/// What a [`SourceError`] holds. A returned error is shown as it is (its message, and its own
/// `source()`), so a source's error reads the same when the executor hands it back.
#[derive(thiserror::Error)]
enum SourceErrorKind {
    #[error(transparent)]
    Failed(BoxError),
    #[error("the source panicked: {}", panic_message(.0.as_ref()))]
    Panicked(Box<dyn Any + Send>),
}

impl SourceError {
    /// Wraps anything that converts into a boxed error.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::SourceError;
    ///
    /// let io = std::io::Error::other("bucket listing failed");
    /// assert_eq!(SourceError::new(io).to_string(), "bucket listing failed");
    /// ```
    pub fn new(error: impl Into<BoxError>) -> Self {
        Self {
            kind: SourceErrorKind::Failed(error.into()),
        }
    }

    pub(crate) fn panicked(payload: Box<dyn Any + Send>) -> Self {
        Self {
            kind: SourceErrorKind::Panicked(payload),
        }
    }

    /// Whether the source call panicked (rather than returning an error).
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::SourceError;
    ///
    /// assert!(!SourceError::new("no").is_panic());
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self.kind, SourceErrorKind::Panicked(_))
    }

    /// The panic payload, if the call panicked (to re-raise it with
    /// `std::panic::resume_unwind`), else the error back.
    ///
    /// # Errors
    ///
    /// The error itself when it is not a panic.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::SourceError;
    ///
    /// assert!(SourceError::new("no").into_panic().is_err());
    /// ```
    pub fn into_panic(self) -> Result<Box<dyn Any + Send>, SourceError> {
        match self.kind {
            SourceErrorKind::Panicked(payload) => Ok(payload),
            kind => Err(SourceError { kind }),
        }
    }
}

impl fmt::Debug for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.kind, f)
    }
}

impl fmt::Debug for SourceErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceErrorKind::Failed(error) => f.debug_tuple("Failed").field(error).finish(),
            SourceErrorKind::Panicked(payload) => f
                .debug_tuple("Panicked")
                .field(&panic_message(payload.as_ref()))
                .finish(),
        }
    }
}

/// Why [`BatchSourceExecutor::read`](crate::functions::BatchSourceExecutor::read) returned no
/// record.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{ReadError, SourceError};
///
/// let error = ReadError::Discovery(SourceError::new("discovery phase failed"));
/// assert_eq!(error.to_string(), "discovery failed: discovery phase failed");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The last discovery failed (Pulsar's stored `discoveryException`). Returned once, by the
    /// first read that needs a new task after the failure; later reads go on.
    #[error("discovery failed: {0}")]
    Discovery(#[source] SourceError),
    /// `BatchSource::prepare` failed for the next task; that task is dropped.
    #[error("preparing the next task failed: {0}")]
    Prepare(#[source] SourceError),
    /// `BatchSource::read_next` failed; the current task stays prepared.
    #[error("reading the current task failed: {0}")]
    Read(#[source] SourceError),
    /// The executor is closed.
    #[error("the batch source executor is closed")]
    Closed,
    /// Another thread is inside `read` or `try_read` (one reader at a time).
    #[error("another thread is reading from this batch source executor")]
    ConcurrentRead,
}

/// A task that [`TaskEmitter::emit`](crate::functions::TaskEmitter::emit) did not take because
/// the executor is closed; the task comes back. `Debug` does not require `T: Debug`.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::EmitError;
///
/// let error = EmitError("s3://bucket/part-7");
/// assert_eq!(error.into_task(), "s3://bucket/part-7");
/// ```
#[derive(thiserror::Error)]
#[error("task not queued: the batch source executor is closed")]
pub struct EmitError<T>(pub T);

impl<T> EmitError<T> {
    /// The task that was not queued.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::EmitError;
    ///
    /// assert_eq!(EmitError(3).into_task(), 3);
    /// ```
    pub fn into_task(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for EmitError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EmitError(..)")
    }
}

impl<T> From<EmitError<T>> for SourceError {
    fn from(error: EmitError<T>) -> Self {
        SourceError::new(error.to_string())
    }
}

/// A record that [`RecordPusher::push`](crate::functions::RecordPusher::push) did not queue
/// because the source was closed or the pusher's task is over (it failed, or the reader moved
/// on to a later task); the record comes back. `Debug` does not require `R: Debug`.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::PushError;
///
/// assert_eq!(PushError("row 7").into_record(), "row 7");
/// ```
#[derive(thiserror::Error)]
#[error("record not queued: the push source is closed or the task is over")]
pub struct PushError<R>(pub R);

impl<R> PushError<R> {
    /// The record that was not queued.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::PushError;
    ///
    /// assert_eq!(PushError(9).into_record(), 9);
    /// ```
    pub fn into_record(self) -> R {
        self.0
    }
}

impl<R> fmt::Debug for PushError<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PushError(..)")
    }
}
