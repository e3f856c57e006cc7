//! `report.md`: the machine, then one Markdown table per bench with its ratio columns,
//! targets and notes.

use crate::bench_machine::{utc_date, Machine};
use crate::report::{Rendered, Table};
use std::fmt::Write;

/// The whole report.
pub(crate) fn document(machine: &Machine, benches: &[Rendered]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Benchmark report\n");
    let _ = writeln!(out, "- Machine: {}", machine.summary());
    let _ = writeln!(out, "- Date: {}", machine.date);
    if machine.load_before.is_some() || machine.load_after.is_some() {
        let _ = writeln!(
            out,
            "- Load average (1, 5, 15 min) before the run: {} (other processes competing for \
             these {} cores make timings noisier); when this report was written: {}",
            machine.load_before.as_deref().unwrap_or("-"),
            machine.cores,
            machine.load_after.as_deref().unwrap_or("-"),
        );
    }
    if let Some(round_trip) = machine.core_to_core {
        let _ = writeln!(
            out,
            "- Core to core: {} ns per round trip of an atomic between two threads (a cache \
             line moving to the other core and back), measured before the run; every \
             hand-off below pays such moves, so runs on hosts that differ here differ in \
             their ratios too",
            round_trip.as_nanos()
        );
    }
    let _ = writeln!(out, "- Commit: {}", machine.commit);
    let _ = writeln!(
        out,
        "- Command: `cargo xtask bench` (benches: {})",
        benches
            .iter()
            .map(|b| b.data.meta.bench.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        out,
        "- Figures are medians over interleaved rounds; every ratio is taken within a round \
         (against that round's baseline, or its best peer: the lowest variant other than \
         ours) and then reduced to its median. All variants of a configuration ran side by \
         side in one process on this machine's {} cores.",
        machine.cores
    );
    for bench in benches {
        out.push('\n');
        out.push_str(&section(bench));
    }
    out
}

/// One bench: heading, description, table, targets, notes.
pub(crate) fn section(bench: &Rendered) -> String {
    let meta = &bench.data.meta;
    let mut out = String::new();
    let _ = writeln!(out, "## `{}`: {}\n", meta.bench, meta.title);
    let _ = writeln!(out, "{}\n", meta.description);
    let settings = &meta.settings;
    let sampling = if settings["measurement_ms"].as_u64().unwrap_or(0) == 0 {
        "one-shot measurement per round".to_owned()
    } else {
        format!(
            "criterion: {} ms warm-up, {} ms measurement, {} samples per benchmark",
            settings["warm_up_ms"], settings["measurement_ms"], settings["sample_size"]
        )
    };
    let _ = writeln!(
        out,
        "Measured {} ({} profile: {} round(s), {sampling}){}.\n",
        utc_date(meta.started_unix),
        settings["profile"].as_str().unwrap_or("?"),
        settings["rounds"],
        if meta.allocator_counting {
            ""
        } else {
            "; WARNING: the counting allocator was not installed, allocation figures are zero"
        },
    );
    out.push_str(&table(bench));
    if !bench.targets.is_empty() {
        let _ = writeln!(
            out,
            "\nTargets (ours: `{}`):\n",
            meta.subject.as_deref().unwrap_or("?")
        );
        let _ = writeln!(out, "| target | {} | ratio | limit | |", meta.group_label);
        let _ = writeln!(out, "|---|---|---:|---:|---|");
        for target in &bench.targets {
            let verdict = match target.met() {
                Some(true) => "met",
                Some(false) => "**missed**",
                None => "not measured",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                target.description,
                target.group,
                target.ratio.map_or("-".into(), format_ratio),
                format_ratio(target.max_ratio),
                verdict
            );
        }
    }
    let notes: Vec<&String> = meta.notes.iter().chain(&bench.data.notes).collect();
    let described: Vec<_> = bench
        .table
        .figures
        .iter()
        .filter(|f| !f.description.is_empty())
        .collect();
    if !described.is_empty() || !notes.is_empty() {
        out.push('\n');
    }
    for figure in described {
        let _ = writeln!(out, "- `{}`: {}.", figure.name, figure.description);
    }
    for note in notes {
        let _ = writeln!(out, "- {note}");
    }
    let has_chart = !meta.chart_figures.is_empty();
    if has_chart {
        let _ = writeln!(out, "\nChart: [`{0}.svg`]({0}.svg)", meta.bench);
    }
    out
}

/// The bench's table: group, variant, figures, then `÷ baseline` / `÷ best peer` columns.
pub(crate) fn table(bench: &Rendered) -> String {
    let meta = &bench.data.meta;
    let Table { figures, lines, .. } = &bench.table;
    let mut out = String::new();
    let mut header = vec![meta.group_label.clone(), meta.variant_label.clone()];
    let mut align = vec!["---", "---"];
    for figure in figures {
        header.push(figure.name.clone());
        align.push("---:");
    }
    for figure in &meta.ratio_figures {
        if let Some(baseline) = &meta.baseline {
            header.push(format!("{figure} ÷ {baseline}"));
            align.push("---:");
        }
        header.push(format!("{figure} ÷ best peer"));
        align.push("---:");
    }
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}|", align.join("|"));
    for line in lines {
        let subject = meta.subject.as_deref() == Some(line.variant.as_str());
        let mut cells = vec![
            line.group.clone(),
            if subject {
                format!("**{}**", line.variant)
            } else {
                line.variant.clone()
            },
        ];
        for (figure, value) in figures.iter().zip(&line.values) {
            cells.push(value.map_or("-".into(), |v| format_number(v, figure.decimals)));
        }
        for (to_baseline, to_best) in &line.ratios {
            if meta.baseline.is_some() {
                cells.push(to_baseline.map_or("-".into(), format_ratio));
            }
            cells.push(to_best.map_or("-".into(), format_ratio));
        }
        if subject {
            for cell in cells.iter_mut().skip(2) {
                if cell != "-" {
                    *cell = format!("**{cell}**");
                }
            }
        }
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

/// A number with `decimals` decimals and thousands separators.
pub(crate) fn format_number(value: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, value.abs());
    let (int, frac) = match text.split_once('.') {
        Some((int, frac)) => (int.to_owned(), Some(frac.to_owned())),
        None => (text, None),
    };
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if value < 0.0 && text_is_nonzero(&grouped, frac.as_deref()) {
        "-"
    } else {
        ""
    };
    match frac {
        Some(frac) => format!("{sign}{grouped}.{frac}"),
        None => format!("{sign}{grouped}"),
    }
}

fn text_is_nonzero(int: &str, frac: Option<&str>) -> bool {
    int.chars()
        .chain(frac.unwrap_or("").chars())
        .any(|c| c.is_ascii_digit() && c != '0')
}

/// A ratio as `0.45x`; three decimals below 0.1; `∞x` for a positive figure over a zero one.
pub(crate) fn format_ratio(ratio: f64) -> String {
    if ratio.is_infinite() {
        "∞x".to_owned()
    } else if ratio < 0.1 {
        format!("{ratio:.3}x")
    } else {
        format!("{ratio:.2}x")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_positive_figure_over_zero_shows_as_infinity() {
        assert_eq!(format_ratio(f64::INFINITY), "∞x");
        assert_eq!(format_ratio(0.45), "0.45x");
    }

    #[test]
    fn numbers_get_thousands_separators_and_fixed_decimals() {
        assert_eq!(format_number(6668.21, 2), "6,668.21");
        assert_eq!(format_number(1234567.0, 0), "1,234,567");
        assert_eq!(format_number(-1024.0, 0), "-1,024");
        assert_eq!(format_number(-0.0001, 1), "0.0");
        assert_eq!(format_number(12.0, 1), "12.0");
    }

    #[test]
    fn ratios_show_more_decimals_when_small() {
        assert_eq!(format_ratio(0.8), "0.80x");
        assert_eq!(format_ratio(0.0), "0.000x");
        assert_eq!(format_ratio(0.029), "0.029x");
    }
}
