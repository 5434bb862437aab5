//! Bar charts: one bar per variant, the winner highlighted, whiskers for
//! confidence intervals.

use plotters::element::{ErrorBar, Rectangle};
use plotters::prelude::*;

use super::axis::tick;
use super::svg::{FONT, draw, frame};

const WINNER: RGBColor = RGBColor(0, 158, 115);
const PLAIN: RGBColor = RGBColor(110, 140, 175);

pub struct Bar {
    pub label: String,
    pub value: f64,
    /// A confidence interval, drawn as a whisker.
    pub interval: Option<(f64, f64)>,
    pub highlight: bool,
}

/// Vertical bars with optional whiskers; highlighted bars are the winner.
pub fn bars(title: &str, y_desc: &str, bars: &[Bar]) -> String {
    let top = bars.iter().map(|b| b.interval.map_or(b.value, |(_, hi)| hi.max(b.value))).fold(0.0, f64::max);
    let top = if top > 0.0 { top * 1.15 } else { 1.0 };
    let n = bars.len().max(1);
    let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    draw(title, |root| {
        let mut chart =
            frame(root, title).build_cartesian_2d((0..n.saturating_sub(1)).into_segmented(), 0.0..top)?;
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
