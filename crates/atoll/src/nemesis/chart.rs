//! The run's picture, as Jepsen draws it (`chart.png` in `--out`): operations per second by
//! outcome above, every operation's latency below (log scale), and each fault's interval
//! shaded and named in both.

use std::path::Path;

use plotters::prelude::*;

use super::client::{Op, Outcome};

/// A fault as it happened: its nemesis, from, to (ms since the run began), and what it was.
pub struct Interval {
    pub nemesis: &'static str,
    pub from_ms: u64,
    pub to_ms: u64,
    pub what: String,
}

const OUTCOMES: [(Outcome, &str, RGBColor); 3] = [
    (Outcome::Ok, "ok", RGBColor(44, 160, 44)),
    (Outcome::Fail, "failed", RGBColor(255, 127, 14)),
    (Outcome::Unknown, "unknown", RGBColor(214, 39, 40)),
];
const SHADE: RGBColor = RGBColor(120, 120, 200);

pub fn draw(history: &[Op], faults: &[Interval], path: &Path) -> anyhow::Result<()> {
    crate::bench::plot::register_font()?;
    let end_s = history.iter().map(|op| op.end_ms).max().unwrap_or(1000) as f64 / 1000.0 + 1.0;
    let seconds = end_s.ceil() as usize;
    let root = BitMapBackend::new(path, (1400, 800)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(400);

    let mut per_second = vec![[0u32; 3]; seconds + 1];
    for op in history {
        let o = OUTCOMES
            .iter()
            .position(|(o, ..)| *o == op.outcome)
            .unwrap_or(0);
        per_second[(op.end_ms / 1000) as usize][o] += 1;
    }
    let max = per_second.iter().flatten().copied().max().unwrap_or(1) as f64 * 1.15;
    let mut chart = ChartBuilder::on(&top)
        .caption("operations per second", ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..end_s, 0.0..max)?;
    chart.configure_mesh().x_desc("s").draw()?;
    shade(&mut chart, faults, 0.0, max)?;
    for (o, (_, name, color)) in OUTCOMES.iter().enumerate() {
        let points = per_second
            .iter()
            .enumerate()
            .map(|(s, counts)| (s as f64 + 0.5, counts[o] as f64));
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))?
            .label(*name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;

    let slowest = history
        .iter()
        .map(|op| op.end_ms.saturating_sub(op.start_ms))
        .max()
        .unwrap_or(1)
        .max(10) as f64
        * 1.5;
    let mut chart = ChartBuilder::on(&bottom)
        .caption("latency of each operation (ms)", ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..end_s, (1.0..slowest).log_scale())?;
    chart.configure_mesh().x_desc("s").draw()?;
    shade(&mut chart, faults, 1.0, slowest)?;
    for (outcome, _, color) in OUTCOMES {
        chart.draw_series(history.iter().filter(|op| op.outcome == outcome).map(|op| {
            let latency = op.end_ms.saturating_sub(op.start_ms).max(1) as f64;
            Circle::new((op.end_ms as f64 / 1000.0, latency), 2, color.filled())
        }))?;
    }
    root.present()?;
    Ok(())
}

/// Each fault's interval as a band with its name at the top.
fn shade<X, Y>(
    chart: &mut ChartContext<'_, BitMapBackend<'_>, Cartesian2d<X, Y>>,
    faults: &[Interval],
    low: f64,
    high: f64,
) -> anyhow::Result<()>
where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    for f in faults {
        let (from, to) = (f.from_ms as f64 / 1000.0, f.to_ms as f64 / 1000.0);
        chart.draw_series([Rectangle::new(
            [(from, low), (to, high)],
            SHADE.mix(0.15).filled(),
        )])?;
        chart.draw_series([Text::new(
            f.what.clone(),
            (from, high),
            ("sans-serif", 12).into_font().color(&SHADE.mix(0.9)),
        )])?;
    }
    Ok(())
}
