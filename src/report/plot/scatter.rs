//! Scatter plots: labelled points per series, optionally joined, with a
//! Pareto front drawn through the points that name it.

use plotters::element::{Circle, PathElement, Text};
use plotters::prelude::*;

use super::axis::span;
use super::series_data::Series;
use super::svg::{FONT, PALETTE, draw, legend, numeric_chart};

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
        let mut chart = numeric_chart(root, title, (x0..x1, y0..y1), x_desc, y_desc)?;
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
        legend(&mut chart.configure_series_labels(), legend_at).draw()?;
        Ok(())
    })
}
