//! The reporting contract: what a bench declares about itself and the rows it measured, as
//! JSON lines that `cargo xtask bench` renders into tables, ratios, targets and a chart.
//!
//! File `<dir>/<bench>.jsonl`: the first line is the [`BenchMeta`] (`"kind": "meta"`), every
//! later line a [`Row`] (`"kind": "row"`) or a note (`"kind": "note"`). `<dir>` is
//! `$MICROBENCH_REPORT_DIR`, else `<target dir>/bench-report/raw`. Nothing is written when
//! the bench only lists or smoke-tests (`--list`, `--test`).

use crate::settings::Settings;
use serde_json::{json, Map, Value};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// Environment variable naming the directory rows are written to.
pub const REPORT_DIR_ENV: &str = "MICROBENCH_REPORT_DIR";

/// A figure a bench reports, as its column header and unit.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureSpec {
    /// Column header and key in [`Row::figures`], e.g. `"us/batch"`.
    pub name: String,
    /// What it measures, for the report's legend.
    pub description: String,
    /// Decimals shown in tables.
    pub decimals: u32,
}

impl FigureSpec {
    /// A figure named `name`, described by `description`, shown with `decimals` decimals.
    pub fn new(name: impl Into<String>, description: impl Into<String>, decimals: u32) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            decimals,
        }
    }
}

/// What a target ratio is taken against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Against {
    /// The bench's declared baseline variant (e.g. `std_mpsc`).
    Baseline,
    /// The best (lowest) variant other than the subject, in the same round.
    BestPeer,
}

impl Against {
    fn as_str(self) -> &'static str {
        match self {
            Against::Baseline => "baseline",
            Against::BestPeer => "best_peer",
        }
    }
}

/// A goal for the subject: `figure(subject) / figure(against) <= max_ratio` in each listed
/// group (median over rounds of the per-round ratio). Read in the report, never asserted.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The goal in words.
    pub description: String,
    /// The figure compared (a [`FigureSpec::name`]).
    pub figure: String,
    /// What the subject is compared with.
    pub against: Against,
    /// The largest ratio that meets the target.
    pub max_ratio: f64,
    /// Groups the target applies to; empty: every group.
    pub groups: Vec<String>,
}

/// What a bench is, declared once per run by [`declare`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BenchMeta {
    /// The bench's name (its `[[bench]]` name and file name).
    pub bench: String,
    /// A one-line title.
    pub title: String,
    /// What is measured and how, for the report.
    pub description: String,
    /// Header of the group column (e.g. "configuration").
    pub group_label: String,
    /// Header of the variant column (e.g. "executor").
    pub variant_label: String,
    /// Variants in display order (others follow in order of appearance).
    pub variants: Vec<String>,
    /// The variant ratios are taken against (e.g. `std_mpsc`), if any.
    pub baseline: Option<String>,
    /// Our variant (excluded from "best peer"), if any.
    pub subject: Option<String>,
    /// The figures, in column order.
    pub figures: Vec<FigureSpec>,
    /// Figures that get `÷ baseline` and `÷ best peer` columns.
    pub ratio_figures: Vec<String>,
    /// Figures drawn in the chart, one panel each.
    pub chart_figures: Vec<String>,
    /// Goals checked in the report.
    pub targets: Vec<Target>,
    /// Free-form remarks shown under the table.
    pub notes: Vec<String>,
}

/// One measured line: a variant in a group, in one round, with named figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The bench (as in [`BenchMeta::bench`]).
    pub bench: String,
    /// The configuration, e.g. `"K=16 S=1"`.
    pub group: String,
    /// The thing measured, e.g. `"pulsar"`.
    pub variant: String,
    /// Round number, from 1.
    pub round: u32,
    /// Figure values by [`FigureSpec::name`]; `None` where not measurable here.
    pub figures: Vec<(String, Option<f64>)>,
}

/// The directory rows go to: `$MICROBENCH_REPORT_DIR`, else `bench-report/raw` in the target
/// directory this bench binary was built in.
pub fn report_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(REPORT_DIR_ENV) {
        return PathBuf::from(dir);
    }
    // The binary is <target>/<profile>/deps/<bench>-<hash>.
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("target"));
    target.join("bench-report").join("raw")
}

fn bench_file(bench: &str) -> PathBuf {
    report_dir().join(format!("{bench}.jsonl"))
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Starts `<dir>/<bench>.jsonl` afresh with the bench's metadata and the sampling settings.
/// Does nothing in a dry run (`--list`, `--test`).
///
/// # Errors
///
/// When the directory or file cannot be written.
pub fn declare(meta: &BenchMeta, settings: &Settings) -> io::Result<()> {
    check_targets_compare_ratioed_figures(meta)?;
    if Settings::is_dry_run() {
        return Ok(());
    }
    let path = bench_file(&meta.bench);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut file = File::create(&path)?;
    writeln!(file, "{}", meta_json(meta, settings))
}

/// The report checks a target against the per-round ratios of its figure, which exist only
/// for the bench's `ratio_figures`: a target on any other figure would never be checked.
fn check_targets_compare_ratioed_figures(meta: &BenchMeta) -> io::Result<()> {
    match meta
        .targets
        .iter()
        .find(|target| !meta.ratio_figures.contains(&target.figure))
    {
        Some(target) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "bench {}: the target \"{}\" compares `{}`, which is not among its ratio \
                 figures {:?}, so it could never be checked",
                meta.bench, target.description, target.figure, meta.ratio_figures
            ),
        )),
        None => Ok(()),
    }
}

fn meta_json(meta: &BenchMeta, settings: &Settings) -> Value {
    json!({
        "kind": "meta",
        "bench": meta.bench,
        "title": meta.title,
        "description": meta.description,
        "group_label": meta.group_label,
        "variant_label": meta.variant_label,
        "variants": meta.variants,
        "baseline": meta.baseline,
        "subject": meta.subject,
        "figures": meta.figures.iter().map(|f| json!({
            "name": f.name,
            "description": f.description,
            "decimals": f.decimals,
        })).collect::<Vec<_>>(),
        "ratio_figures": meta.ratio_figures,
        "chart_figures": meta.chart_figures,
        "targets": meta.targets.iter().map(|t| json!({
            "description": t.description,
            "figure": t.figure,
            "against": t.against.as_str(),
            "max_ratio": t.max_ratio,
            "groups": t.groups,
        })).collect::<Vec<_>>(),
        "notes": meta.notes,
        "settings": {
            "profile": settings.profile,
            "rounds": settings.rounds,
            "warm_up_ms": settings.warm_up.as_millis() as u64,
            "measurement_ms": settings.measurement.as_millis() as u64,
            "sample_size": settings.sample_size,
        },
        "started_unix": unix_seconds(),
        "allocator_counting": crate::alloc::is_active(),
    })
}

/// Appends `row` to its bench's file. Does nothing in a dry run.
///
/// # Errors
///
/// When the file cannot be written.
pub fn record(row: &Row) -> io::Result<()> {
    if Settings::is_dry_run() {
        return Ok(());
    }
    let figures: Map<String, Value> = row
        .figures
        .iter()
        .map(|(name, value)| (name.clone(), value.map_or(Value::Null, |v| json!(v))))
        .collect();
    append(
        &row.bench,
        &json!({
            "kind": "row",
            "group": row.group,
            "variant": row.variant,
            "round": row.round,
            "figures": figures,
        }),
    )
}

/// Appends a remark found while measuring (shown under the bench's table). Does nothing in a
/// dry run.
///
/// # Errors
///
/// When the file cannot be written.
pub fn note(bench: &str, text: impl Into<String>) -> io::Result<()> {
    if Settings::is_dry_run() {
        return Ok(());
    }
    append(bench, &json!({ "kind": "note", "text": text.into() }))
}

fn append(bench: &str, value: &Value) -> io::Result<()> {
    let path = bench_file(bench);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    writeln!(file, "{value}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(target_figure: &str) -> BenchMeta {
        BenchMeta {
            bench: "demo".into(),
            title: "Demo".into(),
            description: "d".into(),
            group_label: "config".into(),
            variant_label: "executor".into(),
            variants: vec!["peer".into(), "ours".into()],
            baseline: Some("peer".into()),
            subject: Some("ours".into()),
            figures: vec![
                FigureSpec::new("us", "time", 2),
                FigureSpec::new("cpu", "cpu", 2),
            ],
            ratio_figures: vec!["us".into()],
            chart_figures: vec!["us".into()],
            targets: vec![Target {
                description: "lean".into(),
                figure: target_figure.into(),
                against: Against::BestPeer,
                max_ratio: 1.0,
                groups: vec!["g".into()],
            }],
            notes: vec![],
        }
    }

    #[test]
    fn a_target_on_a_figure_without_ratios_is_refused() {
        assert!(check_targets_compare_ratioed_figures(&meta("us")).is_ok());
        let error = check_targets_compare_ratioed_figures(&meta("cpu")).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        assert!(error.to_string().contains("`cpu`"), "{error}");
    }
}
