//! `delay_heap`: Java's one-thread `ScheduledThreadPoolExecutor` as Pulsar's client used it for
//! every hand-off before #16236, the baseline of the `consumer_dispatch` bench and of the
//! `scheduled_executor` report's timer lateness.

use crate::executors::{BoxedTask, Executor, Submit};
use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Java's one-thread `ScheduledThreadPoolExecutor`, as Pulsar's client used it for every
/// hand-off before #16236: `execute(r)` is `schedule(r, 0)`, so each task is boxed (Java
/// allocates a `ScheduledFutureTask`), stamped with `now`, pushed into a binary heap under the
/// queue lock (O(log n)), and the worker takes tasks one at a time under that lock when their
/// deadline has come (`DelayedWorkQueue.take`). Like Java's `Condition.signal`, a producer
/// signals only when its task became the head and the worker waits; the worker never spins.
struct DelayHeap {
    state: Mutex<DelayHeapState>,
    available: Condvar,
}

struct DelayHeapState {
    heap: BinaryHeap<Delayed>,
    seq: u64,
    worker_waiting: bool,
    shutdown: bool,
}

/// A task with its trigger time; the heap is a min-heap on `(deadline, seq)`.
struct Delayed {
    deadline: Instant,
    seq: u64,
    task: BoxedTask,
}

impl PartialEq for Delayed {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}
impl Eq for Delayed {}
impl PartialOrd for Delayed {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Delayed {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        // Reversed: `BinaryHeap` is a max-heap.
        (other.deadline, other.seq).cmp(&(self.deadline, self.seq))
    }
}

impl DelayHeap {
    fn schedule(&self, delay: Duration, task: BoxedTask) -> bool {
        let deadline = Instant::now() + delay;
        let mut state = self.state.lock().unwrap();
        if state.shutdown {
            return false;
        }
        let seq = state.seq;
        state.seq += 1;
        state.heap.push(Delayed {
            deadline,
            seq,
            task,
        });
        let became_head = state.heap.peek().is_some_and(|head| head.seq == seq);
        let wake = became_head && state.worker_waiting;
        drop(state);
        if wake {
            self.available.notify_one();
        }
        true
    }

    fn run_worker(&self) {
        let mut state = self.state.lock().unwrap();
        loop {
            let Some(head) = state.heap.peek() else {
                if state.shutdown {
                    return;
                }
                state.worker_waiting = true;
                state = self.available.wait(state).unwrap();
                state.worker_waiting = false;
                continue;
            };
            let now = Instant::now();
            if head.deadline <= now {
                let task = state.heap.pop().expect("peeked").task;
                drop(state);
                task();
                state = self.state.lock().unwrap();
            } else {
                let wait = head.deadline - now;
                state.worker_waiting = true;
                state = self.available.wait_timeout(state, wait).unwrap().0;
                state.worker_waiting = false;
            }
        }
    }
}

/// A started `DelayHeap` executor.
pub struct DelayHeapExecutor {
    shared: Arc<DelayHeap>,
    worker: JoinHandle<()>,
}

/// Submits to a [`DelayHeapExecutor`].
#[derive(Clone)]
pub struct DelayHeapHandle(Arc<DelayHeap>);

impl Executor for DelayHeapExecutor {
    const NAME: &'static str = "delay_heap_execute";
    type Handle = DelayHeapHandle;

    fn start() -> Self {
        let shared = Arc::new(DelayHeap {
            state: Mutex::new(DelayHeapState {
                heap: BinaryHeap::with_capacity(64),
                seq: 0,
                worker_waiting: false,
                shutdown: false,
            }),
            available: Condvar::new(),
        });
        let worker = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("delay-heap-executor".into())
                .spawn(move || shared.run_worker())
                .expect("start the delay-heap worker")
        };
        Self { shared, worker }
    }

    fn handle(&self) -> DelayHeapHandle {
        DelayHeapHandle(Arc::clone(&self.shared))
    }

    fn shutdown(self) {
        self.shared.state.lock().unwrap().shutdown = true;
        self.shared.available.notify_one();
        self.worker.join().expect("the delay-heap worker panicked");
    }
}

impl DelayHeapHandle {
    /// Queues `task` to run now (`schedule(task, 0)`, as Java's `execute` does); `false` once
    /// the executor is shut down.
    pub fn execute_boxed(&self, task: BoxedTask) -> bool {
        self.0.schedule(Duration::ZERO, task)
    }

    /// Queues `task` to run after `delay`; `false` once the executor is shut down. There is no
    /// cancel: the bench's lazy-cancel heap is a separate rig.
    pub fn schedule(&self, delay: Duration, task: BoxedTask) -> bool {
        self.0.schedule(delay, task)
    }
}

impl Submit for DelayHeapHandle {
    #[inline]
    fn execute<F: FnOnce() + Send + 'static>(&self, task: F) {
        assert!(
            self.execute_boxed(Box::new(task)),
            "the delay heap was shut down"
        );
    }
}

impl fmt::Debug for DelayHeapHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DelayHeapHandle")
    }
}

impl fmt::Debug for DelayHeapExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DelayHeapExecutor")
    }
}
