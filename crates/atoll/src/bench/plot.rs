//! PNG charts of benchmark results, drawn with plotters. Text needs a TrueType font: the
//! first of [`FONT_PATHS`] that exists (Debian's fonts-dejavu-core, which
//! `scripts/install-deps` installs).

use std::path::Path;
use std::sync::Once;

use anyhow::{Context, anyhow};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::pool_bench::Row;

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

const COLORS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
];

pub(crate) fn register_font() -> anyhow::Result<()> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = (|| {
            let path = FONT_PATHS
                .iter()
                .find(|p| Path::new(p).exists())
                .context("no TrueType font found; install fonts-dejavu-core")?;
            let bytes: &'static [u8] = Box::leak(std::fs::read(path)?.into_boxed_slice());
            plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                .map_err(|_| anyhow!("{path} is not a usable font"))
        })();
    });
    result
}

/// Two panels: small-task p99 latency (log scale) and small tasks done per second, one bar
/// per scheduler in each scenario.
pub fn pool_chart(rows: &[Row], path: &Path) -> anyhow::Result<()> {
    register_font()?;
    let mut scenarios: Vec<(usize, f64)> = Vec::new();
    let mut schedulers: Vec<&str> = Vec::new();
    for r in rows {
        if !scenarios.contains(&(r.big_streams, r.small_load)) {
            scenarios.push((r.big_streams, r.small_load));
        }
        if !schedulers.contains(&r.scheduler.as_str()) {
            schedulers.push(&r.scheduler);
        }
    }
    let labels: Vec<String> = scenarios
        .iter()
        .map(|(b, l)| format!("big={b} load={l}"))
        .collect();
    let series = |value: fn(&Row) -> f64| -> Vec<(String, Vec<f64>)> {
        schedulers
            .iter()
            .map(|name| {
                let values = scenarios
                    .iter()
                    .map(|sc| {
                        rows.iter()
                            .find(|r| r.scheduler == *name && (r.big_streams, r.small_load) == *sc)
                            .map_or(0.0, value)
                    })
                    .collect();
                (name.to_string(), values)
            })
            .collect()
    };
    let root = BitMapBackend::new(path, (1200, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(600);
    grouped_bars(
        &left,
        "small-task p99 latency (µs, log)",
        &labels,
        &series(|r| r.small_p99_us),
        true,
    )?;
    grouped_bars(
        &right,
        "small tasks completed per second",
        &labels,
        &series(|r| r.small_done_per_s),
        false,
    )?;
    root.present()?;
    Ok(())
}

/// The charts of `atoll bench oltp-report`: queries per second and p99 latency per workload
/// (one bar per system), and each workload's per-second throughput over its run.
pub fn oltp_charts(runs: &[super::oltp_report::Run], dir: &Path) -> anyhow::Result<()> {
    let mut groups: Vec<(String, u32)> = Vec::new();
    let mut systems: Vec<String> = Vec::new();
    for r in runs {
        if !groups.contains(&(r.workload.clone(), r.threads)) {
            groups.push((r.workload.clone(), r.threads));
        }
        if !systems.contains(&r.system) {
            systems.push(r.system.clone());
        }
    }
    let find = |system: &str, (w, t): &(String, u32)| {
        runs.iter()
            .find(|r| r.system == system && &r.workload == w && r.threads == *t)
    };
    let labels: Vec<String> = groups.iter().map(|(w, t)| format!("{w} {t}t")).collect();
    let series = |value: fn(&super::oltp_report::Run) -> f64| -> Vec<(String, Vec<f64>)> {
        systems
            .iter()
            .map(|s| {
                let values = groups
                    .iter()
                    .map(|g| find(s, g).map_or(0.0, value))
                    .collect();
                (s.clone(), values)
            })
            .collect()
    };
    grouped_bars_png(
        &dir.join("qps.png"),
        "queries per second (TPC-C: tpmC)",
        &labels,
        &series(|r| r.qps.unwrap_or(r.tps)),
        false,
    )?;
    grouped_bars_png(
        &dir.join("latency.png"),
        "p99 latency, ms (log scale; TPC-C: NEW_ORDER)",
        &labels,
        &series(|r| r.p99_ms),
        true,
    )?;
    for g in &groups {
        let lines: Vec<(String, Vec<f64>)> = systems
            .iter()
            .filter_map(|s| Some((s.clone(), find(s, g)?.timeline.clone())))
            .collect();
        let unit = if g.0 == "tpcc" {
            "new orders per minute"
        } else {
            "queries per second"
        };
        timeline(
            &dir.join(format!("timeline-{}-{}.png", g.0, g.1)),
            &format!("{} at {} threads: {unit}, each second", g.0, g.1),
            &lines,
        )?;
    }
    Ok(())
}

/// A PNG of [`grouped_bars`] alone.
fn grouped_bars_png(
    path: &Path,
    caption: &str,
    labels: &[String],
    series: &[(String, Vec<f64>)],
    log_scale: bool,
) -> anyhow::Result<()> {
    register_font()?;
    let root = BitMapBackend::new(path, (1200, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    grouped_bars(&root, caption, labels, series, log_scale)?;
    root.present()?;
    Ok(())
}

/// One group of bars per label, one bar per series, on `area`.
fn grouped_bars(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    caption: &str,
    labels: &[String],
    series: &[(String, Vec<f64>)],
    log_scale: bool,
) -> anyhow::Result<()> {
    let width = series.len() + 1;
    let x_max = (labels.len() * width) as f64;
    let max = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(1.0, f64::max)
        * 1.2;
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(caption, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(80);
    let center = |g: usize| (g * width) as f64 + 0.5 + series.len() as f64 / 2.0;
    let floor = if log_scale { 0.1 } else { 0.0 };
    let bar = |s: usize, g: usize, v: f64, color: RGBColor| {
        let x = (g * width + s) as f64 + 0.5;
        Rectangle::new([(x, floor), (x + 0.9, v.max(floor))], color.filled())
    };
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .y_label_formatter(&|v| format!("{v:.1}"))
                .x_label_formatter(&|_| String::new())
                .draw()?;
            for (s, (name, values)) in series.iter().enumerate() {
                let color = COLORS[s % COLORS.len()];
                chart
                    .draw_series(values.iter().enumerate().map(|(g, v)| bar(s, g, *v, color)))?
                    .label(name.as_str())
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                    });
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
            // Each group's name under its bars.
            let style = TextStyle::from(("sans-serif", 14).into_font())
                .pos(Pos::new(HPos::Center, VPos::Top));
            for (g, name) in labels.iter().enumerate() {
                // Backend pixels, made relative to `area` (a panel may not start at 0, 0).
                let (x, y) = chart.backend_coord(&(center(g), floor));
                let (ax, ay) = area.get_base_pixel();
                area.draw(&Text::new(
                    name.as_str(),
                    (x - ax, y + 8 - ay),
                    style.clone(),
                ))?;
            }
        }};
    }
    if log_scale {
        draw!(builder.build_cartesian_2d(0f64..x_max, (floor..max).log_scale())?);
    } else {
        draw!(builder.build_cartesian_2d(0f64..x_max, 0f64..max)?);
    }
    Ok(())
}

/// One line per series over the seconds of a run, so jitter shows.
fn timeline(path: &Path, caption: &str, series: &[(String, Vec<f64>)]) -> anyhow::Result<()> {
    register_font()?;
    let root = BitMapBackend::new(path, (1000, 400)).into_drawing_area();
    root.fill(&WHITE)?;
    let x_max = series
        .iter()
        .map(|(_, v)| v.len())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let y_max = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(1.0, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("second")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()?;
    for (s, (name, values)) in series.iter().enumerate() {
        let color = COLORS[s % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                values.iter().enumerate().map(|(i, v)| ((i + 1) as f64, *v)),
                color.stroke_width(2),
            ))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 14, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
