//! The Other steps section: tasks with their exit code and first output
//! lines, and steps of kinds the page has no section for, as stored JSON.

use std::fmt::Write;

use super::link::step_link;
use super::page::{Page, escape};
use crate::report::model::{Body, Report};

pub(super) fn other_steps(page: &mut Page, report: &Report) {
    page.section("other", "Other steps");
    let mut rows = Vec::new();
    let mut unknown = Vec::new();
    for step in &report.steps {
        match &step.body {
            Body::Task(task) => rows.push(vec![
                format!("{} {}", escape(&step.kind), step_link(step)),
                task.exit_code.map_or_else(|| "—".into(), |c| c.to_string()),
                format!("<pre>{}</pre>", escape(&first_lines(&task.stdout, 6))),
                format!("<pre>{}</pre>", escape(&first_lines(&task.stderr, 6))),
            ]),
            Body::Other(value) => unknown.push((step, value)),
            _ => {}
        }
    }
    if rows.is_empty() && unknown.is_empty() {
        page.push("<p class=\"note\">No tasks.</p>");
    }
    if !rows.is_empty() {
        page.table("tasks", &["task", "exit", "stdout", "stderr"], &rows);
    }
    for (step, value) in unknown {
        let _ = write!(
            page.out,
            "<h3>{} {}</h3><pre class=\"json\">{}</pre>",
            escape(&step.kind),
            step_link(step),
            escape(&serde_json::to_string_pretty(value).unwrap_or_default())
        );
    }
    page.end();
}

fn first_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().take(n).collect();
    let more = text.lines().count() > n;
    format!("{}{}", lines.join("\n"), if more { "\n…" } else { "" })
}
