//! `crossbeam`: an unbounded crossbeam channel + boxed tasks + one worker thread.

use super::{BoxedTask, Executor, Submit};
use crossbeam_channel as channel;
use std::fmt;
use std::thread::{self, JoinHandle};

/// One worker thread draining an unbounded crossbeam channel of boxed tasks.
pub struct CrossbeamExecutor {
    sender: channel::Sender<BoxedTask>,
    worker: JoinHandle<()>,
}

/// Submits to a [`CrossbeamExecutor`].
#[derive(Clone)]
pub struct CrossbeamHandle(channel::Sender<BoxedTask>);

impl Executor for CrossbeamExecutor {
    const NAME: &'static str = "crossbeam";
    type Handle = CrossbeamHandle;

    fn start() -> Self {
        let (sender, receiver) = channel::unbounded::<BoxedTask>();
        let worker = thread::Builder::new()
            .name("crossbeam-executor".into())
            .spawn(move || {
                while let Ok(task) = receiver.recv() {
                    task();
                }
            })
            .expect("start the crossbeam worker");
        Self { sender, worker }
    }

    fn handle(&self) -> CrossbeamHandle {
        CrossbeamHandle(self.sender.clone())
    }

    fn shutdown(self) {
        drop(self.sender);
        self.worker.join().expect("the crossbeam worker panicked");
    }
}

impl Submit for CrossbeamHandle {
    #[inline]
    fn execute<F: FnOnce() + Send + 'static>(&self, task: F) {
        if self.0.send(Box::new(task)).is_err() {
            panic!("the crossbeam worker is gone");
        }
    }
}

impl fmt::Debug for CrossbeamExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CrossbeamExecutor").finish_non_exhaustive()
    }
}

impl fmt::Debug for CrossbeamHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CrossbeamHandle").finish_non_exhaustive()
    }
}
