//! A failed step's evidence, as its run kept it: the failure classes with
//! their counts and the first reply of each (a cell that measured nothing,
//! a check that could not complete), and where the records are.

use std::fmt::Write;

use super::format::{code, short};
use super::link::anchor;
use super::page::{Page, escape};
use crate::report::model::{Failed, FailedWhy, Report, Step};

/// The evidence block of `step`, which failed and kept `failed`.
pub(super) fn failed_evidence(page: &mut Page, report: &Report, step: &Step, failed: &Failed) {
    let _ = write!(
        page.out,
        "<div class=\"failed-evidence\" id=\"{}\"><h4>Why {} {} failed</h4>",
        anchor("failed", &step.name),
        escape(&step.kind),
        escape(&step.name)
    );
    let first = match &failed.why {
        FailedWhy::Cell(cell) => {
            let _ = write!(page.out, "<p class=\"bad\">No request completed: {} failed.</p>", cell.failed);
            if let Some(stopped) = &cell.stopped {
                let _ = write!(page.out, "<p>Stopped early: {}</p>", escape(stopped));
            }
            "first request"
        }
        FailedWhy::Check(check) => {
            let _ = write!(
                page.out,
                "<p class=\"bad\">The {} check could not complete against {}: {} attempts before it stopped ({} failed).</p><p>Stopped: {}</p>",
                escape(check.check_type.as_str()),
                code(&check.target),
                check.attempts,
                check.failures,
                escape(&check.stopped)
            );
            "first attempt"
        }
    };
    let rows: Vec<Vec<String>> = failed
        .classes()
        .iter()
        .map(|c| {
            vec![
                code(&c.class),
                format!("<td class=\"num\" data-failure-class=\"{}\">{}</td>", escape(&c.class), c.count),
                c.first_request_index.to_string(),
                c.first_http_status.map_or_else(|| "—".to_string(), |s| s.to_string()),
                format!("<pre>{}</pre>", escape(&c.first_detail)),
            ]
        })
        .collect();
    page.table("failures", &["class", "count", first, "HTTP status", "first reply"], &rows);
    let dir = failed.dir.display().to_string();
    let shown = if report.link_files {
        format!("<a href=\"file://{}\">{}</a>", escape(&dir), escape(&dir))
    } else {
        code(&dir)
    };
    let _ = writeln!(
        page.out,
        "<p class=\"note\">What was sent and received is kept with the run: {shown} (<code>anvil show {}</code>). Nothing is stored under its fingerprint: a rerun runs it again.</p></div>",
        escape(short(&step.fingerprint))
    );
}
