//! Shared support for the workspace's criterion benches: allocation counting, CPU clocks,
//! the executors and queues under test, and the reporting contract `cargo xtask bench` reads.
//!
//! # Adding a bench (the contract)
//!
//! A bench is three things, and `cargo xtask bench` then runs it, shows its progress and
//! renders its table, chart and targets with no change to `xtask`:
//!
//! 1. A file `microbench/benches/<name>.rs` that installs the counting allocator (one
//!    `#[global_allocator]` per bench binary, always this type):
//!
//!    ```ignore
//!    #[global_allocator]
//!    static ALLOC: microbench::alloc::CountingAllocator = microbench::alloc::CountingAllocator;
//!    ```
//!
//! 2. An entry in `microbench/Cargo.toml`:
//!
//!    ```toml
//!    [[bench]]
//!    name = "<name>"
//!    harness = false
//!    ```
//!
//! 3. Calls to [`report`]: once [`report::declare`] with a [`report::BenchMeta`] (title, the
//!    figures and their units, which variant is the baseline and which is ours, which figures
//!    get ratio columns and a chart, the targets), then one [`report::record`] per measured
//!    [`report::Row`] (bench, group, variant, round, named figures). Rows are JSON lines in
//!    `<dir>/<name>.jsonl`, where `<dir>` is `$MICROBENCH_REPORT_DIR` (set by
//!    `cargo xtask bench`) or else `<target dir>/bench-report/raw`. `declare` starts the file
//!    afresh, so a file always holds one run of one bench.
//!
//! Measure inside criterion with [`Probe`] in `iter_custom`: it reads the wall clock, the
//! process CPU clock (and optionally a worker thread's) and the allocation counters around
//! exactly the timed work, so every figure is the workload's alone and none of criterion's
//! own bookkeeping. [`Settings`] gives every bench the same sampling for the quick default
//! run and for `--full` (`MICROBENCH_PROFILE=full`), and [`Progress`] prints "n of m" lines
//! that `cargo xtask bench` passes through.
//!
//! Renderer rules (`xtask/src/report*.rs`): one table per bench with one line per group and
//! variant; each figure is the median over rounds; a ratio column `<figure> ÷ <baseline>` and
//! `<figure> ÷ best peer` is added for each figure named in `ratio_figures`, each computed per
//! round (against the same round's baseline, and the fastest variant other than the subject)
//! and then reduced to its median. Targets are checked on those per-round medians. "Best"
//! means lowest: name only lower-is-better figures (us/op, B/op; not ops/ms) in
//! `ratio_figures` and targets.
//!
//! The process-wide counters ([`alloc::snapshot`]) see every thread, so a bench must run
//! nothing but its workload while it measures; tests, which run in parallel, count one
//! thread at a time with [`alloc::thread_snapshot`] / [`alloc::measure_thread`].
//!
//! # Modules
//!
//! - [`alloc`]: the counting global allocator and its snapshots.
//! - [`cpu`]: process and thread CPU clocks.
//! - [`affinity`]: the CPUs this process may use, and pinning a thread to one.
//! - [`burners`]: CPU-burning threads for the oversubscribed variants.
//! - [`latch`]: the countdown latch of the hand-off benchmark.
//! - [`crew`]: persistent threads that run one sample of work on command.
//! - [`probe`]: one sample's wall time, CPU time and allocations, and their summary.
//! - [`settings`]: sampling per profile (quick default, `--full`).
//! - [`report`]: the JSON-lines rows `cargo xtask bench` renders.
//! - [`progress`]: "n of m" lines on stderr.
//! - [`executors`]: the single-thread executors under test behind one trait.
//! - [`queues`]: the queues under test behind one trait.
//! - [`handoff`]: the `ExecutorHandoffBenchmark.submitAndComplete` workload.
//! - [`burst`]: what an executor holds after a burst of queued tasks.
#![deny(unsafe_op_in_unsafe_fn)]

/// The counting global allocator (lives in `pulsar-testkit`, shared with the tests).
pub use pulsar_testkit::alloc;
pub mod affinity;
pub mod burners;
pub mod burst;
pub mod cpu;
pub mod crew;
pub mod executors;
pub mod handoff;
pub mod latch;
pub mod paced;
pub mod probe;
pub mod progress;
pub mod queues;
pub mod report;
pub mod settings;

pub use probe::{Probe, Summary};
pub use progress::Progress;
pub use settings::Settings;
