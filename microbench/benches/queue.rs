//! `queue`: raw hand-off throughput of our `GrowableArrayBlockingQueue` against crossbeam
//! unbounded, flume unbounded and std mpsc: P producers push `u64`s, one consumer takes them.

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use microbench::alloc::CountingAllocator;
use microbench::crew::{Crew, Job};
use microbench::queues::{self, PulsarQueue, Queue, QueueVisitor, StdMpscQueue};
use microbench::report::{self, BenchMeta, FigureSpec, Row};
use microbench::{Probe, Progress, Settings};
use std::hint::black_box;
use std::time::Duration;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

const BENCH: &str = "queue";
const PRODUCERS: [usize; 2] = [1, 2];

const NS_PER_ITEM: &str = "ns/item";
const CPU_PER_ITEM: &str = "CPU ns/item";
const BYTES_PER_ITEM: &str = "B/item";
const ALLOCS_PER_ITEM: &str = "allocs/item";

fn group_name(producers: usize) -> String {
    match producers {
        1 => "1 producer".into(),
        n => format!("{n} producers"),
    }
}

fn meta() -> BenchMeta {
    BenchMeta {
        bench: BENCH.into(),
        title: "Queue hand-off: P producers into one consumer".into(),
        description: "Raw throughput of the unbounded queues: P producer threads push `u64`s as \
            fast as they can, one consumer thread takes them (blocking when empty). `ns/item` is \
            wall time per item handed over (median of samples); CPU, bytes and allocations are \
            per item, by all threads."
            .into(),
        group_label: "producers".into(),
        variant_label: "queue".into(),
        variants: queues::NAMES.iter().map(|s| s.to_string()).collect(),
        baseline: Some(StdMpscQueue::NAME.into()),
        subject: Some(PulsarQueue::NAME.into()),
        figures: vec![
            FigureSpec::new(NS_PER_ITEM, "wall time per item (median of samples)", 1),
            FigureSpec::new(CPU_PER_ITEM, "process CPU time (all threads) per item", 1),
            FigureSpec::new(
                BYTES_PER_ITEM,
                "bytes allocated per item, realloc growth included",
                2,
            ),
            FigureSpec::new(ALLOCS_PER_ITEM, "allocations per item", 4),
        ],
        ratio_figures: vec![NS_PER_ITEM.into()],
        chart_figures: vec![NS_PER_ITEM.into(), BYTES_PER_ITEM.into()],
        targets: Vec::new(),
        notes: Vec::new(),
    }
}

/// P producers and one consumer, persistent across samples.
struct QueueRig {
    crew: Crew,
    producers: u64,
}

impl QueueRig {
    fn start<Q: Queue>(producers: usize) -> Self {
        let (producer, mut consumer) = Q::channel();
        let p = producers as u64;
        let mut jobs: Vec<Job> = (0..producers)
            .map(|_| {
                let producer = producer.clone();
                Box::new(move |iters: u64| {
                    for item in 0..iters.div_ceil(p) {
                        Q::push(&producer, item);
                    }
                }) as Job
            })
            .collect();
        drop(producer);
        jobs.push(Box::new(move |iters: u64| {
            for _ in 0..iters.div_ceil(p) * p {
                black_box(Q::pop(&mut consumer));
            }
        }));
        QueueRig {
            crew: Crew::spawn(&format!("{}-queue", Q::NAME), jobs),
            producers: p,
        }
    }

    /// Hands `iters` items over (rounded up to a multiple of the producers); returns the wall
    /// time scaled to exactly `iters` items.
    fn run(&self, iters: u64) -> Duration {
        let items = iters.div_ceil(self.producers) * self.producers;
        let wall = self.crew.run(iters);
        wall.mul_f64(iters as f64 / items.max(1) as f64)
    }
}

struct Configuration<'g, 'c> {
    group: &'g mut BenchmarkGroup<'c, WallTime>,
    progress: &'g mut Progress,
    settings: &'g Settings,
    round: u32,
    producers: usize,
}

impl QueueVisitor for Configuration<'_, '_> {
    fn visit<Q: Queue>(&mut self) {
        let p = self.producers;
        let rig = QueueRig::start::<Q>(p);
        let mut probe = Probe::new();
        let id = format!("p{p}/{}/r{}", Q::NAME, self.round);
        self.group.bench_function(id, |b| {
            b.iter_custom(|iters| probe.sample(iters, 1, None, |n| rig.run(n)))
        });
        drop(rig);
        let Some(summary) = probe.summary(self.settings.sample_size) else {
            return;
        };
        let row = Row {
            bench: BENCH.into(),
            group: group_name(p),
            variant: Q::NAME.into(),
            round: self.round,
            figures: vec![
                (NS_PER_ITEM.into(), Some(summary.wall_ns_per_iter)),
                (CPU_PER_ITEM.into(), summary.cpu_ns_per_unit),
                (BYTES_PER_ITEM.into(), Some(summary.bytes_per_unit)),
                (ALLOCS_PER_ITEM.into(), Some(summary.allocations_per_unit)),
            ],
        };
        report::record(&row).expect("write the bench report");
        self.progress.step(format_args!(
            "{} {:<10} round {}/{}: {:>7.1} ns/item {:>7.2} B/item",
            group_name(p),
            Q::NAME,
            self.round,
            self.settings.rounds,
            summary.wall_ns_per_iter,
            summary.bytes_per_unit,
        ));
    }
}

fn queue(c: &mut Criterion) {
    let settings = Settings::from_env();
    report::declare(&meta(), &settings).expect("write the bench report");
    let total = settings.rounds as usize * PRODUCERS.len() * queues::NAMES.len();
    let mut progress = Progress::new(BENCH, total);
    let mut group = c.benchmark_group(BENCH);
    settings.configure(&mut group);
    for round in 1..=settings.rounds {
        for producers in PRODUCERS {
            queues::visit_all(&mut Configuration {
                group: &mut group,
                progress: &mut progress,
                settings: &settings,
                round,
                producers,
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Settings::from_env().criterion();
    targets = queue
}
criterion_main!(benches);
