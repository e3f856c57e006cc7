//! `executor_handoff`: Pulsar's `ExecutorHandoffBenchmark.submitAndComplete` ported, ours
//! against single-thread executors on std mpsc, crossbeam, flume and threadpool.
//!
//! Per batch: the submitter's countdown latch armed for K tasks, K `execute`s of one shared
//! task that counts it down (Pulsar's `latch::countDown`), wait for the latch. K in
//! {16, 256}; S in {1, 2, 8} concurrent submitters, each with at most one batch outstanding
//! (JMH's `-t S`). Every configuration is measured quiet and oversubscribed (two CPU-burning
//! threads running beside it, started and stopped around each executor's measurement), in
//! interleaved rounds (all executors of round 1, then round 2, ...). One more configuration,
//! `sparse`, measures what a worker spends waiting: K=1, S=1, the submitter pausing 1 ms after
//! each batch, so the worker waits for work once per batch.

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use microbench::alloc::{AllocStats, CountingAllocator};
use microbench::burners::{self, CpuBurners, OVERSUBSCRIBING_BURNERS};
use microbench::executors::{self, Executor, ExecutorVisitor, PulsarExecutor, StdMpscExecutor};
use microbench::handoff::{self, HandoffRig};
use microbench::report::{self, Against, BenchMeta, FigureSpec, Row, Target};
use microbench::settings::skipped_by_filter;
use microbench::{Probe, Progress, Settings};
use std::time::Duration;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

const BENCH: &str = "executor_handoff";
const TASKS: [usize; 2] = [16, 256];
const SUBMITTERS: [usize; 3] = [1, 2, 8];

const US_PER_BATCH: &str = "us/batch";
const CPU_PER_BATCH: &str = "CPU us/batch";
const WORKER_CPU_PER_BATCH: &str = "worker CPU us/batch";
const BYTES_PER_BATCH: &str = "B/batch";
const ALLOCS_PER_BATCH: &str = "allocs/batch";
const LATCH_BYTES: &str = "latch B/batch";

/// What runs beside the hand-off, and how the submitters pace it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Load {
    /// Nothing; batch after batch.
    Quiet,
    /// [`OVERSUBSCRIBING_BURNERS`] CPU-burning threads; batch after batch.
    Oversubscribed,
    /// Nothing; each submitter pauses [`SPARSE_PAUSE`] after each batch, so the worker waits
    /// for work (and spends CPU waiting) once per batch.
    Sparse,
}

/// The loads of the K x S grid.
const LOADS: [Load; 2] = [Load::Quiet, Load::Oversubscribed];
/// The sparse configuration: one task per batch, one submitter, a pause after each batch.
const SPARSE: (usize, usize) = (1, 1);
/// The submitter's pause after each batch in the sparse configuration.
const SPARSE_PAUSE: Duration = Duration::from_millis(1);

fn group_name(tasks: usize, submitters: usize, load: Load) -> String {
    match load {
        Load::Quiet => format!("K={tasks} S={submitters}"),
        Load::Oversubscribed => format!("K={tasks} S={submitters} oversubscribed"),
        Load::Sparse => format!(
            "K={tasks} S={submitters} sparse (a {} ms pause after each batch)",
            SPARSE_PAUSE.as_millis()
        ),
    }
}

fn meta(latch: &AllocStats) -> BenchMeta {
    let groups = |tasks: &[usize], submitters: &[usize], load: Load| -> Vec<String> {
        tasks
            .iter()
            .flat_map(|&k| submitters.iter().map(move |&s| group_name(k, s, load)))
            .collect()
    };
    let speed = |max_ratio: f64, tasks: &[usize], submitters: &[usize], load: Load| Target {
        description: format!(
            "us/batch of ours <= {max_ratio}x the fastest peer (K={tasks:?}, S={submitters:?}{})",
            match load {
                Load::Quiet => "",
                Load::Oversubscribed => ", oversubscribed",
                Load::Sparse => ", sparse",
            }
        ),
        figure: US_PER_BATCH.into(),
        against: Against::BestPeer,
        max_ratio,
        groups: groups(tasks, submitters, load),
    };
    BenchMeta {
        bench: BENCH.into(),
        title: "Executor hand-off: batches of K tasks from S submitters into one worker".into(),
        description: format!(
            "A port of Pulsar's ExecutorHandoffBenchmark.submitAndComplete. Per \
            batch: the submitter's countdown latch armed for K tasks, K `execute`s of one shared \
            task that counts it down (a copy of a `&'static` to the latch, as Pulsar's benchmark \
            shares one `latch::countDown` method reference; until 2026-12-01 the closure cloned \
            an `Arc` of a fresh latch, two read-modify-writes per task on a line the worker also \
            writes), then wait for the latch. S submitting threads run concurrently, each with \
            one batch outstanding (JMH `-t S`). `us/batch` is wall time per batch as one submitter sees it (JMH's average-time \
            mode: with S submitters, S batches complete in that time). CPU, bytes and \
            allocations are per batch completed, by all threads of the process but the CPU \
            burners. Bytes and allocations are net of what the harness itself allocates per \
            batch (shown separately; nothing, since its latch is made once per thread). \
            `oversubscribed`: two threads burning CPU (busy loops, no yields), {}, run \
            beside the hand-off, started before and stopped after each \
            executor's measurement, which begins after the hand-off has run 1 s beside them, \
            so the machine has more busy threads than cores; their CPU time is left out of \
            CPU us/batch (process CPU time minus the burners' thread CPU time). `sparse`: \
            K=1, S=1, the submitter sleeping 1 ms after each batch, quiet machine: the worker \
            finds its queue empty after every batch, so its CPU time per batch (`worker CPU \
            us/batch`) is what it spends waiting for work (spinning, yielding, parking, being \
            woken) plus one task; us/batch includes the 1 ms pause.",
            burners::placement()
        ),
        group_label: "configuration".into(),
        variant_label: "executor".into(),
        variants: executors::NAMES.iter().map(|s| s.to_string()).collect(),
        baseline: Some(StdMpscExecutor::NAME.into()),
        subject: Some(PulsarExecutor::NAME.into()),
        figures: vec![
            FigureSpec::new(
                US_PER_BATCH,
                "wall time per batch per submitter (median of samples)",
                2,
            ),
            FigureSpec::new(
                CPU_PER_BATCH,
                "process CPU time (all threads but the CPU burners) per batch",
                2,
            ),
            FigureSpec::new(
                WORKER_CPU_PER_BATCH,
                "the executor worker thread's CPU time per batch",
                2,
            ),
            FigureSpec::new(
                BYTES_PER_BATCH,
                "bytes allocated per batch, realloc growth included, net of the latch",
                1,
            ),
            FigureSpec::new(
                ALLOCS_PER_BATCH,
                "allocations per batch, net of the latch",
                2,
            ),
            FigureSpec::new(
                LATCH_BYTES,
                "bytes of the harness's per-batch latch (subtracted)",
                0,
            ),
        ],
        ratio_figures: vec![
            US_PER_BATCH.into(),
            CPU_PER_BATCH.into(),
            WORKER_CPU_PER_BATCH.into(),
            BYTES_PER_BATCH.into(),
        ],
        chart_figures: vec![US_PER_BATCH.into(), BYTES_PER_BATCH.into()],
        targets: vec![
            Target {
                description: "B/batch of ours <= 3% of std_mpsc's (net of the latch)".into(),
                figure: BYTES_PER_BATCH.into(),
                against: Against::Baseline,
                max_ratio: 0.03,
                groups: LOADS
                    .iter()
                    .flat_map(|&load| groups(&TASKS, &SUBMITTERS, load))
                    .collect(),
            },
            speed(0.8, &[256], &[1, 2], Load::Quiet),
            speed(0.95, &[16], &[1, 2], Load::Quiet),
            speed(1.0, &[16, 256], &[8], Load::Quiet),
            speed(0.5, &[256], &[1, 2], Load::Quiet),
            speed(0.7, &[256], &[8], Load::Quiet),
            speed(1.0, &TASKS, &SUBMITTERS, Load::Oversubscribed),
            Target {
                description: "worker CPU us/batch of ours <= 1.0x the best peer's when the \
                    worker waits for every batch (sparse: a spin that cannot win must not \
                    cost)"
                    .into(),
                figure: WORKER_CPU_PER_BATCH.into(),
                against: Against::BestPeer,
                max_ratio: 1.0,
                groups: vec![group_name(SPARSE.0, SPARSE.1, Load::Sparse)],
            },
        ],
        notes: vec![format!(
            "The harness allocates {} time(s) and {} B per batch for every executor (its latch \
             is made once per submitting thread); that is subtracted from B/batch and \
             allocs/batch.",
            latch.allocations, latch.bytes_allocated
        )],
    }
}

/// Measures every executor in one configuration and round.
struct Configuration<'g, 'c> {
    group: &'g mut BenchmarkGroup<'c, criterion::measurement::WallTime>,
    progress: &'g mut Progress,
    settings: &'g Settings,
    latch: AllocStats,
    round: u32,
    tasks: usize,
    submitters: usize,
    load: Load,
}

impl ExecutorVisitor for Configuration<'_, '_> {
    fn visit<E: Executor>(&mut self) {
        let (k, s) = (self.tasks, self.submitters);
        let oversubscribed = self.load == Load::Oversubscribed;
        let id = format!(
            "k{k}_s{s}{}/{}/r{}",
            match self.load {
                Load::Quiet => "",
                Load::Oversubscribed => "_over",
                Load::Sparse => "_sparse",
            },
            E::NAME,
            self.round
        );
        if !Settings::will_run(BENCH, &id) {
            // Listed, or filtered out (criterion skips it too): start nothing for it.
            self.group.bench_function(id, |b| b.iter(skipped_by_filter));
            return;
        }
        let burners = oversubscribed.then(|| CpuBurners::start(OVERSUBSCRIBING_BURNERS));
        let pause = match self.load {
            Load::Sparse => SPARSE_PAUSE,
            Load::Quiet | Load::Oversubscribed => Duration::ZERO,
        };
        let rig = HandoffRig::<E>::start_paced(s, k, pause);
        if let Some(burners) = &burners {
            burners.settle(|n| rig.run(n));
        }
        let mut probe = Probe::new().excluding_cpu_of(burners.as_ref().map_or(&[], |b| b.clocks()));
        let worker_cpu = || rig.worker_cpu();
        self.group.bench_function(id, |b| {
            b.iter_custom(|iters| {
                probe.sample(iters, rig.batches_per_iter(), Some(&worker_cpu), |n| {
                    rig.run(n)
                })
            })
        });
        let capacity = rig.queue_capacity();
        rig.shutdown();
        if let Some(burners) = burners {
            burners.stop();
        }
        let Some(summary) = probe.summary(self.settings.sample_size) else {
            return; // filtered out or listed only
        };
        let us = |ns: f64| ns / 1e3;
        let bytes = summary.bytes_per_unit - self.latch.bytes_allocated as f64;
        let allocs = summary.allocations_per_unit - self.latch.allocations as f64;
        let row = Row {
            bench: BENCH.into(),
            group: group_name(k, s, self.load),
            variant: E::NAME.into(),
            round: self.round,
            figures: vec![
                (US_PER_BATCH.into(), Some(us(summary.wall_ns_per_iter))),
                (CPU_PER_BATCH.into(), summary.cpu_ns_per_unit.map(us)),
                (
                    WORKER_CPU_PER_BATCH.into(),
                    summary.worker_cpu_ns_per_unit.map(us),
                ),
                (BYTES_PER_BATCH.into(), Some(bytes)),
                (ALLOCS_PER_BATCH.into(), Some(allocs)),
                (LATCH_BYTES.into(), Some(self.latch.bytes_allocated as f64)),
            ],
        };
        report::record(&row).expect("write the bench report");
        self.progress.step(format_args!(
            "{} {:<10} round {}/{}: {:>8.2} us/batch {:>8.2} CPU us/batch {:>8.1} B/batch {:>6.2} allocs/batch{}",
            group_name(k, s, self.load),
            E::NAME,
            self.round,
            self.settings.rounds,
            us(summary.wall_ns_per_iter),
            summary.cpu_ns_per_unit.map_or(f64::NAN, us),
            bytes,
            allocs,
            capacity.map_or(String::new(), |c| format!(" ({c} slots)")),
        ));
    }
}

/// Every configuration of a round, in the order measured: (load, K, S) for the K x S grid
/// quiet, then oversubscribed, then the sparse one.
fn configurations() -> Vec<(Load, usize, usize)> {
    LOADS
        .iter()
        .flat_map(|&load| {
            TASKS.iter().flat_map(move |&tasks| {
                SUBMITTERS
                    .iter()
                    .map(move |&submitters| (load, tasks, submitters))
            })
        })
        .chain(std::iter::once((Load::Sparse, SPARSE.0, SPARSE.1)))
        .collect()
}

fn executor_handoff(c: &mut Criterion) {
    let settings = Settings::from_env();
    let latch = handoff::latch_cost();
    report::declare(&meta(&latch), &settings).expect("write the bench report");
    let configurations = configurations();
    let total = settings.rounds as usize * configurations.len() * executors::NAMES.len();
    let mut progress = Progress::new(BENCH, total);
    let mut group = c.benchmark_group(BENCH);
    settings.configure(&mut group);
    for round in 1..=settings.rounds {
        for &(load, tasks, submitters) in &configurations {
            executors::visit_all(&mut Configuration {
                group: &mut group,
                progress: &mut progress,
                settings: &settings,
                latch,
                round,
                tasks,
                submitters,
                load,
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Settings::from_env().criterion();
    targets = executor_handoff
}
criterion_main!(benches);
