//! The request timeline: each request as a line from its send to its end.

use plotters::element::PathElement;
use plotters::prelude::*;

use super::svg::{FAILED, PALETTE, draw, legend, note_on, numeric_chart};

/// One request on the timeline, in ms after the run started.
pub struct Span {
    pub send: f64,
    pub first: Option<f64>,
    pub end: f64,
    pub failed: bool,
}

/// Each request as a line from its send to its end: queueing and prefill
/// (send → first output) in one colour, generation in another, failures red.
pub fn timeline(title: &str, spans: &[Span], note: Option<&str>) -> String {
    let x1 = spans.iter().map(|s| s.end).fold(0.0, f64::max).max(1.0) * 1.02;
    let rows = spans.len().max(1) as f64;
    draw(title, |root| {
        let (x_desc, y_desc) = ("ms after the run started", "request (by send time)");
        let mut chart = numeric_chart(root, title, (0.0..x1, 0.0..rows), x_desc, y_desc)?;
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
        legend(&mut chart.configure_series_labels(), SeriesLabelPosition::UpperLeft).draw()?;
        note_on(&chart.plotting_area().strip_coord_spec(), note)?;
        Ok(())
    })
}
