//! `<bench>.svg`: one grouped bar chart panel per charted figure (e.g. us/batch and B/batch),
//! a bar per variant in each group, ours highlighted.

use crate::report::Rendered;
use anyhow::{anyhow, Result};
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

const PEER_COLORS: [RGBColor; 6] = [
    RGBColor(0x4c, 0x72, 0xb0),
    RGBColor(0x55, 0xa8, 0x68),
    RGBColor(0x81, 0x72, 0xb3),
    RGBColor(0xcc, 0xb9, 0x74),
    RGBColor(0x64, 0xb5, 0xcd),
    RGBColor(0x8c, 0x8c, 0x8c),
];
const SUBJECT_COLOR: RGBColor = RGBColor(0xc4, 0x4e, 0x52);
const PANEL_HEIGHT: u32 = 360;
const WIDTH: u32 = 1200;
/// Fewest bar slots on the x axis.
const MIN_SLOTS: usize = 12;
/// Empty bar slots kept on the right for the legend.
const LEGEND_SLOTS: usize = 4;

/// Draws `<out>/<bench>.svg` if the bench names chart figures; returns its path.
pub(crate) fn draw(out: &Path, bench: &Rendered) -> Result<Option<PathBuf>> {
    let meta = &bench.data.meta;
    let figures: Vec<(usize, &str)> = meta
        .chart_figures
        .iter()
        .filter_map(|name| {
            let index = bench.table.figures.iter().position(|f| &f.name == name)?;
            Some((index, name.as_str()))
        })
        .collect();
    if figures.is_empty() || bench.table.lines.is_empty() {
        return Ok(None);
    }
    std::fs::create_dir_all(out)?;
    let path = out.join(format!("{}.svg", meta.bench));
    let height = PANEL_HEIGHT * figures.len() as u32;
    {
        let root = SVGBackend::new(&path, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let panels = root.split_evenly((figures.len(), 1));
        for (panel, (index, name)) in panels.iter().zip(&figures) {
            draw_panel(panel, bench, *index, name)?;
        }
        root.present().map_err(plot_error)?;
    }
    Ok(Some(path))
}

fn plot_error(error: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("drawing the chart: {error}")
}

/// A bar's value, short: `8.3k`, `107`, `12.3`, `0.45`.
fn short(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1e6 {
        format!("{:.1}M", value / 1e6)
    } else if magnitude >= 1e4 {
        format!("{:.0}k", value / 1e3)
    } else if magnitude >= 1e3 {
        format!("{:.1}k", value / 1e3)
    } else if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else if value == value.trunc() {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

fn draw_panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    bench: &Rendered,
    figure: usize,
    name: &str,
) -> Result<()> {
    let meta = &bench.data.meta;
    let table = &bench.table;
    let mut variants: Vec<&str> = Vec::new();
    for line in &table.lines {
        if !variants.contains(&line.variant.as_str()) {
            variants.push(&line.variant);
        }
    }
    let stride = variants.len() + 1; // one empty slot between groups
                                     // At least MIN_SLOTS slots, so that a chart of one group does not draw slabs.
                                     // Empty slots on the right hold the legend, clear of every bar.
    let slots = (table.groups.len() * stride - 1 + LEGEND_SLOTS).max(MIN_SLOTS);
    let max = table
        .lines
        .iter()
        .filter_map(|l| l.values[figure])
        .fold(0.0f64, f64::max);
    // Headroom above the tallest bar for its label.
    let top = if max > 0.0 { max * 1.2 } else { 1.0 };
    let groups = table.groups.clone();
    let label_slot = variants.len() / 2;
    let x_label = move |value: &SegmentValue<usize>| -> String {
        match value {
            SegmentValue::CenterOf(slot) | SegmentValue::Exact(slot)
                if slot % stride == label_slot =>
            {
                groups.get(slot / stride).cloned().unwrap_or_default()
            }
            _ => String::new(),
        }
    };
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "{}: {name} (median over rounds; lower is better)",
                meta.bench
            ),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d((0..slots).into_segmented(), 0.0..top)
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(slots + 1)
        .x_label_formatter(&x_label)
        .y_label_formatter(&|v| short(*v))
        .y_desc(name)
        .draw()
        .map_err(plot_error)?;
    let label_style =
        TextStyle::from(("sans-serif", 10).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    let mut peer = 0;
    for (v, variant) in variants.iter().enumerate() {
        let color = if meta.subject.as_deref() == Some(*variant) {
            SUBJECT_COLOR
        } else {
            peer += 1;
            PEER_COLORS[(peer - 1) % PEER_COLORS.len()]
        };
        let bars: Vec<(usize, f64)> = table
            .groups
            .iter()
            .enumerate()
            .filter_map(|(g, group)| {
                let line = table
                    .lines
                    .iter()
                    .find(|l| &l.group == group && l.variant == *variant)?;
                Some((g * stride + v, line.values[figure]?))
            })
            .collect();
        chart
            .draw_series(bars.iter().map(|&(slot, value)| {
                let mut bar = Rectangle::new(
                    [
                        (SegmentValue::Exact(slot), 0.0),
                        (SegmentValue::Exact(slot + 1), value.max(0.0)),
                    ],
                    color.filled(),
                );
                bar.set_margin(0, 0, 2, 2);
                bar
            }))
            .map_err(plot_error)?
            .label(*variant)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        chart
            .draw_series(bars.iter().map(|&(slot, value)| {
                Text::new(
                    short(value),
                    (SegmentValue::CenterOf(slot), value.max(0.0)),
                    label_style.clone(),
                )
            }))
            .map_err(plot_error)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(plot_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::short;

    #[test]
    fn bar_labels_are_short() {
        assert_eq!(short(8258.3), "8.3k");
        assert_eq!(short(2_097_549.0), "2.1M");
        assert_eq!(short(107.87), "108");
        assert_eq!(short(12.34), "12.3");
        assert_eq!(short(0.0), "0");
        assert_eq!(short(0.04), "0.04");
    }
}
