//! `flume`: an unbounded flume channel + boxed tasks + one worker thread.

use super::{BoxedTask, Executor, Submit};
use ::flume as channel;
use std::fmt;
use std::thread::{self, JoinHandle};

/// One worker thread draining an unbounded flume channel of boxed tasks.
pub struct FlumeExecutor {
    sender: channel::Sender<BoxedTask>,
    worker: JoinHandle<()>,
}

/// Submits to a [`FlumeExecutor`].
#[derive(Clone)]
pub struct FlumeHandle(channel::Sender<BoxedTask>);

impl Executor for FlumeExecutor {
    const NAME: &'static str = "flume";
    type Handle = FlumeHandle;

    fn start() -> Self {
        let (sender, receiver) = channel::unbounded::<BoxedTask>();
        let worker = thread::Builder::new()
            .name("flume-executor".into())
            .spawn(move || {
                while let Ok(task) = receiver.recv() {
                    task();
                }
            })
            .expect("start the flume worker");
        Self { sender, worker }
    }

    fn handle(&self) -> FlumeHandle {
        FlumeHandle(self.sender.clone())
    }

    fn shutdown(self) {
        drop(self.sender);
        self.worker.join().expect("the flume worker panicked");
    }
}

impl Submit for FlumeHandle {
    #[inline]
    fn execute<F: FnOnce() + Send + 'static>(&self, task: F) {
        if self.0.send(Box::new(task)).is_err() {
            panic!("the flume worker is gone");
        }
    }
}

impl fmt::Debug for FlumeExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlumeExecutor").finish_non_exhaustive()
    }
}

impl fmt::Debug for FlumeHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlumeHandle").finish_non_exhaustive()
    }
}
