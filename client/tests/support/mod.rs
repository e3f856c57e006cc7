//! Test fixtures shared by the client's integration tests: waiting for executors, capturing
//! warnings, collecting what listeners saw.
#![allow(dead_code)]

use pulsar_client::{ExecutorProvider, Message};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const LONG: Duration = Duration::from_secs(30);

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

/// Collects the WARN and ERROR events emitted on the current thread while `f` runs, as
/// `field=value` lines.
pub fn capture_warnings<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    use std::fmt::Write as _;
    use tracing::field::{Field, Visit};
    use tracing::{span, Event, Level, Metadata, Subscriber};

    struct Capture(Arc<Mutex<Vec<String>>>);
    struct Fields(String);
    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            let _ = write!(self.0, "{}={:?} ", field.name(), value);
        }
    }
    impl Subscriber for Capture {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
            span::Id::from_u64(1)
        }
        fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
        fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
        fn event(&self, event: &Event<'_>) {
            if *event.metadata().level() <= Level::WARN {
                let mut fields = Fields(String::new());
                event.record(&mut fields);
                self.0.lock().unwrap().push(fields.0);
            }
        }
        fn enter(&self, _: &span::Id) {}
        fn exit(&self, _: &span::Id) {}
    }

    let events = Arc::new(Mutex::new(Vec::new()));
    let result = tracing::subscriber::with_default(Capture(Arc::clone(&events)), f);
    let events = events.lock().unwrap().clone();
    (result, events)
}
