//! A model check of [`TimerWheel`]: under any sequence of arms (delayed, due when armed,
//! behind the wheel, too far to represent), cancels, passing time and sweeps, the wheel
//! behaves as a map ordered by `(deadline, arming order)`.
//!
//! What each step checks against the model (a `BTreeMap`):
//! - when time passes, the worker's take (`take_due_into`) returns exactly the timers due by
//!   then, in deadline order and equal deadlines in arming order: none early, none left
//!   behind, none twice;
//! - `next_due_nanos` (what the worker sleeps until) is never after the earliest deadline,
//!   and an arm that does not report a new earliest timer is never before that wake-up;
//! - a cancel finds its timer where its header says (a slot list, or the lane);
//! - `extract` takes exactly the timers chosen; `drain_in_order` returns the rest in order;
//! - lengths and the lists' internal consistency (`assert_consistent`: links both ways,
//!   heads, tails, occupancy bits, every entry's slot list), and after the last step every
//!   entry is held by the model alone (the wheel kept no reference).
//!
//! Deadlines are exact instants from the wheel's origin, so a failing case replays exactly.
//!
//! Mutants it kills (checked by hand on 2026-12-02): an arm before the lane's last that does
//! not move the lane into the levels; a level-0 head popped only after its deadline (`>=`
//! for `>`); the lane accepting a timer not strictly before the levels' earliest; an arm
//! that never reports a new earliest timer; level 0 sorted by deadline alone (arming order
//! lost); an occupancy bit left set; the lane popped a nanosecond late. Survivor: the
//! cascade's `max(elapsed)` (equivalent: a timer in a level above 0 is never behind the
//! wheel). (The entries were linked through a paged node slab until 2026-12-02; its
//! compaction mutants went with it.)

use super::*;
use crate::executors::scheduled::timer_entry::{Once, TimerEntry};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};

/// Nanoseconds below `64^level` ticks: a span that the wheel files at `level` or lower.
fn span(level: u32) -> u64 {
    1u64 << (TICK_SHIFT + LEVEL_BITS * level)
}

#[derive(Debug, Clone)]
enum Op {
    /// Arm a timer `offset % span(level)` after now (every level of the wheel is reached).
    Arm { level: u32, offset: u64 },
    /// Arm a timer that was due when armed, `back` before now (`schedule(Duration::ZERO)`, or
    /// a producer whose clock read lags another's): the lane when that keeps the order.
    ArmDue { back: u64 },
    /// Arm a timer `back` before now through the plain path (a periodic timer catching up).
    ArmLate { back: u64 },
    /// Arm a timer too far ahead to represent (kept, never due).
    ArmFar,
    /// Cancel the `pick`-th armed timer (modulo the count).
    Cancel { pick: usize },
    /// Time passes by `offset % span(level)`; the worker takes what fell due.
    Advance { level: u32, offset: u64 },
    /// Time passes to exactly the earliest deadline, or `short` nanoseconds before it (the
    /// boundary: due at its deadline, not a nanosecond before).
    AdvanceToEarliest { short: u64 },
    /// Take out the timers whose id is a multiple of `modulus` (shutdown's periodic sweep).
    Extract { modulus: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u32..LEVELS as u32, any::<u64>()).prop_map(|(level, offset)| Op::Arm { level, offset }),
        // Mostly exactly now, as a zero delay gives; sometimes a little before.
        4 => prop_oneof![Just(0u64), 0u64..5_000].prop_map(|back| Op::ArmDue { back }),
        1 => prop_oneof![Just(0u64), 0u64..50_000].prop_map(|back| Op::ArmLate { back }),
        1 => Just(Op::ArmFar),
        4 => any::<usize>().prop_map(|pick| Op::Cancel { pick }),
        // Mostly short steps (level 0-2), sometimes long ones that cascade the upper levels.
        5 => (prop_oneof![4 => 0u32..3, 1 => 3u32..6], any::<u64>())
            .prop_map(|(level, offset)| Op::Advance { level, offset }),
        2 => (0u64..2).prop_map(|short| Op::AdvanceToEarliest { short }),
        1 => (2u64..5).prop_map(|modulus| Op::Extract { modulus }),
    ]
}

/// The model: armed timers by `(deadline, seq)`, and every entry made, by id.
struct Model {
    wheel: TimerWheel,
    /// Nanoseconds from the wheel's origin.
    now: u64,
    armed: BTreeMap<(u64, u64), u64>,
    entries: Vec<TimerRef<dyn Timer>>,
    /// Entry header address -> id.
    ids: HashMap<usize, u64>,
    /// The wheel's arming sequence, as it counts.
    seq: u64,
}

impl Model {
    fn new() -> Self {
        Self {
            wheel: TimerWheel::new(),
            now: 0,
            armed: BTreeMap::new(),
            entries: Vec::new(),
            ids: HashMap::new(),
            seq: 0,
        }
    }

    fn instant(&self, nanos: u64) -> Instant {
        self.wheel.origin() + Duration::from_nanos(nanos)
    }

    fn id_of(&self, timer: &dyn Timer) -> u64 {
        let address = std::ptr::from_ref(timer.header()) as usize;
        self.ids[&address]
    }

    /// A new entry, recorded under the next id.
    fn new_entry(&mut self) -> (u64, TimerRef<dyn Timer>) {
        let entry: TimerRef<dyn Timer> = TimerRef::new(TimerEntry::new(Once(|| ()))).erase();
        let id = self.entries.len() as u64;
        self.ids
            .insert(std::ptr::from_ref(entry.header()) as usize, id);
        self.entries.push(TimerRef::clone(&entry));
        (id, entry)
    }

    /// Arms a new timer for `deadline` (nanoseconds; `None`: beyond what the wheel can
    /// represent), `due` through `push_due`.
    fn arm(&mut self, deadline: Option<u64>, due: bool) {
        let (id, entry) = self.new_entry();
        let (instant, key_deadline) = match deadline {
            Some(nanos) => (self.instant(nanos), nanos),
            // Far past MAX_DEADLINE_NS from the origin: the wheel clamps it.
            None => (
                self.wheel.origin() + Duration::from_secs(400 * 365 * 24 * 3600),
                MAX_DEADLINE_NS,
            ),
        };
        let wake_before = self.wheel.next_due_nanos();
        let earliest = if due {
            self.wheel.push_due(instant, entry)
        } else {
            self.wheel.push(instant, entry)
        };
        self.armed.insert((key_deadline, self.seq), id);
        self.seq += 1;
        // Unless the push reports a new earliest timer (the worker is then woken to look
        // again), the worker's planned wake-up must already be no later than this deadline.
        if !earliest {
            assert!(
                wake_before.is_some_and(|wake| wake <= key_deadline),
                "a timer due at {key_deadline} ns behind a wake-up at {wake_before:?} was not reported"
            );
        }
    }

    fn cancel(&mut self, pick: usize) {
        if self.armed.is_empty() {
            return;
        }
        let key = *self
            .armed
            .keys()
            .nth(pick % self.armed.len())
            .expect("in range");
        let id = self.armed.remove(&key).expect("armed");
        let entry = TimerRef::clone(&self.entries[id as usize]);
        let removed = match entry.header().heap_index() {
            IN_DUE_LIST => self
                .wheel
                .remove_from_lane(entry.header())
                .expect("a timer marked IN_DUE_LIST is in the lane"),
            NOT_IN_HEAP => panic!("an armed timer is marked NOT_IN_HEAP"),
            _ => self.wheel.remove(entry.header()),
        };
        assert!(
            TimerRef::ptr_eq(&removed, &entry),
            "cancel removed another timer"
        );
    }

    fn advance(&mut self, by: u64) {
        self.now += by;
        let mut due = VecDeque::new();
        self.wheel.take_due_into(self.instant(self.now), &mut due);
        let expected: Vec<u64> = self
            .armed
            .range(..=(self.now, u64::MAX))
            .map(|(_, &id)| id)
            .collect();
        let got: Vec<u64> = due.iter().map(|timer| self.id_of(&**timer)).collect();
        assert_eq!(
            got, expected,
            "the timers due at {} ns, in (deadline, arming) order",
            self.now
        );
        for timer in &due {
            assert_eq!(timer.header().heap_index(), IN_DUE_LIST);
        }
        self.armed.retain(|&(deadline, _), _| deadline > self.now);
    }

    fn advance_to_earliest(&mut self, short: u64) {
        let earliest = self.armed.keys().next().map(|&(deadline, _)| deadline);
        if let Some(earliest) = earliest.filter(|&earliest| earliest < MAX_DEADLINE_NS) {
            self.advance(earliest.saturating_sub(self.now).saturating_sub(short));
        }
    }

    fn extract(&mut self, modulus: u64) {
        let ids = &self.ids;
        let chosen =
            |timer: &dyn Timer| ids[&(std::ptr::from_ref(timer.header()) as usize)] % modulus == 0;
        let mut got: Vec<u64> = self
            .wheel
            .extract(chosen)
            .iter()
            .map(|timer| self.id_of(&**timer))
            .collect();
        got.sort_unstable();
        let mut expected: Vec<u64> = self
            .armed
            .values()
            .copied()
            .filter(|id| id % modulus == 0)
            .collect();
        expected.sort_unstable();
        assert_eq!(got, expected, "extract takes exactly the chosen timers");
        self.armed.retain(|_, id| *id % modulus != 0);
    }

    /// What holds after every step.
    fn check(&self) {
        assert_eq!(self.wheel.len(), self.armed.len());
        match (self.wheel.next_due_nanos(), self.armed.keys().next()) {
            (None, None) => {}
            (Some(next), Some(&(earliest, _))) => assert!(
                next <= earliest,
                "the wheel would wake at {next} ns, after the earliest deadline {earliest}"
            ),
            (next, earliest) => panic!("next due {next:?} with earliest {earliest:?}"),
        }
        self.wheel.assert_consistent();
    }

    /// The rest, in order; then nothing is left, and only the model holds the entries.
    fn finish(mut self) {
        let drained: Vec<u64> = self
            .wheel
            .drain_in_order()
            .iter()
            .map(|timer| self.id_of(&**timer))
            .collect();
        let expected: Vec<u64> = self.armed.values().copied().collect();
        assert_eq!(
            drained, expected,
            "drain_in_order: the rest, earliest first"
        );
        assert!(self.wheel.is_empty());
        self.wheel.release_if_empty();
        assert_eq!(
            self.wheel.capacity(),
            0,
            "an empty wheel released holds nothing"
        );
        for (id, entry) in self.entries.iter().enumerate() {
            assert_eq!(
                TimerRef::ref_count(entry),
                1,
                "the wheel still holds timer {id}"
            );
        }
    }
}

/// Cases per model test: fewer under Miri (~10^4 times slower), which checks the wheel's
/// pointers rather than its search of the input space.
const MODEL_CASES: u32 = if cfg!(miri) { 2 } else { 256 };

/// Operations per case (fewer under Miri).
const MODEL_OPS: std::ops::Range<usize> = if cfg!(miri) { 1..60 } else { 1..400 };

/// Timers armed first by the long-lists model test (fewer under Miri, for the same reason).
const LONG_LISTS: std::ops::Range<usize> = if cfg!(miri) { 100..200 } else { 1_500..4_000 };

/// Operations per case of the long-lists test (fewer under Miri).
const LONG_LIST_OPS: std::ops::Range<usize> = if cfg!(miri) { 1..30 } else { 1..200 };

proptest! {
    #![proptest_config(ProptestConfig {
        cases: MODEL_CASES,
        // Under Miri no failure file (isolation has no working directory).
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    })]

    /// The wheel behaves as a `BTreeMap` keyed by `(deadline, arming order)` (module docs).
    #[test]
    fn behaves_like_an_ordered_map(ops in proptest::collection::vec(op(), MODEL_OPS)) {
        let mut model = Model::new();
        for op in ops {
            match op {
                Op::Arm { level, offset } => {
                    let deadline = model.now + offset % span(level);
                    model.arm(Some(deadline), false);
                }
                Op::ArmDue { back } => model.arm(Some(model.now.saturating_sub(back)), true),
                Op::ArmLate { back } => model.arm(Some(model.now.saturating_sub(back)), false),
                Op::ArmFar => model.arm(None, false),
                Op::Cancel { pick } => model.cancel(pick),
                Op::Advance { level, offset } => model.advance(offset % span(level)),
                Op::AdvanceToEarliest { short } => model.advance_to_earliest(short),
                Op::Extract { modulus } => model.extract(modulus),
            }
            model.check();
        }
        model.finish();
    }

    /// Many timers at once, cancelled and fired in a mix: the same checks with long lists in
    /// every level.
    #[test]
    fn behaves_like_an_ordered_map_with_long_lists(
        arms in LONG_LISTS,
        ops in proptest::collection::vec(op(), LONG_LIST_OPS),
    ) {
        let mut model = Model::new();
        for n in 0..arms {
            let deadline = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) % span(4);
            model.arm(Some(deadline), false);
        }
        model.check();
        for op in ops {
            match op {
                // Cancels weigh more here, so that lists are unlinked from the middle.
                Op::Arm { .. } | Op::Cancel { .. } | Op::Extract { .. } => {
                    for pick in 0..16 {
                        model.cancel(pick * 97);
                    }
                }
                Op::ArmDue { back } => model.arm(Some(model.now.saturating_sub(back)), true),
                Op::ArmLate { back } => model.arm(Some(model.now.saturating_sub(back)), false),
                Op::ArmFar => model.arm(None, false),
                Op::Advance { level, offset } => model.advance(offset % span(level)),
                Op::AdvanceToEarliest { short } => model.advance_to_earliest(short),
            }
            model.check();
        }
        model.finish();
    }
}
