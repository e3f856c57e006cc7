//! `Settings`: how long every bench samples, per profile (the quick default run, `--full`),
//! so that all benches of one run are measured alike.

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, SamplingMode};
use std::time::Duration;

/// Environment variable choosing the profile: `quick` (default) or `full`.
pub const PROFILE_ENV: &str = "MICROBENCH_PROFILE";
/// Environment variable overriding the number of interleaved rounds.
pub const ROUNDS_ENV: &str = "MICROBENCH_ROUNDS";
/// Environment variable overriding criterion's measurement time per benchmark, in ms.
pub const MEASUREMENT_MS_ENV: &str = "MICROBENCH_MEASUREMENT_MS";

/// Sampling settings shared by every bench.
///
/// Each configuration is measured in `rounds` interleaved rounds (all variants of round 1,
/// then all of round 2, ...): one bad round then moves a median instead of a ratio, and the
/// renderer compares each variant with the other variants of the same round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `quick` or `full`.
    pub profile: &'static str,
    /// Interleaved rounds per configuration.
    pub rounds: u32,
    /// Criterion warm-up per benchmark.
    pub warm_up: Duration,
    /// Criterion measurement time per benchmark.
    pub measurement: Duration,
    /// Criterion samples per benchmark (all of equal size: flat sampling).
    pub sample_size: usize,
}

impl Settings {
    /// The quick default: 5 rounds of 0.1 s warm-up and 0.3 s measurement per benchmark, so
    /// that every bench together stays under 5 minutes on 2 cores (the executor hand-off's
    /// 150 benchmarks take about 75 s).
    pub fn quick() -> Self {
        Self {
            profile: "quick",
            rounds: 5,
            warm_up: Duration::from_millis(100),
            measurement: Duration::from_millis(300),
            sample_size: 10,
        }
    }

    /// `--full`: 5 rounds of 1 s warm-up and 3 s measurement per benchmark, 20 samples.
    pub fn full() -> Self {
        Self {
            profile: "full",
            rounds: 5,
            warm_up: Duration::from_secs(1),
            measurement: Duration::from_secs(3),
            sample_size: 20,
        }
    }

    /// The profile named by `$MICROBENCH_PROFILE`, with `$MICROBENCH_ROUNDS` and
    /// `$MICROBENCH_MEASUREMENT_MS` overrides.
    pub fn from_env() -> Self {
        let mut settings = match std::env::var(PROFILE_ENV).as_deref() {
            Ok("full") => Self::full(),
            _ => Self::quick(),
        };
        if let Some(rounds) = env_number(ROUNDS_ENV) {
            settings.rounds = (rounds as u32).max(1);
        }
        if let Some(ms) = env_number(MEASUREMENT_MS_ENV) {
            settings.measurement = Duration::from_millis(ms.max(10));
            settings.warm_up = settings.warm_up.min(settings.measurement / 2);
        }
        settings
    }

    /// A criterion configured for these settings (and then by its command line), without
    /// plots (the report draws its own chart).
    pub fn criterion(&self) -> Criterion {
        Criterion::default()
            .sample_size(self.sample_size)
            .warm_up_time(self.warm_up)
            .measurement_time(self.measurement)
            .nresamples(10_000)
            .without_plots()
            .configure_from_args()
    }

    /// Applies these settings to a group (flat sampling: every sample the same size, so each
    /// sample's time per iteration is comparable and the median is meaningful).
    pub fn configure(&self, group: &mut BenchmarkGroup<'_, WallTime>) {
        group
            .sample_size(self.sample_size)
            .warm_up_time(self.warm_up)
            .measurement_time(self.measurement)
            .nresamples(10_000)
            .sampling_mode(SamplingMode::Flat);
    }

    /// Whether this process only lists or smoke-tests the benches (`--list`, `--test`,
    /// `--profile-time`): then nothing is recorded.
    pub fn is_dry_run() -> bool {
        std::env::args()
            .any(|arg| arg == "--list" || arg == "--test" || arg.starts_with("--profile-time"))
    }

    /// The benchmark-name filter on the command line, as criterion reads it: its first
    /// positional argument (the values of criterion's options that take one are skipped).
    pub fn name_filter() -> Option<String> {
        name_filter(std::env::args().skip(1))
    }

    /// Whether criterion will run the benchmark `group/id` in this process, decided as
    /// criterion decides it: not when only listing or with `--ignored`; else the filter, a
    /// regular expression that must match somewhere in the id (equality with `--exact`).
    /// A bench asks before it starts what the measurement needs (threads, CPU burners), so
    /// that a filtered run starts nothing for the benchmarks it skips.
    pub fn will_run(group: &str, id: &str) -> bool {
        let args: Vec<String> = std::env::args().skip(1).collect();
        if args.iter().any(|arg| arg == "--list" || arg == "--ignored") {
            return false;
        }
        let exact = args.iter().any(|arg| arg == "--exact");
        selects(
            name_filter(args.into_iter()).as_deref(),
            exact,
            &format!("{group}/{id}"),
        )
    }
}

/// The routine of a benchmark that [`Settings::will_run`] said criterion skips (registered
/// so that `--list` still lists it). Criterion never calls it unless the two readings of the
/// command line disagree: then it says so, instead of measuring an empty routine.
///
/// # Panics
///
/// Always.
pub fn skipped_by_filter() {
    panic!(
        "this benchmark was skipped (nothing was started for it), but criterion selected it: \
         Settings::will_run no longer reads the command line as criterion does"
    );
}

/// Criterion's options that take a value as the next argument.
const OPTIONS_WITH_VALUE: [&str; 16] = [
    "--save-baseline",
    "--baseline",
    "--baseline-lenient",
    "--load-baseline",
    "--profile-time",
    "--sample-size",
    "--warm-up-time",
    "--measurement-time",
    "--nresamples",
    "--noise-threshold",
    "--confidence-level",
    "--significance-level",
    "--color",
    "--plotting-backend",
    "--output-format",
    "--format",
];

fn name_filter(args: impl Iterator<Item = String>) -> Option<String> {
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        if OPTIONS_WITH_VALUE.contains(&arg.as_str()) {
            args.next();
        } else if !arg.starts_with('-') {
            return Some(arg);
        }
    }
    None
}

fn selects(filter: Option<&str>, exact: bool, full_id: &str) -> bool {
    match filter {
        None => true,
        Some(filter) if exact => filter == full_id,
        // Criterion panics on a filter that is not a regular expression; so does this, first.
        Some(filter) => regex::Regex::new(filter)
            .unwrap_or_else(|error| {
                panic!("the benchmark filter {filter:?} is not a regular expression: {error}")
            })
            .is_match(full_id),
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self::quick()
    }
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> impl Iterator<Item = String> + '_ {
        line.split_whitespace().map(str::to_owned)
    }

    #[test]
    fn the_filter_is_the_first_positional_argument_after_option_values() {
        assert_eq!(
            name_filter(args(
                "--bench --save-baseline before k256_s2/ --sample-size 10"
            )),
            Some("k256_s2/".to_owned())
        );
        assert_eq!(name_filter(args("--bench --sample-size 10")), None);
    }

    #[test]
    fn a_filter_selects_as_criterion_does_by_regular_expression_or_exactly() {
        let id = "executor_handoff/k256_s2/pulsar/r1";
        assert!(selects(Some("k256_s2/"), false, id));
        assert!(!selects(
            Some("k256_s2/"),
            false,
            "executor_handoff/k256_s2_over/pulsar/r1"
        ));
        assert!(selects(Some("k256_s[28]/pul"), false, id));
        assert!(!selects(
            Some("pingpong+hogs2/"),
            false,
            "queue/pingpong+hogs2/pulsar/r1"
        ));
        assert!(selects(
            Some(r"pingpong\+hogs2/"),
            false,
            "queue/pingpong+hogs2/pulsar/r1"
        ));
        assert!(!selects(Some("k256_s2/"), true, id));
        assert!(selects(Some(id), true, id));
        assert!(selects(None, false, id));
    }
}
