//! Step documents of a recipe written in a test, for tests of the steps
//! that run them: each body built as `anvil plan` builds it.

use super::expression::ExpressionText;
use super::{DecisionExec, Exec, GateExec, ScreenExec};

/// Step `name`'s document body in the recipe `text`.
pub fn exec(text: &str, name: &str) -> Exec {
    let recipe = crate::recipe::testing::load_text(text).unwrap_or_else(|e| panic!("recipe loads: {e:?}"));
    let step = recipe.step(name).unwrap_or_else(|| panic!("no step {name}"));
    super::from_plan::judgement_of(&step.spec)
        .unwrap_or_else(|| panic!("{name} is not judged from a document"))
}

pub fn gate(text: &str, name: &str) -> GateExec {
    match exec(text, name) {
        Exec::Gate(gate) => *gate,
        _ => panic!("{name} is not a gate"),
    }
}

pub fn screen(text: &str, name: &str) -> ScreenExec {
    match exec(text, name) {
        Exec::Screen(screen) => *screen,
        _ => panic!("{name} is not a screen"),
    }
}

pub fn decision(text: &str, name: &str) -> DecisionExec {
    match exec(text, name) {
        Exec::Decision(decision) => *decision,
        _ => panic!("{name} is not a decision"),
    }
}

/// The first `require` of gate `g` in a recipe of two cells `a` and `b`.
pub fn requirement(require: &str) -> ExpressionText {
    let text = format!(
        "server \"s\" {{ model \"m\"; }}\ncell \"a\" server=\"s\"\ncell \"b\" server=\"s\"\ngate \"g\" {{ require \"{require}\"; }}\n"
    );
    gate(&text, "g").require.remove(0)
}
