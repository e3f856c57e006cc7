//! `consumer_receive`: a `deliver` -> `receive` ping-pong through `pulsar_client::Consumer`
//! (its receive queue is our `GrowableArrayBlockingQueue`) against the same receive path on a
//! crossbeam-channel receive queue; also beside two CPU hogs.

use criterion::{criterion_group, criterion_main, Criterion};
use microbench::alloc::CountingAllocator;
use microbench::burners::{self, CpuBurners};
use microbench::crew::{Crew, Job};
use microbench::report::{self, Against, BenchMeta, FigureSpec, Row, Target};
use microbench::settings::skipped_by_filter;
use microbench::{Probe, Progress, Settings};
use pulsar_client::{
    Consumer, ConsumerExecutor, ConsumerExecutors, ConsumerOptions, DeliverError, Message,
    ReceiveError,
};
use pulsar_common::executors::{PulsarExecutors, SingleThreadExecutor};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

const BENCH: &str = "consumer_receive";

const NS_PER_ROUND_TRIP: &str = "ns/round trip";
const ALLOCS_PER_ROUND_TRIP: &str = "allocs/round trip";

/// CPU hogs beside the `+ hogs` configuration (the machine has 2 cores).
const HOGS: usize = 2;
/// The configurations, in report order: CPU hogs beside the ping-pong.
const CONFIGURATIONS: [usize; 2] = [0, HOGS];

/// A consumer's receive path: what a connection calls for each message, and what the
/// application calls to read it.
trait ReceivePath: Send + Sync + 'static {
    /// The name in reports.
    const NAME: &'static str;

    /// A new consumer without a listener.
    fn start() -> Self;

    /// Queues `message` for `receive`.
    fn deliver(&self, message: Message) -> Result<(), DeliverError>;

    /// Takes the next message, waiting for one.
    fn receive(&self) -> Result<Message, ReceiveError>;

    /// Closes the consumer (after a configuration).
    fn close(&self);
}

/// Ours: `pulsar_client::Consumer` without a listener, on one (never started) executor.
struct OurConsumer {
    consumer: Consumer,
    executor: SingleThreadExecutor,
}

impl ReceivePath for OurConsumer {
    const NAME: &'static str = "pulsar";

    fn start() -> Self {
        let executor = PulsarExecutors::new_single_thread_executor();
        let handle: Arc<dyn ConsumerExecutor> = Arc::new(executor.clone());
        let consumer = Consumer::new(
            ConsumerOptions::new("receive-bench"),
            ConsumerExecutors::new(Arc::clone(&handle), vec![handle], 0),
        );
        Self { consumer, executor }
    }

    #[inline]
    fn deliver(&self, message: Message) -> Result<(), DeliverError> {
        self.consumer.deliver(message)
    }

    #[inline]
    fn receive(&self) -> Result<Message, ReceiveError> {
        self.consumer.receive()
    }

    fn close(&self) {
        assert!(
            self.consumer.close().is_empty(),
            "every message was received"
        );
        self.executor.shutdown();
    }
}

/// The same receive path on a crossbeam-channel receive queue: `deliver` refuses once closed
/// and then queues, `receive` refuses when a listener is set and then takes — the checks
/// `Consumer` makes around its queue.
struct CrossbeamConsumer {
    sender: crossbeam_channel::Sender<Message>,
    receiver: crossbeam_channel::Receiver<Message>,
    closed: AtomicBool,
    has_listener: bool,
}

impl ReceivePath for CrossbeamConsumer {
    const NAME: &'static str = "crossbeam";

    fn start() -> Self {
        let (sender, receiver) = crossbeam_channel::unbounded();
        Self {
            sender,
            receiver,
            closed: AtomicBool::new(false),
            has_listener: false,
        }
    }

    #[inline]
    fn deliver(&self, message: Message) -> Result<(), DeliverError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(DeliverError::Closed(message));
        }
        self.sender
            .send(message)
            .map_err(|rejected| DeliverError::Closed(rejected.into_inner()))
    }

    #[inline]
    fn receive(&self) -> Result<Message, ReceiveError> {
        if self.has_listener {
            return Err(ReceiveError::ListenerSet);
        }
        self.receiver.recv().map_err(|_| ReceiveError::Closed)
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        assert!(self.receiver.is_empty(), "every message was received");
    }
}

/// Two consumers and two threads: the origin delivers one message to the first consumer and
/// receives it back from the second; the echo receives from the first and delivers to the
/// second. One iteration is one round trip (two hand-offs to a thread blocked in `receive`).
struct PingPongRig<C: ReceivePath> {
    crew: Crew,
    consumers: [Arc<C>; 2],
}

impl<C: ReceivePath> PingPongRig<C> {
    fn start() -> Self {
        let to_echo = Arc::new(C::start());
        let to_origin = Arc::new(C::start());
        let origin: Job = {
            let (to_echo, to_origin) = (Arc::clone(&to_echo), Arc::clone(&to_origin));
            // One message (payload inline: nothing allocated per hop) travels back and forth.
            let mut message = Some(Message::new([1u8]));
            Box::new(move |iters: u64| {
                for _ in 0..iters {
                    let outgoing = message.take().expect("the message is back");
                    if to_echo.deliver(outgoing).is_err() {
                        panic!("the echo's consumer refused a message");
                    }
                    message = Some(to_origin.receive().expect("the consumer is open"));
                }
                black_box(&message);
            })
        };
        let echo: Job = {
            let (to_echo, to_origin) = (Arc::clone(&to_echo), Arc::clone(&to_origin));
            Box::new(move |iters: u64| {
                for _ in 0..iters {
                    let message = to_echo.receive().expect("the consumer is open");
                    if to_origin.deliver(message).is_err() {
                        panic!("the origin's consumer refused a message");
                    }
                }
            })
        };
        Self {
            crew: Crew::spawn(&format!("{}-receive", C::NAME), vec![origin, echo]),
            consumers: [to_echo, to_origin],
        }
    }

    fn run(&self, iters: u64) -> Duration {
        self.crew.run(iters)
    }

    fn shutdown(self) {
        drop(self.crew);
        for consumer in &self.consumers {
            consumer.close();
        }
    }
}

fn group_name(hogs: usize) -> String {
    match hogs {
        0 => "ping-pong".into(),
        n => format!("ping-pong + {n} hogs"),
    }
}

fn meta() -> BenchMeta {
    BenchMeta {
        bench: BENCH.into(),
        title: "Consumer receive path: a deliver -> receive ping-pong".into(),
        description: format!(
            "One message in flight between two threads through two consumers without \
            a listener: the origin calls `deliver` on the first and `receive` on the second, \
            the echo `receive` on the first and `deliver` on the second. `ns/round trip` is \
            wall time per round trip (two hand-offs, each to a thread blocked in `receive`; \
            median of samples). `pulsar` is `pulsar_client::Consumer` (receive queue: \
            `GrowableArrayBlockingQueue`); `crossbeam` makes the same checks around a \
            crossbeam-channel unbounded queue. `+ 2 hogs`: two threads of the bench process \
            burn CPU throughout on the 2-core machine, {}; the ping-pong runs 1 s beside \
            them before it is measured.",
            burners::placement()
        ),
        group_label: "workload".into(),
        variant_label: "receive queue".into(),
        variants: vec![CrossbeamConsumer::NAME.into(), OurConsumer::NAME.into()],
        baseline: Some(CrossbeamConsumer::NAME.into()),
        subject: Some(OurConsumer::NAME.into()),
        figures: vec![
            FigureSpec::new(NS_PER_ROUND_TRIP, "wall time per round trip", 1),
            FigureSpec::new(ALLOCS_PER_ROUND_TRIP, "allocations per round trip", 3),
        ],
        ratio_figures: vec![NS_PER_ROUND_TRIP.into()],
        chart_figures: vec![NS_PER_ROUND_TRIP.into()],
        targets: vec![Target {
            description: "ours <= 1.0x the same consumer on a crossbeam receive queue".into(),
            figure: NS_PER_ROUND_TRIP.into(),
            against: Against::Baseline,
            max_ratio: 1.0,
            groups: CONFIGURATIONS
                .iter()
                .map(|&hogs| group_name(hogs))
                .collect(),
        }],
        notes: Vec::new(),
    }
}

/// Measures one variant in one configuration and round; records its row.
fn measure<C: ReceivePath>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    progress: &mut Progress,
    settings: &Settings,
    round: u32,
    hogs: usize,
) {
    let id = format!("hogs{hogs}/{}/r{round}", C::NAME);
    if !Settings::will_run(BENCH, &id) {
        // Listed, or filtered out (criterion skips it too): start nothing for it.
        group.bench_function(id, |b| b.iter(skipped_by_filter));
        return;
    }
    let burning = CpuBurners::start(hogs);
    let rig = PingPongRig::<C>::start();
    burning.settle(|n| rig.run(n));
    let mut probe = Probe::new().excluding_cpu_of(burning.clocks());
    group.bench_function(id, |b| {
        b.iter_custom(|iters| probe.sample(iters, 1, None, |n| rig.run(n)))
    });
    rig.shutdown();
    drop(burning);
    let Some(summary) = probe.summary(settings.sample_size) else {
        return; // filtered out or listed only
    };
    let row = Row {
        bench: BENCH.into(),
        group: group_name(hogs),
        variant: C::NAME.into(),
        round,
        figures: vec![
            (NS_PER_ROUND_TRIP.into(), Some(summary.wall_ns_per_iter)),
            (
                ALLOCS_PER_ROUND_TRIP.into(),
                Some(summary.allocations_per_unit),
            ),
        ],
    };
    report::record(&row).expect("write the bench report");
    progress.step(format_args!(
        "{} {:<10} round {}/{}: {:>9.1} ns/round trip {:>6.3} allocs/round trip",
        group_name(hogs),
        C::NAME,
        round,
        settings.rounds,
        summary.wall_ns_per_iter,
        summary.allocations_per_unit,
    ));
}

fn consumer_receive(c: &mut Criterion) {
    let settings = Settings::from_env();
    report::declare(&meta(), &settings).expect("write the bench report");
    let total = settings.rounds as usize * CONFIGURATIONS.len() * 2;
    let mut progress = Progress::new(BENCH, total);
    let mut group = c.benchmark_group(BENCH);
    settings.configure(&mut group);
    for round in 1..=settings.rounds {
        for hogs in CONFIGURATIONS {
            measure::<CrossbeamConsumer>(&mut group, &mut progress, &settings, round, hogs);
            measure::<OurConsumer>(&mut group, &mut progress, &settings, round, hogs);
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Settings::from_env().criterion();
    targets = consumer_receive
}
criterion_main!(benches);
