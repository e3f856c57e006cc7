//! `cargo xtask bench [FILTER] [--full] [--report-only] [-- CRITERION_ARGS]`: builds and runs
//! the microbench benches with progress shown, then renders `target/bench-report/`.
//!
//! Benches are discovered from `cargo metadata` (every `[[bench]]` of `microbench`); each runs
//! as `cargo bench -p microbench --bench NAME` with `MICROBENCH_REPORT_DIR` pointing at
//! `bench-report/raw`, where it writes its rows (the contract in `microbench/src/lib.rs`).
//! Criterion's own output goes to `bench-report/logs/NAME.log`; the benches' "n of m" lines
//! and anything unexpected are shown.

use crate::bench_machine::{load_average, Machine};
use crate::{cargo, report, workspace_root};
use anyhow::{bail, Context, Result};
use std::fs::{self, File};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

/// The crate whose benches this command runs.
const BENCH_PACKAGE: &str = "microbench";

const USAGE: &str = "\
cargo xtask bench [FILTER] [--full] [--report-only] [-- CRITERION_ARGS...]

  FILTER          run only the benches whose name contains FILTER (others keep their last rows)
  --full          measure longer (5 rounds, 1 s warm-up, 3 s measurement, 20 samples)
  --report-only   do not run anything: render the report from the rows already written
  CRITERION_ARGS  passed to every criterion bench (e.g. a benchmark-id filter)

Writes target/bench-report/report.md, report.json and one SVG chart per bench.";

/// What the command line asked for.
#[derive(Debug, Default, PartialEq, Eq)]
struct Options {
    filter: Option<String>,
    full: bool,
    report_only: bool,
    criterion_args: Vec<String>,
}

impl Options {
    fn parse(args: &[String]) -> Result<Option<Options>> {
        let mut options = Options::default();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--full" => options.full = true,
                "--report-only" => options.report_only = true,
                "-h" | "--help" => return Ok(None),
                "--" => {
                    options.criterion_args = args.cloned().collect();
                    break;
                }
                flag if flag.starts_with('-') => bail!("unknown option `{flag}`\n\n{USAGE}"),
                name => {
                    if options.filter.replace(name.to_owned()).is_some() {
                        bail!("only one FILTER may be given\n\n{USAGE}");
                    }
                }
            }
        }
        Ok(Some(options))
    }
}

pub(crate) fn run(args: &[String]) -> Result<()> {
    let Some(options) = Options::parse(args)? else {
        eprintln!("{USAGE}");
        return Ok(());
    };
    let root = workspace_root();
    let out = target_dir(&root).join("bench-report");
    let raw = out.join("raw");
    let logs = out.join("logs");
    let started = Instant::now();
    let load_before = load_average();
    let core_to_core = (!options.report_only)
        .then(crate::core_to_core::round_trip)
        .flatten();

    if !options.report_only {
        let benches = select(discover(&root)?, options.filter.as_deref())?;
        fs::create_dir_all(&raw).with_context(|| format!("create {}", raw.display()))?;
        fs::create_dir_all(&logs).with_context(|| format!("create {}", logs.display()))?;
        if options.filter.is_none() {
            clear_rows(&raw)?;
        }
        eprintln!("==> building the benches (cargo bench -p {BENCH_PACKAGE} --no-run)");
        let status = cargo()
            .current_dir(&root)
            .args(["bench", "-p", BENCH_PACKAGE, "--no-run"])
            .status()
            .context("run cargo bench --no-run")?;
        if !status.success() {
            bail!("building the benches failed");
        }
        let profile = if options.full { "full" } else { "quick" };
        for (n, bench) in benches.iter().enumerate() {
            eprintln!(
                "==> [{}/{}] {bench} ({profile}, {:.0} s so far)",
                n + 1,
                benches.len(),
                started.elapsed().as_secs_f64()
            );
            run_bench(&root, bench, profile, &options.criterion_args, &raw, &logs)?;
        }
    }

    let mut machine = Machine::describe(&root);
    if !options.report_only {
        machine.load_before = load_before;
        machine.core_to_core = core_to_core;
    }
    let listing = options
        .criterion_args
        .iter()
        .any(|arg| arg == "--list" || arg == "--test");
    if listing && !options.report_only {
        return Ok(()); // criterion listed or tested the benches: nothing was measured
    }
    let written = report::write(&out, &machine)?;
    if written.benches.is_empty() {
        bail!("no bench wrote rows to {}", raw.display());
    }
    println!("{}", written.markdown);
    eprintln!(
        "==> report: {} (and report.json, {}) in {:.0} s",
        out.join("report.md").display(),
        written
            .charts
            .iter()
            .map(|p| p.file_name().unwrap_or_default().to_string_lossy())
            .collect::<Vec<_>>()
            .join(", "),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `$CARGO_TARGET_DIR`, else `<workspace>/target`.
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                root.join(dir)
            }
        }
        None => root.join("target"),
    }
}

/// The `[[bench]]` targets of the bench package, in manifest order.
fn discover(root: &Path) -> Result<Vec<String>> {
    let output = cargo()
        .current_dir(root)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .stderr(Stdio::inherit())
        .output()
        .context("run cargo metadata")?;
    if !output.status.success() {
        bail!("cargo metadata failed");
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("parse cargo metadata")?;
    let package = metadata["packages"]
        .as_array()
        .and_then(|packages| packages.iter().find(|p| p["name"] == BENCH_PACKAGE))
        .with_context(|| format!("no `{BENCH_PACKAGE}` package in the workspace"))?;
    let benches: Vec<String> = package["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "bench"))
        })
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    if benches.is_empty() {
        bail!("`{BENCH_PACKAGE}` declares no [[bench]] target");
    }
    Ok(benches)
}

fn select(benches: Vec<String>, filter: Option<&str>) -> Result<Vec<String>> {
    let Some(filter) = filter else {
        return Ok(benches);
    };
    let selected: Vec<String> = match benches.iter().find(|b| *b == filter) {
        Some(exact) => vec![exact.clone()],
        None => benches
            .iter()
            .filter(|b| b.contains(filter))
            .cloned()
            .collect(),
    };
    if selected.is_empty() {
        bail!(
            "no bench matches `{filter}`; benches: {}",
            benches.join(", ")
        );
    }
    Ok(selected)
}

/// A full run starts from no rows, so that a bench removed since does not linger.
fn clear_rows(raw: &Path) -> Result<()> {
    for entry in fs::read_dir(raw).with_context(|| format!("read {}", raw.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            fs::remove_file(&path).with_context(|| format!("remove {}", path.display()))?;
        }
    }
    Ok(())
}

/// Runs one bench: stdout (criterion's results) to its log; stderr shown, except criterion's
/// per-benchmark status lines, which go to the log too.
fn run_bench(
    root: &Path,
    bench: &str,
    profile: &str,
    criterion_args: &[String],
    raw: &Path,
    logs: &Path,
) -> Result<()> {
    let log_path = logs.join(format!("{bench}.log"));
    let log = File::create(&log_path).with_context(|| format!("create {}", log_path.display()))?;
    let mut child = cargo()
        .current_dir(root)
        .args(["bench", "-q", "-p", BENCH_PACKAGE, "--bench", bench, "--"])
        .args(criterion_args)
        .env("MICROBENCH_REPORT_DIR", raw)
        .env("MICROBENCH_PROFILE", profile)
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("start bench {bench}"))?;
    let stderr = child.stderr.take().context("bench stderr")?;
    let mut log = log;
    for line in BufReader::new(stderr).lines() {
        let line = line.context("read bench output")?;
        if line.starts_with("Benchmarking ") || line.trim().is_empty() {
            writeln!(log, "{line}")?;
        } else {
            eprintln!("{line}");
        }
    }
    let status = child.wait().context("wait for the bench")?;
    if !status.success() {
        bail!(
            "bench {bench} failed ({status}); see {}",
            log_path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_take_a_filter_flags_and_criterion_args() {
        let options = Options::parse(&args(&["queue", "--full", "--", "p1/"]))
            .unwrap()
            .unwrap();
        assert_eq!(
            options,
            Options {
                filter: Some("queue".into()),
                full: true,
                report_only: false,
                criterion_args: vec!["p1/".into()],
            }
        );
        assert!(Options::parse(&args(&["--help"])).unwrap().is_none());
        assert!(Options::parse(&args(&["--fast"])).is_err());
        assert!(Options::parse(&args(&["a", "b"])).is_err());
    }

    #[test]
    fn a_filter_prefers_the_exact_name_then_substrings() {
        let benches = args(&["executor_handoff", "queue", "burst_retention"]);
        assert_eq!(select(benches.clone(), Some("queue")).unwrap(), ["queue"]);
        assert_eq!(
            select(benches.clone(), Some("e")).unwrap().len(),
            3,
            "a substring selects every match"
        );
        assert!(select(benches, Some("nope")).is_err());
    }
}
