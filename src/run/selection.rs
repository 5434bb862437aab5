//! Which steps a run runs: `--only` and the steps they depend on, and the
//! error naming a step that does not exist.

use super::error::RunError;
use crate::plan::Plan;
use crate::step_kind::Kind;

/// A step named on the command line that the plan does not hold, with the
/// nearest name it does.
pub(super) fn unknown_step(flag: &'static str, name: &str, plan: &Plan) -> RunError {
    let hint = crate::did_you_mean::did_you_mean(name, plan.nodes.iter().map(|n| n.name.as_str()))
        .map(|h| format!(" ({h})"))
        .unwrap_or_default();
    RunError::UnknownStep { flag, name: name.to_string(), hint }
}

/// `--only a b`: those steps and everything they depend on.
pub(super) fn selection(plan: &Plan, only: &[String]) -> Result<Vec<bool>, RunError> {
    if only.is_empty() {
        return Ok(vec![true; plan.nodes.len()]);
    }
    let mut selected = vec![false; plan.nodes.len()];
    let mut stack = Vec::new();
    for name in only {
        stack.push(plan.index_of(name).ok_or_else(|| unknown_step("--only", name, plan))?);
    }
    while let Some(i) = stack.pop() {
        if !std::mem::replace(&mut selected[i], true) {
            stack.extend(plan.nodes[i].deps.iter().copied().filter(|&d| plan.nodes[d].kind != Kind::Finally));
        }
    }
    Ok(selected)
}
