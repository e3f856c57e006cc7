//! `queue`: raw hand-off of our `GrowableArrayBlockingQueue` against crossbeam unbounded, flume
//! unbounded and std mpsc: throughput (P producers push `u64`s, one consumer takes them) and
//! latency (a ping-pong: one item in flight between two threads over two queues), each also
//! beside two CPU hogs.

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use microbench::alloc::CountingAllocator;
use microbench::burners::{self, CpuBurners};
use microbench::crew::{Crew, Job};
use microbench::queues::{self, CrossbeamQueue, PulsarQueue, Queue, QueueVisitor};
use microbench::report::{self, Against, BenchMeta, FigureSpec, Row, Target};
use microbench::settings::skipped_by_filter;
use microbench::{Probe, Progress, Settings};
use std::hint::black_box;
use std::time::Duration;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

const BENCH: &str = "queue";

/// What one configuration runs: P producers into one blocking taker, or a ping-pong; with or
/// without two CPU hogs beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    /// P producers push as fast as they can; one consumer takes (blocking when empty).
    Producers(usize),
    /// One item in flight: the origin puts into one queue and takes from the other, the echo
    /// takes from the first and puts into the second. One iteration is one round trip.
    PingPong,
}

/// CPU hogs run beside the `+ hogs` configurations (the machine has 2 cores).
const HOGS: usize = 2;

/// The configurations, in report order: `(workload, hogs)`.
const CONFIGURATIONS: [(Workload, usize); 6] = [
    (Workload::Producers(1), 0),
    (Workload::Producers(2), 0),
    (Workload::Producers(4), 0),
    (Workload::PingPong, 0),
    (Workload::Producers(1), HOGS),
    (Workload::PingPong, HOGS),
];

const NS_PER_ITEM: &str = "ns/item";
const CPU_PER_ITEM: &str = "CPU ns/item";
const BYTES_PER_ITEM: &str = "B/item";
const ALLOCS_PER_ITEM: &str = "allocs/item";

fn group_name(workload: Workload, hogs: usize) -> String {
    let name = match workload {
        Workload::Producers(1) => "1 producer".to_owned(),
        Workload::Producers(n) => format!("{n} producers"),
        Workload::PingPong => "ping-pong".to_owned(),
    };
    match hogs {
        0 => name,
        n => format!("{name} + {n} hogs"),
    }
}

/// The groups where ours should be at least as fast as crossbeam.
fn target_groups() -> Vec<String> {
    CONFIGURATIONS
        .iter()
        .map(|&(workload, hogs)| group_name(workload, hogs))
        .collect()
}

fn meta() -> BenchMeta {
    BenchMeta {
        bench: BENCH.into(),
        title: "Queue hand-off: P producers into one consumer, and a ping-pong".into(),
        description: format!(
            "Raw throughput of the unbounded queues: P producer threads push `u64`s as \
            fast as they can, one consumer thread takes them (blocking when empty). `ns/item` is \
            wall time per item handed over (median of samples); CPU, bytes and allocations are \
            per item, by all threads. In `ping-pong` one item is in flight between two threads \
            over two queues, and `ns/item` is one round trip (two hand-offs, each to a taker \
            blocked in `take`/`recv`). `+ 2 hogs`: two threads of the bench process burn CPU \
            throughout on the 2-core machine, {}, and the workload runs 1 s beside them \
            before it is measured (CPU figures leave their own CPU time out).",
            burners::placement()
        ),
        group_label: "workload".into(),
        variant_label: "queue".into(),
        variants: queues::NAMES.iter().map(|s| s.to_string()).collect(),
        baseline: Some(CrossbeamQueue::NAME.into()),
        subject: Some(PulsarQueue::NAME.into()),
        figures: vec![
            FigureSpec::new(NS_PER_ITEM, "wall time per item (median of samples)", 1),
            FigureSpec::new(
                CPU_PER_ITEM,
                "process CPU time (all threads but the CPU hogs) per item",
                1,
            ),
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
            description: "ours <= 1.0x crossbeam's time per item or round trip, beside hogs too"
                .into(),
            figure: NS_PER_ITEM.into(),
            against: Against::Baseline,
            max_ratio: 1.0,
            groups: target_groups(),
        }],
        notes: Vec::new(),
    }
}

/// The threads of one configuration, persistent across samples.
struct QueueRig {
    crew: Crew,
    /// Items per iteration are rounded up to a multiple of this (the producers).
    producers: u64,
}

impl QueueRig {
    fn start<Q: Queue>(workload: Workload) -> Self {
        match workload {
            Workload::Producers(producers) => Self::producers::<Q>(producers),
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

    /// The origin and the echo of a ping-pong over two queues.
    fn ping_pong<Q: Queue>() -> Self {
        let (to_echo, mut echo_inbox) = Q::channel();
        let (to_origin, mut origin_inbox) = Q::channel();
        let origin: Job = Box::new(move |iters: u64| {
            for item in 0..iters {
                Q::push(&to_echo, item);
                black_box(Q::pop(&mut origin_inbox));
            }
        });
        let echo: Job = Box::new(move |iters: u64| {
            for _ in 0..iters {
                let item = Q::pop(&mut echo_inbox);
                Q::push(&to_origin, item);
            }
        });
        QueueRig {
            crew: Crew::spawn(&format!("{}-ping-pong", Q::NAME), vec![origin, echo]),
            producers: 1,
        }
    }

    /// Runs `iters` iterations (items, rounded up to a multiple of the producers, or round
    /// trips); returns the wall time scaled to exactly `iters`.
    fn run(&self, iters: u64) -> Duration {
        let items = iters.div_ceil(self.producers) * self.producers;
        let wall = self.crew.run(iters);
        wall.mul_f64(iters as f64 / items.max(1) as f64)
    }
}

/// The criterion id's first part: `p1`, `p2`, `p4`, `pingpong`, with `+hogs2` beside hogs.
fn id_prefix(workload: Workload, hogs: usize) -> String {
    let name = match workload {
        Workload::Producers(p) => format!("p{p}"),
        Workload::PingPong => "pingpong".to_owned(),
    };
    match hogs {
        0 => name,
        n => format!("{name}+hogs{n}"),
    }
}

struct Configuration<'g, 'c> {
    group: &'g mut BenchmarkGroup<'c, WallTime>,
    progress: &'g mut Progress,
    settings: &'g Settings,
    round: u32,
    workload: Workload,
    hogs: usize,
}

impl QueueVisitor for Configuration<'_, '_> {
    fn visit<Q: Queue>(&mut self) {
        let group = group_name(self.workload, self.hogs);
        let id = format!(
            "{}/{}/r{}",
            id_prefix(self.workload, self.hogs),
            Q::NAME,
            self.round
        );
        if !Settings::will_run(BENCH, &id) {
            // Listed, or filtered out (criterion skips it too): start nothing for it.
            self.group.bench_function(id, |b| b.iter(skipped_by_filter));
            return;
        }
        let hogs = CpuBurners::start(self.hogs);
        let rig = QueueRig::start::<Q>(self.workload);
        hogs.settle(|n| rig.run(n));
        let mut probe = Probe::new().excluding_cpu_of(hogs.clocks());
        self.group.bench_function(id, |b| {
            b.iter_custom(|iters| probe.sample(iters, 1, None, |n| rig.run(n)))
        });
        drop(rig);
        drop(hogs);
        let Some(summary) = probe.summary(self.settings.sample_size) else {
            return;
        };
        let row = Row {
            bench: BENCH.into(),
            group: group.clone(),
            variant: Q::NAME.into(),
            round: self.round,
            figures: vec![
                (NS_PER_ITEM.into(), Some(summary.wall_ns_per_iter)),
                // The probe leaves the hogs' own CPU time out.
                (CPU_PER_ITEM.into(), summary.cpu_ns_per_unit),
                (BYTES_PER_ITEM.into(), Some(summary.bytes_per_unit)),
                (ALLOCS_PER_ITEM.into(), Some(summary.allocations_per_unit)),
            ],
        };
        report::record(&row).expect("write the bench report");
        self.progress.step(format_args!(
            "{} {:<10} round {}/{}: {:>7.1} ns/item {:>7.2} B/item",
            group,
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
    let total = settings.rounds as usize * CONFIGURATIONS.len() * queues::NAMES.len();
    let mut progress = Progress::new(BENCH, total);
    let mut group = c.benchmark_group(BENCH);
    settings.configure(&mut group);
    for round in 1..=settings.rounds {
        for (workload, hogs) in CONFIGURATIONS {
            queues::visit_all(&mut Configuration {
                group: &mut group,
                progress: &mut progress,
                settings: &settings,
                round,
                workload,
                hogs,
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
