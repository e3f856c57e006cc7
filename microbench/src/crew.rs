//! `Crew`: persistent threads that each run one share of a sample on command, so that a
//! sample times the work and not thread start-up, and signalling allocates nothing.

use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// One crew member's work for a sample of `iters` iterations.
pub type Job = Box<dyn FnMut(u64) + Send + 'static>;

/// A set of threads, one per [`Job`], that run their job together once per [`run`](Crew::run).
///
/// Signalling uses a `std` mutex and condition variables (futex-based: no allocation), so the
/// allocation counters of a sample see only the jobs' own allocations.
///
/// # Examples
///
/// ```
/// use microbench::crew::{Crew, Job};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
///
/// let total = Arc::new(AtomicU64::new(0));
/// let jobs: Vec<Job> = (0..2)
///     .map(|_| {
///         let total = Arc::clone(&total);
///         Box::new(move |iters: u64| {
///             total.fetch_add(iters, Ordering::Relaxed);
///         }) as Job
///     })
///     .collect();
/// let crew = Crew::spawn("example", jobs);
/// crew.run(10);
/// assert_eq!(total.load(Ordering::Relaxed), 20);
/// ```
pub struct Crew {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    /// Members wait here for the next generation (or stop).
    go: Condvar,
    /// `run` waits here for the last member to finish.
    done: Condvar,
}

struct State {
    /// Incremented by each `run`; a member runs once per generation.
    generation: u64,
    /// Iterations each member runs in this generation.
    iters: u64,
    /// Members finished in this generation.
    finished: usize,
    /// When the last member of this generation finished so far.
    last_finish: Option<Instant>,
    /// A member's job panicked (the crew is unusable).
    panicked: bool,
    /// Set by `Drop`: members exit.
    stop: bool,
}

impl Crew {
    /// Starts one thread per job, named `<name>-<n>`.
    ///
    /// # Panics
    ///
    /// If a thread cannot be started.
    pub fn spawn(name: &str, jobs: Vec<Job>) -> Crew {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                generation: 0,
                iters: 0,
                finished: 0,
                last_finish: None,
                panicked: false,
                stop: false,
            }),
            go: Condvar::new(),
            done: Condvar::new(),
        });
        let threads = jobs
            .into_iter()
            .enumerate()
            .map(|(n, job)| {
                let shared = Arc::clone(&shared);
                thread::Builder::new()
                    .name(format!("{name}-{n}"))
                    .spawn(move || member(&shared, job))
                    .expect("start a crew thread")
            })
            .collect();
        Crew { shared, threads }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.threads.len()
    }

    /// Whether the crew has no members.
    pub fn is_empty(&self) -> bool {
        self.threads.is_empty()
    }

    /// Has every member run its job for `iters` iterations; returns the wall time from the
    /// start signal to the moment the last member finished.
    ///
    /// # Panics
    ///
    /// If a member's job panicked.
    pub fn run(&self, iters: u64) -> Duration {
        let members = self.threads.len();
        let mut state = lock(&self.shared.state);
        assert!(!state.panicked, "a crew job panicked earlier");
        state.generation += 1;
        state.iters = iters;
        state.finished = 0;
        state.last_finish = None;
        let start = Instant::now();
        self.shared.go.notify_all();
        while state.finished < members && !state.panicked {
            state = self
                .shared
                .done
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
        assert!(!state.panicked, "a crew job panicked");
        state
            .last_finish
            .map_or(Duration::ZERO, |end| end.saturating_duration_since(start))
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

fn member(shared: &Shared, mut job: Job) {
    let mut seen = 0;
    loop {
        let iters = {
            let mut state = lock(&shared.state);
            while state.generation == seen && !state.stop {
                state = shared.go.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            if state.stop {
                return;
            }
            seen = state.generation;
            state.iters
        };
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| job(iters)));
        let end = Instant::now();
        let mut state = lock(&shared.state);
        state.finished += 1;
        state.last_finish = Some(state.last_finish.map_or(end, |last| last.max(end)));
        if outcome.is_err() {
            state.panicked = true;
        }
        drop(state);
        shared.done.notify_one();
        if outcome.is_err() {
            return;
        }
    }
}

impl Drop for Crew {
    fn drop(&mut self) {
        lock(&self.shared.state).stop = true;
        self.shared.go.notify_all();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl fmt::Debug for Crew {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Crew")
            .field("members", &self.threads.len())
            .finish_non_exhaustive()
    }
}
