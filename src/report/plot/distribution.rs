//! Distributions: lines (cumulative distributions, and rates over time,
//! which draw the same way) and histograms.

use plotters::element::{PathElement, Rectangle};
use plotters::prelude::*;

use super::axis::span;
use super::series_data::Series;
use super::svg::{PALETTE, draw, legend, note_on, numeric_chart};

/// Lines (cumulative distributions, rates over time), one colour per series.
pub fn lines(title: &str, x_desc: &str, y_desc: &str, series: &[Series], note: Option<&str>) -> String {
    let all = || series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = span(all().map(|p| p.0), false);
    let (y0, y1) = span(all().map(|p| p.1), true);
    draw(title, |root| {
        let mut chart = numeric_chart(root, title, (x0..x1, y0..y1), x_desc, y_desc)?;
        for (i, s) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), color.stroke_width(2)))?
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3)));
        }
        if series.len() > 1 {
            legend(&mut chart.configure_series_labels(), SeriesLabelPosition::LowerRight).draw()?;
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
        let mut chart = numeric_chart(root, title, (x0..x1, 0.0..top), x_desc, "count")?;
        chart.draw_series(
            bins.iter().map(|&(lo, hi, n)| {
                Rectangle::new([(lo, 0.0), (hi, n as f64)], PALETTE[0].mix(0.8).filled())
            }),
        )?;
        note_on(&chart.plotting_area().strip_coord_spec(), note)?;
        Ok(())
    })
}
