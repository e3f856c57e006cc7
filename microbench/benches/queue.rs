//! `queue`: hand-off throughput and round-trip latency of our `GrowableArrayBlockingQueue`
//! against crossbeam unbounded, flume unbounded and std mpsc: P producers push `u64`s into one
//! blocking consumer, and a ping-pong of one item between two threads over two queues.

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use microbench::alloc::CountingAllocator;
use microbench::crew::{Crew, Job};
use microbench::queues::{self, CrossbeamQueue, PulsarQueue, Queue, QueueVisitor};
use microbench::report::{self, Against, BenchMeta, FigureSpec, Row, Target};
use microbench::{Probe, Progress, Settings};
use std::hint::black_box;
use std::time::Duration;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

const BENCH: &str = "queue";

/// What one benchmark measures.
#[derive(Debug, Clone, Copy)]
enum Workload {
    /// P producers push as fast as they can into one consumer blocking in its `pop`.
    Producers(usize),
    /// One item in flight between two threads over two queues; an item is one round trip.
    PingPong,
}

const WORKLOADS: [Workload; 4] = [
    Workload::Producers(1),
    Workload::Producers(2),
    Workload::Producers(4),
    Workload::PingPong,
];

impl Workload {
    fn group(self) -> String {
        match self {
            Workload::Producers(1) => "1 producer".into(),
            Workload::Producers(n) => format!("{n} producers"),
            Workload::PingPong => "ping-pong".into(),
        }
    }

    fn id(self) -> String {
        match self {
            Workload::Producers(n) => format!("p{n}"),
            Workload::PingPong => "pingpong".into(),
        }
    }
}

const NS_PER_ITEM: &str = "ns/item";
const CPU_PER_ITEM: &str = "CPU ns/item";
const BYTES_PER_ITEM: &str = "B/item";
const ALLOCS_PER_ITEM: &str = "allocs/item";

fn meta() -> BenchMeta {
    BenchMeta {
        bench: BENCH.into(),
        title: "Queue hand-off: P producers into one consumer, and a ping-pong".into(),
        description: "Raw throughput of the unbounded queues: P producer threads push `u64`s as \
            fast as they can, one consumer thread takes them (blocking when empty). In the \
            ping-pong, two threads pass one item back and forth over two queues (each blocking \
            in its `pop`), and an item is one round trip. `ns/item` is wall time per item \
            handed over (median of samples); CPU, bytes and allocations are per item, by all \
            threads. Ratios are taken against crossbeam, the queue's target."
            .into(),
        group_label: "workload".into(),
        variant_label: "queue".into(),
        variants: queues::NAMES.iter().map(|s| s.to_string()).collect(),
        baseline: Some(CrossbeamQueue::NAME.into()),
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
        targets: vec![Target {
            description: "ours <= 1.0x crossbeam's time per item (round trip in the ping-pong)"
                .into(),
            figure: NS_PER_ITEM.into(),
            against: Against::Baseline,
            max_ratio: 1.0,
            groups: Vec::new(),
        }],
        notes: Vec::new(),
    }
}

/// The threads of one workload, persistent across samples.
struct QueueRig {
    crew: Crew,
    /// Items are handed over in multiples of this (the producers).
    producers: u64,
}

impl QueueRig {
    fn start<Q: Queue>(workload: Workload) -> Self {
        match workload {
            Workload::Producers(p) => Self::producers::<Q>(p),
            Workload::PingPong => Self::ping_pong::<Q>(),
        }
    }

    /// P producers and one consumer.
    fn producers<Q: Queue>(producers: usize) -> Self {
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

    /// Two threads passing one item back and forth: `serve` pushes into `there` and waits for
    /// it on `back`; `echo` takes it from `there` and pushes it into `back`.
    fn ping_pong<Q: Queue>() -> Self {
        let (there_in, mut there_out) = Q::channel();
        let (back_in, mut back_out) = Q::channel();
        let serve: Job = Box::new(move |iters: u64| {
            for item in 0..iters {
                Q::push(&there_in, item);
                black_box(Q::pop(&mut back_out));
            }
        });
        let echo: Job = Box::new(move |iters: u64| {
            for _ in 0..iters {
                let item = Q::pop(&mut there_out);
                Q::push(&back_in, item);
            }
        });
        QueueRig {
            crew: Crew::spawn(&format!("{}-pingpong", Q::NAME), vec![serve, echo]),
            producers: 1,
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
    workload: Workload,
}

impl QueueVisitor for Configuration<'_, '_> {
    fn visit<Q: Queue>(&mut self) {
        let workload = self.workload;
        let rig = QueueRig::start::<Q>(workload);
        let mut probe = Probe::new();
        let id = format!("{}/{}/r{}", workload.id(), Q::NAME, self.round);
        self.group.bench_function(id, |b| {
            b.iter_custom(|iters| probe.sample(iters, 1, None, |n| rig.run(n)))
        });
        drop(rig);
        let Some(summary) = probe.summary(self.settings.sample_size) else {
            return;
        };
        let row = Row {
            bench: BENCH.into(),
            group: workload.group(),
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
            workload.group(),
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
    let total = settings.rounds as usize * WORKLOADS.len() * queues::NAMES.len();
    let mut progress = Progress::new(BENCH, total);
    let mut group = c.benchmark_group(BENCH);
    settings.configure(&mut group);
    for round in 1..=settings.rounds {
        for workload in WORKLOADS {
            queues::visit_all(&mut Configuration {
                group: &mut group,
                progress: &mut progress,
                settings: &settings,
                round,
                workload,
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
