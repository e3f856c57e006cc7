//! `FifoAdmission`: the producers' side of the FIFO protocol, shared by the plain executor's
//! core and the scheduled executor's (their immediate-task paths are the same protocol; see
//! "Lock and wake-up protocol" in `README.md`): under the queue lock, refuse unless running,
//! start the worker on first use, push, raise `has_work` when the ring stops being empty, and
//! wake the worker only if it is parked.

use crate::collections::ring::Ring;
use crate::executors::executor_core::{WorkerState, RUNNING};
use crate::executors::raw_task::RawTask;
use crate::executors::rejected::RejectReason;
use crate::executors::task_batch::TaskSlot;
use crate::executors::worker_lifecycle::{WorkerLifecycle, WorkerSlot};
use crate::sync::{Arc, AtomicBool, Condvar, Mutex, MutexGuard, Ordering};
use std::mem::ManuallyDrop;
use std::sync::atomic::AtomicU64;

/// What admission needs of a core's lock-protected state.
pub(crate) trait FifoQueue: WorkerSlot {
    /// The ring producers push to.
    fn ring_mut(&mut self) -> &mut Ring<TaskSlot>;
    /// Set by the worker right before it parks; a producer that finds it set clears it and
    /// notifies.
    fn worker_parked_mut(&mut self) -> &mut bool;
}

/// A core's admission half, borrowed from the core for one call.
pub(crate) struct FifoAdmission<'a, Q> {
    pub(crate) queue: &'a Mutex<Q>,
    /// `!ring.is_empty()`, on the worker's own line (the hint it spins on).
    pub(crate) has_work: &'a AtomicBool,
    /// The parked worker waits here.
    pub(crate) work_available: &'a Condvar,
    pub(crate) lifecycle: &'a WorkerLifecycle,
    /// Wake-up calls producers made (a diagnostic).
    pub(crate) wakeups: &'a AtomicU64,
}

impl<'a, Q: FifoQueue> FifoAdmission<'a, Q> {
    /// Takes the lock and admits work: refuses unless running, and starts the worker on first
    /// use (`spawn` starts the thread; `after_failed_start` runs under the lock if it fails,
    /// see `WorkerLifecycle::start_worker`). Returns the lock, for the caller to queue its work.
    ///
    /// # Errors
    ///
    /// `Shutdown`, or the thread factory's error.
    #[inline]
    pub(crate) fn admit(
        &self,
        spawn: impl FnOnce() -> std::io::Result<()>,
        after_failed_start: impl FnOnce(&mut Q),
    ) -> Result<MutexGuard<'a, Q>, RejectReason> {
        let mut queue = self.queue.lock();
        if queue.run() != RUNNING {
            return Err(RejectReason::Shutdown);
        }
        if *queue.worker_mut() == WorkerState::NotStarted {
            queue = self
                .lifecycle
                .start_worker(self.queue, queue, spawn, after_failed_start)?;
        }
        Ok(queue)
    }

    /// Queues one task.
    ///
    /// # Errors
    ///
    /// The task and the reason (see [`admit`](Self::admit)).
    #[inline]
    pub(crate) fn enqueue(
        &self,
        task: RawTask,
        spawn: impl FnOnce() -> std::io::Result<()>,
        after_failed_start: impl FnOnce(&mut Q),
    ) -> Result<(), (RawTask, RejectReason)> {
        let mut queue = match self.admit(spawn, after_failed_start) {
            Ok(queue) => queue,
            Err(reason) => return Err((task, reason)),
        };
        queue.ring_mut().push_back(ManuallyDrop::new(task));
        self.announce(queue, 1);
        Ok(())
    }

    /// Queues every task of `tasks`, in order, under one acquisition of the lock, or none of
    /// them: on success `tasks` is left empty, on refusal untouched.
    ///
    /// # Errors
    ///
    /// The reason (see [`admit`](Self::admit)).
    pub(crate) fn enqueue_all(
        &self,
        tasks: &mut Vec<RawTask>,
        spawn: impl FnOnce() -> std::io::Result<()>,
        after_failed_start: impl FnOnce(&mut Q),
    ) -> Result<(), RejectReason> {
        if tasks.is_empty() {
            return Ok(());
        }
        let mut queue = self.admit(spawn, after_failed_start)?;
        let count = tasks.len();
        queue
            .ring_mut()
            .extend_exact(tasks.drain(..).map(ManuallyDrop::new));
        self.announce(queue, count);
        Ok(())
    }

    /// After `pushed` tasks went into the ring: raises `has_work` if they made it non-empty,
    /// then releases the lock and wakes the worker only if it is parked.
    #[inline]
    fn announce(&self, mut queue: MutexGuard<'a, Q>, pushed: usize) {
        if queue.ring_mut().len() == pushed {
            self.has_work.store(true, Ordering::Release);
        }
        let wake = std::mem::take(queue.worker_parked_mut());
        drop(queue);
        if wake {
            self.wakeups
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.work_available.notify_one();
        }
    }
}

/// An executor core with a FIFO queue: what it provides, and the admission calls it gets from
/// that (the same for both cores).
pub(crate) trait FifoCore: Sized {
    /// The core's lock-protected state.
    type Queue: FifoQueue;

    /// The core's producers' side, borrowed for one call.
    fn admission(&self) -> FifoAdmission<'_, Self::Queue>;

    /// Starts the worker thread (under loom, refuses: the models drive the worker).
    fn spawn_worker(this: &Arc<Self>) -> std::io::Result<()>;

    /// With no worker and nothing left to run, a shut-down core is terminated at once.
    fn terminate_if_workerless(&self, queue: &mut Self::Queue);

    /// Takes the lock and admits work (see [`FifoAdmission::admit`]).
    ///
    /// # Errors
    ///
    /// `Shutdown`, or the thread factory's error.
    #[inline]
    fn admit(this: &Arc<Self>) -> Result<MutexGuard<'_, Self::Queue>, RejectReason> {
        this.admission().admit(
            || Self::spawn_worker(this),
            |queue| this.terminate_if_workerless(queue),
        )
    }

    /// Accepts `task` unless the core is shut down; starts the worker on first use.
    ///
    /// # Errors
    ///
    /// The task and the reason: shut down, or the worker thread could not be started.
    #[inline]
    fn enqueue(this: &Arc<Self>, task: RawTask) -> Result<(), (RawTask, RejectReason)> {
        this.admission().enqueue(
            task,
            || Self::spawn_worker(this),
            |queue| this.terminate_if_workerless(queue),
        )
    }

    /// Accepts every task of `tasks`, in order, under one acquisition of the lock, or none of
    /// them: on success `tasks` is left empty, on refusal untouched.
    ///
    /// # Errors
    ///
    /// The reason, as for [`enqueue`](Self::enqueue).
    fn enqueue_all(this: &Arc<Self>, tasks: &mut Vec<RawTask>) -> Result<(), RejectReason> {
        this.admission().enqueue_all(
            tasks,
            || Self::spawn_worker(this),
            |queue| this.terminate_if_workerless(queue),
        )
    }
}
