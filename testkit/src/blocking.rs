//! `block_worker_with`: occupy an executor's worker until the test lets it go.

use crate::LONG;
use std::sync::mpsc;

/// Occupies an executor's worker until the returned sender is used (or dropped): `execute`
/// queues the blocking task (`|task| executor.execute(task).unwrap()`); this returns once the
/// worker runs it (failing the test if that takes longer than [`LONG`]).
pub fn block_worker_with(execute: impl FnOnce(Box<dyn FnOnce() + Send>)) -> mpsc::Sender<()> {
    let (release, blocked) = mpsc::channel::<()>();
    let (started_tx, started_rx) = mpsc::channel::<()>();
    execute(Box::new(move || {
        started_tx.send(()).unwrap();
        let _ = blocked.recv();
    }));
    started_rx.recv_timeout(LONG).expect("worker started");
    release
}
