//! What a gate's arm comparisons need of the cells they compare, checked
//! when the recipe loads (each at the comparison's line): two cells that
//! keep their answers (`keep-answers`, or a scored dataset); for
//! `lossless`, a dataset (the same prompts in every run), greedy replies
//! (`temperature 0`, a scored dataset's default) and a control measured twice (`repeat 2`: its second run is
//! the engine's own nondeterminism); for `accuracy-not-worse`, scored
//! datasets on both sides.

use super::decl::Decl;
use super::decls::arm_check::{ArmCheck, ArmTest};
use super::decls::{CellDecl, Spec};
use super::problem::{Problems, did_you_mean};
use crate::recipe::decls::load::TrafficDecl;

/// Each comparison whose cells cannot give what it compares is a problem.
pub(super) fn check(steps: &[Decl], problems: &mut Problems) {
    for step in steps {
        let Spec::Gate(gate) = &step.spec else { continue };
        for check in &gate.arms {
            for why in needs(check, steps) {
                problems.push(
                    check
                        .reads
                        .problem(format!("gate `{}`: {}: {why}", step.name, check.text))
                        .label("cannot compare"),
                );
            }
        }
    }
}

/// What `check` needs and its cells do not give.
fn needs(check: &ArmCheck, steps: &[Decl]) -> Vec<String> {
    let cell = |name: &str| {
        steps.iter().find_map(|s| match &s.spec {
            Spec::Cell(cell) if s.name == name => Some(cell),
            _ => None,
        })
    };
    let mut needs = Vec::new();
    let (Some(arm), Some(control)) = (cell(&check.arm), cell(&check.control)) else {
        for name in [&check.arm, &check.control].into_iter().filter(|n| cell(n).is_none()) {
            let cells = steps.iter().filter(|s| matches!(s.spec, Spec::Cell(_))).map(|s| s.name.as_str());
            let hint = did_you_mean(name, cells).map(|h| format!(" ({h})")).unwrap_or_default();
            needs.push(format!("there is no cell `{name}`{hint}"));
        }
        return needs;
    };
    for (name, cell) in [(&check.arm, arm), (&check.control, control)] {
        if cell.load.keep_answers.is_none() && !scored(cell) {
            needs.push(format!(
                "cell `{name}` keeps no answers: add `keep-answers \"4MB\"` (a scored dataset keeps them)"
            ));
        }
        let lossless = check.test == ArmTest::Lossless;
        if lossless && !matches!(cell.load.traffic, TrafficDecl::Dataset(_)) {
            needs.push(format!(
                "cell `{name}` sends no dataset: lossless compares the same prompts, sent again in every run (synthetic prompts are new each time)"
            ));
        }
        if lossless && !greedy(cell) {
            needs.push(format!(
                "cell `{name}` is not greedy: lossless outputs are compared under `temperature 0`"
            ));
        }
        if !lossless && !scored(cell) {
            needs.push(format!(
                "cell `{name}` sends no scored dataset (`dataset \"…\" format=\"anvil\"`, \"gsm8k\" or \"mmlu\")"
            ));
        }
    }
    if check.test == ArmTest::Lossless && control.load.repeat.unwrap_or(1) < 2 {
        needs.push(format!(
            "the control `{}` is measured once: add `repeat 2`, so its second run measures the engine's own nondeterminism",
            check.control
        ));
    }
    needs
}

fn scored(cell: &CellDecl) -> bool {
    matches!(&cell.load.traffic, TrafficDecl::Dataset(d) if d.format().scored().is_some())
}

/// Greedy: `temperature 0`, or a scored dataset that leaves it unset.
fn greedy(cell: &CellDecl) -> bool {
    match cell.load.options.temperature {
        Some(t) => t == 0.0,
        None => scored(cell),
    }
}
