//! `ProviderThreadFactory`: names an executor provider's threads `{pool_name}-{pool_id}-{n}`.

use pulsar_common::executors::{NamedThreadFactory, ThreadFactory};
use std::fmt;
use std::io;
use std::sync::Arc;
use std::thread::{self, JoinHandle};

/// The thread factory of the `n`-th executor (1-based) of a provider.
///
/// All executors of one provider share the provider's process-wide pool id (taken from a
/// [`NamedThreadFactory`], so ids never collide with other pools), and executor `n` names its
/// one thread `{pool_name}-{pool_id}-{n}` — so a thread dump tells which executor of which
/// provider a thread serves, whatever order the lazily started threads came up in. Panics of
/// `execute`d tasks are logged by the default hook, naming the thread (Pulsar's
/// uncaught-exception handler).
pub(crate) struct ProviderThreadFactory {
    pool: Arc<NamedThreadFactory>,
    n: usize,
}

impl ProviderThreadFactory {
    /// The factory of executor `n` (1-based) of the pool `pool`.
    pub(crate) fn new(pool: Arc<NamedThreadFactory>, n: usize) -> Self {
        Self { pool, n }
    }

    fn thread_name(&self) -> String {
        format!(
            "{}-{}-{}",
            self.pool.pool_name(),
            self.pool.pool_id(),
            self.n
        )
    }
}

impl ThreadFactory for ProviderThreadFactory {
    fn new_thread(&self, body: Box<dyn FnOnce() + Send + 'static>) -> io::Result<JoinHandle<()>> {
        thread::Builder::new().name(self.thread_name()).spawn(body)
    }
}

impl fmt::Debug for ProviderThreadFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderThreadFactory")
            .field("thread_name", &self.thread_name())
            .finish()
    }
}
