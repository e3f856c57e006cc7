//! `TrackingFactory`: wraps a component's thread factory so that its threads are recorded in the component's `ComponentThreads`.

use crate::threads::ComponentThreads;
use pulsar_common::executors::ThreadFactory;
use std::any::Any;
use std::fmt;
use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;

/// A thread factory (the user's, or a `NamedThreadFactory` with the component's pool name)
/// whose threads register themselves in a [`ComponentThreads`] first thing, so that `close()`
/// followed by [`ComponentThreads::await_exit`] proves the component left no thread behind.
pub(crate) struct TrackingFactory {
    inner: Arc<dyn ThreadFactory>,
    threads: ComponentThreads,
}

impl TrackingFactory {
    pub(crate) fn new(inner: Arc<dyn ThreadFactory>, threads: ComponentThreads) -> Self {
        Self { inner, threads }
    }
}

impl ThreadFactory for TrackingFactory {
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

impl fmt::Debug for TrackingFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrackingFactory")
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}
