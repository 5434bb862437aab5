//! Ids and links between sections: each step's row in the step index is
//! its anchor, so every section can point at the evidence it shows.

use super::page::escape;
use crate::report::model::Step;

pub(super) fn anchor(kind: &str, name: &str) -> String {
    let safe: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    format!("{kind}-{safe}")
}

pub(super) fn step_link(step: &Step) -> String {
    format!("<a href=\"#{}\">{}</a>", anchor("step", &step.name), escape(&step.name))
}
