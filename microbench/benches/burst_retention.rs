//! `burst_retention`: bytes each executor still holds after 100,000 queued tasks drained and
//! it went idle (ours after its idle trim), and the CPU it burns while idle.
//!
//! A one-shot measurement per executor and round, not a timing loop, so this bench does not
//! go through criterion's sampler; it follows the same reporting contract. Arguments: an
//! optional filter (a substring of an executor's name); `--list` lists, `--test` runs a small
//! burst without recording.

use microbench::alloc::CountingAllocator;
use microbench::burst::{self, Retention, BURST_TASKS};
use microbench::executors::{
    self, CrossbeamExecutor, Executor, FlumeExecutor, PulsarExecutor, StdMpscExecutor,
    ThreadPoolExecutor,
};
use microbench::report::{self, BenchMeta, FigureSpec, Row};
use microbench::{Progress, Settings};
use pulsar_common::executors::DEFAULT_IDLE_TRIM_AFTER;
use std::time::Duration;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

const BENCH: &str = "burst_retention";
const GROUP: &str = "100,000 tasks";

const HELD_BEFORE: &str = "held idle before B";
const QUEUED_PER_TASK: &str = "B/queued task";
const HELD_QUEUED: &str = "held with burst queued B";
const HELD_AFTER: &str = "held after idle B";
const RESIDUE: &str = "burst residue B";
const DRAIN: &str = "drain ns/task";
const IDLE_CPU: &str = "idle CPU ms/s";
const TRIMMED_AFTER: &str = "trimmed after ms";

/// The extra idle time after our trim period, for every executor alike.
const IDLE_MARGIN: Duration = Duration::from_millis(250);
/// The window over which idle CPU is read.
const CPU_WINDOW: Duration = Duration::from_millis(300);

fn meta() -> BenchMeta {
    BenchMeta {
        bench: BENCH.into(),
        title: "Burst retention: what an executor holds after 100,000 queued tasks drained".into(),
        description: format!(
            "Each executor is started and warmed by one task; its worker is then held by a \
             blocked task while 100,000 tasks (each capturing one `Arc`) are queued, released, \
             and the burst drains. Every executor is then left idle for {} ms (ours trims its \
             queue after {} ms idle by default; it is also polled until the trim shows). Bytes \
             are live heap bytes of the process relative to the moment before the executor was \
             made. Idle CPU is the process's CPU time per second of wall time afterwards.",
            (DEFAULT_IDLE_TRIM_AFTER + IDLE_MARGIN).as_millis(),
            DEFAULT_IDLE_TRIM_AFTER.as_millis()
        ),
        group_label: "burst".into(),
        variant_label: "executor".into(),
        variants: executors::NAMES.iter().map(|s| s.to_string()).collect(),
        baseline: Some(StdMpscExecutor::NAME.into()),
        subject: Some(PulsarExecutor::NAME.into()),
        figures: vec![
            FigureSpec::new(
                HELD_BEFORE,
                "live bytes of the started, idle executor before the burst",
                0,
            ),
            FigureSpec::new(
                QUEUED_PER_TASK,
                "live bytes per queued task at the burst's peak",
                1,
            ),
            FigureSpec::new(HELD_QUEUED, "live bytes with the whole burst queued", 0),
            FigureSpec::new(
                HELD_AFTER,
                "live bytes after the drain and the idle period",
                0,
            ),
            FigureSpec::new(RESIDUE, "held after idle minus held before the burst", 0),
            FigureSpec::new(DRAIN, "wall time to run the queued burst, per task", 1),
            FigureSpec::new(IDLE_CPU, "process CPU ms per second while idle", 2),
            FigureSpec::new(
                TRIMMED_AFTER,
                "ours: ms from the end of the drain to the trimmed queue",
                0,
            ),
        ],
        ratio_figures: vec![HELD_AFTER.into()],
        chart_figures: vec![QUEUED_PER_TASK.into(), HELD_AFTER.into()],
        targets: Vec::new(),
        notes: Vec::new(),
    }
}

fn figures(r: &Retention, tasks: usize) -> Vec<(String, Option<f64>)> {
    vec![
        (HELD_BEFORE.into(), Some(r.held_before as f64)),
        (QUEUED_PER_TASK.into(), Some(r.queued_bytes_per_task(tasks))),
        (HELD_QUEUED.into(), Some(r.held_queued as f64)),
        (HELD_AFTER.into(), Some(r.held_after as f64)),
        (RESIDUE.into(), Some(r.residue() as f64)),
        (DRAIN.into(), Some(r.drain_ms * 1e6 / tasks as f64)),
        (IDLE_CPU.into(), r.idle_cpu_ms_per_s),
        (TRIMMED_AFTER.into(), r.trimmed_after_ms),
    ]
}

struct Run {
    filter: Option<String>,
    list: bool,
    test: bool,
    rounds: u32,
    progress: Progress,
}

impl Run {
    fn one<E: Executor>(&mut self, round: u32) {
        if self.filter.as_deref().is_some_and(|f| !E::NAME.contains(f)) {
            return;
        }
        if self.list {
            println!("{BENCH}/{}: benchmark", E::NAME);
            return;
        }
        let (tasks, idle) = if self.test {
            (1_000, Duration::ZERO)
        } else {
            (BURST_TASKS, DEFAULT_IDLE_TRIM_AFTER + IDLE_MARGIN)
        };
        let retention = burst::measure::<E>(tasks, idle, CPU_WINDOW);
        if self.test {
            println!("Testing {BENCH}/{}\nSuccess", E::NAME);
            return;
        }
        let row = Row {
            bench: BENCH.into(),
            group: GROUP.into(),
            variant: E::NAME.into(),
            round,
            figures: figures(&retention, tasks),
        };
        report::record(&row).expect("write the bench report");
        self.progress.step(format_args!(
            "{:<10} round {}/{}: {:>6.1} B/queued task, held after idle {:>9} B, residue {:>9} B{}",
            E::NAME,
            round,
            self.rounds,
            retention.queued_bytes_per_task(tasks),
            retention.held_after,
            retention.residue(),
            retention
                .trimmed_after_ms
                .map_or(String::new(), |ms| format!(", trimmed after {ms:.0} ms")),
        ));
    }
}

fn main() {
    let settings = Settings::from_env();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filter = args.iter().find(|a| !a.starts_with("--")).cloned();
    let list = args.iter().any(|a| a == "--list");
    let test = args.iter().any(|a| a == "--test");
    // Allocation figures are exact; drain time is the only noisy one.
    let rounds = if settings.profile == "full" { 3 } else { 1 };
    let recorded = Settings {
        rounds,
        warm_up: Duration::ZERO,
        measurement: Duration::ZERO,
        sample_size: 1,
        ..settings
    };
    report::declare(&meta(), &recorded).expect("write the bench report");
    let mut run = Run {
        filter,
        list,
        test,
        rounds,
        progress: Progress::new(BENCH, rounds as usize * executors::NAMES.len()),
    };
    for round in 1..=rounds {
        // threadpool last: its worker cannot be joined, and its exit frees memory late.
        run.one::<StdMpscExecutor>(round);
        run.one::<CrossbeamExecutor>(round);
        run.one::<FlumeExecutor>(round);
        run.one::<PulsarExecutor>(round);
        run.one::<ThreadPoolExecutor>(round);
    }
}
