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
    /// # Errors
    ///
    /// The error from the operating system when no thread could be started; the executor then
    /// rejects the task that asked for the thread and hands it back.
    fn new_thread(&self, body: Box<dyn FnOnce() + Send + 'static>) -> io::Result<JoinHandle<()>>;

    /// Called on the worker thread with the payload of a task given to `execute` that panicked.
    /// The executor keeps running. (Tasks given to `submit` report their panic to their
    /// `TaskHandle` instead.) The default logs it with `tracing::error!`, naming the thread.
    ///
    /// This hook must not panic; a panic here is caught and dropped.
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
