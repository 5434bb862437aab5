//! What every plot shares: its size, colours and font, the SVG it is drawn
//! into (scaled by the page, named for screen readers), and the note a
//! downsampled plot carries.

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::element::Text;
use plotters::prelude::*;

/// Plot size in SVG user units (the page scales them to its width).
const WIDTH: u32 = 640;
const HEIGHT: u32 = 300;

/// Distinct colours that stay apart for colour-blind readers (Okabe–Ito).
pub(super) const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
];
pub(super) const FAILED: RGBColor = RGBColor(200, 30, 30);
pub(super) const FONT: &str = "sans-serif";

pub(super) type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// Draw into an SVG string; a chart that cannot be drawn says so in its place.
pub(super) fn draw(
    title: &str,
    paint: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult,
) -> String {
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

/// Every plot's frame: its title and the room its axis labels need.
pub(super) fn frame<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
) -> ChartBuilder<'a, 'static, SVGBackend<'b>> {
    let mut builder = ChartBuilder::on(root);
    builder.caption(title, (FONT, 16)).margin(12).x_label_area_size(40).y_label_area_size(64);
    builder
}

/// Every plot's legend: a light box with the series names, where `at` says.
pub(super) fn legend<'s, 'a, 'b, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    labels: &'s mut plotters::chart::SeriesLabelStyle<'a, 'b, DB, CT>,
    at: SeriesLabelPosition,
) -> &'s mut plotters::chart::SeriesLabelStyle<'a, 'b, DB, CT> {
    labels.position(at).background_style(WHITE.mix(0.85)).border_style(BLACK.mix(0.4)).label_font((FONT, 12))
}

/// A chart with numbers on both axes, framed, its ticks and axis names drawn.
pub(super) fn numeric_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    (x, y): (std::ops::Range<f64>, std::ops::Range<f64>),
    x_desc: &str,
    y_desc: &str,
) -> Result<
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    Box<dyn std::error::Error>,
> {
    let mut chart = frame(root, title).build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_label_formatter(&|v| super::axis::tick(*v))
        .y_label_formatter(&|v| super::axis::tick(*v))
        .x_desc(x_desc)
        .y_desc(y_desc)
        .label_style((FONT, 12))
        .draw()?;
    Ok(chart)
}

/// The downsampling note, written in the plot's upper right corner.
pub(super) fn note_on(area: &DrawingArea<SVGBackend<'_>, Shift>, note: Option<&str>) -> DrawResult {
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
