//! Line charts as SVG text, drawn here so that the report needs nothing from the network
//! (no charting library from a CDN): axes with a few ticks, one colour per series, a legend.

use std::fmt::Write;

/// One line: its name and (x, y) points, x in seconds.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 260.0;
/// Room for the axis labels on the left and bottom, the title on top, the legend on the right.
const LEFT: f64 = 56.0;
const BOTTOM: f64 = 28.0;
const TOP: f64 = 24.0;
const RIGHT: f64 = 190.0;
const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A chart of `series` titled `title`, y in `unit`; an empty chart says there was no data.
pub fn line_chart(title: &str, unit: &str, series: &[Series]) -> String {
    let points = || series.iter().flat_map(|s| s.points.iter());
    // The x axis spans the points (the dashboard's last minutes, not all since it started).
    let x_min = points().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x_min = if x_min.is_finite() { x_min } else { 0.0 };
    let x_max = points().map(|p| p.0).fold(x_min, f64::max).max(x_min + 1.0);
    let y_max = nice_ceiling(points().map(|p| p.1).fold(0.0, f64::max));
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |v: f64| LEFT + (v - x_min) / (x_max - x_min) * plot_w;
    let y = |v: f64| TOP + plot_h - v / y_max * plot_h;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="11"><text x="{LEFT}" y="15" font-size="13" font-weight="bold">{}</text>"#,
        escape(title)
    );
    let _ = write!(
        svg,
        r##"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>"##
    );
    for i in 0..=4 {
        let v = y_max * f64::from(i) / 4.0;
        let (right, at, label_x, label) = (LEFT + plot_w, y(v), LEFT - 4.0, short(v));
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" x2="{right}" y1="{at:.1}" y2="{at:.1}" stroke="#eee"/><text x="{label_x}" y="{:.1}" text-anchor="end">{label}</text>"##,
            at + 4.0,
        );
        let t = x_min + (x_max - x_min) * f64::from(i) / 4.0;
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{:.0} s</text>"#,
            x(t),
            HEIGHT - 8.0,
            t
        );
    }
    let _ = write!(
        svg,
        r#"<text x="4" y="{}" transform="rotate(-90 10 {})">{}</text>"#,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0,
        escape(unit)
    );
    if series.iter().all(|s| s.points.is_empty()) {
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle">no data</text>"#,
            LEFT + plot_w / 2.0,
            TOP + plot_h / 2.0
        );
    }
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let path: Vec<String> = (s.points.iter())
            .map(|&(px, py)| format!("{:.1},{:.1}", x(px), y(py)))
            .collect();
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{}"/>"#,
            path.join(" ")
        );
        let ly = TOP + 12.0 + 14.0 * i as f64;
        let _ = write!(
            svg,
            r#"<rect x="{}" y="{}" width="10" height="3" fill="{colour}"/><text x="{}" y="{}">{}</text>"#,
            WIDTH - RIGHT + 10.0,
            ly - 4.0,
            WIDTH - RIGHT + 24.0,
            ly,
            escape(&s.name)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// 1, 2 or 5 times a power of ten, at or above `v` (1 for nothing).
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|c| *c >= v)
        .unwrap_or(10.0 * power)
}

fn short(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.1}G", v / 1e9),
        v if v >= 1e6 => format!("{:.1}M", v / 1e6),
        v if v >= 1e4 => format!("{:.0}k", v / 1e3),
        v if v >= 10.0 || v == 0.0 => format!("{v:.0}"),
        v => format!("{v:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceilings_are_round() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(0.7), 1.0);
        assert_eq!(nice_ceiling(1.3), 2.0);
        assert_eq!(nice_ceiling(430.0), 500.0);
    }

    #[test]
    fn a_chart_draws_each_series_and_escapes_names() {
        let svg = line_chart(
            "CPU <kv>",
            "cores",
            &[
                Series {
                    name: "a&b".into(),
                    points: vec![(0.0, 0.5), (1.0, 1.5)],
                },
                Series {
                    name: "c".into(),
                    points: vec![(0.0, 0.1)],
                },
            ],
        );
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(
            svg.contains("CPU &lt;kv&gt;") && svg.contains("a&amp;b"),
            "{svg}"
        );
        assert!(!line_chart("x", "y", &[]).is_empty());
    }
}
