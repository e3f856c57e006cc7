//! `BatchPushSource`: a batch source that pushes each task's records from its own threads, and `BatchPushAdapter`, which turns it into a `BatchSource` (Pulsar's `BatchPushSource`).

use crate::functions::{BatchSource, TaskEmitter};
use crate::functions::{PushError, SourceError};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

/// Records (and end markers) the adapter buffers by default before `push` blocks (Pulsar's
/// `DEFAULT_QUEUE_LENGTH`).
pub const DEFAULT_PUSH_QUEUE_CAPACITY: usize = 1000;

/// A batch source whose tasks push their records (Pulsar's `BatchPushSource`): `prepare`
/// starts the task and returns; the task pushes records to its [`RecordPusher`] from any
/// thread and ends with [`end_of_task`](RecordPusher::end_of_task) (or
/// [`fail`](RecordPusher::fail)). Wrap it in a [`BatchPushAdapter`] to run it on a
/// [`BatchSourceExecutor`](crate::functions::BatchSourceExecutor).
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{BatchPushSource, RecordPusher, SourceError, TaskEmitter};
///
/// /// Each task is a word; its records are its letters, pushed from a thread of their own.
/// struct Letters;
///
/// impl BatchPushSource for Letters {
///     type Task = &'static str;
///     type Record = char;
///
///     fn discover(&self, emitter: &mut TaskEmitter<'_, &'static str>) -> Result<(), SourceError> {
///         emitter.emit("hi")?;
///         Ok(())
///     }
///
///     fn prepare(&self, word: &'static str, pusher: RecordPusher<char>) -> Result<(), SourceError> {
///         std::thread::spawn(move || {
///             for letter in word.chars() {
///                 if pusher.push(letter).is_err() {
///                     return; // closed
///                 }
///             }
///             pusher.end_of_task();
///         });
///         Ok(())
///     }
/// }
/// # let _ = Letters;
/// ```
pub trait BatchPushSource: Send + Sync + 'static {
    /// A unit of work found by discovery.
    type Task: Send + 'static;
    /// What a task pushes.
    type Record: Send + 'static;

    /// As [`BatchSource::discover`].
    ///
    /// # Errors
    ///
    /// As [`BatchSource::discover`].
    fn discover(&self, emitter: &mut TaskEmitter<'_, Self::Task>) -> Result<(), SourceError>;

    /// Starts `task`: its records go to `pusher` (from any thread), then
    /// [`end_of_task`](RecordPusher::end_of_task).
    ///
    /// # Errors
    ///
    /// As [`BatchSource::prepare`].
    fn prepare(
        &self,
        task: Self::Task,
        pusher: RecordPusher<Self::Record>,
    ) -> Result<(), SourceError>;

    /// As [`BatchSource::close`]; called after the adapter's queue is closed (pushes fail
    /// from then on, and a blocked reader wakes).
    ///
    /// # Errors
    ///
    /// Logged; the executor closes anyway.
    fn close(&self) -> Result<(), SourceError> {
        Ok(())
    }
}

/// Runs a [`BatchPushSource`] as a [`BatchSource`]: pushed records are buffered in a bounded
/// queue that `read_next` takes from, blocking until a record, the end of the task, a failure,
/// or close.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{
///     BatchPushAdapter, BatchPushSource, BatchSourceExecutor, OnDemandTriggerer, RecordPusher,
///     SourceError, TaskEmitter,
/// };
///
/// struct Counter;
///
/// impl BatchPushSource for Counter {
///     type Task = u32;
///     type Record = u32;
///
///     fn discover(&self, emitter: &mut TaskEmitter<'_, u32>) -> Result<(), SourceError> {
///         emitter.emit(3)?;
///         Ok(())
///     }
///
///     fn prepare(&self, n: u32, pusher: RecordPusher<u32>) -> Result<(), SourceError> {
///         // Pushed here, on the reader's thread: fine for a task smaller than the queue's
///         // capacity. A larger one must push from a thread of its own, or its `push` waits
///         // for a reader that is this very call.
///         for i in 0..n {
///             pusher.push(i).map_err(|_| SourceError::new("closed"))?;
///         }
///         pusher.end_of_task();
///         Ok(())
///     }
/// }
///
/// let triggerer = OnDemandTriggerer::new();
/// let trigger = triggerer.handle();
/// let executor = BatchSourceExecutor::builder(BatchPushAdapter::new(Counter), triggerer).build();
/// trigger.trigger();
/// let records: Vec<u32> = (0..3).map(|_| executor.read().unwrap()).collect();
/// assert_eq!(records, [0, 1, 2]);
/// executor.close();
/// ```
pub struct BatchPushAdapter<P: BatchPushSource> {
    source: P,
    queue: Arc<PushQueue<P::Record>>,
}

impl<P: BatchPushSource> BatchPushAdapter<P> {
    /// Wraps `source` with a queue of [`DEFAULT_PUSH_QUEUE_CAPACITY`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{BatchPushSource, RecordPusher, SourceError, TaskEmitter};
    /// # struct Nothing;
    /// # impl BatchPushSource for Nothing {
    /// #     type Task = ();
    /// #     type Record = ();
    /// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> { Ok(()) }
    /// #     fn prepare(&self, _: (), pusher: RecordPusher<()>) -> Result<(), SourceError> {
    /// #         pusher.end_of_task();
    /// #         Ok(())
    /// #     }
    /// # }
    /// use pulsar_server::functions::BatchPushAdapter;
    ///
    /// let adapter = BatchPushAdapter::new(Nothing);
    /// assert_eq!(adapter.capacity(), 1000);
    /// ```
    pub fn new(source: P) -> Self {
        Self::with_capacity(source, DEFAULT_PUSH_QUEUE_CAPACITY)
    }

    /// Wraps `source` with a queue of `capacity` entries (records and end markers).
    ///
    /// # Panics
    ///
    /// If `capacity` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{BatchPushSource, RecordPusher, SourceError, TaskEmitter};
    /// # struct Nothing;
    /// # impl BatchPushSource for Nothing {
    /// #     type Task = ();
    /// #     type Record = ();
    /// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> { Ok(()) }
    /// #     fn prepare(&self, _: (), pusher: RecordPusher<()>) -> Result<(), SourceError> {
    /// #         pusher.end_of_task();
    /// #         Ok(())
    /// #     }
    /// # }
    /// use pulsar_server::functions::BatchPushAdapter;
    ///
    /// let adapter = BatchPushAdapter::with_capacity(Nothing, 16);
    /// assert_eq!(adapter.capacity(), 16);
    /// ```
    pub fn with_capacity(source: P, capacity: usize) -> Self {
        assert!(
            capacity > 0,
            "a push queue needs room for at least one entry"
        );
        Self {
            source,
            queue: Arc::new(PushQueue {
                state: Mutex::new(PushState {
                    items: VecDeque::new(),
                    closed: false,
                    task: 0,
                    failed: false,
                }),
                not_empty: Condvar::new(),
                not_full: Condvar::new(),
                capacity,
            }),
        }
    }

    /// The queue's capacity.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{BatchPushSource, RecordPusher, SourceError, TaskEmitter};
    /// # struct Nothing;
    /// # impl BatchPushSource for Nothing {
    /// #     type Task = ();
    /// #     type Record = ();
    /// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> { Ok(()) }
    /// #     fn prepare(&self, _: (), pusher: RecordPusher<()>) -> Result<(), SourceError> {
    /// #         pusher.end_of_task();
    /// #         Ok(())
    /// #     }
    /// # }
    /// use pulsar_server::functions::BatchPushAdapter;
    ///
    /// assert_eq!(BatchPushAdapter::with_capacity(Nothing, 4).capacity(), 4);
    /// ```
    pub fn capacity(&self) -> usize {
        self.queue.capacity
    }

    /// The wrapped source.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{BatchPushSource, RecordPusher, SourceError, TaskEmitter};
    /// # struct Nothing;
    /// # impl BatchPushSource for Nothing {
    /// #     type Task = ();
    /// #     type Record = ();
    /// #     fn discover(&self, _: &mut TaskEmitter<'_, ()>) -> Result<(), SourceError> { Ok(()) }
    /// #     fn prepare(&self, _: (), pusher: RecordPusher<()>) -> Result<(), SourceError> {
    /// #         pusher.end_of_task();
    /// #         Ok(())
    /// #     }
    /// # }
    /// use pulsar_server::functions::BatchPushAdapter;
    ///
    /// let adapter = BatchPushAdapter::new(Nothing);
    /// let _source: &Nothing = adapter.source();
    /// ```
    pub fn source(&self) -> &P {
        &self.source
    }
}

impl<P: BatchPushSource> BatchSource for BatchPushAdapter<P> {
    type Task = P::Task;
    type Record = P::Record;

    fn discover(&self, emitter: &mut TaskEmitter<'_, Self::Task>) -> Result<(), SourceError> {
        self.source.discover(emitter)
    }

    fn prepare(&self, task: Self::Task) -> Result<(), SourceError> {
        let (number, stale) = self.queue.begin_task();
        drop(stale);
        let pusher = RecordPusher {
            queue: Arc::clone(&self.queue),
            task: number,
        };
        self.source.prepare(task, pusher)
    }

    fn read_next(&self) -> Result<Option<Self::Record>, SourceError> {
        match self.queue.take() {
            Some(Pushed::Record(record)) => Ok(Some(record)),
            Some(Pushed::EndOfTask) => Ok(None),
            Some(Pushed::Failed(error)) => Err(error),
            None => Err(SourceError::new("the push source is closed")),
        }
    }

    fn close(&self) -> Result<(), SourceError> {
        let dropped = self.queue.close();
        drop(dropped);
        self.source.close()
    }
}

impl<P: BatchPushSource> fmt::Debug for BatchPushAdapter<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.queue.state.lock();
        f.debug_struct("BatchPushAdapter")
            .field("queued", &state.items.len())
            .field("capacity", &self.queue.capacity)
            .field("closed", &state.closed)
            .finish_non_exhaustive()
    }
}

/// Where a task of a [`BatchPushSource`] pushes its records; cheap to clone, usable from any
/// thread.
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{BatchPushSource, RecordPusher, SourceError, TaskEmitter};
///
/// fn push_all(pusher: RecordPusher<String>, lines: Vec<String>) {
///     for line in lines {
///         if let Err(closed) = pusher.push(line) {
///             drop(closed.into_record()); // the executor was closed: stop
///             return;
///         }
///     }
///     pusher.end_of_task();
/// }
/// # let _ = push_all;
/// ```
pub struct RecordPusher<R> {
    queue: Arc<PushQueue<R>>,
    /// The number of the task this pusher was made for (see [`PushState::task`]).
    task: u64,
}

impl<R> Clone for RecordPusher<R> {
    fn clone(&self) -> Self {
        Self {
            queue: Arc::clone(&self.queue),
            task: self.task,
        }
    }
}

impl<R> RecordPusher<R> {
    /// Queues a record for `read`, waiting while the queue is full.
    ///
    /// # Errors
    ///
    /// [`PushError`] with the record once the source is closed, or once this pusher's task is
    /// over: its failure (see [`fail`](Self::fail)) was read, or the reader moved on to a
    /// later task.
    ///
    /// # Examples
    ///
    /// See [`RecordPusher`].
    pub fn push(&self, record: R) -> Result<(), PushError<R>> {
        self.queue
            .put(self.task, Pushed::Record(record))
            .map_err(|pushed| match pushed {
                Pushed::Record(record) => PushError(record),
                _ => unreachable!("put hands back what it was given"),
            })
    }

    /// Ends the task: the read after its last record moves on to the next task. Ignored once
    /// the source is closed or the task is over.
    ///
    /// # Examples
    ///
    /// See [`RecordPusher`].
    pub fn end_of_task(&self) {
        let _ = self.queue.put(self.task, Pushed::EndOfTask);
    }

    /// Fails the task: the read after its last pushed record returns `error` (Pulsar's
    /// `notifyError`), and the task is over: the read after that moves on to the next task,
    /// and what this task's pushers push from then on (an `end_of_task` too) is refused or
    /// discarded. Ignored once the source is closed or the task is over.
    ///
    /// # Examples
    ///
    /// ```
    /// use pulsar_server::functions::{RecordPusher, SourceError};
    ///
    /// fn on_broken_file(pusher: &RecordPusher<Vec<u8>>) {
    ///     pusher.fail(SourceError::new("truncated file"));
    /// }
    /// # let _ = on_broken_file;
    /// ```
    pub fn fail(&self, error: SourceError) {
        let _ = self.queue.put(self.task, Pushed::Failed(error));
    }
}

impl<R> fmt::Debug for RecordPusher<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordPusher")
            .field("capacity", &self.queue.capacity)
            .finish_non_exhaustive()
    }
}

/// What a task pushed.
enum Pushed<R> {
    Record(R),
    EndOfTask,
    Failed(SourceError),
}

/// The bounded queue between the pushing threads and the reader.
struct PushQueue<R> {
    state: Mutex<PushState<R>>,
    not_empty: Condvar,
    not_full: Condvar,
    capacity: usize,
}

struct PushState<R> {
    items: VecDeque<Pushed<R>>,
    closed: bool,
    /// The number of the task being read (the latest prepared, counted from 1). Only its
    /// pushers' items are queued: a task that is over cannot push into the next one.
    task: u64,
    /// The current task's failure was taken: the task is over, and the next take ends it.
    failed: bool,
}

impl<R> PushState<R> {
    /// Whether task `task` may still queue items.
    fn takes_from(&self, task: u64) -> bool {
        !self.closed && self.task == task && !self.failed
    }
}

impl<R> PushQueue<R> {
    /// Waits for room, then queues `item` of task `task`; hands it back once closed or once
    /// that task is over.
    fn put(&self, task: u64, item: Pushed<R>) -> Result<(), Pushed<R>> {
        let mut state = self.state.lock();
        while state.takes_from(task) && state.items.len() >= self.capacity {
            self.not_full.wait(&mut state);
        }
        if !state.takes_from(task) {
            return Err(item);
        }
        state.items.push_back(item);
        drop(state);
        self.not_empty.notify_one();
        Ok(())
    }

    /// Waits for an item; `None` once closed. After a failure was taken, the end of its task,
    /// at once: a failed task is over, whatever its pushers do next.
    fn take(&self) -> Option<Pushed<R>> {
        let mut state = self.state.lock();
        loop {
            if state.closed {
                return None;
            }
            if state.failed {
                return Some(Pushed::EndOfTask);
            }
            if let Some(item) = state.items.pop_front() {
                state.failed = matches!(item, Pushed::Failed(_));
                let failed = state.failed;
                drop(state);
                if failed {
                    // Every pusher of the failed task must hear it (each gets `PushError`), not
                    // only the one a slot would have let in.
                    self.not_full.notify_all();
                } else {
                    self.not_full.notify_one();
                }
                return Some(item);
            }
            self.not_empty.wait(&mut state);
        }
    }

    /// Starts the next task: returns its number and what earlier tasks left queued (pushed
    /// after their end or failure), for the caller to drop outside the lock. Pushers of
    /// earlier tasks waiting for room wake and are refused.
    fn begin_task(&self) -> (u64, VecDeque<Pushed<R>>) {
        let (task, stale) = {
            let mut state = self.state.lock();
            state.task += 1;
            state.failed = false;
            (state.task, std::mem::take(&mut state.items))
        };
        self.not_full.notify_all();
        (task, stale)
    }

    /// Closes: wakes every waiter; returns what was still queued (for the caller to drop
    /// outside the lock).
    fn close(&self) -> VecDeque<Pushed<R>> {
        let dropped = {
            let mut state = self.state.lock();
            state.closed = true;
            std::mem::take(&mut state.items)
        };
        self.not_empty.notify_all();
        self.not_full.notify_all();
        dropped
    }
}
