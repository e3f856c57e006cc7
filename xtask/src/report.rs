//! The bench report: reads every bench's rows (`bench-report/raw/*.jsonl`, the contract in
//! `microbench/src/lib.rs`), reduces rounds to medians and per-round ratios, checks targets,
//! and writes `report.md`, `report.json` and the charts.

use crate::bench_machine::{utc_date, Machine};
use crate::{report_chart, report_markdown};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// A figure as the bench declared it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figure {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) decimals: usize,
}

/// A target as the bench declared it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TargetSpec {
    pub(crate) description: String,
    pub(crate) figure: String,
    /// `baseline` or `best_peer`.
    pub(crate) against: String,
    pub(crate) max_ratio: f64,
    pub(crate) groups: Vec<String>,
}

/// A bench's metadata line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Meta {
    pub(crate) bench: String,
    pub(crate) title: String,
    pub(crate) description: String,
    pub(crate) group_label: String,
    pub(crate) variant_label: String,
    pub(crate) variants: Vec<String>,
    pub(crate) baseline: Option<String>,
    pub(crate) subject: Option<String>,
    pub(crate) figures: Vec<Figure>,
    pub(crate) ratio_figures: Vec<String>,
    pub(crate) chart_figures: Vec<String>,
    pub(crate) targets: Vec<TargetSpec>,
    pub(crate) notes: Vec<String>,
    pub(crate) settings: Value,
    pub(crate) started_unix: u64,
    pub(crate) allocator_counting: bool,
}

/// One measured row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawRow {
    pub(crate) group: String,
    pub(crate) variant: String,
    pub(crate) round: u64,
    pub(crate) figures: BTreeMap<String, Option<f64>>,
}

/// Everything one bench wrote.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BenchData {
    pub(crate) meta: Meta,
    pub(crate) rows: Vec<RawRow>,
    pub(crate) notes: Vec<String>,
}

/// One line of a bench's table: a variant in a group, reduced over rounds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Line {
    pub(crate) group: String,
    pub(crate) variant: String,
    pub(crate) rounds: usize,
    /// Median over rounds, per figure of [`Table::figures`].
    pub(crate) values: Vec<Option<f64>>,
    /// Per ratio figure: median over rounds of the ratio to the baseline, and to the best
    /// peer.
    pub(crate) ratios: Vec<(Option<f64>, Option<f64>)>,
}

/// A bench's table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Table {
    pub(crate) figures: Vec<Figure>,
    pub(crate) groups: Vec<String>,
    pub(crate) lines: Vec<Line>,
}

/// A target checked in one group.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TargetResult {
    pub(crate) description: String,
    pub(crate) group: String,
    pub(crate) ratio: Option<f64>,
    pub(crate) max_ratio: f64,
}

impl TargetResult {
    /// `Some(true)` met, `Some(false)` missed, `None` not measured.
    pub(crate) fn met(&self) -> Option<bool> {
        self.ratio.map(|r| r <= self.max_ratio)
    }
}

/// A bench, reduced.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rendered {
    pub(crate) data: BenchData,
    pub(crate) table: Table,
    pub(crate) targets: Vec<TargetResult>,
}

/// What [`write()`] produced.
#[derive(Debug)]
pub(crate) struct Written {
    pub(crate) benches: Vec<String>,
    pub(crate) markdown: String,
    pub(crate) charts: Vec<PathBuf>,
}

/// Renders every bench with rows in `<out>/raw` into `<out>/report.md`, `report.json` and
/// `<bench>.svg`.
pub(crate) fn write(out: &Path, machine: &Machine) -> Result<Written> {
    let raw = out.join("raw");
    let mut benches = Vec::new();
    if raw.is_dir() {
        let mut paths: Vec<PathBuf> = fs::read_dir(&raw)
            .with_context(|| format!("read {}", raw.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        paths.sort();
        for path in paths {
            let text =
                fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
            // One bench's broken file (a run killed mid-write) must not hide the others.
            match parse(&text) {
                Ok(data) if !data.rows.is_empty() => benches.push(data),
                Ok(_) => {}
                Err(error) => eprintln!("warning: skipping {}: {error:#}", path.display()),
            }
        }
    }
    benches.sort_by_key(|b| b.meta.started_unix);
    let rendered: Vec<Rendered> = benches.into_iter().map(render).collect();

    let mut charts = Vec::new();
    for bench in &rendered {
        if let Some(path) = report_chart::draw(out, bench)? {
            charts.push(path);
        }
    }
    let markdown = report_markdown::document(machine, &rendered);
    fs::create_dir_all(out)?;
    fs::write(out.join("report.md"), &markdown).context("write report.md")?;
    let json = serde_json::to_string_pretty(&to_json(machine, &rendered))?;
    fs::write(out.join("report.json"), json + "\n").context("write report.json")?;
    Ok(Written {
        benches: rendered.iter().map(|r| r.data.meta.bench.clone()).collect(),
        markdown,
        charts,
    })
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

fn parse_meta(value: &Value) -> Meta {
    Meta {
        bench: text(&value["bench"]),
        title: text(&value["title"]),
        description: text(&value["description"]),
        group_label: value["group_label"].as_str().unwrap_or("group").to_owned(),
        variant_label: value["variant_label"]
            .as_str()
            .unwrap_or("variant")
            .to_owned(),
        variants: strings(&value["variants"]),
        baseline: value["baseline"].as_str().map(str::to_owned),
        subject: value["subject"].as_str().map(str::to_owned),
        figures: value["figures"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| Figure {
                name: text(&f["name"]),
                description: text(&f["description"]),
                decimals: f["decimals"].as_u64().unwrap_or(2) as usize,
            })
            .collect(),
        ratio_figures: strings(&value["ratio_figures"]),
        chart_figures: strings(&value["chart_figures"]),
        targets: value["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| TargetSpec {
                description: text(&t["description"]),
                figure: text(&t["figure"]),
                against: text(&t["against"]),
                max_ratio: t["max_ratio"].as_f64().unwrap_or(f64::INFINITY),
                groups: strings(&t["groups"]),
            })
            .collect(),
        notes: strings(&value["notes"]),
        settings: value["settings"].clone(),
        started_unix: value["started_unix"].as_u64().unwrap_or(0),
        allocator_counting: value["allocator_counting"].as_bool().unwrap_or(false),
    }
}

/// Parses one bench's JSON lines.
pub(crate) fn parse(jsonl: &str) -> Result<BenchData> {
    let mut meta = None;
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for (n, line) in jsonl.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line).with_context(|| format!("line {}", n + 1))?;
        match value["kind"].as_str() {
            Some("meta") => meta = Some(parse_meta(&value)),
            Some("row") => rows.push(RawRow {
                group: text(&value["group"]),
                variant: text(&value["variant"]),
                round: value["round"].as_u64().unwrap_or(1),
                figures: value["figures"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), v.as_f64()))
                    .collect(),
            }),
            Some("note") => notes.push(text(&value["text"])),
            _ => {}
        }
    }
    let Some(meta) = meta else {
        bail!("no meta line");
    };
    Ok(BenchData { meta, rows, notes })
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// `x / y`, treating 0 / 0 as 1, a positive number over 0 as infinitely more (a target on it
/// is missed, not "not measured"), and anything over a negative number as unknown.
fn ratio(x: f64, y: f64) -> Option<f64> {
    if y > 0.0 {
        Some(x / y)
    } else if y == 0.0 && x == 0.0 {
        Some(1.0)
    } else if y == 0.0 && x > 0.0 {
        Some(f64::INFINITY)
    } else {
        None
    }
}

fn order_of_appearance<'a>(
    items: impl Iterator<Item = &'a String>,
    declared: &[String],
) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for item in declared.iter().chain(items.collect::<Vec<_>>()) {
        if !order.contains(item) {
            order.push(item.clone());
        }
    }
    order
}

/// Reduces a bench's rows to its table and target results.
pub(crate) fn render(data: BenchData) -> Rendered {
    let meta = &data.meta;
    let mut figures = meta.figures.clone();
    for row in &data.rows {
        for name in row.figures.keys() {
            if !figures.iter().any(|f| &f.name == name) {
                figures.push(Figure {
                    name: name.clone(),
                    description: String::new(),
                    decimals: 2,
                });
            }
        }
    }
    let groups = order_of_appearance(data.rows.iter().map(|r| &r.group), &[]);
    let variants: Vec<String> =
        order_of_appearance(data.rows.iter().map(|r| &r.variant), &meta.variants)
            .into_iter()
            .filter(|v| data.rows.iter().any(|r| &r.variant == v))
            .collect();
    let value = |group: &str, variant: &str, round: u64, figure: &str| -> Option<f64> {
        data.rows
            .iter()
            .find(|r| r.group == group && r.variant == variant && r.round == round)
            .and_then(|r| r.figures.get(figure).copied().flatten())
    };
    let mut lines = Vec::new();
    for group in &groups {
        for variant in &variants {
            let rows: Vec<&RawRow> = data
                .rows
                .iter()
                .filter(|r| &r.group == group && &r.variant == variant)
                .collect();
            if rows.is_empty() {
                continue;
            }
            let values = figures
                .iter()
                .map(|f| {
                    median(
                        rows.iter()
                            .filter_map(|r| r.figures.get(&f.name).copied().flatten())
                            .collect(),
                    )
                })
                .collect();
            let ratios = meta
                .ratio_figures
                .iter()
                .map(|figure| {
                    let mut to_baseline = Vec::new();
                    let mut to_best = Vec::new();
                    for row in &rows {
                        let Some(x) = row.figures.get(figure).copied().flatten() else {
                            continue;
                        };
                        if let Some(base) = meta
                            .baseline
                            .as_deref()
                            .and_then(|b| value(group, b, row.round, figure))
                        {
                            to_baseline.extend(ratio(x, base));
                        }
                        let best = variants
                            .iter()
                            .filter(|v| Some(v.as_str()) != meta.subject.as_deref())
                            .filter_map(|v| value(group, v, row.round, figure))
                            .min_by(f64::total_cmp);
                        if let Some(best) = best {
                            to_best.extend(ratio(x, best));
                        }
                    }
                    (median(to_baseline), median(to_best))
                })
                .collect();
            lines.push(Line {
                group: group.clone(),
                variant: variant.clone(),
                rounds: rows.len(),
                values,
                ratios,
            });
        }
    }
    let table = Table {
        figures,
        groups,
        lines,
    };
    let targets = check_targets(meta, &table);
    Rendered {
        data,
        table,
        targets,
    }
}

fn check_targets(meta: &Meta, table: &Table) -> Vec<TargetResult> {
    let Some(subject) = meta.subject.as_deref() else {
        return Vec::new();
    };
    let mut results = Vec::new();
    for target in &meta.targets {
        let Some(index) = meta.ratio_figures.iter().position(|f| f == &target.figure) else {
            continue;
        };
        let groups = if target.groups.is_empty() {
            &table.groups
        } else {
            &target.groups
        };
        for group in groups {
            let ratio = table
                .lines
                .iter()
                .find(|l| &l.group == group && l.variant == subject)
                .and_then(|l| {
                    let (to_baseline, to_best) = l.ratios[index];
                    if target.against == "baseline" {
                        to_baseline
                    } else {
                        to_best
                    }
                });
            if ratio.is_none() && !table.groups.contains(group) {
                continue; // not measured in this run (filtered out)
            }
            results.push(TargetResult {
                description: target.description.clone(),
                group: group.clone(),
                ratio,
                max_ratio: target.max_ratio,
            });
        }
    }
    results
}

fn to_json(machine: &Machine, rendered: &[Rendered]) -> Value {
    let benches: Vec<Value> = rendered
        .iter()
        .map(|r| {
            let meta = &r.data.meta;
            let lines: Vec<Value> = r
                .table
                .lines
                .iter()
                .map(|line| {
                    let figures: serde_json::Map<String, Value> = r
                        .table
                        .figures
                        .iter()
                        .zip(&line.values)
                        .map(|(f, v)| (f.name.clone(), json!(v)))
                        .collect();
                    let mut ratios = serde_json::Map::new();
                    for (figure, (to_baseline, to_best)) in
                        meta.ratio_figures.iter().zip(&line.ratios)
                    {
                        if let Some(baseline) = &meta.baseline {
                            ratios.insert(format!("{figure} / {baseline}"), json!(to_baseline));
                        }
                        ratios.insert(format!("{figure} / best peer"), json!(to_best));
                    }
                    json!({
                        "group": line.group,
                        "variant": line.variant,
                        "rounds": line.rounds,
                        "figures": figures,
                        "ratios": ratios,
                    })
                })
                .collect();
            let targets: Vec<Value> = r
                .targets
                .iter()
                .map(|t| {
                    json!({
                        "target": t.description,
                        "group": t.group,
                        "ratio": t.ratio,
                        "max_ratio": t.max_ratio,
                        "met": t.met(),
                    })
                })
                .collect();
            json!({
                "bench": meta.bench,
                "title": meta.title,
                "description": meta.description,
                "measured": utc_date(meta.started_unix),
                "settings": meta.settings,
                "baseline": meta.baseline,
                "subject": meta.subject,
                "figures": r.table.figures.iter().map(|f| json!({
                    "name": f.name, "description": f.description,
                })).collect::<Vec<_>>(),
                "lines": lines,
                "targets": targets,
                "notes": meta.notes.iter().chain(&r.data.notes).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "machine": machine.to_json(),
        "benches": benches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"{"kind":"meta","bench":"demo","title":"Demo","description":"d","group_label":"config","variant_label":"executor","variants":["base","peer","ours"],"baseline":"base","subject":"ours","figures":[{"name":"us","description":"time","decimals":2}],"ratio_figures":["us"],"chart_figures":["us"],"targets":[{"description":"fast","figure":"us","against":"best_peer","max_ratio":0.8,"groups":["g"]}],"notes":[],"settings":{"profile":"quick"},"started_unix":1}
{"kind":"row","group":"g","variant":"base","round":1,"figures":{"us":10.0}}
{"kind":"row","group":"g","variant":"peer","round":1,"figures":{"us":5.0}}
{"kind":"row","group":"g","variant":"ours","round":1,"figures":{"us":4.0}}
{"kind":"row","group":"g","variant":"base","round":2,"figures":{"us":20.0}}
{"kind":"row","group":"g","variant":"peer","round":2,"figures":{"us":8.0}}
{"kind":"row","group":"g","variant":"ours","round":2,"figures":{"us":2.0}}
{"kind":"row","group":"g","variant":"ours","round":3,"figures":{"us":null}}
{"kind":"note","text":"hello"}
"#;

    #[test]
    fn zero_over_zero_is_parity_and_a_positive_figure_over_zero_is_a_missed_ratio() {
        assert_eq!(ratio(1.0, 4.0), Some(0.25));
        assert_eq!(ratio(0.0, 0.0), Some(1.0));
        assert_eq!(ratio(3.0, 0.0), Some(f64::INFINITY));
        assert_eq!(ratio(3.0, -1.0), None);
        let target = TargetResult {
            description: "allocations".into(),
            group: "g".into(),
            ratio: ratio(3.0, 0.0),
            max_ratio: 1.0,
        };
        assert_eq!(target.met(), Some(false));
    }

    #[test]
    fn rounds_reduce_to_medians_and_ratios_are_taken_per_round() {
        let rendered = render(parse(SAMPLE).unwrap());
        let ours = rendered
            .table
            .lines
            .iter()
            .find(|l| l.variant == "ours")
            .unwrap();
        assert_eq!(ours.rounds, 3);
        assert_eq!(ours.values, vec![Some(3.0)]);
        // Per round: 4/10 and 2/20 -> median 0.25; 4/5 and 2/8 -> median 0.525.
        let (to_base, to_best) = ours.ratios[0];
        assert!((to_base.unwrap() - 0.25).abs() < 1e-9);
        assert!((to_best.unwrap() - 0.525).abs() < 1e-9);
        let peer = rendered
            .table
            .lines
            .iter()
            .find(|l| l.variant == "peer")
            .unwrap();
        assert_eq!(
            peer.ratios[0].1,
            Some(1.0),
            "the best peer is 1.0x of itself"
        );
        assert_eq!(rendered.data.notes, vec!["hello".to_owned()]);
    }

    #[test]
    fn targets_compare_the_subjects_ratio_with_the_limit() {
        let rendered = render(parse(SAMPLE).unwrap());
        assert_eq!(rendered.targets.len(), 1);
        assert_eq!(rendered.targets[0].met(), Some(true));
    }

    #[test]
    fn a_file_without_meta_is_an_error() {
        assert!(parse("{\"kind\":\"row\"}\n").is_err());
    }
}
