//! A search's curve: the SLO's first metric at every probed value, passing
//! probes apart from failing ones, each numbered in the order the search
//! made it, and the answer (the highest pass) marked.

use plotters::element::{Circle, Cross, PathElement, Text};
use plotters::prelude::*;

use super::axis::span;
use super::svg::{FAILED, FONT, draw, legend, numeric_chart};

const PASSED: RGBColor = RGBColor(0, 158, 115);

/// One probe on the curve.
pub struct CurvePoint {
    pub value: f64,
    pub metric: f64,
    pub passed: bool,
}

/// Probes in the order made (numbered so); `answer` draws a dashed line.
pub fn search_curve(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    probes: &[CurvePoint],
    answer: Option<f64>,
) -> String {
    let (x0, x1) = span(probes.iter().map(|p| p.value), true);
    let (y0, y1) = span(probes.iter().map(|p| p.metric), true);
    let mut by_value: Vec<(f64, f64)> = probes.iter().map(|p| (p.value, p.metric)).collect();
    by_value.sort_by(|a, b| a.0.total_cmp(&b.0));
    draw(title, |root| {
        let mut chart = numeric_chart(root, title, (x0..x1, y0..y1), x_desc, y_desc)?;
        chart.draw_series(LineSeries::new(by_value.iter().copied(), BLACK.mix(0.3).stroke_width(1)))?;
        if let Some(answer) = answer {
            let color = PASSED.mix(0.8);
            chart
                .draw_series(DashedLineSeries::new(
                    [(answer, y0), (answer, y1)],
                    6,
                    4,
                    color.stroke_width(2),
                ))?
                .label("answer: highest pass")
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        }
        let pass = probes.iter().filter(|p| p.passed).map(|p| (p.value, p.metric));
        chart
            .draw_series(pass.map(|p| Circle::new(p, 5, PASSED.filled())))?
            .label("passed")
            .legend(|(x, y)| Circle::new((x + 9, y), 5, PASSED.filled()));
        let fail = probes.iter().filter(|p| !p.passed).map(|p| (p.value, p.metric));
        chart
            .draw_series(fail.map(|p| Cross::new(p, 5, FAILED.stroke_width(2))))?
            .label("failed")
            .legend(|(x, y)| Cross::new((x + 9, y), 5, FAILED.stroke_width(2)));
        if probes.len() <= 24 {
            let order = probes.iter().enumerate();
            chart.draw_series(
                order.map(|(i, p)| Text::new(format!(" #{}", i + 1), (p.value, p.metric), (FONT, 11))),
            )?;
        }
        legend(&mut chart.configure_series_labels(), SeriesLabelPosition::UpperLeft).draw()?;
        Ok(())
    })
}
