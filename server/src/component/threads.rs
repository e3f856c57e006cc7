//! `ComponentThreads`: the threads a component started, by name and OS id, and whether they ended.
//!
//! Every component's executor takes its thread from a `TrackedThreadFactory` (the component's
//! thread factory, a [`NamedThreadFactory`](pulsar_common::executors::NamedThreadFactory) by
//! default, wrapped so that the thread also records itself here); the ZooKeeper session
//! registers its I/O runtime's thread the same way. A thread counts as exited once its thread-local
//! destructors run, the last thing a thread does before the operating system removes it, so
//! `close()` followed by [`ComponentThreads::await_exit`] proves the component left no thread
//! behind.

use parking_lot::{Condvar, Mutex};
use pulsar_common::executors::ThreadFactory;
use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::io;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// One thread a component started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    /// The thread's full name (`{pool}-{pool_id}-{n}`).
    pub name: String,
    /// The thread's id in the operating system (Linux: its entry under `/proc/self/task`);
    /// `None` where it cannot be read.
    pub os_id: Option<u32>,
    /// Whether the thread has finished (its thread-local destructors ran).
    pub exited: bool,
}

/// The threads a component started, shared by the component and whoever inspects it.
///
/// Clones share one record.
///
/// # Examples
///
/// ```
/// use pulsar_server::metadata::MetadataStore;
/// use std::time::Duration;
///
/// let store = MetadataStore::open("memory:threads-doc").unwrap();
/// store.put("/a", b"1", pulsar_server::metadata::ExpectedVersion::Any).unwrap();
/// // The store's executor thread starts on its first notification.
/// let threads = store.threads();
/// store.close();
/// assert!(threads.await_exit(Duration::from_secs(10)));
/// assert_eq!(threads.live_count(), 0);
/// ```
#[derive(Clone, Default)]
pub struct ComponentThreads {
    tracker: Arc<Tracker>,
}

#[derive(Default)]
struct Tracker {
    /// Every thread started so far, in start order.
    threads: Mutex<Vec<ThreadInfo>>,
    /// Notified whenever a thread exits.
    exited: Condvar,
}

/// Marks its thread exited when the thread's thread-local storage is torn down.
struct ExitGuard {
    tracker: Arc<Tracker>,
    index: usize,
}

impl Drop for ExitGuard {
    fn drop(&mut self) {
        self.tracker.threads.lock()[self.index].exited = true;
        self.tracker.exited.notify_all();
    }
}

thread_local! {
    /// The guards of the trackers that registered this thread (usually one).
    static EXIT_GUARDS: RefCell<Vec<ExitGuard>> = const { RefCell::new(Vec::new()) };
}

impl ComponentThreads {
    /// An empty record.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// `factory`, with every thread it starts recorded here first thing.
    pub(crate) fn tracking(&self, factory: Arc<dyn ThreadFactory>) -> TrackedThreadFactory {
        TrackedThreadFactory {
            inner: factory,
            threads: self.clone(),
        }
    }

    /// Records the calling thread (called first thing on a new thread) and arranges for it to
    /// be marked exited when its thread-local storage is destroyed.
    pub(crate) fn register_current_thread(&self) {
        let name = thread::current().name().unwrap_or("<unnamed>").to_owned();
        let index = {
            let mut threads = self.tracker.threads.lock();
            threads.push(ThreadInfo {
                name,
                os_id: current_os_thread_id(),
                exited: false,
            });
            threads.len() - 1
        };
        let guard = ExitGuard {
            tracker: Arc::clone(&self.tracker),
            index,
        };
        EXIT_GUARDS.with_borrow_mut(|guards| guards.push(guard));
    }

    /// Every thread started so far, oldest first.
    pub fn started(&self) -> Vec<ThreadInfo> {
        self.tracker.threads.lock().clone()
    }

    /// The names of the threads started so far, oldest first.
    pub fn names(&self) -> Vec<String> {
        self.tracker
            .threads
            .lock()
            .iter()
            .map(|thread| thread.name.clone())
            .collect()
    }

    /// How many of the started threads have not exited yet.
    pub fn live_count(&self) -> usize {
        self.tracker
            .threads
            .lock()
            .iter()
            .filter(|thread| !thread.exited)
            .count()
    }

    /// Waits up to `timeout` until every started thread has exited; `true` if they all have.
    pub fn await_exit(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut threads = self.tracker.threads.lock();
        while threads.iter().any(|thread| !thread.exited) {
            match deadline {
                Some(deadline) => {
                    if self
                        .tracker
                        .exited
                        .wait_until(&mut threads, deadline)
                        .timed_out()
                    {
                        return threads.iter().all(|thread| thread.exited);
                    }
                }
                None => self.tracker.exited.wait(&mut threads),
            }
        }
        true
    }
}

impl fmt::Debug for ComponentThreads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ComponentThreads")
            .field("threads", &*self.tracker.threads.lock())
            .finish()
    }
}

/// The OS id of the calling thread (Linux: from `/proc/thread-self`, which links to
/// `<pid>/task/<tid>`).
fn current_os_thread_id() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// A thread factory (a component's default, or the user's) whose threads register themselves
/// in a [`ComponentThreads`] before running their body; task panics go to the wrapped
/// factory's hook.
pub(crate) struct TrackedThreadFactory {
    inner: Arc<dyn ThreadFactory>,
    threads: ComponentThreads,
}

impl ThreadFactory for TrackedThreadFactory {
    fn new_thread(&self, body: Box<dyn FnOnce() + Send + 'static>) -> io::Result<JoinHandle<()>> {
        let threads = self.threads.clone();
        self.inner.new_thread(Box::new(move || {
            threads.register_current_thread();
            body();
        }))
    }

    fn on_task_panic(&self, payload: Box<dyn Any + Send>) {
        self.inner.on_task_panic(payload);
    }
}

impl fmt::Debug for TrackedThreadFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrackedThreadFactory")
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}
