//! The check `cargo xtask test` makes before its first step: every library source file with
//! `unsafe` code is executed by a run of the Miri step, so `unsafe` added later cannot slip
//! past Miri unnoticed.

use anyhow::{bail, Context, Result};
use std::path::Path;

/// The library crates' sources. (`testkit`'s counting allocator and `microbench`'s CPU probes
/// are test and benchmark tooling, not shipped, and left out.)
const SOURCE_DIRS: [&str; 3] = ["common/src", "client/src", "server/src"];

/// Every library file with `unsafe` code, with its package and the targets of that package's
/// runs in [`MIRI_RUNS`](crate::test::MIRI_RUNS) (`--lib`, or a `--test` suite) that execute
/// it. A file with `unsafe` missing here, a listed target missing from the Miri runs, or a
/// listed file without `unsafe` stops the test command before its first step.
const UNSAFE_FILES: &[(&str, &str, &[&str])] = &[
    (
        "client/src/consumer/ticket.rs",
        "pulsar-client",
        &["--lib", "consumer_lifetime", "consumer"],
    ),
    (
        "common/src/collections/growable_array_blocking_queue.rs",
        "pulsar-common",
        &["growable_array_blocking_queue"],
    ),
    (
        "common/src/collections/queue_error.rs",
        "pulsar-common",
        &["growable_array_blocking_queue"],
    ),
    (
        "common/src/executors/executor_core.rs",
        "pulsar-common",
        &[
            "executor_soundness",
            "single_thread_executor",
            "scheduled_executor",
        ],
    ),
    (
        "common/src/executors/raw_task.rs",
        "pulsar-common",
        &["--lib", "executor_soundness", "spawn", "task_cancel"],
    ),
    (
        "common/src/executors/scheduled/core_share.rs",
        "pulsar-common",
        &["--lib", "scheduled_executor"],
    ),
    (
        "common/src/executors/scheduled/entry_blocks.rs",
        "pulsar-common",
        &["--lib", "scheduled_executor", "timer_allocation"],
    ),
    (
        "common/src/executors/scheduled/timer_entry.rs",
        "pulsar-common",
        &["--lib", "scheduled_executor"],
    ),
    (
        "common/src/executors/scheduled/timer_ref.rs",
        "pulsar-common",
        &["--lib", "scheduled_executor", "timer_allocation"],
    ),
    (
        "common/src/executors/scheduled/timer_wheel.rs",
        "pulsar-common",
        &["--lib", "scheduled_executor"],
    ),
    (
        "common/src/executors/task_batch.rs",
        "pulsar-common",
        &[
            "single_thread_executor",
            "execute_all",
            "scheduled_executor",
        ],
    ),
    (
        "common/src/pool/pooled.rs",
        "pulsar-common",
        &[
            "pool_recycler",
            "pool_recycler_model",
            "pool_byte_buffer_list",
        ],
    ),
    (
        "common/src/park_lock/protocol.rs",
        "pulsar-common",
        &[
            "--lib",
            "executor_soundness",
            "growable_array_blocking_queue",
        ],
    ),
    (
        "common/src/executors/worker_loop.rs",
        "pulsar-common",
        &["single_thread_executor", "scheduled_executor"],
    ),
];

/// Files whose only `unsafe` is compiled under `cfg(loom)` (loom's cell access): the loom
/// step executes it; Miri cannot run loom's models.
const LOOM_ONLY: &[&str] = &["common/src/sync.rs"];

/// Files whose only `unsafe` is calls into a dependency that Miri reports for its own code
/// and that the crate therefore swaps out under Miri (`parking_lot_core`: see
/// `common/src/park_lock/mod.rs`), or system calls Miri cannot make (`membarrier(2)`: see
/// `common/src/executors/claim_fence.rs`, which uses full fences under Miri), or
/// instructions Miri cannot run (`PREFETCHW` and `CPUID`: see `common/src/prefetch.rs`, a
/// no-op under Miri). The native suites execute them, and the valgrind step all but
/// `PREFETCHW` (valgrind's CPUID does not report the instruction, so it is skipped there).
const NATIVE_ONLY: &[&str] = &[
    "common/src/park_lock/lot_parking.rs",
    "common/src/executors/claim_fence.rs",
    "common/src/prefetch.rs",
];

/// Checks that every library file with `unsafe` under `root` is listed in [`UNSAFE_FILES`]
/// (or [`LOOM_ONLY`], [`NATIVE_ONLY`]) and that every target listed for it is among `miri_runs`.
///
/// # Errors
///
/// A source directory cannot be read, or the list and the sources disagree (each
/// disagreement named, with what to do).
pub(crate) fn check(root: &Path, miri_runs: &[(&str, &[&str])]) -> Result<()> {
    let mut found = Vec::new();
    for dir in SOURCE_DIRS {
        collect_rust_files(root, &root.join(dir), &mut found)?;
    }
    let mut problems = Vec::new();
    let mut with_unsafe = Vec::new();
    for file in &found {
        let source =
            std::fs::read_to_string(root.join(file)).with_context(|| format!("reading {file}"))?;
        if has_unsafe(&source) {
            with_unsafe.push(file.as_str());
        }
    }
    for file in &with_unsafe {
        if LOOM_ONLY.contains(file) || NATIVE_ONLY.contains(file) {
            continue;
        }
        match UNSAFE_FILES.iter().find(|(listed, ..)| listed == file) {
            None => problems.push(format!(
                "{file} has `unsafe` code that no Miri run is listed for: add the suites that \
                 execute it to MIRI_RUNS (xtask/src/test.rs) and the file to UNSAFE_FILES \
                 (xtask/src/unsafe_coverage.rs)"
            )),
            Some((_, package, targets)) => {
                for target in *targets {
                    if !runs_target(miri_runs, package, target) {
                        problems.push(format!(
                            "{file} is executed under Miri by `{package} {target}`, which is \
                             not in MIRI_RUNS"
                        ));
                    }
                }
            }
        }
    }
    for (listed, ..) in UNSAFE_FILES {
        if !with_unsafe.contains(listed) {
            problems.push(format!(
                "{listed} is listed in UNSAFE_FILES but has no `unsafe` code: remove it"
            ));
        }
    }
    if !problems.is_empty() {
        bail!(
            "the Miri step does not cover the `unsafe` code:\n{}",
            problems.join("\n")
        );
    }
    Ok(())
}

/// Whether one of `miri_runs` runs `target` (`--lib` or a `--test` name) of `package`.
fn runs_target(miri_runs: &[(&str, &[&str])], package: &str, target: &str) -> bool {
    miri_runs.iter().any(|(run_package, args)| {
        // Arguments after `--` go to the test binaries (filters), not to cargo.
        let cargo_args = args.split(|arg| *arg == "--").next().unwrap_or(&[]);
        *run_package == package
            && if target == "--lib" {
                cargo_args.contains(&"--lib")
            } else {
                cargo_args.windows(2).any(|pair| pair == ["--test", target])
            }
    })
}

/// Whether `source` uses the `unsafe` keyword outside line comments (doc comments included):
/// `unsafe_code` in a lint name or `UnsafeCell` do not count.
fn has_unsafe(source: &str) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    source.lines().any(|line| {
        let code = line.split("//").next().unwrap_or("");
        code.match_indices("unsafe").any(|(at, keyword)| {
            let before = code[..at].chars().next_back();
            let after = code[at + keyword.len()..].chars().next();
            !before.is_some_and(is_word) && !after.is_some_and(is_word)
        })
    })
}

/// Appends the `.rs` files under `dir` to `out`, as paths relative to `root` with `/`
/// separators, sorted.
fn collect_rust_files(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
    let mut entries = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<std::io::Result<Vec<_>>>()
        .with_context(|| format!("reading {}", dir.display()))?;
    entries.sort_by_key(|entry| entry.path());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            collect_rust_files(root, &path, out)?;
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let parts: Vec<_> = relative.iter().map(|p| p.to_string_lossy()).collect();
            out.push(parts.join("/"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keyword_counts_and_lint_names_comments_and_types_do_not() {
        assert!(has_unsafe("    let x = unsafe { *p };"));
        assert!(has_unsafe("unsafe impl Send for T {}"));
        assert!(has_unsafe("pub(crate) unsafe fn claim(&self) {}"));
        assert!(!has_unsafe("#![deny(unsafe_op_in_unsafe_fn)]"));
        assert!(!has_unsafe("#[allow(unsafe_code)]"));
        assert!(!has_unsafe("struct Cell(std::cell::UnsafeCell<u8>);"));
        assert!(!has_unsafe("/// no `unsafe` here"));
        assert!(!has_unsafe("let a = 1; // an unsafe remark"));
    }

    #[test]
    fn every_file_with_unsafe_in_the_workspace_is_run_under_miri() {
        check(&crate::workspace_root(), crate::test::MIRI_RUNS).unwrap();
    }

    #[test]
    fn a_miri_list_without_the_suites_fails_the_check_naming_the_files() {
        let error = check(&crate::workspace_root(), &[])
            .unwrap_err()
            .to_string();
        assert!(error.contains("client/src/consumer/ticket.rs"), "{error}");
        assert!(
            error.contains("common/src/executors/raw_task.rs"),
            "{error}"
        );
    }

    #[test]
    fn a_target_filter_after_the_double_dash_is_not_a_run() {
        let runs: &[(&str, &[&str])] = &[("p", &["--test", "a", "--", "--test", "b"])];
        assert!(runs_target(runs, "p", "a"));
        assert!(!runs_target(runs, "p", "b"));
        assert!(!runs_target(runs, "q", "a"));
        assert!(!runs_target(runs, "p", "--lib"));
    }
}
