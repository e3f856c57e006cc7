//! `BatchSource`: what a batch source implements (discover tasks, prepare one, read its records), and `TaskEmitter`, where discovery puts tasks.

use crate::functions::{EmitError, SourceError};
use std::fmt;

/// A batch source (Pulsar's `BatchSource<T>`): discovery finds *tasks* (a file, a table
/// partition, a time range...); each task is prepared and then read record by record.
///
/// A [`BatchSourceExecutor`](crate::functions::BatchSourceExecutor) calls
/// [`discover`](Self::discover) on its discovery thread whenever its triggerer fires, while
/// [`prepare`](Self::prepare) and [`read_next`](Self::read_next) run on the reading thread — so
/// the methods take `&self` and the source keeps its state behind its own locks (Pulsar calls
/// the same object from both threads). A panic in any method becomes a [`SourceError`].
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{BatchSource, SourceError, TaskEmitter};
/// use std::sync::Mutex;
///
/// /// Each task is a range of numbers; each number is a record.
/// struct Ranges {
///     current: Mutex<std::ops::Range<u32>>,
/// }
///
/// impl BatchSource for Ranges {
///     type Task = std::ops::Range<u32>;
///     type Record = u32;
///
///     fn discover(&self, emitter: &mut TaskEmitter<'_, Self::Task>) -> Result<(), SourceError> {
///         emitter.emit(0..2)?;
///         emitter.emit(10..12)?;
///         Ok(())
///     }
///
///     fn prepare(&self, task: Self::Task) -> Result<(), SourceError> {
///         *self.current.lock().unwrap() = task;
///         Ok(())
///     }
///
///     fn read_next(&self) -> Result<Option<u32>, SourceError> {
///         Ok(self.current.lock().unwrap().next())
///     }
/// }
///
/// let source = Ranges { current: Mutex::new(0..0) };
/// let mut tasks = Vec::new();
/// let mut sink = |task| {
///     tasks.push(task);
///     Ok(())
/// };
/// source.discover(&mut TaskEmitter::new(&mut sink)).unwrap();
/// assert_eq!(tasks, [0..2, 10..12]);
/// ```
pub trait BatchSource: Send + Sync + 'static {
    /// A unit of work found by discovery.
    type Task: Send + 'static;
    /// What reading a task yields.
    type Record: Send;

    /// Finds tasks and emits each to `emitter` (they become readable at once, in emission
    /// order). Runs on the executor's discovery thread; at most one discovery runs at a time.
    ///
    /// # Errors
    ///
    /// A failure is stored and returned by the next
    /// [`read`](crate::functions::BatchSourceExecutor::read) that needs a task
    /// ([`ReadError::Discovery`](crate::functions::ReadError::Discovery)). Tasks emitted before
    /// it stay queued.
    fn discover(&self, emitter: &mut TaskEmitter<'_, Self::Task>) -> Result<(), SourceError>;

    /// Gets ready to read `task` (open the file, run the query...).
    ///
    /// # Errors
    ///
    /// Returned by `read` as [`ReadError::Prepare`](crate::functions::ReadError::Prepare); the
    /// task is dropped and the next read moves on to the next task.
    fn prepare(&self, task: Self::Task) -> Result<(), SourceError>;

    /// The next record of the prepared task, or `None` when the task is done (then the next
    /// task is prepared). May block until a record is available.
    ///
    /// # Errors
    ///
    /// Returned by `read` as [`ReadError::Read`](crate::functions::ReadError::Read); the task
    /// stays prepared.
    fn read_next(&self) -> Result<Option<Self::Record>, SourceError>;

    /// Called once by [`close`](crate::functions::BatchSourceExecutor::close), after the
    /// triggerer is stopped and discovery has finished (or the wait for it timed out). The
    /// default does nothing.
    ///
    /// # Errors
    ///
    /// Logged; the executor closes anyway.
    fn close(&self) -> Result<(), SourceError> {
        Ok(())
    }
}

/// Where [`BatchSource::discover`] puts the tasks it finds.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{EmitError, TaskEmitter};
///
/// // A sink that takes even task numbers only.
/// let mut seen = Vec::new();
/// let mut sink = |task: u32| {
///     if task % 2 == 1 {
///         return Err(EmitError(task));
///     }
///     seen.push(task);
///     Ok(())
/// };
/// let mut emitter = TaskEmitter::new(&mut sink);
/// emitter.emit(2).unwrap();
/// assert_eq!(emitter.emit(3).unwrap_err().into_task(), 3);
/// assert_eq!(emitter.emitted(), 1);
/// ```
pub struct TaskEmitter<'a, T> {
    sink: &'a mut dyn FnMut(T) -> Result<(), EmitError<T>>,
    emitted: usize,
}

impl<'a, T> TaskEmitter<'a, T> {
    /// An emitter that hands every task to `sink` (the executor's is its task queue; tests of
    /// a source can collect into a vector).
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::TaskEmitter;
    ///
    /// let mut count = 0;
    /// let mut sink = |_task: u8| {
    ///     count += 1;
    ///     Ok(())
    /// };
    /// TaskEmitter::new(&mut sink).emit(1).unwrap();
    /// assert_eq!(count, 1);
    /// ```
    pub fn new(sink: &'a mut dyn FnMut(T) -> Result<(), EmitError<T>>) -> Self {
        Self { sink, emitted: 0 }
    }

    /// Queues `task` for reading.
    ///
    /// # Errors
    ///
    /// [`EmitError`] with the task when the executor is closed (stop discovering then; `?`
    /// turns it into a [`SourceError`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::TaskEmitter;
    ///
    /// let mut tasks = Vec::new();
    /// let mut sink = |task| {
    ///     tasks.push(task);
    ///     Ok(())
    /// };
    /// TaskEmitter::new(&mut sink).emit("gs://bucket/2024-01-01").unwrap();
    /// assert_eq!(tasks.len(), 1);
    /// ```
    pub fn emit(&mut self, task: T) -> Result<(), EmitError<T>> {
        (self.sink)(task)?;
        self.emitted += 1;
        Ok(())
    }

    /// Tasks queued through this emitter so far.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::TaskEmitter;
    ///
    /// let mut sink = |_: ()| Ok(());
    /// let mut emitter = TaskEmitter::new(&mut sink);
    /// emitter.emit(()).unwrap();
    /// emitter.emit(()).unwrap();
    /// assert_eq!(emitter.emitted(), 2);
    /// ```
    pub fn emitted(&self) -> usize {
        self.emitted
    }
}

impl<T> fmt::Debug for TaskEmitter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskEmitter")
            .field("emitted", &self.emitted)
            .finish_non_exhaustive()
    }
}
