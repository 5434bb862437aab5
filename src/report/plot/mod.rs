//! The report's charts, drawn in Rust by `plotters` into inline SVG: no
//! script, no font or file fetched when the page opens. Each function takes
//! the numbers it draws and returns one `<svg>` element; the page prints the
//! same numbers beside it as a table.
//!
//! One file per family of plot (`bars.rs`, `distribution.rs`, `scatter.rs`,
//! `series.rs`, `timeline.rs`, `task.rs`); `svg.rs` and `axis.rs` hold what they all share.

mod axis;
mod bars;
mod distribution;
mod scatter;
mod search;
mod series;
mod series_data;
mod svg;
mod task;
mod timeline;

pub use bars::{Bar, bars};
pub use distribution::{histogram, lines};
pub use scatter::scatter;
pub use search::{CurvePoint, search_curve};
pub use series::load_over_time;
pub use series_data::Series;
pub use svg::escape;
pub use task::{CallBar, task_timeline};
pub use timeline::{Span, timeline};

#[cfg(test)]
mod tests {
    use plotters::chart::SeriesLabelPosition;

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
            task_timeline(
                "task",
                &[
                    CallBar {
                        name: "plan".into(),
                        ready: 0.0,
                        due: 0.0,
                        send: 1.0,
                        end: 90.0,
                        critical: true,
                        failed: false,
                    },
                    CallBar {
                        name: "read".into(),
                        ready: 90.0,
                        due: 140.0,
                        send: 141.0,
                        end: 200.0,
                        critical: false,
                        failed: true,
                    },
                ],
                Some("n"),
            ),
            search_curve(
                "c",
                "rate",
                "ttft_p99_ms",
                &[
                    CurvePoint { value: 1.0, metric: 10.0, passed: true },
                    CurvePoint { value: 2.0, metric: 90.0, passed: false },
                ],
                Some(1.0),
            ),
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
        assert!(task_timeline("none", &[], None).starts_with("<svg"));
    }
}
