//! `ProducerCache`: producers cached by topic and key, with a size bound and idle expiry; evicted ones are flushed and closed on the cache's executor (Pulsar's functions `ProducerCache`).

use super::closer::{Closer, Evicted, ProducerCloseReport, RemovalCause};
use crate::component::threads::ComponentThreads;
use crate::component::user_code::catch_user;
use crate::component::ComponentExecutor;
use crate::functions::GetProducerError;
use crate::functions::Producer;
use parking_lot::{Condvar, Mutex};
use pulsar_common::executors::ThreadFactory;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::panic;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The pool name of the cache's executor thread: `producer-cache-{pool_id}-1`.
pub const PRODUCER_CACHE_POOL_NAME: &str = "producer-cache";

/// Producers the cache holds at most, by default (Pulsar's `PRODUCER_CACHE_MAX_SIZE`).
pub const DEFAULT_MAX_PRODUCERS: usize = 10_000;

/// How long an unused producer stays cached, by default (Pulsar's
/// `PRODUCER_CACHE_TIMEOUT_SECONDS`).
pub const DEFAULT_IDLE_EXPIRY: Duration = Duration::from_secs(300);

/// The timeout of each `flush` and each `close` of an evicted producer, by default (Pulsar's
/// `FLUSH_OR_CLOSE_TIMEOUT_SECONDS`).
pub const DEFAULT_OPERATION_TIMEOUT: Duration = Duration::from_secs(60);

/// How long [`ProducerCache::close`] waits for the closes in progress, by default.
pub const DEFAULT_CACHE_CLOSE_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the cache reads the time for idle expiry.
type Ticker = Arc<dyn Fn() -> Instant + Send + Sync>;

/// What a producer is cached by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CacheKey<K> {
    topic: String,
    key: K,
}

/// Caches [`Producer`]s by topic and key (Pulsar's functions `ProducerCache`).
///
/// - **Bounded**: at most `max_size` producers; beyond it the least recently used goes.
/// - **Idle expiry**: a producer not returned by [`get_or_create`](Self::get_or_create) for
///   `idle_expiry` goes. Expiry is checked on every cache operation and by
///   [`evict_expired`](Self::evict_expired) (call it periodically to expire producers of an
///   idle cache).
/// - **Closing**: a removed producer is flushed, then closed, on the cache's executor (thread
///   `producer-cache-{pool}-1`, started on the first removal), each step with the operation
///   timeout (60 s by default; an operation still pending at its first poll arms a timer on
///   a second thread, `producer-cache-timer-{pool}-1`, started only then and stopped by
///   `close`); closes run concurrently. Each producer is closed exactly once.
///   Callers still holding the `Arc` of an evicted producer hold a closed producer.
/// - **One creation per key**: concurrent `get_or_create` calls for one key run `create` once;
///   the others wait for it. `create` runs on the caller's thread with no lock held.
/// - [`close`](Self::close) removes every producer, waits (bounded) until they are all
///   flushed and closed, then shuts the executor down. Later calls get
///   [`GetProducerError::Closed`].
///
/// # Examples
///
/// ```
/// use pulsar_server::functions::{Producer, ProducerCache, ProducerFuture};
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// struct Counting(Arc<AtomicUsize>);
/// impl Producer for Counting {
///     type Message = Vec<u8>;
///     fn send(&self, _: Vec<u8>) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
///     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
///     fn close(&self) -> ProducerFuture {
///         self.0.fetch_add(1, Ordering::SeqCst);
///         Box::pin(std::future::ready(Ok(())))
///     }
/// }
///
/// let closes = Arc::new(AtomicUsize::new(0));
/// let cache = ProducerCache::builder().max_size(100).build();
/// let create = || Ok::<_, std::io::Error>(Counting(Arc::clone(&closes)));
/// let first = cache.get_or_create("persistent://public/default/out", "sink", create).unwrap();
/// let again = cache
///     .get_or_create("persistent://public/default/out", "sink", || -> Result<_, std::io::Error> {
///         unreachable!("cached already")
///     })
///     .unwrap();
/// assert!(Arc::ptr_eq(&first, &again));
/// let _ = first.send(b"hello".to_vec());
///
/// let report = cache.close(); // flushes and closes it, then stops the `producer-cache` thread
/// assert_eq!(report.closed, 1);
/// assert_eq!(closes.load(Ordering::SeqCst), 1);
/// ```
pub struct ProducerCache<K, P>
where
    K: Eq + Hash + Clone + Send + 'static,
    P: Producer,
{
    state: Mutex<CacheState<K, P>>,
    /// Signalled when a creation finishes (its key is `Ready` or gone, `creating` fell) and
    /// when a hand-over is done (`handing_over` fell).
    creation_done: Condvar,
    closer: Arc<Closer<P>>,
    max_size: usize,
    idle_expiry: Duration,
    close_timeout: Duration,
    ticker: Ticker,
}

struct CacheState<K, P> {
    entries: HashMap<Arc<CacheKey<K>>, Entry<P>>,
    /// Ready entries by access stamp, least recently used first.
    recency: BTreeMap<u64, Arc<CacheKey<K>>>,
    next_stamp: u64,
    /// `create` calls in progress (each has a `Creating` entry).
    creating: usize,
    /// Producers removed under this lock and not yet handed over to the closer: `close`
    /// waits for them too, so that a removal racing it is flushed, closed and counted in the
    /// report it returns, not dropped as given up after it returned.
    handing_over: usize,
    closed: bool,
}

enum Entry<P> {
    /// A caller is running `create` for this key; others wait on `creation_done`.
    Creating,
    Ready {
        producer: Arc<P>,
        last_access: Instant,
        stamp: u64,
    },
}

impl<K, P> ProducerCache<K, P>
where
    K: Eq + Hash + Clone + Send + 'static,
    P: Producer,
{
    /// A builder with Pulsar's defaults.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::ProducerCache;
    /// use std::time::Duration;
    ///
    /// let cache: ProducerCache<String, Noop> = ProducerCache::builder()
    ///     .max_size(1_000)
    ///     .idle_expiry(Duration::from_secs(60))
    ///     .operation_timeout(Duration::from_secs(10))
    ///     .build();
    /// assert!(cache.is_empty());
    /// ```
    pub fn builder() -> ProducerCacheBuilder<K, P> {
        ProducerCacheBuilder::default()
    }

    /// The producer cached for `topic` and `key`, or a new one from `create` (called on this
    /// thread, with no lock held; concurrent callers for the same key wait for it).
    ///
    /// # Errors
    ///
    /// [`GetProducerError::Closed`] once the cache is closed (a producer created while it
    /// closed is flushed and closed by the cache); [`GetProducerError::Create`] with the error
    /// of `create` (nothing is cached; a waiting caller then tries its own `create`).
    ///
    /// # Panics
    ///
    /// If `create` panics, the panic is re-raised here (nothing is cached).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::{GetProducerError, ProducerCache};
    ///
    /// let cache: ProducerCache<u32, Noop> = ProducerCache::builder().build();
    /// let failed = cache.get_or_create("t", 1, || Err("no broker"));
    /// assert!(matches!(failed, Err(GetProducerError::Create("no broker"))));
    /// assert!(cache.get_or_create("t", 1, || Ok::<_, ()>(Noop)).is_ok());
    /// cache.close();
    /// assert!(matches!(cache.get_or_create("t", 1, || Ok::<_, ()>(Noop)), Err(GetProducerError::Closed)));
    /// ```
    pub fn get_or_create<E>(
        &self,
        topic: &str,
        key: K,
        create: impl FnOnce() -> Result<P, E>,
    ) -> Result<Arc<P>, GetProducerError<E>> {
        let lookup = CacheKey {
            topic: topic.to_owned(),
            key,
        };
        let mut evicted = Vec::new();
        let key = loop {
            let now = (self.ticker)();
            let mut guard = self.state.lock();
            let state = &mut *guard;
            if state.closed {
                drop(guard);
                self.hand_over(evicted);
                return Err(GetProducerError::Closed);
            }
            state.expire(now, self.idle_expiry, &mut evicted);
            let stamp = state.next_stamp();
            match state.entries.get_mut(&lookup) {
                Some(Entry::Ready {
                    producer,
                    last_access,
                    stamp: entry_stamp,
                }) => {
                    let producer = Arc::clone(producer);
                    *last_access = now;
                    let old = std::mem::replace(entry_stamp, stamp);
                    let key = state
                        .recency
                        .remove(&old)
                        .expect("every ready entry is in recency");
                    state.recency.insert(stamp, key);
                    drop(guard);
                    self.hand_over(evicted);
                    return Ok(producer);
                }
                Some(Entry::Creating) if !evicted.is_empty() => {
                    // Hand the expired producers over before waiting: their flush and close must
                    // not wait for another caller's `create`. Then look again.
                    drop(guard);
                    self.hand_over(std::mem::take(&mut evicted));
                }
                Some(Entry::Creating) => {
                    self.creation_done.wait(&mut guard);
                }
                None => {
                    let key = Arc::new(lookup);
                    state.entries.insert(Arc::clone(&key), Entry::Creating);
                    state.creating += 1;
                    break key;
                }
            }
        };
        self.hand_over(std::mem::take(&mut evicted));

        let created = catch_user("the producer's create closure", create);
        let now = (self.ticker)();
        let outcome = {
            let mut state = self.state.lock();
            state.entries.remove(&key); // the `Creating` marker
            match created {
                Ok(Ok(producer)) => {
                    let producer = Arc::new(producer);
                    if state.closed {
                        state.handing_over += 1;
                        evicted.push(Evicted {
                            topic: key.topic.clone(),
                            producer,
                            cause: RemovalCause::Closed,
                        });
                        Ok(Err(GetProducerError::Closed))
                    } else {
                        let stamp = state.next_stamp();
                        state.entries.insert(
                            Arc::clone(&key),
                            Entry::Ready {
                                producer: Arc::clone(&producer),
                                last_access: now,
                                stamp,
                            },
                        );
                        state.recency.insert(stamp, Arc::clone(&key));
                        state.enforce_bound(self.max_size, &mut evicted);
                        Ok(Ok(producer))
                    }
                }
                Ok(Err(error)) => Ok(Err(GetProducerError::Create(error))),
                Err(payload) => Err(payload),
            }
        };
        // Hand over before `creating` falls, so that `close` waits for this producer too.
        self.hand_over(evicted);
        {
            let mut state = self.state.lock();
            state.creating -= 1;
        }
        self.creation_done.notify_all();
        match outcome {
            Ok(result) => result,
            Err(payload) => panic::resume_unwind(payload),
        }
    }

    /// Removes the producer of `topic` and `key` (it is flushed and closed on the cache's
    /// executor); `false` if none was cached. A producer being created is left alone.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::ProducerCache;
    ///
    /// let cache: ProducerCache<(), Noop> = ProducerCache::builder().build();
    /// cache.get_or_create("t", (), || Ok::<_, ()>(Noop)).unwrap();
    /// assert!(cache.invalidate("t", ()));
    /// assert!(!cache.invalidate("t", ()));
    /// assert_eq!(cache.close().closed, 1);
    /// ```
    pub fn invalidate(&self, topic: &str, key: K) -> bool {
        let lookup = CacheKey {
            topic: topic.to_owned(),
            key,
        };
        let evicted = {
            let mut state = self.state.lock();
            state.remove_ready(&lookup, RemovalCause::Explicit)
        };
        let removed = evicted.is_some();
        self.hand_over(evicted.into_iter().collect());
        removed
    }

    /// Removes every cached producer (each is flushed and closed on the cache's executor).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::ProducerCache;
    ///
    /// let cache: ProducerCache<u8, Noop> = ProducerCache::builder().build();
    /// for key in 0..3 {
    ///     cache.get_or_create("t", key, || Ok::<_, ()>(Noop)).unwrap();
    /// }
    /// cache.invalidate_all();
    /// assert!(cache.is_empty());
    /// assert_eq!(cache.close().closed, 3);
    /// ```
    pub fn invalidate_all(&self) {
        let evicted = self.state.lock().drain_ready(RemovalCause::Explicit);
        self.hand_over(evicted);
    }

    /// Removes the producers unused for longer than the idle expiry; returns how many.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::ProducerCache;
    /// use std::time::Duration;
    ///
    /// let cache: ProducerCache<(), Noop> =
    ///     ProducerCache::builder().idle_expiry(Duration::from_secs(300)).build();
    /// cache.get_or_create("t", (), || Ok::<_, ()>(Noop)).unwrap();
    /// assert_eq!(cache.evict_expired(), 0); // used just now
    /// ```
    pub fn evict_expired(&self) -> usize {
        let now = (self.ticker)();
        let mut evicted = Vec::new();
        self.state
            .lock()
            .expire(now, self.idle_expiry, &mut evicted);
        let count = evicted.len();
        self.hand_over(evicted);
        count
    }

    /// Producers cached now (not counting ones being created).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::ProducerCache;
    ///
    /// let cache: ProducerCache<(), Noop> = ProducerCache::builder().build();
    /// cache.get_or_create("t", (), || Ok::<_, ()>(Noop)).unwrap();
    /// assert_eq!(cache.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.state.lock().recency.len()
    }

    /// Whether no producer is cached.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::ProducerCache;
    ///
    /// let cache: ProducerCache<(), Noop> = ProducerCache::builder().build();
    /// assert!(cache.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The threads this cache started (its executor thread, once started, and its timer
    /// thread, if an operation ever had to be timed), to check after
    /// [`close`](Self::close) that none is left.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::ProducerCache;
    ///
    /// let cache: ProducerCache<(), Noop> = ProducerCache::builder().build();
    /// cache.get_or_create("t", (), || Ok::<_, ()>(Noop)).unwrap();
    /// cache.invalidate("t", ()); // a removal starts the executor thread
    /// use std::time::Duration;
    ///
    /// let threads = cache.threads();
    /// cache.close();
    /// assert!(threads.await_exit(Duration::from_secs(10)));
    /// assert_eq!(threads.live_count(), 0);
    /// ```
    pub fn threads(&self) -> ComponentThreads {
        self.closer.executor().threads()
    }

    /// Whether [`close`](Self::close) has been called.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::ProducerCache;
    ///
    /// let cache: ProducerCache<(), Noop> = ProducerCache::builder().build();
    /// cache.close();
    /// assert!(cache.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// Closes the cache: removes every producer, waits until each is flushed and closed (at
    /// most the close timeout, 60 s by default, counted from the call; producers still in
    /// progress then are abandoned, their futures dropped), then shuts the executor down and
    /// waits for its thread (at most the close timeout again, which only matters if a
    /// producer's `flush` or `close` call blocks). Returns what happened to every producer the
    /// cache ever removed.
    ///
    /// Idempotent: a later (or concurrent) call returns the report at once without waiting.
    /// `Drop` calls it.
    ///
    /// Called from a producer's `flush` or `close` (which run on the cache's one closing
    /// thread), it cannot wait for the closes queued behind the calling one: it returns without
    /// waiting for them, and they still run once the calling one returns; a later `close`
    /// reports them.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::ProducerCache;
    ///
    /// let cache: ProducerCache<(), Noop> = ProducerCache::builder().build();
    /// cache.get_or_create("t", (), || Ok::<_, ()>(Noop)).unwrap();
    /// assert_eq!(cache.close().closed, 1);
    /// assert_eq!(cache.close().closed, 1); // the same report
    /// ```
    pub fn close(&self) -> ProducerCloseReport {
        let evicted = {
            let mut state = self.state.lock();
            if state.closed {
                drop(state);
                return self.closer.report();
            }
            state.closed = true;
            state.drain_ready(RemovalCause::Closed)
        };
        tracing::info!(producers = evicted.len(), "closing producer cache");
        let deadline = Instant::now() + self.close_timeout;
        self.hand_over(evicted);
        {
            // Callers still in `create` hand their producer over before they finish, and
            // removals made before `closed` was set are handed over before they count down.
            let mut state = self.state.lock();
            while state.creating > 0 || state.handing_over > 0 {
                if self
                    .creation_done
                    .wait_until(&mut state, deadline)
                    .timed_out()
                {
                    tracing::warn!(
                        creating = state.creating,
                        handing_over = state.handing_over,
                        "producer creations or hand-overs still running at close; their producers are abandoned"
                    );
                    break;
                }
            }
        }
        // Producers still flushing or closing at the deadline are abandoned (their closes are
        // cancelled, dropping their futures); so is anything handed over from now on. Called on
        // the closing thread itself (from a producer's `flush` or `close`), the closes queued
        // behind the calling one cannot run while this waits: neither wait nor abandon them;
        // they run once the calling one returns (the executor shuts down after its queue), and
        // a later `close` reports them.
        if !self.closer.executor().is_current_worker() {
            self.closer.wait_idle(deadline);
            Closer::give_up(&self.closer);
        }
        self.closer
            .executor()
            .close_after_queued(self.close_timeout, "a producer's flush or close call");
        let report = self.closer.report();
        tracing::info!(?report, "producer cache closed");
        report
    }

    /// Hands producers removed under the state lock (counted in `handing_over` there) to the
    /// closer, then lets a waiting `close` go on.
    fn hand_over(&self, evicted: Vec<Evicted<P>>) {
        if evicted.is_empty() {
            return;
        }
        let count = evicted.len();
        Closer::hand_over(&self.closer, evicted);
        self.state.lock().handing_over -= count;
        self.creation_done.notify_all();
    }
}

impl<K, P> CacheState<K, P>
where
    K: Eq + Hash + Clone + Send + 'static,
    P: Producer,
{
    fn next_stamp(&mut self) -> u64 {
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        stamp
    }

    /// Removes the ready entries unused since `now - idle_expiry`, oldest first.
    fn expire(&mut self, now: Instant, idle_expiry: Duration, evicted: &mut Vec<Evicted<P>>) {
        while let Some((_, key)) = self.recency.first_key_value() {
            let expired = match self.entries.get(key) {
                Some(Entry::Ready { last_access, .. }) => {
                    now.saturating_duration_since(*last_access) >= idle_expiry
                }
                _ => unreachable!("recency holds ready entries only"),
            };
            if !expired {
                return;
            }
            let key = Arc::clone(key);
            evicted.extend(self.remove_ready(&key, RemovalCause::Expired));
        }
    }

    /// Removes least recently used entries until at most `max_size` remain.
    fn enforce_bound(&mut self, max_size: usize, evicted: &mut Vec<Evicted<P>>) {
        while self.recency.len() > max_size {
            let (_, key) = self.recency.first_key_value().expect("len > max_size >= 0");
            let key = Arc::clone(key);
            evicted.extend(self.remove_ready(&key, RemovalCause::Size));
        }
    }

    fn remove_ready(&mut self, key: &CacheKey<K>, cause: RemovalCause) -> Option<Evicted<P>> {
        if !matches!(self.entries.get(key), Some(Entry::Ready { .. })) {
            return None;
        }
        let (key, entry) = self.entries.remove_entry(key).expect("checked above");
        let Entry::Ready {
            producer, stamp, ..
        } = entry
        else {
            unreachable!("checked above")
        };
        self.recency.remove(&stamp);
        self.handing_over += 1;
        Some(Evicted {
            topic: key.topic.clone(),
            producer,
            cause,
        })
    }

    /// Removes every ready entry, least recently used first.
    fn drain_ready(&mut self, cause: RemovalCause) -> Vec<Evicted<P>> {
        let keys: Vec<_> = std::mem::take(&mut self.recency).into_values().collect();
        self.handing_over += keys.len();
        keys.into_iter()
            .map(|key| {
                let Some(Entry::Ready { producer, .. }) = self.entries.remove(&key) else {
                    unreachable!("recency holds ready entries only")
                };
                Evicted {
                    topic: key.topic.clone(),
                    producer,
                    cause,
                }
            })
            .collect()
    }
}

impl<K, P> Drop for ProducerCache<K, P>
where
    K: Eq + Hash + Clone + Send + 'static,
    P: Producer,
{
    fn drop(&mut self) {
        self.close();
    }
}

impl<K, P> fmt::Debug for ProducerCache<K, P>
where
    K: Eq + Hash + Clone + Send + 'static,
    P: Producer,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (len, creating, closed) = {
            let state = self.state.lock();
            (state.recency.len(), state.creating, state.closed)
        };
        f.debug_struct("ProducerCache")
            .field("len", &len)
            .field("creating", &creating)
            .field("closed", &closed)
            .field("max_size", &self.max_size)
            .field("idle_expiry", &self.idle_expiry)
            .field("close_timeout", &self.close_timeout)
            .field("closer", &self.closer)
            .finish()
    }
}

/// Settings of a [`ProducerCache`].
///
/// # Examples
///
/// ```
/// # use pulsar_server::functions::{Producer, ProducerFuture};
/// # struct Noop;
/// # impl Producer for Noop {
/// #     type Message = ();
/// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
/// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
/// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
/// # }
/// use pulsar_common::executors::NamedThreadFactory;
/// use pulsar_server::functions::ProducerCache;
/// use std::time::{Duration, Instant};
///
/// let cache: ProducerCache<String, Noop> = ProducerCache::builder()
///     .max_size(500)
///     .idle_expiry(Duration::from_secs(120))
///     .operation_timeout(Duration::from_secs(30))
///     .close_timeout(Duration::from_secs(30))
///     .thread_factory(NamedThreadFactory::new("sink-producers"))
///     .ticker(Instant::now)
///     .build();
/// # drop(cache);
/// ```
pub struct ProducerCacheBuilder<K, P> {
    max_size: usize,
    idle_expiry: Duration,
    operation_timeout: Duration,
    close_timeout: Duration,
    factory: Option<Arc<dyn ThreadFactory>>,
    ticker: Option<Ticker>,
    /// The key and producer types of the cache it builds.
    _cache: PhantomData<fn() -> (K, P)>,
}

impl<K, P> Default for ProducerCacheBuilder<K, P> {
    fn default() -> Self {
        Self {
            max_size: DEFAULT_MAX_PRODUCERS,
            idle_expiry: DEFAULT_IDLE_EXPIRY,
            operation_timeout: DEFAULT_OPERATION_TIMEOUT,
            close_timeout: DEFAULT_CACHE_CLOSE_TIMEOUT,
            factory: None,
            ticker: None,
            _cache: PhantomData,
        }
    }
}

impl<K, P> ProducerCacheBuilder<K, P>
where
    K: Eq + Hash + Clone + Send + 'static,
    P: Producer,
{
    /// At most this many producers (default [`DEFAULT_MAX_PRODUCERS`]); `0` caches nothing
    /// (every producer is closed right after it is handed out).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::ProducerCache;
    ///
    /// let _cache: ProducerCache<(), Noop> = ProducerCache::builder().max_size(10).build();
    /// ```
    pub fn max_size(mut self, max_size: usize) -> Self {
        self.max_size = max_size;
        self
    }

    /// How long an unused producer stays (default [`DEFAULT_IDLE_EXPIRY`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::ProducerCache;
    /// use std::time::Duration;
    ///
    /// let _cache: ProducerCache<(), Noop> = ProducerCache::builder().idle_expiry(Duration::from_secs(30)).build();
    /// ```
    pub fn idle_expiry(mut self, idle: Duration) -> Self {
        self.idle_expiry = idle;
        self
    }

    /// The timeout of each `flush` and each `close` of a removed producer (default
    /// [`DEFAULT_OPERATION_TIMEOUT`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::ProducerCache;
    /// use std::time::Duration;
    ///
    /// let _cache: ProducerCache<(), Noop> = ProducerCache::builder().operation_timeout(Duration::from_secs(5)).build();
    /// ```
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// How long [`ProducerCache::close`] waits for the closes in progress (default
    /// [`DEFAULT_CACHE_CLOSE_TIMEOUT`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::ProducerCache;
    /// use std::time::Duration;
    ///
    /// let _cache: ProducerCache<(), Noop> = ProducerCache::builder().close_timeout(Duration::from_secs(5)).build();
    /// ```
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// Where the executor thread comes from (default: a
    /// [`NamedThreadFactory`](pulsar_common::executors::NamedThreadFactory) for
    /// [`PRODUCER_CACHE_POOL_NAME`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_common::executors::NamedThreadFactory;
    /// use pulsar_server::functions::ProducerCache;
    ///
    /// let _cache: ProducerCache<(), Noop> = ProducerCache::builder().thread_factory(NamedThreadFactory::new("pc")).build();
    /// ```
    pub fn thread_factory(mut self, factory: impl ThreadFactory) -> Self {
        self.factory = Some(Arc::new(factory));
        self
    }

    /// Where the cache reads the time for idle expiry (default `Instant::now`; Caffeine's
    /// `ticker`, for tests that move time by hand). It is called with no lock held.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::ProducerCache;
    /// use std::time::Instant;
    ///
    /// let start = Instant::now();
    /// let _cache: ProducerCache<(), Noop> = ProducerCache::builder().ticker(move || start).build();
    /// ```
    pub fn ticker(mut self, ticker: impl Fn() -> Instant + Send + Sync + 'static) -> Self {
        self.ticker = Some(Arc::new(ticker));
        self
    }

    /// Builds the cache. No thread starts until the first producer is removed.
    ///
    /// # Examples
    ///
    /// ```
    /// # use pulsar_server::functions::{Producer, ProducerFuture};
    /// # struct Noop;
    /// # impl Producer for Noop {
    /// #     type Message = ();
    /// #     fn send(&self, _: ()) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn flush(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// #     fn close(&self) -> ProducerFuture { Box::pin(std::future::ready(Ok(()))) }
    /// # }
    /// use pulsar_server::functions::ProducerCache;
    ///
    /// let cache: ProducerCache<(), Noop> = ProducerCache::builder().build();
    /// assert!(!cache.is_closed());
    /// ```
    pub fn build(self) -> ProducerCache<K, P> {
        let executor =
            ComponentExecutor::with_factory_or_named(self.factory, PRODUCER_CACHE_POOL_NAME);
        ProducerCache {
            state: Mutex::new(CacheState {
                entries: HashMap::new(),
                recency: BTreeMap::new(),
                next_stamp: 0,
                creating: 0,
                handing_over: 0,
                closed: false,
            }),
            creation_done: Condvar::new(),
            closer: Arc::new(Closer::new(executor, self.operation_timeout)),
            max_size: self.max_size,
            idle_expiry: self.idle_expiry,
            close_timeout: self.close_timeout,
            ticker: self.ticker.unwrap_or_else(|| Arc::new(Instant::now)),
        }
    }
}

impl<K, P> fmt::Debug for ProducerCacheBuilder<K, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProducerCacheBuilder")
            .field("max_size", &self.max_size)
            .field("idle_expiry", &self.idle_expiry)
            .field("operation_timeout", &self.operation_timeout)
            .field("close_timeout", &self.close_timeout)
            .field("custom_thread_factory", &self.factory.is_some())
            .field("custom_ticker", &self.ticker.is_some())
            .finish()
    }
}
