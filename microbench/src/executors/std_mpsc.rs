//! `std_mpsc`: `std::sync::mpsc` + boxed tasks + one worker thread (the baseline).

use super::{BoxedTask, Executor, Submit};
use std::fmt;
use std::sync::mpsc;
use std::thread::{self, JoinHandle};

/// One worker thread draining a `std::sync::mpsc` channel of boxed tasks.
pub struct StdMpscExecutor {
    sender: mpsc::Sender<BoxedTask>,
    worker: JoinHandle<()>,
}

/// Submits to a [`StdMpscExecutor`].
#[derive(Clone)]
pub struct StdMpscHandle(mpsc::Sender<BoxedTask>);

impl Executor for StdMpscExecutor {
    const NAME: &'static str = "std_mpsc";
    type Handle = StdMpscHandle;

    fn start() -> Self {
        let (sender, receiver) = mpsc::channel::<BoxedTask>();
        let worker = thread::Builder::new()
            .name("std-mpsc-executor".into())
            .spawn(move || {
                while let Ok(task) = receiver.recv() {
                    task();
                }
            })
            .expect("start the std_mpsc worker");
        Self { sender, worker }
    }

    fn handle(&self) -> StdMpscHandle {
        StdMpscHandle(self.sender.clone())
    }

    fn shutdown(self) {
        drop(self.sender);
        self.worker.join().expect("the std_mpsc worker panicked");
    }
}

impl Submit for StdMpscHandle {
    #[inline]
    fn execute<F: FnOnce() + Send + 'static>(&self, task: F) {
        if self.0.send(Box::new(task)).is_err() {
            panic!("the std_mpsc worker is gone");
        }
    }
}

impl fmt::Debug for StdMpscExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdMpscExecutor").finish_non_exhaustive()
    }
}

impl fmt::Debug for StdMpscHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdMpscHandle").finish_non_exhaustive()
    }
}
