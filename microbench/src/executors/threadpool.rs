//! `threadpool`: the `threadpool` crate's pool with one thread (a real pool: join, panic
//! count, a sentinel that replaces a worker killed by a panic).

use super::{Executor, Submit};
use std::fmt;
use std::sync::Arc;

/// A `threadpool::ThreadPool` with one worker thread.
pub struct ThreadPoolExecutor {
    pool: ::threadpool::ThreadPool,
}

/// Submits to a [`ThreadPoolExecutor`] (a clone of the pool, as its docs advise per thread).
#[derive(Clone)]
pub struct ThreadPoolHandle(::threadpool::ThreadPool);

impl Executor for ThreadPoolExecutor {
    const NAME: &'static str = "threadpool";
    type Handle = ThreadPoolHandle;

    fn start() -> Self {
        let pool = ::threadpool::Builder::new()
            .num_threads(1)
            .thread_name("threadpool-executor".into())
            .build();
        // The pool spawns its thread eagerly; run one task so it is up and idle.
        let ran = Arc::new(crate::latch::CountdownLatch::new(1));
        let latch = Arc::clone(&ran);
        pool.execute(move || latch.count_down());
        assert!(
            ran.wait_timeout(std::time::Duration::from_secs(10)),
            "the threadpool worker did not start"
        );
        Self { pool }
    }

    fn handle(&self) -> ThreadPoolHandle {
        ThreadPoolHandle(self.pool.clone())
    }

    fn shutdown(self) {
        // Waits for the queue to empty; dropping the last clone then lets the thread exit,
        // which threadpool offers no way to wait for.
        self.pool.join();
    }
}

impl Submit for ThreadPoolHandle {
    #[inline]
    fn execute<F: FnOnce() + Send + 'static>(&self, task: F) {
        self.0.execute(task);
    }
}

impl fmt::Debug for ThreadPoolExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPoolExecutor")
            .field("pool", &self.pool)
            .finish()
    }
}

impl fmt::Debug for ThreadPoolHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ThreadPoolHandle").field(&self.0).finish()
    }
}
