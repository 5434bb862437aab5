//! The Steps section: every step with its status, duration, fingerprint,
//! the `anvil show` that opens it, and its stored files.

use std::fmt::Write;

use super::format::{code, short};
use super::link::anchor;
use super::page::{Page, escape};
use crate::report::model::Report;

pub(super) fn step_index(page: &mut Page, report: &Report) {
    page.section("steps", "Steps");
    page.push("<div class=\"wide\"><table class=\"steps\"><thead><tr><th>step</th><th>kind</th><th>status</th><th>duration</th><th>fingerprint</th><th>show</th><th>stored files</th></tr></thead><tbody>");
    for step in &report.steps {
        let files: Vec<String> = step
            .files
            .iter()
            .map(|f| match (&step.dir, report.link_files) {
                (Some(dir), true) => {
                    format!(
                        "<a href=\"file://{}\">{}</a>",
                        escape(&dir.join(f).display().to_string()),
                        escape(f)
                    )
                }
                _ => code(&format!("entries/{}/{f}", short(&step.fingerprint))),
            })
            .collect();
        let _ = write!(
            page.out,
            "<tr id=\"{}\"><td>{}</td><td>{}</td><td class=\"status {}\">{}</td><td class=\"num\">{}</td><td><code title=\"{}\">{}</code></td><td><code>anvil show {}</code></td><td>{}</td></tr>",
            anchor("step", &step.name),
            escape(&step.name),
            escape(&step.kind),
            escape(&step.status),
            escape(&step.status),
            duration(step.duration_ms),
            escape(&step.fingerprint),
            escape(short(&step.fingerprint)),
            escape(short(&step.fingerprint)),
            files.join(" ")
        );
    }
    page.push("</tbody></table></div>");
    page.end();
}

fn duration(ms: u64) -> String {
    match ms {
        0 => "-".into(),
        1..1000 => format!("{ms}ms"),
        _ => format!("{:.1}s", ms as f64 / 1000.0),
    }
}
