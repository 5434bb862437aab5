//! The report's charts, drawn in Rust by `plotters` into inline SVG: no
//! script, no font or file fetched when the page opens. Each function takes
//! the numbers it draws and returns one `<svg>` element; the page prints the
//! same numbers beside it as a table.

use plotters::coord::Shift;
use plotters::element::{Circle, ErrorBar, PathElement, Rectangle, Text};
use plotters::prelude::*;

/// Plot size in SVG user units (the page scales them to its width).
pub const WIDTH: u32 = 640;
pub const HEIGHT: u32 = 300;

/// Distinct colours that stay apart for colour-blind readers (Okabe–Ito).
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
];
const WINNER: RGBColor = RGBColor(0, 158, 115);
const PLAIN: RGBColor = RGBColor(110, 140, 175);
const FAILED: RGBColor = RGBColor(200, 30, 30);
const FONT: &str = "sans-serif";

/// An axis label: no trailing zeros, thousands as k.
fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

pub struct Bar {
    pub label: String,
    pub value: f64,
    /// A confidence interval, drawn as a whisker.
    pub interval: Option<(f64, f64)>,
    pub highlight: bool,
}

pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// One request on the timeline, in ms after the run started.
pub struct Span {
    pub send: f64,
    pub first: Option<f64>,
    pub end: f64,
    pub failed: bool,
}

/// Vertical bars with optional whiskers; highlighted bars are the winner.
pub fn bars(title: &str, y_desc: &str, bars: &[Bar]) -> String {
    let top = bars.iter().map(|b| b.interval.map_or(b.value, |(_, hi)| hi.max(b.value))).fold(0.0, f64::max);
    let top = if top > 0.0 { top * 1.15 } else { 1.0 };
    let n = bars.len().max(1);
    let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    draw(title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d((0..n.saturating_sub(1)).into_segmented(), 0.0..top)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_max_light_lines(1)
            .y_max_light_lines(0)
            .y_label_formatter(&|v| tick(*v))
            .y_desc(y_desc)
            .x_labels(n)
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                    labels.get(*i).cloned().unwrap_or_default()
                }
                SegmentValue::Last => String::new(),
            })
            .label_style((FONT, 12))
            .draw()?;
        chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
            let color = if b.highlight { WINNER } else { PLAIN };
            let mut rect = Rectangle::new(
                [(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), b.value)],
                color.filled(),
            );
            rect.set_margin(0, 0, 18, 18);
            rect
        }))?;
        chart.draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
            let (lo, hi) = b.interval?;
            Some(ErrorBar::new_vertical(
                SegmentValue::CenterOf(i),
                lo,
                b.value,
                hi,
                BLACK.stroke_width(2),
                12,
            ))
        }))?;
        Ok(())
    })
}

/// Lines (cumulative distributions, rates over time), one colour per series.
pub fn lines(title: &str, x_desc: &str, y_desc: &str, series: &[Series], note: Option<&str>) -> String {
    let all = || series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = span(all().map(|p| p.0), false);
    let (y0, y1) = span(all().map(|p| p.1), true);
    draw(title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .max_light_lines(0)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .x_desc(x_desc)
            .y_desc(y_desc)
            .label_style((FONT, 12))
            .draw()?;
        for (i, s) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), color.stroke_width(2)))?
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3)));
        }
        if series.len() > 1 {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.4))
                .label_font((FONT, 12))
                .draw()?;
        }
        note_on(&chart.plotting_area().strip_coord_spec(), note)?;
        Ok(())
    })
}

/// A histogram from (low edge, high edge, count) bins.
pub fn histogram(title: &str, x_desc: &str, bins: &[(f64, f64, u64)], note: Option<&str>) -> String {
    let x0 = bins.first().map_or(0.0, |b| b.0);
    let x1 = bins.last().map_or(1.0, |b| b.1).max(x0 + f64::EPSILON);
    let top = bins.iter().map(|b| b.2).max().unwrap_or(1).max(1) as f64 * 1.1;
    draw(title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, 0.0..top)?;
        chart
            .configure_mesh()
            .max_light_lines(0)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .x_desc(x_desc)
            .y_desc("count")
            .label_style((FONT, 12))
            .draw()?;
        chart.draw_series(
            bins.iter().map(|&(lo, hi, n)| {
                Rectangle::new([(lo, 0.0), (hi, n as f64)], PALETTE[0].mix(0.8).filled())
            }),
        )?;
        note_on(&chart.plotting_area().strip_coord_spec(), note)?;
        Ok(())
    })
}

/// Each request as a line from its send to its end: queueing and prefill
/// (send → first output) in one colour, generation in another, failures red.
pub fn timeline(title: &str, spans: &[Span], note: Option<&str>) -> String {
    let x1 = spans.iter().map(|s| s.end).fold(0.0, f64::max).max(1.0) * 1.02;
    let rows = spans.len().max(1) as f64;
    draw(title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..x1, 0.0..rows)?;
        chart
            .configure_mesh()
            .max_light_lines(0)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .x_desc("ms after the run started")
            .y_desc("request (by send time)")
            .label_style((FONT, 12))
            .draw()?;
        let wait = PALETTE[4];
        let generate = PALETTE[0];
        chart
            .draw_series(spans.iter().enumerate().map(|(i, s)| {
                let y = i as f64 + 0.5;
                let to = if s.failed { s.end } else { s.first.unwrap_or(s.end) };
                let color = if s.failed { FAILED } else { wait };
                PathElement::new(vec![(s.send, y), (to, y)], color.stroke_width(2))
            }))?
            .label("send → first output")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], wait.stroke_width(3)));
        chart
            .draw_series(spans.iter().enumerate().filter(|(_, s)| !s.failed && s.first.is_some()).map(
                |(i, s)| {
                    let y = i as f64 + 0.5;
                    PathElement::new(
                        vec![(s.first.unwrap_or(s.send), y), (s.end, y)],
                        generate.stroke_width(2),
                    )
                },
            ))?
            .label("first output → end")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], generate.stroke_width(3)));
        if spans.iter().any(|s| s.failed) {
            chart
                .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
                .label("failed")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], FAILED.stroke_width(3)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font((FONT, 12))
            .draw()?;
        note_on(&chart.plotting_area().strip_coord_spec(), note)?;
        Ok(())
    })
}

/// Points per series, each labelled; `front` (already sorted by x) is drawn
/// as a dashed line through the points it names.
pub fn scatter(
    legend_at: SeriesLabelPosition,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(Series, Vec<String>)],
    front: Option<&[(f64, f64)]>,
    join: bool,
) -> String {
    let all = || series.iter().flat_map(|(s, _)| s.points.iter());
    let (x0, x1) = span(all().map(|p| p.0), true);
    let (y0, y1) = span(all().map(|p| p.1), true);
    let label_points = all().count() <= 24;
    draw(title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .max_light_lines(0)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .x_desc(x_desc)
            .y_desc(y_desc)
            .label_style((FONT, 12))
            .draw()?;
        if let Some(front) = front {
            let color = BLACK.mix(0.6);
            chart
                .draw_series(DashedLineSeries::new(front.iter().copied(), 6, 4, color.stroke_width(2)))?
                .label("Pareto front")
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
            chart.draw_series(front.iter().map(|&p| Circle::new(p, 8, BLACK.stroke_width(2))))?;
        }
        for (i, (s, names)) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            if join && s.points.len() > 1 {
                chart.draw_series(LineSeries::new(s.points.iter().copied(), color.stroke_width(1)))?;
            }
            chart
                .draw_series(s.points.iter().map(|&p| Circle::new(p, 4, color.filled())))?
                .label(s.name.as_str())
                .legend(move |(x, y)| Circle::new((x + 9, y), 4, color.filled()));
            if label_points {
                chart.draw_series(
                    s.points.iter().zip(names).map(|(&p, name)| Text::new(name.clone(), p, (FONT, 11))),
                )?;
            }
        }
        // Past a handful of series the point labels say more than a legend.
        if series.len() > 6 {
            return Ok(());
        }
        chart
            .configure_series_labels()
            .position(legend_at)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font((FONT, 12))
            .draw()?;
        Ok(())
    })
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// Draw into an SVG string; a chart that cannot be drawn says so in its place.
fn draw(title: &str, paint: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult) -> String {
    let mut svg = String::new();
    let outcome = {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| e.to_string())
            .and_then(|()| paint(&root).map_err(|e| e.to_string()))
            .and_then(|()| root.present().map_err(|e| e.to_string()))
    };
    match outcome {
        Ok(()) => responsive(&svg, title),
        Err(err) => format!("<p class=\"plot-error\">{}: cannot draw ({})</p>", escape(title), escape(&err)),
    }
}

/// The downsampling note, written in the plot's upper right corner.
fn note_on(area: &DrawingArea<SVGBackend<'_>, Shift>, note: Option<&str>) -> DrawResult {
    if let Some(note) = note {
        let (w, _) = area.dim_in_pixel();
        let style = TextStyle::from((FONT, 12).into_font()).color(&FAILED).pos(
            plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Right,
                plotters::style::text_anchor::VPos::Top,
            ),
        );
        area.draw(&Text::new(note.to_string(), (w as i32 - 6, 4), style))?;
    }
    Ok(())
}

/// plotters writes a fixed width and height: let the page scale the plot,
/// and name it for screen readers.
fn responsive(svg: &str, title: &str) -> String {
    let body = svg.trim_start_matches(|c| c != '<');
    let body = body.strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>").unwrap_or(body).trim_start();
    let Some(end) = body.find('>') else { return body.to_string() };
    format!(
        "<svg class=\"plot\" role=\"img\" aria-label=\"{}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" xmlns=\"http://www.w3.org/2000/svg\">{}",
        escape(title),
        &body[end + 1..]
    )
}

/// A range over the values with some room; `from_zero` starts at 0 for positive data.
fn span(values: impl Iterator<Item = f64>, pad: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if lo >= 0.0 && (!pad || lo < (hi - lo)) {
        lo = 0.0;
    }
    let room = if pad { (hi - lo).abs() * 0.15 } else { 0.0 };
    let (lo, hi) = (if lo == 0.0 { 0.0 } else { lo - room }, hi + room);
    if hi - lo < 1e-9 {
        (lo - 1.0_f64.max(lo.abs() * 0.1), hi + 1.0_f64.max(hi.abs() * 0.1))
    } else {
        (lo, hi)
    }
}

pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_are_inline_svg_with_no_external_reference() {
        let svgs = [
            bars(
                "b",
                "tok/s",
                &[
                    Bar { label: "a".into(), value: 3.0, interval: Some((2.0, 4.0)), highlight: true },
                    Bar { label: "b".into(), value: 1.0, interval: None, highlight: false },
                ],
            ),
            lines(
                "l",
                "x",
                "y",
                &[Series { name: "s".into(), points: vec![(0.0, 0.0), (1.0, 1.0)] }],
                Some("n"),
            ),
            histogram("h", "ms", &[(0.0, 1.0, 3), (1.0, 2.0, 5)], None),
            timeline("t", &[Span { send: 0.0, first: Some(1.0), end: 3.0, failed: false }], None),
            scatter(
                SeriesLabelPosition::UpperLeft,
                "s",
                "x",
                "y",
                &[(Series { name: "a".into(), points: vec![(1.0, 2.0)] }, vec!["p".into()])],
                Some(&[(1.0, 2.0)]),
                true,
            ),
        ];
        for svg in svgs {
            assert!(svg.starts_with("<svg class=\"plot\""), "{svg}");
            assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
            assert!(!svg.contains("href"), "no external references: {svg}");
            assert!(!svg.contains("<?xml"));
        }
    }

    #[test]
    fn degenerate_data_still_draws() {
        assert!(lines("empty", "x", "y", &[], None).starts_with("<svg"));
        assert!(histogram("empty", "x", &[], None).starts_with("<svg"));
        assert!(
            bars("one", "y", &[Bar { label: "a".into(), value: 0.0, interval: None, highlight: false }])
                .starts_with("<svg")
        );
        assert!(timeline("none", &[], None).starts_with("<svg"));
    }
}
