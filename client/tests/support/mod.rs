//! Test fixtures shared by the client's integration tests: waiting for executors, capturing
//! warnings, collecting what listeners saw.
#![allow(dead_code, unused_imports)]

use pulsar_client::{ExecutorProvider, Message};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use pulsar_testkit::LONG;

/// Waits until every task queued so far on every executor of `provider` has run (each executor
/// is FIFO: a task submitted now runs after them).
pub fn quiesce(provider: &ExecutorProvider) {
    let handles: Vec<_> = provider
        .executors()
        .iter()
        .map(|executor| executor.submit(|| ()).expect("executor running"))
        .collect();
    for handle in handles {
        handle
            .join_timeout(LONG)
            .expect("executor drained")
            .unwrap();
    }
}

/// The payload of a test message: a big-endian `u64` id.
pub fn id_of(message: &Message) -> u64 {
    u64::from_be_bytes(message.payload().try_into().expect("8-byte id payload"))
}

/// A message whose payload is `id`.
pub fn message(id: u64) -> Message {
    Message::new(id.to_be_bytes())
}

/// One listener call: the thread it ran on, the message id, the message key.
pub type Sighting = (String, u64, Option<String>);

/// What a listener saw, in the order it saw it.
#[derive(Clone, Default)]
pub struct Seen(pub Arc<Mutex<Vec<Sighting>>>);

impl Seen {
    pub fn record(&self, message: &Message) {
        let thread = std::thread::current().name().unwrap_or("").to_owned();
        let key = message.key().map(str::to_owned);
        self.0.lock().unwrap().push((thread, id_of(message), key));
    }

    pub fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    pub fn ids(&self) -> Vec<u64> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(_, id, _)| *id)
            .collect()
    }

    pub fn snapshot(&self) -> Vec<Sighting> {
        self.0.lock().unwrap().clone()
    }
}

pub use pulsar_testkit::capture_warnings;
