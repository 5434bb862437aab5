//! One agent task on a time axis: a row per call, the delay before it
//! (tool or think time after its parents replied) drawn apart from its time
//! on the server, and the calls of the task's critical path highlighted and
//! joined.

use plotters::element::{PathElement, Rectangle};
use plotters::prelude::*;

use super::axis::tick;
use super::svg::{FAILED, FONT, PALETTE, draw, frame, legend, note_on};

/// One call of the task, in ms after the task started.
pub struct CallBar {
    /// The call's id in the trace.
    pub name: String,
    /// When its parents had all replied (the task's start for a root).
    pub ready: f64,
    /// When it was due: `ready` plus its delay.
    pub due: f64,
    /// When it was sent and when its reply ended.
    pub send: f64,
    pub end: f64,
    /// On the task's critical path.
    pub critical: bool,
    pub failed: bool,
}

/// The critical path's colour, and the other calls'.
const CRITICAL: RGBColor = PALETTE[1];
const OTHER: RGBColor = PALETTE[0];
const DELAY: RGBColor = PALETTE[6];

/// A row per call, first call on top: a grey band for the delay before it,
/// a bar from its send to its reply's end; critical-path calls in
/// vermillion, marked ★ and joined by a dashed line, the others blue,
/// failed calls red.
pub fn task_timeline(title: &str, calls: &[CallBar], note: Option<&str>) -> String {
    let n = calls.len().max(1);
    let x1 = calls.iter().map(|c| c.end.max(c.due)).fold(0.0, f64::max).max(1.0) * 1.04;
    let names: Vec<String> =
        calls.iter().map(|c| if c.critical { format!("{} ★", c.name) } else { c.name.clone() }).collect();
    let widest = names.iter().map(|s| s.chars().count()).max().unwrap_or(4) as u32;
    // The row of call `i`: the first call on the top row.
    let row = |i: usize| n - 1 - i;
    draw(title, |root| {
        let mut builder = frame(root, title);
        builder.y_label_area_size((widest * 7 + 14).clamp(48, 180));
        let mut chart = builder.build_cartesian_2d(0.0..x1, (0..n - 1).into_segmented())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_max_light_lines(0)
            .y_max_light_lines(1)
            .x_label_formatter(&|v| tick(*v))
            .y_labels(n)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(r) | SegmentValue::Exact(r) if *r < n => {
                    names.get(n - 1 - r).cloned().unwrap_or_default()
                }
                _ => String::new(),
            })
            .x_desc("ms after the task started")
            .label_style((FONT, 12))
            .draw()?;
        // Bars a little thinner than their row, the delay band thinner still.
        let row_px = chart.plotting_area().dim_in_pixel().1 / n as u32;
        let (bar_margin, delay_margin) = (row_px / 5, row_px * 3 / 8);
        let band = |from: f64, to: f64, i: usize, margin: u32, style: ShapeStyle| {
            let mut rect = Rectangle::new(
                [(from, SegmentValue::Exact(row(i))), (to, SegmentValue::Exact(row(i) + 1))],
                style,
            );
            rect.set_margin(margin, margin, 0, 0);
            rect
        };
        // The critical path, joined under the bars: along each call from
        // when it was ready to its reply's end, then down to the next.
        let path: Vec<(f64, SegmentValue<usize>)> = calls
            .iter()
            .enumerate()
            .filter(|(_, c)| c.critical)
            .flat_map(|(i, c)| {
                [(c.ready, SegmentValue::CenterOf(row(i))), (c.end, SegmentValue::CenterOf(row(i)))]
            })
            .collect();
        chart
            .draw_series(std::iter::once(PathElement::new(path, BLACK.mix(0.6).stroke_width(1))))?
            .label("critical path ★ (joined)")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], CRITICAL.filled()));
        chart
            .draw_series(
                calls
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.due > c.ready)
                    .map(|(i, c)| band(c.ready, c.due, i, delay_margin, DELAY.mix(0.45).filled())),
            )?
            .label("delay before the call (tools, thinking)")
            .legend(|(x, y)| Rectangle::new([(x, y - 3), (x + 18, y + 3)], DELAY.mix(0.45).filled()));
        let color = |c: &CallBar| {
            if c.failed {
                FAILED
            } else if c.critical {
                CRITICAL
            } else {
                OTHER
            }
        };
        chart.draw_series(
            calls
                .iter()
                .enumerate()
                .map(|(i, c)| band(c.send, c.end.max(c.send), i, bar_margin, color(c).filled())),
        )?;
        chart
            .draw_series(std::iter::empty::<PathElement<(f64, SegmentValue<usize>)>>())?
            .label("call off the critical path")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], OTHER.filled()));
        if calls.iter().any(|c| c.failed) {
            chart
                .draw_series(std::iter::empty::<PathElement<(f64, SegmentValue<usize>)>>())?
                .label("failed call")
                .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], FAILED.filled()));
        }
        legend(&mut chart.configure_series_labels(), SeriesLabelPosition::UpperRight).draw()?;
        note_on(&chart.plotting_area().strip_coord_spec(), note)?;
        Ok(())
    })
}
