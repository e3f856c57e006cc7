//! `cargo xtask test`: everything CI checks, in one command.
//!
//! Steps, in order (each must pass):
//! 1. `cargo fmt --all -- --check`
//! 2. `cargo clippy --workspace --all-targets -- -D warnings`
//! 3. `cargo test --workspace`, with a throwaway ZooKeeper server (Debian's `zookeeper`
//!    package, installed first when missing: [`crate::setup::apt_install`]) whose address goes to the tests in `PULSAR_TEST_ZOOKEEPER`; the
//!    fault drills (`server/tests/zookeeper_*.rs`, `broker_processes.rs`) start their own
//!    servers and ensembles from the same jars
//! 4. the loom models: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release`
//!    on `pulsar-common` (library models and `tests/loom_*.rs`) and on `pulsar-client`'s
//!    consumer dispatch (library models), in `target/loom`
//! 5. Miri (Stacked Borrows, its default) over the tests that execute `unsafe` code, on the
//!    dated nightly `setup::MIRI_TOOLCHAIN` (`cargo +nightly-<date> miri test`), in
//!    `target/miri`, in the background from step 2 on (it keeps one core busy for about five
//!    minutes; the other steps share the rest, and a failing step stops it); the `miri` and
//!    `rust-src` components are installed when missing ([`crate::setup`]); before step 1,
//!    [`crate::unsafe_coverage`] checks that every library file with `unsafe` code is
//!    executed by one of these runs
//! 6. valgrind memcheck over the tests that exercise `unsafe` (task slots, the executor and its
//!    batches, the scheduled executor, the zero-allocation binaries), on the test step's build (a
//!    target runner is not part of cargo's fingerprint, so nothing is rebuilt for it)
//!
//! What each checker covers: loom explores every interleaving of the core protocols (within a
//! preemption bound) on a model of the memory; Miri checks every execution it runs for
//! undefined behaviour: aliasing (Stacked Borrows), provenance, use after free, uninitialised
//! reads, data races, leaks; valgrind checks the real binary on the real allocator, at full
//! scale (Miri runs smaller counts), for invalid accesses and leaks, but sees no aliasing or
//! provenance errors.
//!
//! Flags: `--no-loom`, `--no-miri`, `--no-valgrind` skip a step while developing; CI runs
//! everything, and a step whose tool cannot be installed fails the run.

use crate::background::{Background, Runner};
use crate::{cargo, workspace_root};
use anyhow::{bail, Context, Result};
use std::process::{Command, ExitStatus};
use std::time::Instant;

pub(crate) fn run(args: &[String]) -> Result<()> {
    const FLAGS: [&str; 3] = ["--no-loom", "--no-miri", "--no-valgrind"];
    if let Some(arg) = args.iter().find(|a| !FLAGS.contains(&a.as_str())) {
        bail!(
            "unknown flag `{arg}` (expected one of {})",
            FLAGS.join(", ")
        );
    }
    let wants = |step: &str| !args.iter().any(|a| a == &format!("--no-{step}"));
    let (loom, miri, valgrind) = (wants("loom"), wants("miri"), wants("valgrind"));
    // A file with `unsafe` that no Miri run executes fails the command at once, skipped or not.
    crate::unsafe_coverage::check(&workspace_root(), MIRI_RUNS)?;
    // Install what the later steps need before the long ones start, so that a machine that
    // cannot install them fails in seconds, not after the test suite.
    crate::setup::ensure_lints()?;
    crate::zookeeper::ensure_installed()?;
    if miri {
        crate::setup::ensure_miri()?;
    }
    if valgrind {
        crate::setup::ensure_valgrind()?;
    }
    let started = Instant::now();

    step("fmt", cargo().args(["fmt", "--all", "--", "--check"]))?;

    // Miri interprets one thread at a time for about five minutes: it runs on a thread of its
    // own from here on, beside clippy, the test suite (much of which waits on ZooKeeper), loom
    // and valgrind, its output kept in a log that is printed when it ends. If a step fails
    // first, dropping it stops it.
    let miri_run = miri.then(|| Background::start(miri_tests));
    step(
        "clippy",
        cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
    )?;

    {
        // The metadata-store suites also run against a real ZooKeeper: start one (or use the
        // one named in PULSAR_TEST_ZOOKEEPER) and stop it when the tests are done.
        let zookeeper = crate::zookeeper::start_for_tests()?;
        let (name, value) = zookeeper.env();
        let mut test = cargo();
        test.args(["test", "--workspace"]).env(name, value);
        let outcome = step("test", &mut test);
        drop(zookeeper);
        outcome?;
    }

    if loom {
        let mut models = cargo();
        models
            .args([
                "test",
                "-p",
                "pulsar-common",
                "--release",
                "--lib",
                "--test",
                "loom_queue",
                "loom",
            ])
            .env("RUSTFLAGS", "--cfg loom")
            .env("LOOM_MAX_PREEMPTIONS", "2")
            .env("CARGO_TARGET_DIR", workspace_root().join("target/loom"));
        step("loom models (pulsar-common)", &mut models)?;
        let mut client_models = cargo();
        client_models
            .args(["test", "-p", "pulsar-client", "--release", "--lib", "loom"])
            .env("RUSTFLAGS", "--cfg loom")
            .env("LOOM_MAX_PREEMPTIONS", "2")
            .env("CARGO_TARGET_DIR", workspace_root().join("target/loom"));
        step("loom models (pulsar-client consumer)", &mut client_models)?;
    }

    let native_checks = if valgrind {
        valgrind_memcheck()
    } else {
        Ok(())
    };
    if let Some(miri_run) = miri_run {
        miri_run.join()?;
    }
    native_checks?;

    println!(
        "xtask test: all steps passed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The test runs Miri checks, as `(package, cargo test arguments)`: every test that executes
/// `unsafe` code (task slots and batches, both executors, the pools, the client's consumer).
/// Under Miri a test sees `cfg(miri)` and runs smaller counts where its full size would take
/// minutes; tests that need the real machine (thread counts read from `/proc`, timing bounds)
/// are skipped here by name and run natively and under valgrind. Which run executes each file
/// with `unsafe` is checked before the first step (`unsafe_coverage.rs`).
pub(crate) const MIRI_RUNS: &[(&str, &[&str])] = &[
    // Task slots, batches, the ring and the timer wheel's intrusive lists (unit tests, the
    // wheel's model with a few cases), then both executors' suites (the workers' claim protocol, shutdown_now's
    // hand-back, panics and drops in every place), submitted tasks' cancel and spawned
    // futures (their queue entries in task slots: run, dropped, handed back, downcast on
    // rejection), groups, the recycler's guard (`Pooled`: returned on its own and other
    // threads, detached, dropped while unwinding and during thread exit; and the model's
    // random sequences of those) and pooled buffer lists.
    ("pulsar-common", &["--lib"]),
    (
        "pulsar-common",
        &[
            "--test",
            "executor_soundness",
            "--test",
            "execute_all",
            "--test",
            "single_thread_executor",
            "--test",
            "scheduled_executor",
            "--test",
            "timer_allocation",
            "--test",
            "task_cancel",
            "--test",
            "spawn",
            "--test",
            "executor_group",
            "--test",
            "executor_stats",
            "--test",
            "executor_kinds",
            "--test",
            "pool_byte_buffer_list",
            "--test",
            "pool_recycler",
            "--test",
            "pool_recycler_model",
        ],
    ),
    // The blocking queue: its put error's `Sync` impl, and the queue under its own suite
    // (stress, drops, the proptest model).
    (
        "pulsar-common",
        &["--test", "growable_array_blocking_queue"],
    ),
    // The consumer's job tickets (one strong reference per lane's jobs, released by the
    // last job): dispatch, listener lifetimes, close.
    (
        "pulsar-client",
        &["--lib", "--test", "consumer_lifetime", "--test", "consumer"],
    ),
];

/// Runs [`MIRI_RUNS`] under Miri with Stacked Borrows (Miri's default model), each run's
/// output into `target/miri/xtask-miri-<n>.log`, echoed when the run ends.
fn miri_tests(runner: &Runner) -> Result<()> {
    let logs = workspace_root().join("target/miri");
    std::fs::create_dir_all(&logs).context("creating target/miri")?;
    for (n, (package, run)) in MIRI_RUNS.iter().enumerate() {
        let name = format!("miri -p {package} {}", run.join(" "));
        let log_path = logs.join(format!("xtask-miri-{n}.log"));
        let log = std::fs::File::create(&log_path)
            .with_context(|| format!("creating {}", log_path.display()))?;
        let mut miri = crate::setup::miri_cargo();
        miri.args(["miri", "test", "-p", package])
            .args(*run)
            .env("CARGO_TARGET_DIR", &logs)
            .stdout(log.try_clone()?)
            .stderr(log);
        let outcome = runner.step(&name, &mut miri);
        let output = std::fs::read_to_string(&log_path).unwrap_or_default();
        println!("==> xtask test: output of `{name}`:\n{output}");
        // The run's output may scroll away behind the steps running beside it: the error,
        // which is printed last, carries what went wrong.
        outcome.map_err(|error| error.context(failure_excerpt(&output)))?;
    }
    Ok(())
}

/// What a failed test run printed that says why: the lines naming a failure (undefined
/// behaviour, a panic, a failed test, a compile error) with the two after each, then the last
/// lines of the output.
fn failure_excerpt(output: &str) -> String {
    const MARKERS: [&str; 6] = [
        "Undefined Behavior",
        "error:",
        "error[",
        "panicked at",
        "FAILED",
        "failures:",
    ];
    let lines: Vec<&str> = output.lines().collect();
    let mut excerpt = Vec::new();
    let mut shown_until = 0;
    for (i, line) in lines.iter().enumerate() {
        if excerpt.len() >= 60 {
            break;
        }
        if i >= shown_until && MARKERS.iter().any(|marker| line.contains(marker)) {
            shown_until = (i + 3).min(lines.len());
            excerpt.extend_from_slice(&lines[i..shown_until]);
        }
    }
    let tail = &lines[lines.len().saturating_sub(20)..];
    format!(
        "what the run reported:\n{}\n--- its last lines:\n{}",
        excerpt.join("\n"),
        tail.join("\n")
    )
}

/// Runs the tests that exercise `unsafe` under valgrind's memcheck, through cargo's target
/// runner so that cargo finds the binaries. Stress tests are skipped (valgrind serialises
/// threads; the races are covered natively and by loom).
fn valgrind_memcheck() -> Result<()> {
    let runner = "valgrind --tool=memcheck --error-exitcode=97 --leak-check=full \
                  --errors-for-leak-kinds=definite --quiet";
    let runs: [(&str, &[&str]); 7] = [
        ("pulsar-common", &["--lib", "raw_task"]),
        ("pulsar-common", &["--test", "zero_allocation"]),
        // Kept timer entries reused across threads, on the real allocator.
        ("pulsar-common", &["--test", "timer_allocation"]),
        (
            "pulsar-common",
            &["--test", "single_thread_executor", "--", "--skip", "racing"],
        ),
        (
            "pulsar-common",
            &["--test", "execute_all", "--", "--skip", "racing"],
        ),
        (
            "pulsar-common",
            &[
                "--test",
                "scheduled_executor",
                "--",
                "--skip",
                "racing",
                "--skip",
                "million",
            ],
        ),
        // The consumer's listener jobs, which reach the consumer without a count of their own.
        ("pulsar-client", &["--test", "consumer_lifetime"]),
    ];
    for (package, run) in runs {
        let mut memcheck = cargo();
        memcheck
            .args(["test", "-p", package])
            .args(run)
            .env("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER", runner)
            .env("CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER", runner);
        step(
            &format!("valgrind memcheck -p {package} {}", run.join(" ")),
            &mut memcheck,
        )?;
    }
    Ok(())
}

/// Runs one step from the workspace root, echoing it and timing it.
fn step(name: &str, command: &mut Command) -> Result<()> {
    let started = Instant::now();
    println!("==> xtask test: {name}");
    let status = command
        .current_dir(workspace_root())
        .status()
        .with_context(|| format!("cannot run the `{name}` step"))?;
    step_finished(name, status, started)
}

/// Reports how the step `name`, started at `started`, ended: an error if it failed.
pub(crate) fn step_finished(name: &str, status: ExitStatus, started: Instant) -> Result<()> {
    if !status.success() {
        bail!("`{name}` failed ({status})");
    }
    println!(
        "==> xtask test: {name} passed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
