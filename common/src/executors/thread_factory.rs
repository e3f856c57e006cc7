//! `ThreadFactory`: how an executor makes its worker thread and reports panicking tasks.

use std::any::Any;
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

/// Makes the worker thread of an executor, and hears about `execute`d tasks that panic.
///
/// An executor calls [`new_thread`](Self::new_thread) once, lazily, when the first task is
/// accepted. The factory must start a thread that runs `body` to completion.
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::{NamedThreadFactory, PulsarExecutors};
///
/// let executor =
///     PulsarExecutors::new_single_thread_executor_with(NamedThreadFactory::new("orders"));
/// let name = executor
///     .submit(|| std::thread::current().name().unwrap().to_owned())
///     .unwrap()
///     .join()
///     .unwrap();
/// assert!(name.starts_with("orders-"));
/// ```
pub trait ThreadFactory: Send + Sync + 'static {
    /// Starts a thread that runs `body`.
    ///
    /// The thread must run `body` only if this call returns `Ok`: a factory that starts a
    /// thread and then fails or panics leaves a thread that the executor does not count on.
    /// (The executor tolerates it: at most one thread ever runs its worker loop, whichever
    /// started first.)
    ///
    /// # Errors
    ///
    /// The error from the operating system when no thread could be started; the executor then
    /// rejects the task that asked for the thread and hands it back. A factory that panics
    /// instead is treated the same way: the panic is caught and the task comes back with
    /// [`RejectReason::ThreadStartFailed`](crate::executors::RejectReason::ThreadStartFailed),
    /// whose error wraps a [`ThreadFactoryPanicked`]. Either way the executor stays without a
    /// worker and the next task (or `shutdown`, if tasks are queued) tries again.
    fn new_thread(&self, body: Box<dyn FnOnce() + Send + 'static>) -> io::Result<JoinHandle<()>>;

    /// Called on the worker thread with the payload of a task given to `execute` that panicked.
    /// The executor keeps running. (Tasks given to `submit` report their panic to their
    /// `TaskHandle` instead.) The default logs it with `tracing::error!`, naming the thread.
    ///
    /// This hook should not panic; if it does, the panic is caught on the worker thread and
    /// its payload dropped there (a payload whose own `Drop` panics is leaked instead), and
    /// the worker keeps running.
    fn on_task_panic(&self, payload: Box<dyn Any + Send>) {
        let thread = thread::current();
        tracing::error!(
            thread = thread.name().unwrap_or("<unnamed>"),
            panic = panic_message(payload.as_ref()),
            "a task panicked; the executor keeps running"
        );
    }
}

impl<T: ThreadFactory + ?Sized> ThreadFactory for Arc<T> {
    fn new_thread(&self, body: Box<dyn FnOnce() + Send + 'static>) -> io::Result<JoinHandle<()>> {
        (**self).new_thread(body)
    }

    fn on_task_panic(&self, payload: Box<dyn Any + Send>) {
        (**self).on_task_panic(payload)
    }
}

/// The message of a panic payload, when it is a string.
pub fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(message) = payload.downcast_ref::<&'static str>() {
        message
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message
    } else {
        "<non-string panic payload>"
    }
}

/// The error a [`ThreadFactory`] that panicked in [`new_thread`](ThreadFactory::new_thread)
/// is turned into, inside the `io::Error` of
/// [`RejectReason::ThreadStartFailed`](crate::executors::RejectReason::ThreadStartFailed): it
/// keeps the panic's message. (The payload itself is dropped where the panic was caught,
/// since it need not be `Sync`; the message is what a log or a caller can use.)
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::{PulsarExecutors, RejectReason, ThreadFactory, ThreadFactoryPanicked};
///
/// struct Broken;
/// impl ThreadFactory for Broken {
///     fn new_thread(
///         &self,
///         _body: Box<dyn FnOnce() + Send + 'static>,
///     ) -> std::io::Result<std::thread::JoinHandle<()>> {
///         panic!("no threads today")
///     }
/// }
///
/// let executor = PulsarExecutors::new_single_thread_executor_with(Broken);
/// let rejected = executor.execute(|| ()).unwrap_err();
/// let RejectReason::ThreadStartFailed(error) = rejected.reason() else { unreachable!() };
/// let panicked = error.get_ref().unwrap().downcast_ref::<ThreadFactoryPanicked>().unwrap();
/// assert_eq!(panicked.message(), "no threads today");
/// executor.shutdown();
/// assert!(executor.is_terminated());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadFactoryPanicked {
    message: String,
}

impl ThreadFactoryPanicked {
    /// Reads the message out of a caught panic's payload.
    #[cfg_attr(loom, allow(dead_code))] // under loom no thread is ever started
    pub(crate) fn from_payload(payload: &(dyn Any + Send)) -> Self {
        Self {
            message: panic_message(payload).to_owned(),
        }
    }

    /// The panic's message (`"<non-string panic payload>"` when it was not a string).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ThreadFactoryPanicked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the thread factory panicked: {}", self.message)
    }
}

impl std::error::Error for ThreadFactoryPanicked {}

/// Process-wide pool counter (Netty's `DefaultThreadFactory.poolId`).
static NEXT_POOL_ID: AtomicUsize = AtomicUsize::new(1);

/// Names threads `{pool_name}-{pool_id}-{n}`, like Netty's `DefaultThreadFactory` that Pulsar
/// uses: `pool_id` is unique in the process per factory, `n` counts from 1 per factory.
///
/// One factory shared (through an `Arc`) by several executors numbers their threads 1, 2, ...
///
/// # Examples
///
/// ```
/// use pulsar_common::executors::{NamedThreadFactory, ThreadFactory};
///
/// let factory = NamedThreadFactory::new("io");
/// let handle = factory
///     .new_thread(Box::new(|| {
///         let name = std::thread::current().name().unwrap().to_owned();
///         assert!(name.starts_with("io-") && name.ends_with("-1"));
///     }))
///     .unwrap();
/// handle.join().unwrap();
/// ```
pub struct NamedThreadFactory {
    pool_name: String,
    pool_id: usize,
    next_thread: AtomicUsize,
    stack_size: Option<usize>,
}

impl NamedThreadFactory {
    /// A factory naming threads `{pool_name}-{pool_id}-{n}`.
    pub fn new(pool_name: impl Into<String>) -> Self {
        Self {
            pool_name: pool_name.into(),
            pool_id: NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed),
            next_thread: AtomicUsize::new(1),
            stack_size: None,
        }
    }

    /// Sets the stack size of the threads it starts (std's default otherwise).
    pub fn with_stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// The pool name given to [`new`](Self::new).
    pub fn pool_name(&self) -> &str {
        &self.pool_name
    }

    /// This factory's process-wide pool id.
    pub fn pool_id(&self) -> usize {
        self.pool_id
    }
}

impl ThreadFactory for NamedThreadFactory {
    fn new_thread(&self, body: Box<dyn FnOnce() + Send + 'static>) -> io::Result<JoinHandle<()>> {
        let n = self.next_thread.fetch_add(1, Ordering::Relaxed);
        let mut builder =
            thread::Builder::new().name(format!("{}-{}-{}", self.pool_name, self.pool_id, n));
        if let Some(bytes) = self.stack_size {
            builder = builder.stack_size(bytes);
        }
        builder.spawn(body)
    }
}

impl fmt::Debug for NamedThreadFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamedThreadFactory")
            .field("pool_name", &self.pool_name)
            .field("pool_id", &self.pool_id)
            .field(
                "threads_started",
                &(self.next_thread.load(Ordering::Relaxed) - 1),
            )
            .finish()
    }
}

/// Names the thread of one executor of a group `{pool_name}-{pool_id}-{n}`, with the group's
/// pool name and id (from its one [`NamedThreadFactory`]) and the executor's `n = index + 1`,
/// whatever order the group's threads start in.
pub struct IndexedThreadFactory {
    pool: Arc<NamedThreadFactory>,
    n: usize,
}

impl IndexedThreadFactory {
    /// The factory of executor `n` (1-based) of the group whose pool name and id `pool` holds.
    pub fn new(pool: Arc<NamedThreadFactory>, n: usize) -> Self {
        Self { pool, n }
    }

    /// The name this factory gives its thread.
    pub fn thread_name(&self) -> String {
        format!(
            "{}-{}-{}",
            self.pool.pool_name(),
            self.pool.pool_id(),
            self.n
        )
    }
}

impl fmt::Debug for IndexedThreadFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexedThreadFactory")
            .field("thread_name", &self.thread_name())
            .finish()
    }
}

impl ThreadFactory for IndexedThreadFactory {
    fn new_thread(&self, body: Box<dyn FnOnce() + Send + 'static>) -> io::Result<JoinHandle<()>> {
        thread::Builder::new().name(self.thread_name()).spawn(body)
    }
}
