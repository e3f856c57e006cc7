//! `IdleSpin`: whether a thread about to park (an idle executor worker, a queue taker) spins
//! for work first, decided by whether spinning has been winning on its thread, never yielding
//! its core mid-spin; and, once spinning has stopped winning, a few yields before it parks.
//! One policy for every waiter in the crate.
//!
//! # Design
//!
//! A worker that finds its queue empty can park at once (a producer then pays a wake-up
//! system call and the worker a wake-up latency of tens of microseconds on a busy VM) or spin
//! on its work hint, which wins whenever work arrives within the spin. On a quiet machine a
//! spin of tens of microseconds wins nearly always: the producer runs on the other core. On a
//! machine with more busy threads than cores it loses, in two ways:
//!
//! - **It can keep the producer off the core.** A thread woken by the worker (the submitter
//!   whose batch just completed) may be queued on the worker's own core when no core is
//!   idle, where the running spinner need not give way before its slice ends: the work the
//!   spinner waits for is then not produced until it gives up.
//! - **It loses its core.** The spinner is a CPU hog to the scheduler; it is preempted for a
//!   whole time slice (milliseconds) of another busy thread. A warm worker's spin therefore
//!   never yields.
//!
//! Both show as spins that run out (or, for the second, as a gap of [`PREEMPTED_GAP`] between
//! two looks at the clock). So the policy keeps a score of recent full spins: a win adds
//! one, a spin that runs out takes two away (full spinning pays while it wins two spins in
//! three), a preempted spin takes it all. While the score is positive the worker spins up to
//! [`MAX_SPIN`] (or the caller's cap); at zero it is *cold*: it spins only [`SHORT_SPIN`],
//! which still catches a producer that is running right now (one still pushing the batch the
//! worker drains), and now and then it tries a full spin again: a probe that wins warms the
//! worker up to [`WARM_SCORE`].
//!
//! The first probe is due at once; after a probe that loses the next is due [`PROBE_EVERY`]
//! later, and each further loss in a row doubles that wait, up to [`MAX_PROBE_EVERY`]; a probe
//! that wins, or any other spin or look that sees work, brings it back to [`PROBE_EVERY`]. So a
//! worker whose work comes too sparsely for any spin to win (an executor given a task every few
//! milliseconds, a consumer between messages) ends up paying one [`MAX_SPIN`] per
//! [`MAX_PROBE_EVERY`], not one per [`PROBE_EVERY`] (and none once its parks are longer than a
//! spin: the streak rule below); a worker whose producer comes back to life
//! notices it at its next short spin and probes at its next wait. Measured on an AMD EPYC host
//! (2 vCPUs, Linux 6.18, 2026-12-02) with a throwaway probe (one task every 5 ms, the worker's
//! CPU time per task, quiet machine): 59 us with a probe every 2 ms, 15.5 us with the back-off
//! to 64 ms (11.5 us with 128 ms; std's mpsc receiver 4.4 us: it parks after a few
//! microseconds). With the yield rule below, the hand-off bench's `sparse` row (one task, then
//! a 1 ms pause) went from 38.6 to 7.5 us of worker CPU per batch (medians of 6 alternated
//! processes; std_mpsc 7.2, flume 5.2, crossbeam 12.4). The cost of the back-off is in the
//! other direction: a worker that went cold in a sparse phase and then gets work at intervals
//! that only a full spin bridges (10 to 50 us, with no short spin winning meanwhile) parks on
//! every wait until its next probe, at most [`MAX_PROBE_EVERY`] later.
//!
//! A probe's time brings a probe only if [`PROBE_STREAK`] waits in a row ended within a
//! spin's reach: a short spin, look or yield saw work, the work was found right after the spin
//! gave up, or the park lasted less than [`SHORT_PARK`] (the callers report their wake-ups,
//! [`note_woken`]); a longer park starts the count over. Without such a streak the probe is
//! skipped: the pace moves on as after a lost probe. (Until 2026-12-03 a skipped probe also
//! gave short spins and yields one more try each, so that yields, which win beside CPU hogs,
//! would not stay stopped for lack of probes. That cost the sparse worker about 0.45 us of its
//! ~6.3 us per wait; without it, 60 rounds each in 10 alternated processes on the AMD EPYC
//! host: the `sparse` row's worker CPU per batch 6.31 -> 5.86 us, ours ÷ the best peer 1.17x
//! -> 1.06x, and a build that never spins or yields 5.31 us / 1.05x. The oversubscribed
//! hand-off rows, 16 rounds each in 8 alternated processes, ours ÷ the fastest peer, before ->
//! after: K=16 S=1 1.21x -> 0.97x, S=2 1.21x -> 1.26x, S=8 1.34x -> 0.88x; K=256 S=1 0.54x ->
//! 0.56x, S=2 0.61x -> 0.53x, S=8 0.83x -> 0.52x: within their wide spread or better; a
//! spin or look that sees work still brings yields back.) So a worker whose
//! work comes too sparsely for any spin to win no longer spins at all between its probe
//! times, where the back-off alone still gave it full probes, and more after any two tasks
//! that came close together (a spin that saw work restarts the pace). The hand-off bench's
//! `sparse` row has such a pair once per sample (the task that reads the worker's CPU time,
//! then the submitter's batch): each brought probes at the pace's start, with the short spins
//! and yields that every probe restarts. Its worker CPU per batch, in 5 alternated processes
//! on the AMD EPYC host (2026-12-02), median 13.3 -> 9.9 us (flume 8.1 / 7.6 in the same
//! runs; a build that never spins: 8.4 us, flume 7.7). The oversubscribed hand-off rows
//! stayed within their (wide, often bimodal) spread in 8 alternated processes of each build
//! (18 for K=256 S=1 and S=2: medians 12.4 / 12.0 and 23.2 / 23.1 us per batch), and so did
//! the queue's and the consumer's ping-pong beside two hogs in 5.
//!
//! What is left of the sparse gap is not the spin (2026-12-02, a throwaway probe: one task,
//! then 1 ms, 1,000 batches per run, counting each plan): after its four warm spins the worker
//! only looked and parked, and still took 7.4 us of CPU per batch against flume's 5.8, with
//! as many futex calls per batch (about four, all threads: `strace -c`). The largest piece
//! found is the park itself: the worker now parks on its thread's own parker instead of a
//! condition variable (`executors/worker_parker.rs`; the bench's sparse row, 5 alternated
//! processes of 3 rounds, ours 7.27 -> 6.35 us). Measured and
//! not kept: judging a wait by when the producer signalled the work instead of when the
//! worker woke (the producer stamps the time under the queue lock; beside CPU hogs the wake-up
//! itself waits milliseconds for a core), alone, also without the skipped probes' extra tries,
//! and also gating short spins and yields on the last wait being short: the bench's sparse row
//! did not move beyond its spread (ours 11.3 as built, 11.4 / 10.8 / 11.1 with the three
//! variants; 4 processes of 3 rounds each). Nor did parking without the idle trim's timeout
//! when first measured (7.04 / 7.00 us, 8 processes each); measured again on 2026-12-03, with
//! the worker on its thread's own parker, it did (8.33 -> 7.14 us, 8 processes of 3 rounds
//! each): a worker holding only its resting queues now parks without it (see the trim policy
//! in `executors/README.md`).
//!
//! Once [`SHORT_LOSSES`] short spins in a row have run out, a cold worker stops spinning
//! until its next probe: it looks once and parks. That is the first failure mode at its
//! worst, two threads handing work back and forth on one core beside CPU hogs: each short
//! spin holds the core the other thread needs, so every hand-off paid a whole short spin
//! before the park let the other thread run (a ping-pong round trip of ~13 µs against ~0.3
//! µs when the two threads have a core each; ~5 µs when both park at once). A short spin, or a
//! look, that sees work resets the count. (Measured and not kept: still spinning short on one
//! wait in four while stopped, to notice sooner when short spins win again; its bad rounds
//! cost ~6.9 µs per round trip against ~5.3, in interleaved runs of both.)
//!
//! A cold worker whose spin found nothing yields up to [`COLD_YIELDS`] times, looking for work
//! after each, before it parks (as std's and crossbeam's channel receivers do). A cold worker is
//! one on a machine with more busy threads than cores, and there parking is what costs: the
//! wake-up then waits behind the busy threads for a core (`perf sched`, K=256 S=8 beside two
//! CPU burners: the worker's 9,830 wake-ups waited 0.12 ms on average, up to 27 ms), while a
//! yield hands the core to the thread the worker waits for, if it is queued there, and keeps
//! the worker runnable. Hand-off beside two burners, two batches of 8 alternated processes,
//! ours ÷ the fastest peer (median), without and with the yields: K=16 S=1 1.01x / 0.96x ->
//! 0.80x / 0.77x, K=256 S=1 0.63x / 0.70x -> 0.52x / 0.58x, K=16 S=2 1.15x / 1.58x -> 0.87x /
//! 1.23x; the consumer's receive beside two hogs 3,055 -> 1,705 ns per round trip; the quiet
//! rows within noise. But a yield that hands the core to a CPU hog for its slice is worse than
//! a park: one that takes [`SLOW_YIELD`] ends the wait's yields and turns them off for a while
//! ("Yields that lose a time slice", below).
//!
//! Yields are spent only while they win, as short spins are: after [`YIELD_LOSSES`] cold waits
//! in a row whose yields all found nothing, a cold worker parks without yielding until its next
//! probe or until a spin or look of it sees work. That is the idle executor's case: a yield
//! returns at once when nothing else wants the core, so seven of them cost ~3 us per wait and
//! catch nothing. (On the AMD EPYC host, a yield also returned at once beside two CPU-burning
//! processes: 20,000 yields, p50 0.41 us, p99 0.47 us.) The throwaway probe, one task every 1 ms, with the probe back-off: 9.0
//! us of worker CPU per task with the yields on every wait, 5.6 us with this rule (std's mpsc
//! receiver: 5.0 us). Beside CPU burners, where yields can win, the oversubscribed rows
//! (hand-off, queue, consumer) stayed within their round-to-round spread in 12 alternated
//! processes of each build, as they did for the back-off.
//!
//! **Yields beside a CPU hog (2026-12-03): diagnosed; fixed for this file's yields on
//! 2026-12-06, see "Yields that lose a time slice" below.** A yield wins when the
//! thread queued on the yielder's core is the one it waits for, and loses heavily when it is a
//! CPU hog. On the AMD EPYC host (Linux 6.18) a throwaway C probe pinned a thread that works
//! 50 us between yields to one core with a CPU-burning thread: that thread got 3.7% of the core
//! with one yield per round and 0.7% with seven, against 50.0% without yields (37.6% / 28.2%
//! with a 1 us `nanosleep` in place of each yield). The yield hands the hog a whole slice and
//! the yielder's claim on the core goes with it (presumably because EEVDF moves a yielder's
//! deadline a slice ahead; not checked in the kernel source). That is the hand-off bench's
//! "tick rounds" (every batch waits about one 4 ms tick), common with one burner pinned to
//! each core (`MICROBENCH_BURNERS=pinned`) and seen now and then as the kernel places them.
//! Four ways out were measured on the oversubscribed hand-off rows, 2 alternated processes x
//! 3 rounds of each build, ours ÷ the fastest peer (medians),
//! base -> variant; none was kept: each that cured the pinned case cost the default one:
//!
//! - No yields at all (here and in the park lock). Pinned: K=256 S=8 5.66x -> 0.82x, S=2 0.98x
//!   -> 0.59x, K=16 S=2 1.51x -> 0.24x. Unpinned: K=256 S=1 0.54x -> 1.50x, S=2 0.54x ->
//!   2.99x, S=8 0.49x -> 1.09x, K=16 S=2 1.08x -> 1.82x. Dropping only this file's yields
//!   (with the worker's slice below) left pinned K=256 S=8 at 3.69x: the park lock's
//!   lone-waiter yields meet the hogs too. A 100 us scheduler slice for the worker
//!   (`sched_setattr`, so that its wake-up preempts the hog) on top of no yields gave no clear
//!   gain over no yields alone (pinned K=256 S=8 0.55x against 0.82x, S=2 1.03x against
//!   0.59x).
//! - A per-thread gate that refuses yields for 250 ms after one took 1 ms or more (a hog's
//!   slice; a hand-off to a producer takes microseconds), on every yield. Pinned: K=256 S=8
//!   8.62x -> 0.50x, but K=256 S=1 0.71x -> 2.04x. Unpinned: K=256 S=1 0.58x -> 1.66x, S=2
//!   0.53x -> 1.60x, S=8 0.50x -> 1.27x: slow yields come there too (presumably several
//!   submitters on the worker's core, or a burner passing through; not traced), and the gate
//!   then parks waits that the yields would have bridged.
//! - The same gate on the park lock's yields only. Pinned: K=256 S=8 7.99x -> 0.70x, S=2 7.52x
//!   -> 1.60x, S=1 0.66x -> 1.97x. Unpinned: K=256 S=1 0.58x -> 6.45x, S=2 0.53x -> 2.31x.
//! - Yielding only when the thread waited for last ran on the waiter's CPU: producers stored
//!   their CPU (`sched_getcpu`) when they took the queue lock, each park lock its holder's, and
//!   the cold worker and the lone lock waiter yielded only when it matched their own. Worse in
//!   both placements. Pinned: K=256 S=1 0.77x -> 2.88x, S=2 0.47x -> 2.00x (S=8 0.92x ->
//!   0.96x). Unpinned: K=256 S=1 0.61x -> 2.50x, S=2 0.61x -> 4.43x, K=16 S=1 1.44x -> 6.27x.
//!
//! The last result suggests (not traced) that the yields win not by handing the core to a
//! producer on it but while the producer runs on the other core, as a slow spin that keeps
//! the waiter runnable (a yield that finds its core otherwise idle returns in ~0.4 us), sparing the
//! producer a wake-up call and the waiter a wake-up that waits for a core. A first look at a
//! bounded spin in their place (the cold worker's 7 yields -> a 4 us spin, each of the park
//! lock's -> 0.5 us; 1 process x 3 rounds of each build) lost the tick rounds too (pinned,
//! worst round 315 us per batch against 3,973) and cost the same rows: pinned K=256 S=1 0.56x
//! -> 1.94x, unpinned K=256 S=2 0.53x -> 1.22x, S=8 0.40x -> 0.96x. What the yields buy there
//! is not understood yet; a `perf sched` trace of the unpinned K=256 rows with and without
//! them is the next step.
//!
//! **A 1 us sleep in place of each yield (2026-12-06, Intel Xeon host, 2 vCPUs): measured and
//! not kept.** The C probe above suggested it: a sleeper keeps its claim on the core where a
//! yielder gives it to the hog. Every yield here and in the park lock became a `nanosleep` of
//! 1 us, with the thread's timer slack set to 1 ns (`PR_SET_TIMERSLACK`) so that the kernel
//! did not round the sleep up to its default 50 us. On the oversubscribed hand-off rows, 2
//! alternated processes x 3 rounds of each build, ours ÷ the fastest peer (medians of the 6
//! per-round ratios), yields -> sleeps:
//!
//! - Default placement: K=16 S=1 0.74x -> 13.29x, S=2 0.80x -> 5.51x, S=8 0.82x -> 2.75x;
//!   K=256 S=1 0.46x -> 6.54x, S=2 0.47x -> 2.18x, S=8 0.43x -> 1.02x. The worker's CPU per
//!   batch went up with the time (K=256 S=1 8.2 -> 61.4 us): each sleep costs a system call,
//!   a timer and two context switches where a yield that finds its core free returns in
//!   about 0.4 us.
//! - Burners pinned: the tick rounds were gone. The worst round of ours went from 3,993 to 94
//!   us per batch at K=256 S=1, from 3,994 to 87 at S=2, and from 3,549 to 140 at S=8. The
//!   medians still lost except at K=256 S=8: K=16 S=1 1.22x -> 6.70x, K=256 S=1 0.86x ->
//!   2.14x, S=2 0.23x -> 1.19x, S=8 0.44x -> 0.39x.
//!
//! So the sleep removes the stalls and makes every other round slower. A sleep used only
//! where a yield has just lost a slice (the gate above, with sleeps where it parked) is the
//! variant left untried. On this host the default placement meets every oversubscribed target
//! with the yields (K=16 S=8, the widest, ranged 0.20x-13.26x).
//!
//! **Yields that lose a time slice (2026-12-06, Intel Xeon host, 2 vCPUs).** The consumer's
//! dispatch beside two CPU burners (`consumer_dispatch`, oversubscribed: a feeder, the
//! internal executor and one or two listener executors, so three or four busy threads of ours
//! and two hogs on two cores) measured ours from 0.4x to 11x std_mpsc's time per message from
//! round to round, at about the same CPU per message (~150 ns) whatever the wall time. A
//! throwaway probe (the Key_Shared consumer, fed in bursts of 2,000 messages, each thread's
//! `/proc` schedstat and system calls counted over 2 s) showed why: each of our three executor
//! threads made ~700 yields a second and no futex call, was runnable all the time and ran for
//! 20-33 ms of each second, a tenth of a fair share. Each yield handed a hog its slice (the
//! C probe above), and when the yielder got its core back, work had piled up meanwhile: the
//! look after the yield saw it, so the yields counted as wins and never stopped, and no wait
//! ever reached the park. A woken thread gets its core back far sooner than a yielder: `perf
//! sched latency` over 2 s of the same probe put the executor threads' mean wait for a core,
//! per switch, at 1.51 ms with the yields (3,878 switches, 125 ms run, 483k msg/s) and at
//! 0.072 ms with the rule below (19,946 switches, 476 ms run, 1.53 M msg/s; a throwaway build
//! of the rule without the refinement of work seen after a slow yield).
//!
//! So a yield that takes [`SLOW_YIELD`] or more (the spins' [`PREEMPTED_GAP`]; each yield is
//! timed, one clock read per yield) ends its wait's yields, so the thread parks, and turns the
//! thread's yields off for [`YIELDS_OFF_AFTER_SLOW`]; work seen after it is no win of the
//! yields. This differs from the gate measured above on 2026-12-03 in two ways: it leaves the
//! park lock's yields alone, and it gates at 200 us instead of 1 ms. In alternated processes of
//! each build (base / this), medians of the per-round ratios; the consumer and K=16 S=8 figures
//! come from a first build of the rule that also read the clock after every spin that saw
//! work, an extra `Instant::now` the quiet consumer-receive ping-pong showed (490 -> 589 ns per
//! round trip) and that was removed (the same ping-pong, 6 x 3: 501 -> 484 ns; beside two hogs
//! 1,237 -> 1,337, within its 1,006-1,617 spread):
//!
//! - `consumer_dispatch`, 4 x 3, ours ÷ std_mpsc: Key_Shared oversubscribed 1.59x (0.86x-6.95x)
//!   -> 0.33x (0.26x-0.49x), Shared oversubscribed 0.86x (0.51x-10.96x) -> 0.55x
//!   (0.37x-0.80x); the quiet rows unchanged (Key_Shared 0.28x / 0.28x, Shared 0.74x /
//!   0.74x).
//! - The oversubscribed hand-off rows, 2 x 3 (a throwaway build with both policies behind an
//!   environment switch), ours ÷ the fastest peer: K=16 S=1 0.76x / 0.76x, S=2 0.81x / 0.77x,
//!   K=256 S=1 0.47x / 0.47x, S=2 0.45x / 0.46x, S=8 0.31x / 0.38x; K=16 S=8, the widest row,
//!   0.75x / 1.85x there (0.17x-12.58x / 0.20x-8.06x), so again 5 x 3 on the first build:
//!   0.90x (0.20x-21.28x) / 0.80x (0.49x-11.42x).
//! - Work seen after a slow yield counting as a long park (the last refinement), 3 x 3, before
//!   / after: consumer oversubscribed Key_Shared 0.38x / 0.37x, Shared 0.63x / 0.52x; hand-off
//!   oversubscribed K=16 S=1 0.72x / 0.71x, K=256 S=1 0.46x / 0.47x, S=2 0.45x / 0.48x.
//! - No yields at all in this file, measured beside it (the same switch, 4 x 3 of the
//!   consumer, 2 x 3 of the hand-off): the consumer's rows about as well (Key_Shared
//!   oversubscribed 0.33x, Shared 0.68x, against 0.28x and 0.54x with the gate), but the
//!   hand-off lost (K=16 S=1 1.33x and K=256 S=1 0.79x against 0.76x and 0.47x): there the
//!   yields win, as found before.
//!
//! The state is per worker thread (a thread-local: the thread that spins is the one whose
//! luck it records), touched only on the idle path, never per task.
//!
//! Under loom and Miri ([`SPIN_ENABLED`] off) the worker does not spin: they check the
//! blocking paths.

use crate::sync::SPIN_ENABLED;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// The longest spin, and the default cap: about two parked hand-offs' latency.
pub(crate) const MAX_SPIN: Duration = Duration::from_micros(50);
/// What a cold worker still spins, to catch a producer that is running at that moment.
pub(crate) const SHORT_SPIN: Duration = Duration::from_micros(4);
/// A gap this long between two looks at the clock means the spinner lost its core.
pub(crate) const PREEMPTED_GAP: Duration = Duration::from_micros(200);
/// How long a cold worker waits between two full spins (probes) at first, and again after
/// any spin of it saw work.
pub(crate) const PROBE_EVERY: Duration = Duration::from_millis(2);
/// The longest wait between two probes: each probe that loses doubles the wait, up to this.
pub(crate) const MAX_PROBE_EVERY: Duration = Duration::from_millis(64);
/// Doublings of [`PROBE_EVERY`] that reach [`MAX_PROBE_EVERY`] (2 ms << 5 = 64 ms).
const MAX_PROBE_DOUBLINGS: u32 = 5;
/// Yields, each followed by a look for work, of a cold worker whose spin found nothing,
/// before it parks.
pub(crate) const COLD_YIELDS: u32 = 7;
/// Cold waits in a row whose yields all found nothing, after which a cold worker stops
/// yielding until its next probe, or until a spin or look of it sees work.
pub(crate) const YIELD_LOSSES: u8 = 4;
/// A yield that took this long handed the core to another busy thread for its time slice
/// (see the module's notes, "Yields that lose a time slice").
pub(crate) const SLOW_YIELD: Duration = PREEMPTED_GAP;
/// How long a thread's yields stay off after one of them was slow.
pub(crate) const YIELDS_OFF_AFTER_SLOW: Duration = Duration::from_millis(100);
/// Short spins in a row that may run out before a cold worker stops spinning until its next
/// probe.
pub(crate) const SHORT_LOSSES: u8 = 4;
/// The score of a fresh worker, and its ceiling.
pub(crate) const MAX_SCORE: u8 = 8;
/// The score a winning probe gives a cold worker.
pub(crate) const WARM_SCORE: u8 = 3;
/// What a full spin that ran out takes from the score (a win adds one).
const LOSS: u8 = 2;
/// Polls of the work hint between two looks at the clock.
const POLLS_PER_CLOCK_READ: u32 = 32;
/// A park shorter than this (from the spin giving up to the wake-up) is one a full spin would
/// have bridged: the work came within [`MAX_SPIN`]. (The park's length includes the wake-up's
/// latency, so this errs towards not probing.) See [`IdleSpin::woken_at`].
pub(crate) const SHORT_PARK: Duration = MAX_SPIN;
/// Waits in a row that ended within a spin's reach (see `IdleSpin::short_waits`) that a cold
/// worker needs before it probes: one or two such waits among parks longer than a spin are
/// what sparse work looks like too (two tasks that happen to come close together).
pub(crate) const PROBE_STREAK: u8 = 3;

/// How one spin ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpinOutcome {
    /// The work hint was seen, with no preemption during the spin.
    Work,
    /// The spin ran out, with no preemption during it.
    Exhausted,
    /// The spinner lost its core during the spin (whether or not it then saw work).
    Preempted,
}

/// A spin's length, as [`IdleSpin::plan`] decides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpinPlan {
    /// Up to [`MAX_SPIN`] (or the cap): warm, or a cold worker's probe. Its outcome counts.
    Full(Duration),
    /// [`SHORT_SPIN`] (or the cap): a cold worker between probes; zero once [`SHORT_LOSSES`]
    /// of them in a row ran out. Its outcome does not move the score.
    Short(Duration),
}

impl SpinPlan {
    /// How long to spin.
    pub(crate) fn length(self) -> Duration {
        match self {
            SpinPlan::Full(length) | SpinPlan::Short(length) => length,
        }
    }
}

/// The spin policy of one worker thread (see the module's design notes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdleSpin {
    /// Recent full spins' score, `0..=MAX_SCORE`; zero: cold.
    score: u8,
    /// When a cold worker last tried a full spin, or skipped one (no streak of short waits)
    /// at its time.
    last_probe: Option<Instant>,
    /// Probes in a row that lost (or were skipped) since a spin last saw work: each one after
    /// the first doubles the wait for the next probe ([`IdleSpin::probe_wait`]).
    lost_probes: u8,
    /// Cold waits in a row whose yields found nothing, since the last probe or the last spin
    /// that saw work (at [`YIELD_LOSSES`] the cold worker stops yielding until then).
    yield_losses: u8,
    /// Short spins in a row that ran out since the last probe (at [`SHORT_LOSSES`] the cold
    /// worker stops spinning until its next probe).
    short_losses: u8,
    /// Waits in a row, since the last probe, that ended within a spin's reach: a spin, look or
    /// yield that saw work, a park shorter than [`SHORT_PARK`], or work found right after a
    /// spin gave up (no park); a longer park starts the count over. Capped at
    /// [`PROBE_STREAK`], which a cold worker needs before it probes: one whose waits park
    /// for longer than a spin (sparse work) does not spin in vain. A fresh policy starts at
    /// the cap.
    short_waits: u8,
    /// When the last spin gave up without seeing work (the caller then parks), until the
    /// caller reports the wake-up ([`note_woken`]) or the next spin starts.
    gave_up: Option<Instant>,
    /// Yields are off until then: one of this thread's yields took [`SLOW_YIELD`] or more.
    yields_off_until: Option<Instant>,
}

std::thread_local! {
    /// The calling worker thread's policy.
    static CURRENT: Cell<IdleSpin> = const { Cell::new(IdleSpin::new()) };
}

/// Spins on `ready` for at most `cap` (further bounded by the calling thread's [`IdleSpin`]),
/// never yielding; then, if `may_yield`, the thread is cold and it saw nothing, yields up to
/// [`COLD_YIELDS`] times, looking after each. Returns whether `ready()` was seen. The caller
/// parks if not.
///
/// A waiter with a deadline passes `may_yield: false`: a yield can hand the core to another
/// busy thread for a whole time slice, and a deadline passing meanwhile is that late, where a
/// thread parked until it is woken then.
pub(crate) fn spin_for_work(
    mut ready: impl FnMut() -> bool,
    cap: Duration,
    may_yield: bool,
) -> bool {
    if !SPIN_ENABLED || single_cpu() {
        return ready();
    }
    let (found, yields) = CURRENT.with(|current| {
        let mut spin = current.get();
        let found = spin.spin(cap, Instant::now, &mut ready);
        current.set(spin);
        // A spin that saw nothing gave up at its last reading of the clock.
        let yields = match spin.gave_up {
            Some(gave_up) if may_yield => Some((spin.yields_before_park(gave_up), gave_up)),
            _ => None,
        };
        (found, yields)
    });
    let Some((yields @ 1.., gave_up)) = yields else {
        return found;
    };
    let outcome = yield_for_work(yields, gave_up, Instant::now, std::thread::yield_now, ready);
    CURRENT.with(|current| {
        let mut spin = current.get();
        spin.record_yields(outcome);
        current.set(spin);
    });
    outcome.seen
}

/// Whether the calling thread's spin has been winning without a loss lately: its score is at
/// [`MAX_SCORE`] (a spin that ran out takes [`LOSS`] from it, a preempted one all of it). False
/// under loom and Miri and on a single CPU. A gathering worker needs it (`gathering.rs`).
pub(crate) fn is_fully_warm() -> bool {
    SPIN_ENABLED && !single_cpu() && CURRENT.with(|current| current.get().score == MAX_SCORE)
}

/// Reports that the calling thread woke up from the park that followed its last
/// [`spin_for_work`] (call it right after the park returns): short parks, in a row, are what
/// let a cold worker probe again ([`IdleSpin::woken_at`]). Reads the clock only after a spin
/// that gave up.
pub(crate) fn note_woken() {
    if !SPIN_ENABLED || single_cpu() {
        return;
    }
    CURRENT.with(|current| {
        let mut spin = current.get();
        if spin.gave_up.is_some() {
            spin.woken_at(Instant::now());
            current.set(spin);
        }
    });
}

/// How one wait's yields ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct YieldsOutcome {
    /// Whether a look after a yield saw work.
    pub(crate) seen: bool,
    /// When the yield that took [`SLOW_YIELD`] or more returned (the wait's last yield).
    pub(crate) slow_at: Option<Instant>,
}

/// Yields (through `yield_now`) up to `yields` times, looking at `ready` after each, and stops
/// at the first look that sees work or after the first yield that took [`SLOW_YIELD`] or more
/// (timed with `clock`, from `start` for the first: the caller's last reading, taken just
/// before).
fn yield_for_work(
    yields: u32,
    start: Instant,
    mut clock: impl FnMut() -> Instant,
    mut yield_now: impl FnMut(),
    mut ready: impl FnMut() -> bool,
) -> YieldsOutcome {
    let mut last = start;
    for _ in 0..yields {
        yield_now();
        let now = clock();
        let slow_at = (now.saturating_duration_since(last) >= SLOW_YIELD).then_some(now);
        last = now;
        let seen = ready();
        if seen || slow_at.is_some() {
            return YieldsOutcome { seen, slow_at };
        }
    }
    YieldsOutcome {
        seen: false,
        slow_at: None,
    }
}

/// Whether this process may run on one CPU only (read once, then cached): there a spin can
/// never win (whatever it waits for needs the spinner's core), so nothing spins.
pub(crate) fn single_cpu() -> bool {
    static SINGLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SINGLE.get_or_init(|| std::thread::available_parallelism().map_or(true, |n| n.get() == 1))
}

impl IdleSpin {
    /// A fresh policy: warm.
    pub(crate) const fn new() -> Self {
        Self {
            score: MAX_SCORE,
            last_probe: None,
            lost_probes: 0,
            yield_losses: 0,
            short_losses: 0,
            short_waits: PROBE_STREAK,
            gave_up: None,
            yields_off_until: None,
        }
    }

    /// One spin: plans it at `clock()`, polls `ready` until it is true or the plan's length
    /// has passed (reading `clock` every few polls), and records the outcome. Returns whether
    /// `ready()` was seen.
    pub(crate) fn spin(
        &mut self,
        cap: Duration,
        mut clock: impl FnMut() -> Instant,
        mut ready: impl FnMut() -> bool,
    ) -> bool {
        let start = clock();
        if self.gave_up.take().is_some() {
            // The last spin gave up and no park was reported since: the caller found work
            // right after it (or parks where it does not report wake-ups). Either way, a
            // spin may win.
            self.note_short_wait();
        }
        let plan = self.plan(start, cap);
        let length = plan.length();
        let mut last = start;
        let mut preempted = false;
        let found = if length.is_zero() {
            // A look (a cold worker whose short spins stopped): one poll. A round of polls
            // and pauses here cost the sparse worker about 0.2 us of every wait.
            ready()
        } else {
            'spin: loop {
                for _ in 0..POLLS_PER_CLOCK_READ {
                    if ready() {
                        break 'spin true;
                    }
                    std::hint::spin_loop();
                }
                let now = clock();
                preempted |= now.saturating_duration_since(last) >= PREEMPTED_GAP;
                last = now;
                if now.saturating_duration_since(start) >= length {
                    break 'spin ready();
                }
            }
        };
        let outcome = match (preempted, found) {
            (true, _) => SpinOutcome::Preempted,
            (false, true) => SpinOutcome::Work,
            (false, false) => SpinOutcome::Exhausted,
        };
        self.record(plan, outcome);
        if !found {
            self.gave_up = Some(last);
        }
        found
    }

    /// Records that the caller woke up at `now` from the park that followed the last spin
    /// (nothing if no spin gave up since the last report): a park shorter than [`SHORT_PARK`]
    /// says a full spin might have bridged it.
    pub(crate) fn woken_at(&mut self, now: Instant) {
        if let Some(gave_up) = self.gave_up.take() {
            if now.saturating_duration_since(gave_up) < SHORT_PARK {
                self.note_short_wait();
            } else {
                self.short_waits = 0;
            }
        }
    }

    /// Counts a wait that ended soon enough for a full spin to have bridged it.
    fn note_short_wait(&mut self) {
        self.short_waits = (self.short_waits + 1).min(PROBE_STREAK);
    }

    /// How long after the last probe the next one is due: [`PROBE_EVERY`] after a probe that
    /// won or was the first to lose, doubled by each further loss, at most
    /// [`MAX_PROBE_EVERY`].
    fn probe_wait(&self) -> Duration {
        let doublings = u32::from(self.lost_probes.saturating_sub(1)).min(MAX_PROBE_DOUBLINGS);
        (PROBE_EVERY * (1 << doublings)).min(MAX_PROBE_EVERY)
    }

    /// The spin to do at `now`, at most `cap` long.
    pub(crate) fn plan(&mut self, now: Instant, cap: Duration) -> SpinPlan {
        if self.score > 0 {
            return SpinPlan::Full(MAX_SPIN.min(cap));
        }
        let probe_due = match self.last_probe {
            None => true,
            Some(last) => now.saturating_duration_since(last) >= self.probe_wait(),
        };
        if probe_due && self.short_waits < PROBE_STREAK {
            // A probe's time, but no streak of short waits: no full spin, and no retry of the
            // short spins or yields either (see the module's notes). The pace moves on as
            // after a lost probe.
            self.last_probe = Some(now);
            self.lost_probes = self.lost_probes.saturating_add(1);
        } else if probe_due {
            self.last_probe = Some(now);
            self.short_losses = 0;
            self.short_waits = 0;
            return SpinPlan::Full(MAX_SPIN.min(cap));
        }
        if self.short_losses >= SHORT_LOSSES {
            // Even short spins keep running out: what this thread waits for is not running
            // now, quite possibly because it waits for this very core. Look once, then park.
            SpinPlan::Short(Duration::ZERO)
        } else {
            SpinPlan::Short(SHORT_SPIN.min(cap))
        }
    }

    /// Yields before parking after a spin that saw nothing: [`COLD_YIELDS`] when cold (the
    /// spins have been losing: the machine is busier than its cores) unless the last
    /// [`YIELD_LOSSES`] waits' yields all found nothing; none while warm.
    pub(crate) fn yields_before_park(&self, now: Instant) -> u32 {
        let off = self.yields_off_until.is_some_and(|until| now < until);
        if self.score == 0 && self.yield_losses < YIELD_LOSSES && !off {
            COLD_YIELDS
        } else {
            0
        }
    }

    /// Records how the yields of a wait ([`yields_before_park`](Self::yields_before_park) of
    /// them) ended. Work seen after a fast yield is work seen while waiting, so it also brings
    /// the probes back to their first pace. A slow yield turns the yields off for
    /// [`YIELDS_OFF_AFTER_SLOW`]; work seen after it is no win of the yields, nor a loss, and
    /// the wait counts as a park longer than a spin's reach would ([`woken_at`](Self::woken_at)):
    /// it lasted another thread's time slice.
    pub(crate) fn record_yields(&mut self, outcome: YieldsOutcome) {
        if let Some(slow_at) = outcome.slow_at {
            self.yields_off_until = Some(slow_at + YIELDS_OFF_AFTER_SLOW);
        }
        match (outcome.seen, outcome.slow_at) {
            (true, None) => {
                self.yield_losses = 0;
                self.lost_probes = 0;
                self.note_short_wait();
            }
            (true, Some(slow_at)) => self.woken_at(slow_at),
            (false, _) => self.yield_losses = self.yield_losses.saturating_add(1),
        }
    }

    /// Records how a spin planned by [`plan`](Self::plan) ended.
    pub(crate) fn record(&mut self, plan: SpinPlan, outcome: SpinOutcome) {
        let probe = matches!(plan, SpinPlan::Full(_)) && self.score == 0;
        if outcome == SpinOutcome::Work {
            // Work came while this thread waited: probes go back to their first pace, and
            // yields (stopped or not) may win again.
            self.lost_probes = 0;
            self.yield_losses = 0;
            self.note_short_wait();
        } else if probe {
            self.lost_probes = self.lost_probes.saturating_add(1);
            // Yields get another chance after every probe.
            self.yield_losses = 0;
        }
        if let SpinPlan::Short(length) = plan {
            match outcome {
                SpinOutcome::Work => self.short_losses = 0,
                SpinOutcome::Exhausted if !length.is_zero() => {
                    self.short_losses = self.short_losses.saturating_add(1);
                }
                SpinOutcome::Exhausted => {}
                SpinOutcome::Preempted => self.score = 0,
            }
            return;
        }
        self.score = match outcome {
            SpinOutcome::Work if self.score == 0 => WARM_SCORE,
            SpinOutcome::Work => (self.score + 1).min(MAX_SCORE),
            SpinOutcome::Exhausted => self.score.saturating_sub(LOSS),
            SpinOutcome::Preempted => 0,
        };
    }

    /// Whether a cold worker's short spins have stopped (tests).
    #[cfg(all(test, not(loom)))]
    fn short_spins_stopped(&self) -> bool {
        self.short_losses >= SHORT_LOSSES
    }

    /// Whether the worker is cold (full spins only as probes).
    #[cfg(all(test, not(loom)))]
    fn is_cold(&self) -> bool {
        self.score == 0
    }
}

impl Default for IdleSpin {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Yields that found nothing, none of them slow.
    const NOTHING: YieldsOutcome = YieldsOutcome {
        seen: false,
        slow_at: None,
    };
    /// Yields that saw work, none of them slow.
    const SEEN: YieldsOutcome = YieldsOutcome {
        seen: true,
        slow_at: None,
    };

    /// A fake clock: each read advances it by `step`, plus `jump` once at read `jump_at`.
    struct FakeClock {
        now: Instant,
        step: Duration,
        reads: u32,
        jump_at: Option<(u32, Duration)>,
    }

    impl FakeClock {
        fn new(origin: Instant, step: Duration) -> Self {
            Self {
                now: origin,
                step,
                reads: 0,
                jump_at: None,
            }
        }

        fn read(&mut self) -> Instant {
            let now = self.now;
            self.reads += 1;
            self.now += self.step;
            if let Some((at, jump)) = self.jump_at {
                if self.reads == at {
                    self.now += jump;
                }
            }
            now
        }
    }

    /// A hint that turns true after `polls` polls (never, if `None`).
    fn ready_after(polls: Option<u32>) -> impl FnMut() -> bool {
        let mut seen = 0;
        move || {
            seen += 1;
            polls.is_some_and(|p| seen > p)
        }
    }

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    /// Runs full spins that run out until the policy is cold; returns how many it took.
    fn chill(spin: &mut IdleSpin, now: Instant) -> u32 {
        let mut spins = 0;
        while !spin.is_cold() {
            let plan = spin.plan(now, MAX_SPIN);
            assert!(matches!(plan, SpinPlan::Full(_)));
            spin.record(plan, SpinOutcome::Exhausted);
            spins += 1;
        }
        spins
    }

    #[test]
    fn a_spin_that_sees_work_returns_true_at_once() {
        let mut spin = IdleSpin::new();
        let mut clock = FakeClock::new(Instant::now(), us(1));
        assert!(spin.spin(MAX_SPIN, || clock.read(), ready_after(Some(10))));
        assert_eq!(clock.reads, 1, "only the start was read");
        assert_eq!(spin, IdleSpin::new());
    }

    #[test]
    fn a_warm_spin_that_runs_out_returns_false_after_max_spin() {
        let mut spin = IdleSpin::new();
        let mut clock = FakeClock::new(Instant::now(), us(1));
        assert!(!spin.spin(MAX_SPIN, || clock.read(), ready_after(None)));
        // One read to start, then one per poll round until 50 us have passed.
        assert_eq!(clock.reads, 51);
        assert!(!spin.is_cold());
    }

    #[test]
    fn the_caller_caps_the_spin() {
        let mut spin = IdleSpin::new();
        assert_eq!(spin.plan(Instant::now(), us(10)), SpinPlan::Full(us(10)));
        let mut clock = FakeClock::new(Instant::now(), us(1));
        assert!(!spin.spin(us(10), || clock.read(), ready_after(None)));
        assert_eq!(clock.reads, 11);
    }

    #[test]
    fn spins_that_lose_more_than_one_in_three_make_the_worker_cold() {
        let now = Instant::now();
        // Winning two in three holds the score.
        let mut spin = IdleSpin::new();
        for _ in 0..100 {
            for outcome in [SpinOutcome::Work, SpinOutcome::Work, SpinOutcome::Exhausted] {
                let plan = spin.plan(now, MAX_SPIN);
                assert_eq!(plan, SpinPlan::Full(MAX_SPIN));
                spin.record(plan, outcome);
            }
        }
        assert!(!spin.is_cold());
        // Winning one in two does not.
        let mut spins = 0;
        while !spin.is_cold() {
            for outcome in [SpinOutcome::Work, SpinOutcome::Exhausted] {
                let plan = spin.plan(now, MAX_SPIN);
                spin.record(plan, outcome);
            }
            spins += 2;
        }
        assert_eq!(
            spins, 12,
            "the pattern above left 6; each win-loss pair takes one"
        );
        // From the top, four lost spins in a row.
        assert_eq!(chill(&mut IdleSpin::new(), now), 4);
    }

    /// A park of `length` after a spin that gave up at `at`, as the caller reports it.
    fn park(spin: &mut IdleSpin, at: Instant, length: Duration) {
        spin.gave_up = Some(at);
        spin.woken_at(at + length);
    }

    /// [`PROBE_STREAK`] short parks in a row from `at`: work keeps coming within a spin's
    /// reach again.
    fn busy_again(spin: &mut IdleSpin, at: Instant) {
        for _ in 0..PROBE_STREAK {
            park(spin, at, SHORT_PARK / 2);
        }
    }

    /// Plays a cold worker's waits every `step` from `start` until `until`, every spin losing
    /// (`short` is the outcome of its short spins) and then parking for half of
    /// [`SHORT_PARK`] (the work comes back soon); returns when it probed, as offsets from
    /// `start`.
    fn probe_times(
        spin: &mut IdleSpin,
        start: Instant,
        step: Duration,
        until: Duration,
        short: SpinOutcome,
    ) -> Vec<Duration> {
        assert!(step > SHORT_PARK / 2);
        waits(spin, start, step, until, short, SHORT_PARK / 2)
    }

    /// As [`probe_times`], each wait parking for `parked` (its spin never sees work).
    fn waits(
        spin: &mut IdleSpin,
        start: Instant,
        step: Duration,
        until: Duration,
        short: SpinOutcome,
        parked: Duration,
    ) -> Vec<Duration> {
        let mut probes = Vec::new();
        let mut now = start;
        while now < start + until {
            match spin.plan(now, MAX_SPIN) {
                plan @ SpinPlan::Full(length) => {
                    assert_eq!(length, MAX_SPIN);
                    probes.push(now - start);
                    spin.record(plan, SpinOutcome::Exhausted);
                }
                plan @ SpinPlan::Short(length) => {
                    assert!(length == SHORT_SPIN || length.is_zero(), "{length:?}");
                    spin.record(plan, short);
                }
            }
            assert!(spin.is_cold());
            if short != SpinOutcome::Work {
                // As `spin_for_work`: the yields (finding nothing), then the park.
                if spin.yields_before_park(now) > 0 {
                    spin.record_yields(NOTHING);
                }
                park(spin, now, parked);
            }
            now += step;
        }
        probes
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A policy made cold at `start` whose probes then lost for 400 ms, waiting every 100 us:
    /// its last probe was at 382 ms and the next is due 64 ms after it.
    fn backed_off(start: Instant) -> IdleSpin {
        let mut spin = IdleSpin::new();
        chill(&mut spin, start);
        probe_times(&mut spin, start, us(100), ms(400), SpinOutcome::Exhausted);
        spin
    }

    #[test]
    fn a_cold_worker_spins_short_and_probes_less_often_while_its_probes_lose() {
        let mut spin = IdleSpin::new();
        let start = Instant::now();
        chill(&mut spin, start);
        // Waits every 100 us for 400 ms, nothing ever seen: the first probe at once, then
        // 2, 4, 8, 16, 32 ms apart, then every 64 ms.
        let probes = probe_times(&mut spin, start, us(100), ms(400), SpinOutcome::Exhausted);
        let expected: Vec<Duration> = [0, 2, 6, 14, 30, 62, 126, 190, 254, 318, 382]
            .into_iter()
            .map(ms)
            .collect();
        assert_eq!(probes, expected);
        assert_eq!(
            spin.plan(start + ms(383), us(2)),
            SpinPlan::Short(Duration::ZERO)
        );
        assert_eq!(MAX_PROBE_EVERY, ms(64));
    }

    #[test]
    fn work_seen_by_any_spin_brings_the_probes_back_to_their_first_pace() {
        let start = Instant::now();
        // Short spins that see work: a probe every PROBE_EVERY, however many lost.
        let mut spin = IdleSpin::new();
        chill(&mut spin, start);
        let probes = probe_times(&mut spin, start, us(100), ms(20), SpinOutcome::Work);
        assert_eq!(probes, (0..10).map(|n| n * PROBE_EVERY).collect::<Vec<_>>());
        assert_eq!(
            spin.plan(start + ms(19), us(2)),
            SpinPlan::Short(us(2)),
            "capped too"
        );
        // Backed off to 64 ms (its waits parked briefly, so a probe is worth it once due),
        // then a look sees work: the pace is back to PROBE_EVERY, and the next wait probes.
        let mut spin = backed_off(start);
        assert_eq!(spin.short_waits, PROBE_STREAK);
        assert_eq!(spin.probe_wait(), MAX_PROBE_EVERY);
        let look = spin.plan(start + ms(400), MAX_SPIN);
        assert_eq!(look, SpinPlan::Short(Duration::ZERO), "short spins stopped");
        spin.record(look, SpinOutcome::Work);
        assert_eq!(spin.probe_wait(), PROBE_EVERY);
        assert!(matches!(
            spin.plan(start + ms(400), MAX_SPIN),
            SpinPlan::Full(_)
        ));
        // Backed off, then a probe wins: warm, and the next time it cools the first probe
        // after its first one comes PROBE_EVERY later again.
        let mut spin = backed_off(start);
        let probe = spin.plan(start + ms(446), MAX_SPIN);
        assert!(matches!(probe, SpinPlan::Full(_)));
        spin.record(probe, SpinOutcome::Work);
        assert!(!spin.is_cold());
        chill(&mut spin, start + ms(446));
        let later = start + ms(500);
        let probes = probe_times(&mut spin, later, us(100), ms(10), SpinOutcome::Exhausted);
        // The first probe time (at once: 54 ms since the winning probe) comes before the short
        // waits since the win make a streak (the win counts as one): skipped, as a lost probe.
        // Then probes 2 and 4 ms apart.
        assert_eq!(probes, vec![ms(2), ms(6)]);
    }

    #[test]
    fn a_cold_worker_whose_waits_all_park_long_stops_probing() {
        let start = Instant::now();
        // Sparse work: a wait every 1.1 ms, each parking 1 ms (longer than any spin): the
        // first probe (due at once: a fresh policy assumes spins could win) and no other.
        let (mut spin, probes) = parking_after_chill(start, us(1100), ms(400), ms(1));
        assert_eq!(probes, vec![ms(0)]);
        // The probes' times still come, backing off as if they had lost (2, 4, 8, 16, 32,
        // then 64 ms apart), and give short spins and yields no new try.
        assert_eq!(spin.probe_wait(), MAX_PROBE_EVERY);
        let skipped = spin.last_probe.expect("a probe's time came");
        assert!(skipped > start + ms(300), "{:?}", skipped - start);
        assert_eq!(
            spin.plan(skipped + us(1), MAX_SPIN),
            SpinPlan::Short(Duration::ZERO),
            "between two probe times, short spins stay stopped: look once, then park"
        );
        assert_eq!(spin.yields_before_park(start), 0, "and yields too");
        let next = skipped + MAX_PROBE_EVERY;
        assert_eq!(
            spin.plan(next, MAX_SPIN),
            SpinPlan::Short(Duration::ZERO),
            "a skipped probe: still only a look"
        );
        assert_eq!(spin.yields_before_park(start), 0, "and still no yields");
        // A look that sees work brings the short spins and yields back.
        let mut saw_work = spin;
        saw_work.record(SpinPlan::Short(Duration::ZERO), SpinOutcome::Work);
        assert_eq!(
            saw_work.plan(next + us(1), MAX_SPIN),
            SpinPlan::Short(SHORT_SPIN)
        );
        assert_eq!(saw_work.yields_before_park(start), COLD_YIELDS);
        // Parks shorter than SHORT_PARK: PROBE_STREAK of them in a row, and the next probe
        // time brings a probe. A long park in between starts the count over.
        for _ in 1..PROBE_STREAK {
            park(&mut spin, next, SHORT_PARK - us(1));
        }
        park(&mut spin, next, ms(1));
        for _ in 0..PROBE_STREAK {
            park(&mut spin, next + ms(1), SHORT_PARK - us(1));
        }
        assert_eq!(spin.short_waits, PROBE_STREAK);
        assert!(matches!(
            spin.plan(next + ms(2), MAX_SPIN),
            SpinPlan::Short(_)
        ));
        assert_eq!(
            spin.plan(next + MAX_PROBE_EVERY, MAX_SPIN),
            SpinPlan::Full(MAX_SPIN)
        );
        // A park of exactly SHORT_PARK does not count.
        let (_, probes) = parking_after_chill(start, ms(1), ms(200), SHORT_PARK);
        assert_eq!(probes, vec![ms(0)]);
    }

    /// A fresh policy made cold at `start`, then waiting every `step` until `until`, each wait
    /// losing and parking for `parked`; with the times it probed.
    fn parking_after_chill(
        start: Instant,
        step: Duration,
        until: Duration,
        parked: Duration,
    ) -> (IdleSpin, Vec<Duration>) {
        let mut spin = IdleSpin::new();
        chill(&mut spin, start);
        let probes = waits(
            &mut spin,
            start,
            step,
            until,
            SpinOutcome::Exhausted,
            parked,
        );
        (spin, probes)
    }

    #[test]
    fn work_found_right_after_a_spin_gave_up_lets_a_cold_worker_probe() {
        let start = Instant::now();
        let mut spin = cold_after_a_lost_probe(start);
        park(&mut spin, start, ms(1));
        // Spins from 3 ms on give up, and each time the caller finds work without parking (no
        // wake-up reported) and comes back: after PROBE_STREAK of them, the next spin probes.
        for n in 0..u64::from(PROBE_STREAK) {
            let mut clock = FakeClock::new(start + ms(3) + us(10 * n), us(1));
            assert!(!spin.spin(MAX_SPIN, || clock.read(), ready_after(None)));
            assert_eq!(spin.short_waits, n as u8, "counted as the next spin starts");
            assert!(spin.gave_up.is_some());
            assert!(clock.reads < 10, "short spins and looks");
        }
        // The next probe time (the one at 3 ms came with no streak: skipped, backing off).
        let due = spin.last_probe.expect("a probe's time came") + spin.probe_wait();
        let mut clock = FakeClock::new(due, us(1));
        spin.spin(MAX_SPIN, || clock.read(), ready_after(None));
        assert_eq!(clock.reads, 51, "a full spin: the probe");
        // A wake-up reported with no spin given up since changes nothing.
        let mut after = spin;
        after.gave_up = None;
        let snapshot = after;
        after.woken_at(start + ms(5));
        assert_eq!(after, snapshot);
    }

    #[test]
    fn the_thread_local_policy_takes_wake_up_reports() {
        // Whatever the build (the report is ignored where nothing spins), it never panics and
        // a report with no spin before it is a no-op.
        note_woken();
        assert!(!spin_for_work(|| false, Duration::ZERO, false));
        note_woken();
        CURRENT.with(|current| assert!(current.get().gave_up.is_none()));
    }

    #[test]
    fn a_winning_probe_warms_the_worker_up() {
        let mut spin = IdleSpin::new();
        let now = Instant::now();
        chill(&mut spin, now);
        let plan = spin.plan(now, MAX_SPIN);
        spin.record(plan, SpinOutcome::Work);
        assert!(!spin.is_cold());
        // Warm, but on probation: two lost spins cool it again.
        assert_eq!(chill(&mut spin, now), 2);
    }

    #[test]
    fn a_gap_during_the_spin_makes_the_worker_cold() {
        let mut spin = IdleSpin::new();
        let mut clock = FakeClock::new(Instant::now(), us(1));
        clock.jump_at = Some((2, Duration::from_millis(3))); // preempted for a time slice
                                                             // It still reports the work it found after the gap.
        assert!(spin.spin(MAX_SPIN, || clock.read(), ready_after(Some(64))));
        assert!(spin.is_cold());
        // Short spins are watched too: a cold worker preempted in one stays cold.
        let mut spin = IdleSpin::new();
        let now = Instant::now();
        chill(&mut spin, now);
        let probe = spin.plan(now, MAX_SPIN);
        spin.record(probe, SpinOutcome::Exhausted);
        let short = spin.plan(now, MAX_SPIN);
        assert_eq!(short, SpinPlan::Short(SHORT_SPIN));
        spin.record(short, SpinOutcome::Preempted);
        assert!(spin.is_cold());
    }

    #[test]
    fn a_gap_shorter_than_a_time_slice_is_not_a_preemption() {
        let mut spin = IdleSpin::new();
        let mut clock = FakeClock::new(Instant::now(), us(1));
        clock.jump_at = Some((2, PREEMPTED_GAP - us(2))); // a producer ran briefly
        assert!(spin.spin(MAX_SPIN, || clock.read(), ready_after(Some(64))));
        assert_eq!(spin, IdleSpin::new());
    }

    #[test]
    fn the_thread_local_spin_sees_work_that_is_already_there() {
        assert!(spin_for_work(|| true, MAX_SPIN, true));
    }

    #[test]
    fn the_thread_local_spin_gives_up_after_its_cap() {
        let start = Instant::now();
        assert!(!spin_for_work(|| false, us(20), false));
        // Under Miri the spin is compiled out: the hint is read once.
        assert!(start.elapsed() >= us(20) || !SPIN_ENABLED);
    }

    /// A policy made cold at `start`, whose first probe (due at once) ran out.
    fn cold_after_a_lost_probe(start: Instant) -> IdleSpin {
        let mut spin = IdleSpin::new();
        chill(&mut spin, start);
        let probe = spin.plan(start, MAX_SPIN);
        assert!(matches!(probe, SpinPlan::Full(_)));
        spin.record(probe, SpinOutcome::Exhausted);
        spin
    }

    /// A policy made cold at `start` (a lost probe) whose next [`SHORT_LOSSES`] short spins,
    /// 1 us later, all ran out: its short spins have stopped.
    fn short_spins_stopped_after(start: Instant) -> IdleSpin {
        let mut spin = cold_after_a_lost_probe(start);
        for _ in 0..SHORT_LOSSES {
            let plan = spin.plan(start + us(1), MAX_SPIN);
            assert_eq!(plan, SpinPlan::Short(SHORT_SPIN));
            spin.record(plan, SpinOutcome::Exhausted);
        }
        assert!(spin.short_spins_stopped());
        spin
    }

    #[test]
    fn short_spins_that_keep_running_out_stop_until_the_next_probe() {
        let start = Instant::now();
        let mut spin = short_spins_stopped_after(start);
        let stopped = spin.plan(start + us(2), MAX_SPIN);
        assert_eq!(
            stopped,
            SpinPlan::Short(Duration::ZERO),
            "look once, then park"
        );
        spin.record(stopped, SpinOutcome::Exhausted);
        // A look that finds work restarts them.
        spin.record(stopped, SpinOutcome::Work);
        assert!(!spin.short_spins_stopped());
        for _ in 0..SHORT_LOSSES {
            let plan = spin.plan(start + us(3), MAX_SPIN);
            spin.record(plan, SpinOutcome::Exhausted);
        }
        assert!(spin.short_spins_stopped());
        // The next probe restarts short spins whatever its outcome.
        busy_again(&mut spin, start + us(4));
        let probe = spin.plan(start + PROBE_EVERY, MAX_SPIN);
        assert!(matches!(probe, SpinPlan::Full(_)));
        spin.record(probe, SpinOutcome::Exhausted);
        assert!(spin.is_cold());
        assert_eq!(
            spin.plan(start + PROBE_EVERY + us(1), MAX_SPIN),
            SpinPlan::Short(SHORT_SPIN)
        );
    }

    #[test]
    fn a_look_polls_once_and_reads_the_clock_once() {
        let start = Instant::now();
        let mut spin = short_spins_stopped_after(start);
        let mut clock = FakeClock::new(start + us(2), us(1));
        let mut polls = 0;
        let seen = spin.spin(
            MAX_SPIN,
            || clock.read(),
            || {
                polls += 1;
                false
            },
        );
        assert!(!seen);
        assert_eq!((polls, clock.reads), (1, 1), "no round of polls and pauses");
        assert_eq!(
            spin.gave_up,
            Some(start + us(2)),
            "the park starts at the look"
        );
        // One that sees work reports it, as any spin does.
        let mut clock = FakeClock::new(start + us(3), us(1));
        assert!(spin.spin(MAX_SPIN, || clock.read(), ready_after(Some(0))));
        assert!(
            !spin.short_spins_stopped(),
            "a look that sees work restarts short spins"
        );
    }

    #[test]
    fn a_short_spin_that_sees_work_keeps_short_spins_going() {
        let start = Instant::now();
        let mut spin = cold_after_a_lost_probe(start);
        for round in 0..3 * u32::from(SHORT_LOSSES) {
            let plan = spin.plan(start + us(1), MAX_SPIN);
            assert_eq!(plan, SpinPlan::Short(SHORT_SPIN), "round {round}");
            let won = round % u32::from(SHORT_LOSSES) == 0;
            spin.record(
                plan,
                if won {
                    SpinOutcome::Work
                } else {
                    SpinOutcome::Exhausted
                },
            );
        }
    }

    #[test]
    fn only_a_cold_worker_yields_before_it_parks() {
        let start = Instant::now();
        let mut spin = IdleSpin::new();
        assert_eq!(spin.yields_before_park(start), 0, "a fresh worker is warm");
        chill(&mut spin, start);
        assert_eq!(spin.yields_before_park(start), COLD_YIELDS);
        // A probe that wins warms it up again: no yields.
        let probe = spin.plan(start + PROBE_EVERY, MAX_SPIN);
        spin.record(probe, SpinOutcome::Work);
        assert_eq!(spin.yields_before_park(start), 0);
    }

    #[test]
    fn yields_that_keep_finding_nothing_stop_until_a_probe_or_a_look_sees_work() {
        let start = Instant::now();
        let mut spin = cold_after_a_lost_probe(start);
        for _ in 0..YIELD_LOSSES {
            assert_eq!(spin.yields_before_park(start), COLD_YIELDS);
            spin.record_yields(NOTHING);
        }
        assert_eq!(spin.yields_before_park(start), 0, "stopped");
        // A short spin that sees work restarts them.
        let short = spin.plan(start + us(1), MAX_SPIN);
        assert!(matches!(short, SpinPlan::Short(_)));
        spin.record(short, SpinOutcome::Work);
        assert_eq!(spin.yields_before_park(start), COLD_YIELDS);
        // Yields that find work reset the count, and the probes' pace.
        for _ in 1..YIELD_LOSSES {
            spin.record_yields(NOTHING);
        }
        let mut slow = backed_off(start);
        assert!(matches!(
            slow.plan(start + ms(400), MAX_SPIN),
            SpinPlan::Short(_)
        ));
        slow.record_yields(SEEN);
        assert!(matches!(
            slow.plan(start + ms(400), MAX_SPIN),
            SpinPlan::Full(_)
        ));
        spin.record_yields(SEEN);
        for _ in 1..YIELD_LOSSES {
            spin.record_yields(NOTHING);
        }
        assert_eq!(
            spin.yields_before_park(start),
            COLD_YIELDS,
            "counted from the win"
        );
        spin.record_yields(NOTHING);
        assert_eq!(spin.yields_before_park(start), 0);
        // The next probe restarts them, whatever it finds.
        busy_again(&mut spin, start + us(2));
        let probe = spin.plan(start + PROBE_EVERY, MAX_SPIN);
        assert!(matches!(probe, SpinPlan::Full(_)));
        spin.record(probe, SpinOutcome::Exhausted);
        assert!(spin.is_cold());
        assert_eq!(spin.yields_before_park(start), COLD_YIELDS);
    }

    #[test]
    fn yields_stop_at_the_first_look_that_sees_work_and_never_exceed_the_count() {
        let start = Instant::now();
        let mut clock = FakeClock::new(start + us(1), us(1));
        let mut yields = 0;
        let outcome = yield_for_work(
            COLD_YIELDS,
            start,
            || clock.read(),
            || yields += 1,
            ready_after(Some(2)),
        );
        assert_eq!(outcome, SEEN);
        assert_eq!(yields, 3, "work seen at the third look");
        assert_eq!(clock.reads, 3, "one clock read per yield");
        let mut clock = FakeClock::new(start + us(1), us(1));
        let mut yields = 0;
        let outcome = yield_for_work(
            COLD_YIELDS,
            start,
            || clock.read(),
            || yields += 1,
            ready_after(None),
        );
        assert_eq!(outcome, NOTHING);
        assert_eq!(yields, COLD_YIELDS);
        let mut yields = 0;
        let outcome = yield_for_work(
            0,
            start,
            || panic!("no yield, no clock read"),
            || yields += 1,
            ready_after(Some(0)),
        );
        assert_eq!(outcome, NOTHING);
        assert_eq!(yields, 0, "a warm worker does not yield");
    }

    /// The yields of one wait after a spin that gave up at `start`, the third yield taking
    /// `third` (the others 1 us); the outcome and how many yields were made.
    fn yields_with_third_taking(
        start: Instant,
        third: Duration,
        ready: impl FnMut() -> bool,
    ) -> (YieldsOutcome, u32) {
        let mut clock = FakeClock::new(start + us(1), us(1));
        clock.jump_at = Some((2, third - us(1)));
        let mut yields = 0;
        let outcome = yield_for_work(COLD_YIELDS, start, || clock.read(), || yields += 1, ready);
        (outcome, yields)
    }

    #[test]
    fn a_yield_that_loses_a_time_slice_turns_the_yields_off_for_a_while() {
        let start = Instant::now();
        // The third yield hands the core to a CPU hog for its slice: the wait parks after it.
        let (outcome, yields) = yields_with_third_taking(start, SLOW_YIELD, ready_after(None));
        assert_eq!(yields, 3, "no yield after the slow one");
        let slow_at = start + us(2) + SLOW_YIELD;
        assert_eq!(
            outcome,
            YieldsOutcome {
                seen: false,
                slow_at: Some(slow_at)
            }
        );
        let mut spin = cold_after_a_lost_probe(start);
        spin.record_yields(outcome);
        let back_on = slow_at + YIELDS_OFF_AFTER_SLOW;
        assert_eq!(spin.yields_before_park(back_on - us(1)), 0, "off");
        assert_eq!(spin.yields_before_park(back_on), COLD_YIELDS, "on again");
        // Work seen after a slow yield is reported, and is no win of the yields: they stay off.
        let (outcome, yields) = yields_with_third_taking(start, SLOW_YIELD, ready_after(Some(2)));
        assert_eq!((outcome.seen, yields), (true, 3));
        assert_eq!(outcome.slow_at, Some(slow_at));
        let mut spin = cold_after_a_lost_probe(start);
        spin.gave_up = Some(start); // the spin before the yields gave up at `start`
        spin.short_waits = PROBE_STREAK - 1;
        let before = spin;
        spin.record_yields(outcome);
        assert_eq!(spin.yields_before_park(slow_at), 0);
        assert_eq!(
            (spin.yield_losses, spin.lost_probes),
            (before.yield_losses, before.lost_probes),
            "neither a win nor a loss"
        );
        assert_eq!(
            (spin.short_waits, spin.gave_up),
            (0, None),
            "a wait as long as a long park: no short wait, now or at the next spin"
        );
        // A yield just under SLOW_YIELD is a fast one: the wait goes on, the yields stay on.
        let (outcome, yields) =
            yields_with_third_taking(start, SLOW_YIELD - us(1), ready_after(None));
        assert_eq!((outcome, yields), (NOTHING, COLD_YIELDS));
        let mut spin = cold_after_a_lost_probe(start);
        spin.record_yields(outcome);
        assert_eq!(spin.yields_before_park(start + SLOW_YIELD), COLD_YIELDS);
    }
}
