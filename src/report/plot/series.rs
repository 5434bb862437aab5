//! A cell's load over its run, from the artifact's per-second `series`:
//! requests in flight (left axis) and output tokens per second (right
//! axis), with a vertical line where each load stage starts.

use plotters::element::PathElement;
use plotters::prelude::*;

use super::axis::{span, tick};
use super::svg::{FONT, PALETTE, draw, frame, legend};

/// `in_flight` and `tok_s` as (s after the run started, value); stages
/// start at `stage_starts` (s).
pub fn load_over_time(
    title: &str,
    in_flight: &[(f64, f64)],
    tok_s: &[(f64, f64)],
    stage_starts: &[f64],
) -> String {
    let xs = || in_flight.iter().chain(tok_s).map(|p| p.0).chain(stage_starts.iter().copied());
    let (x0, x1) = span(xs(), false);
    let (_, y1) = span(in_flight.iter().map(|p| p.1), true);
    let (_, t1) = span(tok_s.iter().map(|p| p.1), true);
    draw(title, |root| {
        let mut chart = frame(root, title)
            .right_y_label_area_size(64)
            .build_cartesian_2d(x0..x1, 0.0..y1)?
            .set_secondary_coord(x0..x1, 0.0..t1);
        chart
            .configure_mesh()
            .max_light_lines(0)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .x_desc("s after the run started")
            .y_desc("requests in flight")
            .label_style((FONT, 12))
            .draw()?;
        chart
            .configure_secondary_axes()
            .y_label_formatter(&|v| tick(*v))
            .y_desc("output tok/s")
            .label_style((FONT, 12))
            .draw()?;
        let (flight, tokens, edge) = (PALETTE[0], PALETTE[1], PALETTE[6]);
        chart.draw_series(
            stage_starts
                .iter()
                .filter(|x| **x > x0)
                .map(|x| PathElement::new(vec![(*x, 0.0), (*x, y1)], edge.stroke_width(1))),
        )?;
        chart
            .draw_series(LineSeries::new(in_flight.iter().copied(), flight.stroke_width(2)))?
            .label("in flight")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], flight.stroke_width(3)));
        chart
            .draw_secondary_series(LineSeries::new(tok_s.iter().copied(), tokens.stroke_width(2)))?
            .label("output tok/s (right)")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], tokens.stroke_width(3)));
        legend(&mut chart.configure_series_labels(), SeriesLabelPosition::UpperLeft).draw()?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_both_lines_and_the_stage_edges() {
        let flight = [(0.0, 1.0), (1.0, 2.0), (2.0, 4.0)];
        let tokens = [(0.0, 10.0), (1.0, 20.0), (2.0, 40.0)];
        let svg = load_over_time("ramp", &flight, &tokens, &[0.0, 1.0, 2.0]);
        assert!(svg.starts_with("<svg class=\"plot\""), "{svg}");
        assert!(svg.contains("in flight") && svg.contains("output tok/s"), "{svg}");
        assert!(!svg.contains("cannot draw"), "{svg}");
        assert!(load_over_time("empty", &[], &[], &[]).starts_with("<svg"));
    }
}
