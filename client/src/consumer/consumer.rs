//! `Consumer`: a consumer's receive queue and its `deliver`, `receive` and `close`.

use crate::consumer::dispatch::RoutingState;
use crate::consumer::lane::Lane;
use crate::consumer::sync::{AtomicBool, AtomicU64, AtomicUsize, Mutex};
use crate::consumer::{
    ConsumerExecutor, ConsumerExecutors, ConsumerOptions, Message, MessageListener,
    SubscriptionType,
};
use crate::error::{DeliverError, ReceiveError};
use crossbeam_utils::CachePadded;
use pulsar_common::collections::{GrowableArrayBlockingQueue, PollTimeoutError};
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// A consumer, without its transport: a receive queue fed by [`deliver`](Self::deliver) (the
/// call a connection makes for each incoming message), read by [`receive`](Self::receive) — or,
/// with a [`MessageListener`], dispatched to listener executors in order.
///
/// **Listener dispatch** (Pulsar's `ConsumerBase.triggerListener`): each `deliver` makes sure a
/// trigger job is queued on the consumer's pinned internal executor (at most one at a time);
/// the trigger drains the receive queue and hands each message to the pinned listener
/// executor — or, for [`SubscriptionType::KeyShared`], to the listener executor chosen by the
/// message's routing key (ordering key, else key, else `"NONE_KEY"`; Murmur3, the index
/// Pulsar's Java client picks) — one listener job per message. One key's messages therefore
/// stay in order while keys spread over threads. A panicking listener is logged and counted;
/// delivery goes on.
///
/// **Close loses nothing**: after [`close`](Self::close), `deliver` hands the message back in
/// [`DeliverError::Closed`], and every message accepted before was either handed to the
/// listener or to `receive`, or is returned by `close`. (Each listener executor works through
/// a per-consumer lane queue that `close` can drain; a listener job takes its message from the
/// lane only when it runs.)
///
/// Clones share one consumer. Close it: dropping every handle without `close` drops the
/// messages not yet handed out (queued listener jobs still deliver theirs).
///
/// # Examples
///
/// ```
/// use pulsar_client::{Consumer, ConsumerOptions, Message, PulsarClient, SubscriptionType};
/// use std::sync::mpsc;
///
/// let client = PulsarClient::builder().num_listener_threads(4).build().unwrap();
/// let (tx, rx) = mpsc::channel();
/// let tx = std::sync::Mutex::new(tx);
/// let consumer = client
///     .new_consumer(
///         ConsumerOptions::new("orders")
///             .subscription_type(SubscriptionType::KeyShared)
///             .message_listener(move |_: &Consumer, message: Message| {
///                 tx.lock().unwrap().send(message.into_payload()).unwrap();
///             }),
///     )
///     .unwrap();
///
/// for i in 0..3u8 {
///     consumer.deliver(Message::new(vec![i]).with_key("order-1")).unwrap();
/// }
/// // One key: in order, on one listener thread.
/// assert_eq!(rx.iter().take(3).collect::<Vec<_>>(), [vec![0], vec![1], vec![2]]);
///
/// assert!(consumer.close().is_empty());
/// assert!(consumer.deliver(Message::new(*b"late")).is_err());
/// client.close();
/// ```
#[derive(Clone)]
pub struct Consumer {
    shared: Arc<ConsumerShared>,
}

/// What every clone of a consumer, and its queued jobs, share.
pub(crate) struct ConsumerShared {
    pub(crate) name: String,
    pub(crate) subscription_type: SubscriptionType,
    /// The receive queue: `deliver` puts; `receive` or the trigger takes. Terminated by `close`.
    /// Padded: the feeder and the router write it, per message.
    pub(crate) incoming: CachePadded<GrowableArrayBlockingQueue<Message>>,
    pub(crate) listener: Option<Arc<dyn MessageListener>>,
    /// The pinned internal executor: the trigger runs there.
    pub(crate) internal: Arc<dyn ConsumerExecutor>,
    /// One lane per listener executor the consumer uses: the pinned one, or (Key_Shared) all of
    /// them in index order. Empty without a listener.
    pub(crate) lanes: Box<[Lane]>,
    /// Whether a trigger job is queued and has not started yet (`deliver` queues one only when
    /// it flips this from `false`). Swapped with `AcqRel` on both sides; see `dispatch.rs`.
    pub(crate) trigger_pending: CachePadded<AtomicBool>,
    /// Held by a routing pass while messages are between the receive queue and a lane, and by
    /// `close`; holds the pass's buffers, reused from pass to pass.
    pub(crate) routing: Mutex<RoutingState>,
    /// Set once by `close`, before it terminates the receive queue.
    pub(crate) closed: AtomicBool,
    /// Trigger jobs that exist (queued, running, or refused and not yet dropped); the count
    /// holds one strong reference to this state while it is above 0 (see `ticket.rs`).
    pub(crate) trigger_jobs: AtomicUsize,
    /// Listener calls that panicked.
    pub(crate) listener_panics: AtomicU64,
    /// Whether the "executor refused a job" warning was logged (once per consumer).
    pub(crate) rejection_logged: AtomicBool,
}

impl Consumer {
    /// A consumer on the given executors.
    ///
    /// Most code gets consumers from [`PulsarClient::new_consumer`](crate::PulsarClient::new_consumer),
    /// which pins executors from the client's providers; this constructor lets a consumer run
    /// on any [`ConsumerExecutor`]s.
    pub fn new(options: ConsumerOptions, executors: ConsumerExecutors) -> Consumer {
        let (name, subscription_type, listener) = options.into_parts();
        let ConsumerExecutors {
            internal,
            listeners,
            pinned_listener,
        } = executors;
        let lane_executors = match (&listener, subscription_type) {
            (None, _) => Vec::new(),
            (Some(_), SubscriptionType::KeyShared) => listeners,
            (Some(_), _) => vec![Arc::clone(&listeners[pinned_listener])],
        };
        let routing = RoutingState::new(lane_executors.len());
        let lanes = lane_executors.into_iter().map(Lane::new).collect();
        Consumer {
            shared: Arc::new(ConsumerShared {
                name,
                subscription_type,
                incoming: CachePadded::new(GrowableArrayBlockingQueue::new()),
                listener,
                internal,
                lanes,
                trigger_pending: CachePadded::new(AtomicBool::new(false)),
                routing: Mutex::new(routing),
                closed: AtomicBool::new(false),
                trigger_jobs: AtomicUsize::new(0),
                listener_panics: AtomicU64::new(0),
                rejection_logged: AtomicBool::new(false),
            }),
        }
    }

    pub(crate) fn shared(&self) -> &ConsumerShared {
        &self.shared
    }

    pub(crate) fn arc(&self) -> &Arc<ConsumerShared> {
        &self.shared
    }

    pub(crate) fn downgrade(&self) -> Weak<ConsumerShared> {
        Arc::downgrade(&self.shared)
    }

    pub(crate) fn from_shared(shared: Arc<ConsumerShared>) -> Consumer {
        Consumer { shared }
    }

    /// The consumer's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The subscription type.
    pub fn subscription_type(&self) -> SubscriptionType {
        self.shared.subscription_type
    }

    /// Whether the consumer has a message listener.
    pub fn has_listener(&self) -> bool {
        self.shared.listener.is_some()
    }

    /// Accepts one incoming message (the call a connection makes): queues it for `receive`, or
    /// for the listener. Never blocks.
    ///
    /// # Errors
    ///
    /// [`DeliverError::Closed`] handing the message back once the consumer is closed.
    #[inline]
    pub fn deliver(&self, message: Message) -> Result<(), DeliverError> {
        self.shared
            .incoming
            .put(message)
            .map_err(|rejected| DeliverError::Closed(rejected.into_inner()))?;
        if !self.shared.lanes.is_empty() {
            self.shared.trigger(self);
        }
        Ok(())
    }

    /// Takes the next message, waiting for one.
    ///
    /// # Errors
    ///
    /// [`ReceiveError::ListenerSet`] if the consumer has a listener;
    /// [`ReceiveError::Closed`] once the consumer is closed (a receiver blocked here wakes).
    pub fn receive(&self) -> Result<Message, ReceiveError> {
        if self.has_listener() {
            return Err(ReceiveError::ListenerSet);
        }
        self.shared.incoming.take().ok_or(ReceiveError::Closed)
    }

    /// Takes the next message, waiting at most `timeout`; `Ok(None)` if none came.
    ///
    /// # Errors
    ///
    /// As for [`receive`](Self::receive).
    pub fn receive_timeout(&self, timeout: Duration) -> Result<Option<Message>, ReceiveError> {
        if self.has_listener() {
            return Err(ReceiveError::ListenerSet);
        }
        match self.shared.incoming.poll_timeout(timeout) {
            Ok(message) => Ok(Some(message)),
            Err(PollTimeoutError::Timeout) => Ok(None),
            Err(PollTimeoutError::Terminated) => Err(ReceiveError::Closed),
        }
    }

    /// Closes the consumer and returns every accepted message that was not yet handed to the
    /// listener or to `receive`: those waiting for a listener executor (lane by lane, each in
    /// delivery order), then those still in the receive queue (in delivery order).
    ///
    /// Afterwards `deliver` hands messages back, `receive` reports `Closed`, and the listener is
    /// not called again (except for calls already under way). Waits only for a routing pass in
    /// progress (which moves at most one batch before it stops), never for the listener, so a
    /// listener may close its own consumer. Idempotent: later calls return nothing.
    pub fn close(&self) -> Vec<Message> {
        let shared = &*self.shared;
        if shared.closed.swap(true, Ordering::AcqRel) {
            return Vec::new();
        }
        shared.incoming.terminate();
        let mut returned = Vec::new();
        let mut routing = shared.routing.lock();
        for lane in shared.lanes.iter() {
            lane.drain_into(&mut returned);
        }
        // A routing pass always finishes its batch before it lets go of the lock: these are
        // empty, but nothing is left to chance.
        routing.drain_into(&mut returned);
        shared.incoming.drain_to(&mut returned, usize::MAX);
        drop(routing);
        if !returned.is_empty() {
            tracing::debug!(consumer = %shared.name, returned = returned.len(), "consumer closed with messages not yet handed out");
        }
        returned
    }

    /// Whether [`close`](Self::close) has been called.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    /// Messages accepted and not yet handed to the listener or to `receive`.
    pub fn queued_messages(&self) -> usize {
        let lanes: usize = self.shared.lanes.iter().map(Lane::len).sum();
        self.shared.incoming.len() + lanes
    }

    /// How many listener calls panicked (each was logged; delivery went on).
    pub fn listener_panics(&self) -> u64 {
        self.shared.listener_panics.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for Consumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("name", &self.shared.name)
            .field("subscription_type", &self.shared.subscription_type)
            .field("has_listener", &self.has_listener())
            .field("listener_lanes", &self.shared.lanes.len())
            .field("queued_messages", &self.queued_messages())
            .field("closed", &self.is_closed())
            .finish()
    }
}
