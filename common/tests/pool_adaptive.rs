//! `AdaptiveBufAllocator`: the size table, the first guess, the +4 / -1 steps with the
//! two-small-records rule, Netty's later fixes, and a model over random record sequences.
#![cfg(not(loom))]

use proptest::prelude::*;
use pulsar_common::pool::{AdaptiveBufAllocator, SIZE_TABLE};

/// The table as the specification states it: 16..=496 by 16, then 512 doubling to 2^30.
fn spec_table() -> Vec<usize> {
    let mut table: Vec<usize> = (16..512).step_by(16).collect();
    let mut size = 512usize;
    while size <= 1 << 30 {
        table.push(size);
        size *= 2;
    }
    table
}

// ---- the table --------------------------------------------------------------------------

#[test]
fn the_size_table_is_nettys() {
    assert_eq!(SIZE_TABLE.to_vec(), spec_table());
    assert_eq!(SIZE_TABLE.len(), 53);
}

// ---- the first guess --------------------------------------------------------------------

#[test]
fn the_defaults_are_sofajrafts_and_start_at_512() {
    let allocator = AdaptiveBufAllocator::default();
    assert_eq!(
        (
            allocator.minimum(),
            allocator.initial(),
            allocator.maximum()
        ),
        (64, 512, 524_288)
    );
    assert_eq!(allocator.new_handle().guess(), 512);
}

#[test]
fn an_initial_size_between_table_sizes_is_rounded_down() {
    // 1000 lies between 512 and 1024: the first guess is 512, not 1024.
    assert_eq!(
        AdaptiveBufAllocator::new(64, 1000, 65_536)
            .new_handle()
            .guess(),
        512
    );
    assert_eq!(
        AdaptiveBufAllocator::new(16, 100, 1024)
            .new_handle()
            .guess(),
        96
    );
}

#[test]
fn a_first_guess_rounded_below_the_minimum_is_clamped_up_to_it() {
    // 100 rounds down to 96, below the minimum of 100.
    assert_eq!(
        AdaptiveBufAllocator::new(100, 100, 1024)
            .new_handle()
            .guess(),
        100
    );
}

#[test]
fn guesses_never_pass_a_maximum_that_is_not_a_table_size() {
    // 1000 is not a table size; with the old rounding the guess could reach 1024.
    let mut handle = AdaptiveBufAllocator::new(64, 1000, 1000).new_handle();
    for _ in 0..10 {
        handle.record(100_000);
        assert!(handle.guess() <= 1000);
    }
}

#[test]
fn guesses_never_fall_below_a_minimum_that_is_not_a_table_size() {
    let mut handle = AdaptiveBufAllocator::new(100, 4096, 65_536).new_handle();
    for _ in 0..100 {
        handle.record(1);
        assert!(handle.guess() >= 100);
    }
    assert_eq!(handle.guess(), 112, "the smallest table size >= 100");
}

// ---- growing ----------------------------------------------------------------------------

#[test]
fn a_record_that_reaches_the_guess_grows_it_four_table_steps() {
    let mut handle = AdaptiveBufAllocator::new(16, 64, 1 << 20).new_handle();
    assert_eq!(handle.guess(), 64); // index 3
    handle.record(64);
    assert_eq!(handle.guess(), 128); // index 7
    handle.record(1000);
    assert_eq!(handle.guess(), 192); // index 11
    handle.record(192);
    assert_eq!(handle.guess(), 256); // index 15
    handle.record(256);
    assert_eq!(handle.guess(), 320); // index 19
}

#[test]
fn growth_stops_at_the_maximum() {
    let mut handle = AdaptiveBufAllocator::new(64, 512, 4096).new_handle();
    handle.record(512);
    assert_eq!(handle.guess(), 4096);
    handle.record(1 << 20);
    assert_eq!(handle.guess(), 4096);
}

#[test]
fn a_record_between_the_step_below_and_the_guess_changes_nothing() {
    let mut handle = AdaptiveBufAllocator::default().new_handle(); // 512; step below: 496
    for _ in 0..5 {
        handle.record(500);
    }
    assert_eq!(handle.guess(), 512);
}

// ---- shrinking --------------------------------------------------------------------------

#[test]
fn two_consecutive_small_records_shrink_the_guess_one_step() {
    let mut handle = AdaptiveBufAllocator::default().new_handle();
    handle.record(496); // fits in the step below (index - 1): first small record
    assert_eq!(handle.guess(), 512);
    handle.record(496); // second in a row
    assert_eq!(handle.guess(), 496);
}

#[test]
fn the_shrink_test_compares_against_one_step_below_not_two() {
    // netty#9555: the old test used index - 2 (480 here), so 490 never shrank the guess.
    let mut handle = AdaptiveBufAllocator::default().new_handle();
    handle.record(490);
    handle.record(490);
    assert_eq!(handle.guess(), 496);
}

#[test]
fn a_small_record_followed_by_a_normal_one_still_counts_toward_the_next_shrink() {
    // Netty's rule: only a grow clears the small-record streak.
    let mut handle = AdaptiveBufAllocator::default().new_handle();
    handle.record(100); // small
    handle.record(500); // neither small nor reaching the guess
    handle.record(100); // small again: shrink
    assert_eq!(handle.guess(), 496);
}

#[test]
fn a_grow_clears_the_small_record_streak() {
    let mut handle = AdaptiveBufAllocator::default().new_handle();
    handle.record(100); // small
    handle.record(512); // grow to 8192
    handle.record(100); // first small record of a new streak
    assert_eq!(handle.guess(), 8192);
    handle.record(100);
    assert_eq!(handle.guess(), 4096);
}

#[test]
fn shrinking_stops_at_the_minimum() {
    let mut handle = AdaptiveBufAllocator::new(64, 128, 1024).new_handle();
    for _ in 0..20 {
        handle.record(0);
    }
    assert_eq!(handle.guess(), 64);
}

// ---- allocation -------------------------------------------------------------------------

#[test]
fn allocate_gives_a_collector_with_room_for_the_guess() {
    let handle = AdaptiveBufAllocator::new(64, 2048, 65_536).new_handle();
    let collector = handle.allocate();
    assert!(collector.is_empty());
    assert!(collector.capacity() >= 2048);
    assert!(handle.allocate_by_recycler().capacity() >= 2048);
}

#[test]
#[should_panic(expected = "minimum must be positive")]
fn a_zero_minimum_is_refused() {
    AdaptiveBufAllocator::new(0, 16, 64);
}

#[test]
#[should_panic(expected = "must be at least minimum")]
fn an_initial_below_the_minimum_is_refused() {
    AdaptiveBufAllocator::new(64, 32, 1024);
}

#[test]
#[should_panic(expected = "must be at least initial")]
fn a_maximum_below_the_initial_is_refused() {
    AdaptiveBufAllocator::new(64, 512, 256);
}

// ---- model ------------------------------------------------------------------------------

/// The rules, spelled out on indices into the specification's table.
struct Model {
    table: Vec<usize>,
    minimum: usize,
    maximum: usize,
    min_index: usize,
    max_index: usize,
    index: usize,
    decrease_now: bool,
}

impl Model {
    fn new(minimum: usize, initial: usize, maximum: usize) -> Self {
        let table = spec_table();
        let last = table.len() - 1;
        let min_index = table.iter().position(|&s| s >= minimum).unwrap_or(last);
        let floor = |size: usize| table.iter().rposition(|&s| s <= size).unwrap_or(0);
        let max_index = floor(maximum).max(min_index);
        let index = floor(initial).min(max_index);
        Self {
            table,
            minimum,
            maximum,
            min_index,
            max_index,
            index,
            decrease_now: false,
        }
    }

    fn guess(&self) -> usize {
        self.table[self.index].clamp(self.minimum, self.maximum)
    }

    fn record(&mut self, actual: usize) {
        let below = self.table[self.index.saturating_sub(1)];
        if actual <= below {
            if self.decrease_now {
                self.index = self
                    .index
                    .min(self.index.saturating_sub(1).max(self.min_index));
                self.decrease_now = false;
            } else {
                self.decrease_now = true;
            }
        } else if actual >= self.guess() {
            self.index = (self.index + 4).min(self.max_index);
            self.decrease_now = false;
        }
    }
}

fn bounds() -> impl Strategy<Value = (usize, usize, usize)> {
    (1usize..100_000, 0usize..100_000, 0usize..1_000_000)
        .prop_map(|(minimum, extra, more)| (minimum, minimum + extra, minimum + extra + more))
}

proptest! {
    #![proptest_config(ProptestConfig {
        // Under Miri: fewer cases, and no failure file (isolation has no working directory).
        cases: if cfg!(miri) { 8 } else { ProptestConfig::default().cases },
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    })]
    #[test]
    fn guesses_follow_the_table_rules(
        (minimum, initial, maximum) in bounds(),
        records in proptest::collection::vec(
            prop_oneof![0usize..600, 0usize..2_000_000],
            0..80,
        ),
    ) {
        let mut handle = AdaptiveBufAllocator::new(minimum, initial, maximum).new_handle();
        let mut model = Model::new(minimum, initial, maximum);
        prop_assert_eq!(handle.guess(), model.guess());
        for actual in records {
            let before = handle.guess();
            handle.record(actual);
            model.record(actual);
            let after = handle.guess();
            prop_assert_eq!(after, model.guess());
            prop_assert!((minimum..=maximum).contains(&after));
            prop_assert!(
                SIZE_TABLE.contains(&after) || after == minimum || after == maximum,
                "a guess is a table size unless clamped to a bound: {}", after
            );
            if actual >= before {
                prop_assert!(after >= before, "a record reaching the guess never shrinks it");
            }
            if after < before {
                prop_assert!(actual < before);
            }
        }
    }
}
