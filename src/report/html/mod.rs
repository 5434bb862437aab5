//! `anvil report`'s page: one self-contained HTML file (inline CSS and SVG,
//! no script, nothing fetched), top to bottom: the campaign, the decision,
//! gates, answer quality, screens, headline cells, the cells compared, each cell, other
//! steps, and an index of every step with its fingerprint and files.
//!
//! Sections go by step kind (`SECTIONS`): a new kind (searches, stages)
//! is one more entry there and one file; until then its steps show in
//! "Other steps" as their stored JSON.
//!
//! One file per section (`decision.rs`, `cells.rs`, …); the shared pieces
//! are `page.rs` (the page being written, its head and CSS),
//! `table.rs` (tables, figures), `format.rs` (numbers, values),
//! `link.rs` (anchors), `stats.rs` (the numbers behind the cell plots) and
//! `failed.rs` (a failed step's evidence). `agents.rs` adds agent cells'
//! job figures to the cell sections and Across cells.

use std::fmt::Write;

use super::model::Report;
use super::plot::escape;
use page::Page;

mod across_cells;
mod agents;
mod campaign;
mod cell_plots;
mod cells;
mod decision;
mod failed;
mod format;
mod gates;
mod headline;
mod link;
mod other_steps;
mod page;
mod pareto;
mod quality;
mod screens;
mod search;
mod stats;
mod step_index;
mod table;
mod telemetry;

pub use format::num;

/// Render the page.
pub fn render(report: &Report) -> String {
    let mut page = Page { out: String::with_capacity(256 * 1024), tables: 0 };
    page.head(report);
    banner(&mut page, report);
    campaign::header(&mut page, report);
    page.nav();
    campaign::campaign(&mut page, report);
    for (_, _, section) in SECTIONS {
        section(&mut page, report);
    }
    page.out.push_str("</main>\n<footer>Written by anvil ");
    page.out.push_str(&escape(env!("CARGO_PKG_VERSION")));
    page.out.push_str(" <code>anvil report</code>. Self-contained: no script, font or file is fetched.</footer>\n</body>\n</html>\n");
    page.out
}

type Section = fn(&mut Page, &Report);

/// The page's sections after the campaign, in order: (id, title in the
/// page's nav, function). The nav is drawn from this list, so the id must
/// be the one the section's own `page.section` writes.
const SECTIONS: [(&str, &str, Section); 10] = [
    ("decision", "Decision", decision::decision),
    ("gates", "Gates", gates::gates),
    ("quality", "Quality", quality::quality),
    ("screens", "Screens", screens::screens),
    ("searches", "Searches", search::searches),
    ("headline", "Headline", headline::headline),
    ("across", "Across cells", across_cells::across_cells),
    ("cells", "Cells", cells::cells),
    ("other", "Other steps", other_steps::other_steps),
    ("steps", "Steps", step_index::step_index),
];

impl Page {
    fn nav(&mut self) {
        self.push("<nav><ul>");
        for (id, title, _) in SECTIONS {
            let _ = write!(self.out, "<li><a href=\"#{id}\">{title}</a></li>");
        }
        self.push("</ul></nav>\n<main>\n");
    }
}

/// A run on simulated servers says so first, before anything else is read.
fn banner(page: &mut Page, report: &Report) {
    let simulated = report.simulated_cells();
    let summary_simulated = report.summary.as_ref().map(|s| s.measurement.simulated);
    if !simulated.is_empty() || summary_simulated == Some(true) {
        let _ = writeln!(
            page.out,
            "<div class=\"banner-sim\" id=\"simulated\" role=\"alert\"><strong>SIMULATED SERVERS.</strong> \
             {} measured anvil's simulated engine, not real hardware: its numbers come from a performance model \
             and prove the campaign's logic, not a deployment.</div>",
            if simulated.is_empty() { "This campaign".to_string() } else { escape(&simulated.join(", ")) }
        );
    }
}
