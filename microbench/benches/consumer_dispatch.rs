//! `consumer_dispatch`: a consumer's read rate with a message listener — Pulsar #16236's
//! `pulsar-perf consume` on 1-byte random-key messages — with every hand-off through (a) a
//! delay-heap scheduled executor (Pulsar before #16236), (b) `std_mpsc` single-thread
//! executors, (c) ours; Shared and Key_Shared. The same binary also writes the
//! `scheduled_executor` report: `ScheduledExecutor::execute`'s hand-off against the plain
//! executor's, and 1,000,000 timers scheduled then cancelled.
//!
//! All three consumer variants run the same `pulsar_client::Consumer` code (receive queue,
//! listener trigger on the internal executor, one listener job per message); only the
//! executors behind `ConsumerExecutor` differ.

use criterion::{criterion_group, criterion_main, Criterion};
use crossbeam_utils::CachePadded;
use microbench::alloc::CountingAllocator;
use microbench::burners::{self, CpuBurners, OVERSUBSCRIBING_BURNERS};
use microbench::crew::{Crew, Job};
use microbench::executors::{
    BoxedTask, DelayHeapExecutor, Executor, PulsarExecutor, StdMpscExecutor, Submit,
};
use microbench::handoff::{self, HandoffRig};
use microbench::report::{self, Against, BenchMeta, FigureSpec, Row, Target};
use microbench::settings::skipped_by_filter;
use microbench::{Probe, Progress, Settings};
use pulsar_client::{
    Consumer, ConsumerExecutor, ConsumerExecutors, ConsumerJob, ConsumerOptions, JobRejected,
    Message, SubscriptionType,
};
use pulsar_common::executors::{
    NamedThreadFactory, PulsarExecutors, ScheduledExecutor, SingleThreadExecutor,
};
use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

const BENCH: &str = "consumer_dispatch";
const TIMERS_BENCH: &str = "scheduled_executor";
/// The timer targets' report: ours against the Java-style heaps, one group per target.
const TIMER_TARGETS_BENCH: &str = "scheduled_timers";

/// Variant names of `consumer_dispatch`, in report order.
const DELAY_HEAP: &str = "delay_heap";
const STD_MPSC: &str = "std_mpsc";
const PULSAR: &str = "pulsar";
const VARIANTS: [&str; 3] = [DELAY_HEAP, STD_MPSC, PULSAR];

/// Distinct random keys the feeder draws from (pulsar-perf's `-mk random`).
const KEYS: usize = 10_000;
/// Listener executors of the Key_Shared configuration.
const KEY_SHARED_LISTENERS: usize = 2;

const MSG_PER_S: &str = "msg/s";
const NS_PER_MSG: &str = "ns/msg";
const CPU_NS_PER_MSG: &str = "CPU ns/msg";
const ALLOCS_PER_MSG: &str = "allocs/msg";
const BYTES_PER_MSG: &str = "B/msg";

// ---- (a), (b) the delay heap and std mpsc, as consumer executors ---------------------------------------------

/// Any of microbench's submit handles (the delay heap's, `std_mpsc`'s) as a
/// [`ConsumerExecutor`]. The executors are never shut down while the consumer holds them, so a
/// job is never refused ([`Submit::execute`] panics if one were).
struct ViaSubmit<H>(H);

impl<H: Submit + Sync + fmt::Debug> ConsumerExecutor for ViaSubmit<H> {
    fn execute_job(&self, job: ConsumerJob) -> Result<(), JobRejected> {
        self.0.execute(move || job.run());
        Ok(())
    }
}

impl<H: fmt::Debug> fmt::Debug for ViaSubmit<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ViaSubmit").field(&self.0).finish()
    }
}

// ---- the consumer rig ---------------------------------------------------------------------

/// Counts the listener's calls, like pulsar-perf's `LongAdder`: each listener thread adds to
/// its own stripe (cache line), so two listener threads do not fight over one counter line —
/// a cost that would be the same for every variant and only blur the executors' difference.
/// Every [`FLUSH`] calls a stripe also adds to `flushed`; the one add that brings `flushed`
/// within reach of the target (at most [`FLUSH`] - 1 calls per stripe are not yet flushed)
/// wakes the sampler, which then sums the stripes exactly until they reach the target.
struct Handled {
    stripes: Box<[CachePadded<AtomicU64>]>,
    flushed: AtomicU64,
    target: AtomicU64,
    waiter: Thread,
}

/// Calls a stripe counts before it adds them to `Handled::flushed`.
const FLUSH: u64 = 64;
/// Stripes of [`Handled`]; threads beyond this share stripes (still exact: stripes are atomic).
const STRIPES: usize = 4;

/// Which stripe this thread adds to (threads take stripes in turn).
fn stripe_index() -> usize {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    thread_local! {
        static STRIPE: usize = (NEXT.fetch_add(1, Ordering::Relaxed) as usize) % STRIPES;
    }
    STRIPE.with(|stripe| *stripe)
}

impl Handled {
    fn new() -> Self {
        Self {
            stripes: (0..STRIPES)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            flushed: AtomicU64::new(0),
            target: AtomicU64::new(u64::MAX),
            waiter: thread::current(),
        }
    }

    /// The largest count not yet flushed, all stripes together.
    const UNFLUSHED: u64 = (FLUSH - 1) * STRIPES as u64;

    #[inline]
    fn record(&self) {
        let n = self.stripes[stripe_index()].fetch_add(1, Ordering::AcqRel) + 1;
        if n.is_multiple_of(FLUSH) {
            let flushed = self.flushed.fetch_add(FLUSH, Ordering::AcqRel) + FLUSH;
            if flushed + Self::UNFLUSHED >= self.target.load(Ordering::Acquire) {
                self.waiter.unpark();
            }
        }
    }

    /// The exact count (the sum of the stripes).
    fn count(&self) -> u64 {
        self.stripes
            .iter()
            .map(|stripe| stripe.load(Ordering::Acquire))
            .sum()
    }

    /// Parks until `target` is within the unflushed reach, then polls the exact count
    /// (yielding) for the last few calls.
    fn wait_for(&self, target: u64) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.count() < target {
            assert!(Instant::now() < deadline, "the listener stalled");
            if self.flushed.load(Ordering::Acquire) + Self::UNFLUSHED >= target {
                thread::yield_now();
            } else {
                thread::park_timeout(Duration::from_millis(10));
            }
        }
    }
}

/// The executors of one variant, and how to stop them once the consumer is gone.
struct VariantExecutors {
    internal: Arc<dyn ConsumerExecutor>,
    listeners: Vec<Arc<dyn ConsumerExecutor>>,
    stop: Box<dyn FnOnce()>,
}

fn executors_for(variant: &str, listeners: usize) -> VariantExecutors {
    match variant {
        DELAY_HEAP => {
            let started: Vec<DelayHeapExecutor> = (0..=listeners)
                .map(|_| DelayHeapExecutor::start())
                .collect();
            let handles: Vec<Arc<dyn ConsumerExecutor>> = started
                .iter()
                .map(|e| Arc::new(ViaSubmit(e.handle())) as Arc<dyn ConsumerExecutor>)
                .collect();
            VariantExecutors {
                internal: Arc::clone(&handles[0]),
                listeners: handles[1..].to_vec(),
                stop: Box::new(move || started.into_iter().for_each(Executor::shutdown)),
            }
        }
        STD_MPSC => {
            let started: Vec<StdMpscExecutor> =
                (0..=listeners).map(|_| StdMpscExecutor::start()).collect();
            let handles: Vec<Arc<dyn ConsumerExecutor>> = started
                .iter()
                .map(|e| Arc::new(ViaSubmit(e.handle())) as Arc<dyn ConsumerExecutor>)
                .collect();
            VariantExecutors {
                internal: Arc::clone(&handles[0]),
                listeners: handles[1..].to_vec(),
                stop: Box::new(move || started.into_iter().for_each(Executor::shutdown)),
            }
        }
        PULSAR => {
            let started: Vec<SingleThreadExecutor> = (0..=listeners)
                .map(|_| PulsarExecutors::new_single_thread_executor())
                .collect();
            let handles: Vec<Arc<dyn ConsumerExecutor>> = started
                .iter()
                .map(|e| Arc::new(e.clone()) as Arc<dyn ConsumerExecutor>)
                .collect();
            VariantExecutors {
                internal: Arc::clone(&handles[0]),
                listeners: handles[1..].to_vec(),
                stop: Box::new(move || {
                    for executor in started {
                        executor.shutdown();
                        assert!(executor.await_termination(Duration::from_secs(10)));
                    }
                }),
            }
        }
        other => unreachable!("unknown variant {other}"),
    }
}

/// One consumer with a listener, on one variant's executors, fed by one feeder thread.
struct DispatchRig {
    consumer: Option<Consumer>,
    feeder: Option<Crew>,
    handled: Arc<Handled>,
    stop: Option<Box<dyn FnOnce()>>,
}

impl DispatchRig {
    fn start(variant: &str, subscription_type: SubscriptionType) -> Self {
        let listeners = match subscription_type {
            SubscriptionType::KeyShared => KEY_SHARED_LISTENERS,
            _ => 1,
        };
        let VariantExecutors {
            internal,
            listeners,
            stop,
        } = executors_for(variant, listeners);
        let handled = Arc::new(Handled::new());
        let counter = Arc::clone(&handled);
        let consumer = Consumer::new(
            ConsumerOptions::new("perf")
                .subscription_type(subscription_type)
                .message_listener(move |_: &Consumer, message: Message| {
                    std::hint::black_box(message);
                    counter.record();
                }),
            ConsumerExecutors::new(internal, listeners, 0),
        );
        let keys: Arc<Vec<String>> = Arc::new({
            let mut rng = 0x2545_F491_4F6C_DD1Du64;
            (0..KEYS)
                .map(|_| format!("{:016x}", xorshift(&mut rng)))
                .collect()
        });
        let feeding = consumer.clone();
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let feeder: Job = Box::new(move |iters: u64| {
            for _ in 0..iters {
                let key = &keys[(xorshift(&mut rng) % KEYS as u64) as usize];
                let message = Message::new([1u8]).with_key(key);
                if feeding.deliver(message).is_err() {
                    panic!("the consumer refused a message");
                }
            }
        });
        Self {
            consumer: Some(consumer),
            feeder: Some(Crew::spawn("feeder", vec![feeder])),
            handled,
            stop: Some(stop),
        }
    }

    /// Delivers `messages` as fast as the feeder can and waits until the listener handled
    /// them all; returns the wall time from the first delivery to the last listener call.
    fn run(&self, messages: u64) -> Duration {
        let target = self.handled.count() + messages;
        self.handled.target.store(target, Ordering::Release);
        let start = Instant::now();
        self.feeder.as_ref().expect("running").run(messages);
        self.handled.wait_for(target);
        start.elapsed()
    }

    fn shutdown(mut self) {
        drop(self.feeder.take());
        if let Some(consumer) = self.consumer.take() {
            assert!(consumer.close().is_empty(), "every message was handled");
        }
        if let Some(stop) = self.stop.take() {
            stop();
        }
    }
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

const SUBSCRIPTIONS: [SubscriptionType; 2] =
    [SubscriptionType::Shared, SubscriptionType::KeyShared];

/// Whether CPU burners run beside the consumer.
const OVERSUBSCRIBED: [bool; 2] = [false, true];

fn group_name(subscription_type: SubscriptionType, oversubscribed: bool) -> String {
    let name = match subscription_type {
        SubscriptionType::KeyShared => {
            format!("Key_Shared, {KEY_SHARED_LISTENERS} listener threads")
        }
        _ => "Shared, 1 listener thread".into(),
    };
    if oversubscribed {
        format!("{name}, oversubscribed")
    } else {
        name
    }
}

fn dispatch_meta() -> BenchMeta {
    let groups = |oversubscribed: bool| -> Vec<String> {
        SUBSCRIPTIONS
            .iter()
            .map(|&t| group_name(t, oversubscribed))
            .collect()
    };
    BenchMeta {
        bench: BENCH.into(),
        title: "Consumer read rate with a listener: one feeder thread, 1-byte random-key messages"
            .into(),
        description: format!(
            "Pulsar #16236's max-read-rate test without the broker: one feeder thread calls \
             `Consumer::deliver` (the call a connection makes) as fast as it can with 1-byte \
             messages keyed by one of {KEYS} random keys; one consumer with a listener that \
             counts (into per-thread striped counters, like pulsar-perf's LongAdder, so the \
             count itself is not a contended line). The consumer code is the same for every variant (receive queue, at most \
             one trigger job queued on the internal executor, one listener job per message, \
             to the pinned listener executor or, for Key_Shared, the one Murmur3 of the key \
             picks); only the executors differ: `delay_heap` = Java's one-thread \
             ScheduledThreadPoolExecutor (every `execute` boxed and pushed through a binary \
             delay heap under one lock, taken one at a time), i.e. Pulsar's client before \
             #16236; `std_mpsc` = std::sync::mpsc + boxed tasks + one thread; `pulsar` = \
             ours (PulsarExecutors). A sample delivers N messages and ends when the listener \
             has handled all N. msg/s = N / time. CPU, bytes and allocations are per message, \
             all threads but the CPU burners (a message keeps its 1-byte payload and 16-byte \
             key inline, so the feeder itself allocates nothing; what is left is the \
             executors' own). `oversubscribed`: {OVERSUBSCRIBING_BURNERS} threads burning CPU \
             (busy loops, no yields), {}, run beside the consumer, \
             started before and stopped after each variant's measurement, which begins after \
             the consumer has run 1 s beside them; their CPU time is left out of CPU ns/msg.",
            burners::placement()
        ),
        group_label: "subscription".into(),
        variant_label: "executors".into(),
        variants: VARIANTS.iter().map(|v| v.to_string()).collect(),
        baseline: Some(DELAY_HEAP.into()),
        subject: Some(PULSAR.into()),
        figures: vec![
            FigureSpec::new(MSG_PER_S, "messages handled by the listener per second", 0),
            FigureSpec::new(NS_PER_MSG, "wall time per message (median of samples)", 1),
            FigureSpec::new(
                CPU_NS_PER_MSG,
                "process CPU time (all threads but the CPU burners) per message",
                1,
            ),
            FigureSpec::new(ALLOCS_PER_MSG, "allocations per message, all threads", 2),
            FigureSpec::new(BYTES_PER_MSG, "bytes allocated per message, all threads", 1),
        ],
        ratio_figures: vec![
            NS_PER_MSG.into(),
            CPU_NS_PER_MSG.into(),
            BYTES_PER_MSG.into(),
        ],
        chart_figures: vec![NS_PER_MSG.into()],
        targets: vec![
            Target {
                description: "ours >= 4x delay_heap's msg/s (ns/msg <= 0.25x)".into(),
                figure: NS_PER_MSG.into(),
                against: Against::Baseline,
                max_ratio: 0.25,
                groups: groups(false),
            },
            Target {
                description:
                    "ours >= 1.5x the best peer's msg/s, i.e. std_mpsc's (ns/msg <= 0.667x)".into(),
                figure: NS_PER_MSG.into(),
                against: Against::BestPeer,
                max_ratio: 1.0 / 1.5,
                groups: groups(false),
            },
            Target {
                description: "oversubscribed: ours >= the best peer's msg/s (ns/msg <= 1.0x)"
                    .into(),
                figure: NS_PER_MSG.into(),
                against: Against::BestPeer,
                max_ratio: 1.0,
                groups: groups(true),
            },
        ],
        notes: vec![
            "Pulsar measured ~265k msg/s before #16236 and ~1M msg/s after (~3.8x), broker \
             included."
                .into(),
        ],
    }
}

fn consumer_dispatch(c: &mut Criterion) {
    let settings = Settings::from_env();
    report::declare(&dispatch_meta(), &settings).expect("write the bench report");
    let total =
        settings.rounds as usize * OVERSUBSCRIBED.len() * SUBSCRIPTIONS.len() * VARIANTS.len();
    let mut progress = Progress::new(BENCH, total);
    let mut group = c.benchmark_group(BENCH);
    settings.configure(&mut group);
    for round in 1..=settings.rounds {
        for oversubscribed in OVERSUBSCRIBED {
            for subscription_type in SUBSCRIPTIONS {
                for variant in VARIANTS {
                    dispatch_row(
                        &mut group,
                        &settings,
                        &mut progress,
                        (subscription_type, oversubscribed),
                        variant,
                        round,
                    );
                }
            }
        }
    }
    group.finish();
}

/// Measures one variant in one configuration and round, with CPU burners beside it if
/// `oversubscribed`.
fn dispatch_row(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    settings: &Settings,
    progress: &mut Progress,
    (subscription_type, oversubscribed): (SubscriptionType, bool),
    variant: &str,
    round: u32,
) {
    let id = format!(
        "{subscription_type:?}{}/{variant}/r{round}",
        if oversubscribed { "_over" } else { "" }
    );
    if !Settings::will_run(BENCH, &id) {
        // Listed, or filtered out (criterion skips it too): start nothing for it.
        group.bench_function(id, |b| b.iter(skipped_by_filter));
        return;
    }
    let burners = oversubscribed.then(|| CpuBurners::start(OVERSUBSCRIBING_BURNERS));
    let rig = DispatchRig::start(variant, subscription_type);
    if let Some(burners) = &burners {
        burners.settle(|n| rig.run(n));
    }
    let mut probe = Probe::new().excluding_cpu_of(burners.as_ref().map_or(&[], |b| b.clocks()));
    group.bench_function(id, |b| {
        b.iter_custom(|iters| probe.sample(iters, 1, None, |n| rig.run(n)))
    });
    rig.shutdown();
    if let Some(burners) = burners {
        burners.stop();
    }
    let Some(summary) = probe.summary(settings.sample_size) else {
        return; // filtered out or listed only
    };
    let ns = summary.wall_ns_per_iter;
    let group_name = group_name(subscription_type, oversubscribed);
    let row = Row {
        bench: BENCH.into(),
        group: group_name.clone(),
        variant: variant.into(),
        round,
        figures: vec![
            (MSG_PER_S.into(), Some(1e9 / ns)),
            (NS_PER_MSG.into(), Some(ns)),
            (CPU_NS_PER_MSG.into(), summary.cpu_ns_per_unit),
            (ALLOCS_PER_MSG.into(), Some(summary.allocations_per_unit)),
            (BYTES_PER_MSG.into(), Some(summary.bytes_per_unit)),
        ],
    };
    report::record(&row).expect("write the bench report");
    progress.step(format_args!(
        "{group_name} {variant:<10} round {round}/{}: {:>10.0} msg/s {:>8.1} ns/msg {:>8.1} CPU ns/msg {:>5.2} allocs/msg",
        settings.rounds,
        1e9 / ns,
        ns,
        summary.cpu_ns_per_unit.unwrap_or(f64::NAN),
        summary.allocations_per_unit,
    ));
}

// ---- scheduled_executor: the fast path and cancel -----------------------------------------

/// Our scheduled executor under the hand-off rig: `execute` (the FIFO fast path) or, with
/// `SCHEDULE`, `schedule(Duration::ZERO, ..)` (through the timer wheel).
struct ScheduledVia<const SCHEDULE: bool> {
    executor: ScheduledExecutor,
}

#[derive(Clone, Debug)]
struct ScheduledSubmit<const SCHEDULE: bool>(ScheduledExecutor);

impl<const SCHEDULE: bool> Executor for ScheduledVia<SCHEDULE> {
    const NAME: &'static str = if SCHEDULE {
        "scheduled_schedule_zero"
    } else {
        "scheduled_execute"
    };
    type Handle = ScheduledSubmit<SCHEDULE>;

    fn start() -> Self {
        let executor = ScheduledExecutor::new(NamedThreadFactory::new("scheduled-bench"));
        // The worker starts lazily: start it now, as the peers' workers are.
        executor
            .schedule(Duration::ZERO, || ())
            .expect("a new executor accepts tasks")
            .join()
            .expect("the first task ran");
        Self { executor }
    }

    fn handle(&self) -> Self::Handle {
        ScheduledSubmit(self.executor.clone())
    }

    fn queue_capacity(&self) -> Option<usize> {
        Some(self.executor.queue_capacity())
    }

    fn shutdown(self) {
        self.executor.shutdown();
        assert!(self.executor.await_termination(Duration::from_secs(10)));
    }
}

impl<const SCHEDULE: bool> Submit for ScheduledSubmit<SCHEDULE> {
    #[inline]
    fn execute<F: FnOnce() + Send + 'static>(&self, task: F) {
        let accepted = if SCHEDULE {
            self.0.schedule(Duration::ZERO, task).is_ok()
        } else {
            self.0.execute(task).is_ok()
        };
        assert!(accepted, "the scheduled executor rejected a task");
    }
}

impl<const SCHEDULE: bool> fmt::Debug for ScheduledVia<SCHEDULE> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduledVia")
            .field("schedule", &SCHEDULE)
            .finish()
    }
}

const HANDOFF_TASKS: usize = 256;
const TIMERS: u64 = 1_000_000;
const PLAIN_EXECUTE: &str = "plain_execute";
const SCHEDULED_EXECUTE: &str = "scheduled_execute";
const LAZY_CANCEL_HEAP: &str = "lazy_cancel_heap";
/// Ours, in every group of the timer targets' report.
const SCHEDULED: &str = "scheduled";
const NS_PER_TASK: &str = "ns/task";
const ALLOCS_PER_TASK: &str = "allocs/task";
const NS_PER_TIMER: &str = "ns/timer";
const ENTRIES_LEFT: &str = "entries left";
const SLOTS_LEFT: &str = "timer slots left";
const PEAK_SLOTS: &str = "peak timer slots";

fn handoff_group() -> String {
    format!("execute hand-off, K={HANDOFF_TASKS}, 1 submitter")
}

fn timers_group() -> String {
    format!("{TIMERS} timers scheduled (1 h) then cancelled")
}

fn schedule_zero_group() -> String {
    format!("schedule(0) hand-off, K={HANDOFF_TASKS}, 1 submitter")
}

fn timers_meta() -> BenchMeta {
    BenchMeta {
        bench: TIMERS_BENCH.into(),
        title: "Scheduled executor: the execute fast path".into(),
        description: format!(
            "Hand-off: the executor_handoff workload (a batch of K tasks counting down a latch, \
             then wait) from one submitter into `plain_execute` = PulsarExecutors' \
             single-thread executor, `scheduled_execute` = ScheduledExecutor::execute (the \
             FIFO fast path). The timers (schedule(0), schedule + cancel, lateness) are in the \
             `{TIMER_TARGETS_BENCH}` report."
        ),
        group_label: "workload".into(),
        variant_label: "executor".into(),
        variants: vec![PLAIN_EXECUTE.into(), SCHEDULED_EXECUTE.into()],
        baseline: Some(PLAIN_EXECUTE.into()),
        subject: Some(SCHEDULED_EXECUTE.into()),
        figures: vec![
            FigureSpec::new(
                NS_PER_TASK,
                "wall time per task handed off (median of samples)",
                1,
            ),
            FigureSpec::new(ALLOCS_PER_TASK, "allocations per task, net of the latch", 3),
        ],
        ratio_figures: vec![NS_PER_TASK.into()],
        chart_figures: vec![NS_PER_TASK.into()],
        targets: vec![Target {
            description: "ScheduledExecutor::execute within 1.2x the plain executor's hand-off"
                .into(),
            figure: NS_PER_TASK.into(),
            against: Against::Baseline,
            max_ratio: 1.2,
            groups: vec![handoff_group()],
        }],
        notes: Vec::new(),
    }
}

/// The timer targets (issue 15, target 3): ours (`scheduled`, the subject of every group)
/// against the one Java-style peer of each group, so each target's ratio is "ours / the peer"
/// of the same round.
fn timer_targets_meta() -> BenchMeta {
    BenchMeta {
        bench: TIMER_TARGETS_BENCH.into(),
        title: "Scheduled executor timers against Java-style delay heaps".into(),
        description: format!(
            "`{SCHEDULED}` = our ScheduledExecutor, in every group. schedule(0): the \
             executor_handoff workload (K={HANDOFF_TASKS} tasks counting down a latch, then \
             wait) through ScheduledExecutor::schedule(Duration::ZERO, ..) against \
             `{DELAY_HEAP}` = a Java-style one-thread ScheduledThreadPoolExecutor (every task \
             boxed into its delay heap). Cancel: {TIMERS} one-hour timers armed, then all \
             cancelled, on one thread: ours (cancel unlinks the entry and drops the closure at \
             once) against `{LAZY_CANCEL_HEAP}` (Java's default and scheduled-thread-pool's: \
             cancel sets a flag; the entry stays in the heap until its deadline; like Java's \
             `schedule(delay)`, each schedule reads the clock for its deadline). Lateness: \
             {LATE_TIMERS} timers due 0-{spread} ms ahead while a loader thread keeps the \
             worker busy with batches of {LOAD_BATCH} immediate tasks of ~1 us each; lateness \
             = when the timer ran minus its deadline (never negative: nothing runs early), \
             ours against `{DELAY_HEAP}`.",
            spread = LATE_SPREAD.as_millis()
        ),
        group_label: "workload".into(),
        variant_label: "executor".into(),
        variants: vec![SCHEDULED.into(), DELAY_HEAP.into(), LAZY_CANCEL_HEAP.into()],
        baseline: None,
        subject: Some(SCHEDULED.into()),
        figures: vec![
            FigureSpec::new(
                NS_PER_TASK,
                "wall time per task handed off (median of samples)",
                1,
            ),
            FigureSpec::new(ALLOCS_PER_TASK, "allocations per task, net of the latch", 3),
            FigureSpec::new(NS_PER_TIMER, "wall time per timer, schedule + cancel", 1),
            FigureSpec::new(ENTRIES_LEFT, "entries still held after every cancel", 0),
            FigureSpec::new(
                SLOTS_LEFT,
                "timer slots still allocated after every cancel",
                0,
            ),
            FigureSpec::new(PEAK_SLOTS, "timer slots at the peak", 0),
            FigureSpec::new(
                P50_LATE,
                "median timer lateness (fire time - deadline), us",
                0,
            ),
            FigureSpec::new(P99_LATE, "99th percentile timer lateness, us", 0),
            FigureSpec::new(MAX_LATE, "largest timer lateness, us", 0),
        ],
        ratio_figures: vec![
            NS_PER_TASK.into(),
            NS_PER_TIMER.into(),
            P50_LATE.into(),
            P99_LATE.into(),
        ],
        chart_figures: vec![NS_PER_TIMER.into()],
        targets: vec![
            Target {
                description: "schedule + cancel <= 1.0x the lazy-cancel heap's time per timer \
                              (ours still frees entry and closure at once)"
                    .into(),
                figure: NS_PER_TIMER.into(),
                against: Against::BestPeer,
                max_ratio: 1.0,
                groups: vec![timers_group()],
            },
            Target {
                description: "timer lateness p50 under a busy worker <= 1.0x the delay heap's"
                    .into(),
                figure: P50_LATE.into(),
                against: Against::BestPeer,
                max_ratio: 1.0,
                groups: vec![lateness_group()],
            },
            Target {
                description: "timer lateness p99 under a busy worker <= 1.0x the delay heap's"
                    .into(),
                figure: P99_LATE.into(),
                against: Against::BestPeer,
                max_ratio: 1.0,
                groups: vec![lateness_group()],
            },
            Target {
                description: "schedule(Duration::ZERO) <= 1.0x the delay heap's time per task"
                    .into(),
                figure: NS_PER_TASK.into(),
                against: Against::BestPeer,
                max_ratio: 1.0,
                groups: vec![schedule_zero_group()],
            },
        ],
        notes: vec![format!(
            "Cancel: ours must end with 0 entries after {TIMERS} schedule + cancel; its timer \
             slots are the wheel's 576 list heads at most, whatever the number of timers (the \
             wheel links the entries themselves)."
        )],
    }
}

/// One hand-off configuration row for executor `E` in `round`.
fn handoff_row<E: Executor>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    settings: &Settings,
    progress: &mut Progress,
    (bench, workload, id): (&str, String, &str),
    variant: &str,
    round: u32,
) {
    let bench_id = format!("{id}/{variant}/r{round}");
    // Criterion names the benchmark after the group it is registered in (every hand-off row
    // is in `TIMERS_BENCH`'s), not after the report's bench the row is recorded under.
    if !Settings::will_run(TIMERS_BENCH, &bench_id) {
        // Listed, or filtered out (criterion skips it too): start nothing for it.
        group.bench_function(bench_id, |b| b.iter(skipped_by_filter));
        return;
    }
    let latch = handoff::latch_cost();
    let rig = HandoffRig::<E>::start(1, HANDOFF_TASKS);
    let mut probe = Probe::new();
    group.bench_function(bench_id, |b| {
        b.iter_custom(|iters| probe.sample(iters, rig.batches_per_iter(), None, |n| rig.run(n)))
    });
    rig.shutdown();
    let Some(summary) = probe.summary(settings.sample_size) else {
        return;
    };
    let ns = summary.wall_ns_per_iter / HANDOFF_TASKS as f64;
    let allocs = (summary.allocations_per_unit - latch.allocations as f64) / HANDOFF_TASKS as f64;
    report::record(&Row {
        bench: bench.into(),
        group: workload,
        variant: variant.into(),
        round,
        figures: vec![
            (NS_PER_TASK.into(), Some(ns)),
            (ALLOCS_PER_TASK.into(), Some(allocs)),
        ],
    })
    .expect("write the bench report");
    progress.step(format_args!(
        "hand-off {variant:<24} round {round}/{}: {ns:>7.1} ns/task {allocs:>6.3} allocs/task",
        settings.rounds
    ));
}

/// Java's lazy cancel: the flag is set, the entry stays in the heap until its deadline.
struct LazyEntry {
    cancelled: AtomicBool,
    task: Mutex<Option<BoxedTask>>,
}

struct LazyNode(Instant, u64, Arc<LazyEntry>);

impl PartialEq for LazyNode {
    fn eq(&self, other: &Self) -> bool {
        (self.0, self.1) == (other.0, other.1)
    }
}
impl Eq for LazyNode {}
impl PartialOrd for LazyNode {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for LazyNode {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.0, other.1).cmp(&(self.0, self.1))
    }
}

/// Figures of one timer run: (entries left, heap slots left, peak heap slots).
type TimerFigures = (u64, u64, u64);

/// Arms and cancels the timers; returns the time that took (set-up and tear-down excluded)
/// and the figures.
fn lazy_cancel_run() -> (Duration, TimerFigures) {
    let mut heap = Mutex::new(BinaryHeap::<LazyNode>::new());
    let mut entries = Vec::with_capacity(TIMERS as usize);
    let start = Instant::now();
    for seq in 0..TIMERS {
        // As Java's `schedule(delay)` (its `triggerTime` reads `System.nanoTime()`) and ours:
        // a relative delay becomes a deadline when the timer is scheduled.
        let deadline = Instant::now() + Duration::from_secs(3600);
        let entry = Arc::new(LazyEntry {
            cancelled: AtomicBool::new(false),
            task: Mutex::new(Some(Box::new(|| ()) as BoxedTask)),
        });
        heap.lock()
            .unwrap()
            .push(LazyNode(deadline, seq, Arc::clone(&entry)));
        entries.push(entry);
    }
    let peak = heap.get_mut().unwrap().capacity() as u64;
    for entry in entries.drain(..) {
        entry.cancelled.store(true, Ordering::Release);
    }
    let elapsed = start.elapsed();
    let heap = heap.get_mut().unwrap();
    // Every cancelled entry is still there, holding its closure, until its deadline.
    let left = heap
        .iter()
        .filter(|node| node.2.cancelled.load(Ordering::Acquire))
        .filter(|node| node.2.task.lock().unwrap().is_some())
        .count() as u64;
    let slots = heap.capacity() as u64;
    (elapsed, (left, slots, peak))
}

/// As [`lazy_cancel_run`], on our scheduled executor.
fn scheduled_cancel_run() -> (Duration, TimerFigures) {
    let executor = ScheduledExecutor::new(NamedThreadFactory::new("timer-bench"));
    let mut handles = Vec::with_capacity(TIMERS as usize);
    let start = Instant::now();
    for _ in 0..TIMERS {
        handles.push(
            executor
                .schedule(Duration::from_secs(3600), || ())
                .expect("accepted"),
        );
    }
    let peak = executor.timer_capacity() as u64;
    for handle in handles.drain(..) {
        assert!(handle.cancel());
    }
    let elapsed = start.elapsed();
    let figures = (
        executor.pending_tasks() as u64,
        executor.timer_capacity() as u64,
        peak,
    );
    drop(executor.shutdown_now());
    assert!(executor.await_termination(Duration::from_secs(10)));
    (elapsed, figures)
}

fn timer_row(variant: &str, round: u32, settings: &Settings, progress: &mut Progress) {
    let run: fn() -> (Duration, TimerFigures) = if variant == LAZY_CANCEL_HEAP {
        lazy_cancel_run
    } else {
        scheduled_cancel_run
    };
    let mut figures = (0, 0, 0);
    let mut probe = Probe::new();
    probe.sample(1, TIMERS, None, |_| {
        let (elapsed, measured) = run();
        figures = measured;
        elapsed
    });
    let summary = probe.summary(1).expect("one sample");
    let (left, slots, peak) = figures;
    report::record(&Row {
        bench: TIMER_TARGETS_BENCH.into(),
        group: timers_group(),
        variant: variant.into(),
        round,
        figures: vec![
            (NS_PER_TIMER.into(), Some(summary.wall_ns_per_unit)),
            (ENTRIES_LEFT.into(), Some(left as f64)),
            (SLOTS_LEFT.into(), Some(slots as f64)),
            (PEAK_SLOTS.into(), Some(peak as f64)),
        ],
    })
    .expect("write the bench report");
    progress.step(format_args!(
        "timers {variant:<24} round {round}/{}: {:>7.1} ns/timer, {left} entries and {slots} \
         slots left (peak {peak})",
        settings.rounds, summary.wall_ns_per_unit
    ));
}

// ---- timer lateness under load ------------------------------------------------------------

const LATE_TIMERS: usize = 2_000;
/// Timers are due between now and this far ahead, spread evenly.
const LATE_SPREAD: Duration = Duration::from_millis(20);
/// Immediate tasks the load keeps queued (a batch is awaited before the next is queued).
const LOAD_BATCH: usize = 64;
/// Work per immediate task of the load.
const LOAD_TASK: Duration = Duration::from_micros(1);
const P50_LATE: &str = "p50 late us";
const P99_LATE: &str = "p99 late us";
const MAX_LATE: &str = "max late us";

fn lateness_group() -> String {
    format!(
        "lateness of {LATE_TIMERS} timers (0-{} ms) under a busy worker",
        LATE_SPREAD.as_millis()
    )
}

/// A task of the load: `LOAD_TASK` of work.
fn busy_task(done: Arc<microbench::latch::CountdownLatch>) -> impl FnOnce() + Send + 'static {
    move || {
        let start = Instant::now();
        while start.elapsed() < LOAD_TASK {
            std::hint::spin_loop();
        }
        done.count_down();
    }
}

/// Schedules the timers while a loader thread keeps the worker busy with batches of immediate
/// tasks; returns each timer's lateness (fire time minus deadline), sorted, in microseconds.
fn lateness_run(variant: &str) -> Vec<f64> {
    type Execute = Box<dyn Fn(BoxedTask) + Send + Sync>;
    type Schedule = Box<dyn Fn(Duration, BoxedTask) + Send + Sync>;
    let (execute, schedule, stop): (Execute, Schedule, Box<dyn FnOnce()>) = if variant == SCHEDULED
    {
        let executor = ScheduledExecutor::new(NamedThreadFactory::new("lateness"));
        let (a, b) = (executor.clone(), executor.clone());
        (
            Box::new(move |task| a.execute(task).expect("accepted")),
            Box::new(move |delay, task| drop(b.schedule(delay, task).expect("accepted"))),
            Box::new(move || {
                executor.shutdown();
                assert!(executor.await_termination(Duration::from_secs(10)));
            }),
        )
    } else {
        let executor = DelayHeapExecutor::start();
        let (a, b) = (executor.handle(), executor.handle());
        (
            Box::new(move |task| assert!(a.execute_boxed(task))),
            Box::new(move |delay, task| assert!(b.schedule(delay, task))),
            Box::new(move || executor.shutdown()),
        )
    };
    let execute: Arc<Execute> = Arc::new(execute);
    let stopping = Arc::new(AtomicBool::new(false));
    let loader = {
        let (execute, stopping) = (Arc::clone(&execute), Arc::clone(&stopping));
        thread::spawn(move || {
            while !stopping.load(Ordering::Acquire) {
                let done = Arc::new(microbench::latch::CountdownLatch::new(LOAD_BATCH));
                for _ in 0..LOAD_BATCH {
                    execute(Box::new(busy_task(Arc::clone(&done))));
                }
                assert!(done.wait_timeout(Duration::from_secs(30)), "load stalled");
            }
        })
    };
    let lateness = Arc::new(Mutex::new(Vec::with_capacity(LATE_TIMERS)));
    let all_fired = Arc::new(microbench::latch::CountdownLatch::new(LATE_TIMERS));
    for i in 0..LATE_TIMERS {
        let delay = LATE_SPREAD * i as u32 / LATE_TIMERS as u32;
        let deadline = Instant::now() + delay;
        let (lateness, all_fired) = (Arc::clone(&lateness), Arc::clone(&all_fired));
        schedule(
            delay,
            Box::new(move || {
                let late = Instant::now().saturating_duration_since(deadline);
                lateness.lock().unwrap().push(late.as_secs_f64() * 1e6);
                all_fired.count_down();
            }),
        );
    }
    assert!(
        all_fired.wait_timeout(Duration::from_secs(60)),
        "timers stalled"
    );
    stopping.store(true, Ordering::Release);
    loader.join().expect("the loader panicked");
    drop(execute);
    drop(schedule);
    stop();
    let mut lateness = std::mem::take(&mut *lateness.lock().unwrap());
    lateness.sort_by(f64::total_cmp);
    lateness
}

fn lateness_row(variant: &str, round: u32, settings: &Settings, progress: &mut Progress) {
    let lateness = lateness_run(variant);
    let at = |q: f64| lateness[((lateness.len() - 1) as f64 * q).round() as usize];
    let (p50, p99, max) = (at(0.5), at(0.99), at(1.0));
    report::record(&Row {
        bench: TIMER_TARGETS_BENCH.into(),
        group: lateness_group(),
        variant: variant.into(),
        round,
        figures: vec![
            (P50_LATE.into(), Some(p50)),
            (P99_LATE.into(), Some(p99)),
            (MAX_LATE.into(), Some(max)),
        ],
    })
    .expect("write the bench report");
    progress.step(format_args!(
        "lateness {variant:<22} round {round}/{}: p50 {p50:.0} us, p99 {p99:.0} us, max {max:.0} us",
        settings.rounds
    ));
}

fn scheduled_executor(c: &mut Criterion) {
    let settings = Settings::from_env();
    report::declare(&timers_meta(), &settings).expect("write the bench report");
    report::declare(&timer_targets_meta(), &settings).expect("write the bench report");
    let mut progress = Progress::new(TIMERS_BENCH, settings.rounds as usize * 8);
    let mut group = c.benchmark_group(TIMERS_BENCH);
    settings.configure(&mut group);
    let run_timers = !Settings::is_dry_run() && timers_selected();
    for round in 1..=settings.rounds {
        let execute = (TIMERS_BENCH, handoff_group(), "handoff");
        handoff_row::<PulsarExecutor>(
            &mut group,
            &settings,
            &mut progress,
            execute.clone(),
            PLAIN_EXECUTE,
            round,
        );
        handoff_row::<ScheduledVia<false>>(
            &mut group,
            &settings,
            &mut progress,
            execute,
            SCHEDULED_EXECUTE,
            round,
        );
        let schedule_zero = (TIMER_TARGETS_BENCH, schedule_zero_group(), "schedule_zero");
        handoff_row::<ScheduledVia<true>>(
            &mut group,
            &settings,
            &mut progress,
            schedule_zero.clone(),
            SCHEDULED,
            round,
        );
        handoff_row::<DelayHeapExecutor>(
            &mut group,
            &settings,
            &mut progress,
            schedule_zero,
            DELAY_HEAP,
            round,
        );
        if run_timers {
            timer_row(LAZY_CANCEL_HEAP, round, &settings, &mut progress);
            timer_row(SCHEDULED, round, &settings, &mut progress);
            lateness_row(DELAY_HEAP, round, &settings, &mut progress);
            lateness_row(SCHEDULED, round, &settings, &mut progress);
        }
    }
    group.finish();
}

/// The timer runs are not criterion benchmarks: they run unless the benchmark filter on the
/// command line excludes `scheduled_executor/timers` (read as criterion reads it).
fn timers_selected() -> bool {
    Settings::will_run(TIMERS_BENCH, "timers")
}

criterion_group! {
    name = benches;
    config = Settings::from_env().criterion();
    targets = consumer_dispatch, scheduled_executor
}
criterion_main!(benches);
