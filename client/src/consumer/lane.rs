//! `Lane`: the messages routed to one listener executor and not yet taken by a listener job.

use crate::consumer::{ConsumerExecutor, Message};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;

/// One listener executor of a consumer and the messages waiting for it, oldest first.
///
/// The routing pass (one at a time, under the consumer's routing lock) appends a whole batch
/// under one lock, then queues one listener job per message on the executor; each job takes
/// one message. `close` (also under the routing lock) takes whatever is left. Aligned to 128
/// bytes: the router and the lane's listener thread write it, nobody else.
#[repr(align(128))]
pub(crate) struct Lane {
    pub(crate) executor: Arc<dyn ConsumerExecutor>,
    messages: Mutex<VecDeque<Message>>,
}

impl Lane {
    pub(crate) fn new(executor: Arc<dyn ConsumerExecutor>) -> Self {
        Self {
            executor,
            messages: Mutex::new(VecDeque::new()),
        }
    }

    /// Appends every message of `batch`, in order, under one lock; `batch` is left empty.
    #[inline]
    pub(crate) fn push_all(&self, batch: &mut Vec<Message>) {
        self.messages.lock().extend(batch.drain(..));
    }

    /// Takes the oldest message.
    #[inline]
    pub(crate) fn pop(&self) -> Option<Message> {
        self.messages.lock().pop_front()
    }

    /// Moves every message, oldest first, to the end of `out`.
    pub(crate) fn drain_into(&self, out: &mut Vec<Message>) {
        out.extend(self.messages.lock().drain(..));
    }

    /// Messages waiting now.
    pub(crate) fn len(&self) -> usize {
        self.messages.lock().len()
    }
}
