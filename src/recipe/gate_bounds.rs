//! What a gate with `confidence` guarantees, known when the recipe loads:
//! which of its requirements can be judged over intervals at all (a `%`
//! cannot: refused at its span), and how often its `passed` and its
//! `rejected` can be wrong, from the sampled numbers its requirements
//! read. The run states the same bounds from what it did read
//! (`results/gate.rs`), never more than these.

use miette::SourceSpan;

use super::decl::Decl;
use super::decls::{GateDecl, Spec};
use super::expression::Expression;
use super::problem::{Problem, Problems};
use crate::claims::field_class::{FieldClass, classify};

/// A gate's error per look, read as `passed` and as `rejected`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GateBounds {
    /// The worst requirement: its sampled numbers × (1 − confidence).
    pub passed: f64,
    /// Every requirement's: their distinct sampled numbers × (1 − confidence).
    pub rejected: f64,
}

/// The distinct sampled numbers `expression` reads, a wildcard's by the
/// declared steps it matches (`cell.tp*.metrics.ttft_p99_ms`: one per cell).
pub fn sampled_reads(expression: &Expression, steps: &[Decl]) -> Vec<String> {
    let mut read = Vec::new();
    for reference in expression.parsed.references() {
        if classify(&reference) != FieldClass::Sampled {
            continue;
        }
        if reference.is_wildcard() {
            let matching =
                steps.iter().filter(|s| s.kind.as_str() == reference.kind && reference.matches_name(&s.name));
            for step in matching {
                let item = anvil_expr::Reference { name: step.name.clone(), ..reference.clone() };
                read.push(item.to_string());
            }
        } else {
            read.push(reference.to_string());
        }
    }
    read.sort();
    read.dedup();
    read
}

/// The bounds `gate` states per look, `None` without `confidence`.
pub fn declared(gate: &GateDecl, steps: &[Decl]) -> Option<GateBounds> {
    let miss = 1.0 - gate.confidence?;
    let each: Vec<Vec<String>> = gate.require.iter().map(|r| sampled_reads(r, steps)).collect();
    let worst = each.iter().map(Vec::len).max().unwrap_or(0);
    let mut all: Vec<&String> = each.iter().flatten().collect();
    all.sort();
    all.dedup();
    let bound = |k: usize| (k as f64 * miss).min(1.0);
    // Each arm comparison is one test of its own (`ArmTest::error_if`).
    let arms_passed = gate.arms.iter().map(|a| a.test.error_if(true, miss)).fold(0.0, f64::max);
    let arms_rejected: f64 = gate.arms.iter().map(|a| a.test.error_if(false, miss)).sum();
    Some(GateBounds {
        passed: bound(worst).max(arms_passed),
        rejected: (bound(all.len()) + arms_rejected).min(1.0),
    })
}

/// Each requirement of a gate with `confidence` that interval arithmetic
/// cannot judge is a problem at the part that cannot be judged.
pub(super) fn check(steps: &[Decl], problems: &mut Problems) {
    for step in steps {
        let Spec::Gate(gate) = &step.spec else { continue };
        if gate.confidence.is_none() {
            continue;
        }
        for requirement in &gate.require {
            for (span, why) in requirement.parsed.interval_refusals() {
                problems.push(
                    Problem::new(&requirement.source, within(requirement, span), format!(
                        "gate `{}` judges with `confidence`, but \"{}\" cannot be judged over intervals: {why}",
                        step.name, requirement.text
                    ))
                    .label("not judged over intervals")
                    .help("compare the measurements themselves (`cell.a.metrics.x < 2 * cell.b.metrics.x`), or drop `confidence` to judge the point values"),
                );
            }
        }
    }
}

/// `span` (in the expression's text) in the recipe, where the expression's
/// own span covers exactly its text; else the whole expression.
fn within(expression: &Expression, (offset, len): anvil_expr::Span) -> SourceSpan {
    if expression.span.len() == expression.text.len() {
        SourceSpan::from((expression.span.offset() + offset, len.max(1)))
    } else {
        expression.span
    }
}

#[cfg(test)]
mod tests {
    use crate::recipe::testing::load_text;

    const CELLS: &str = "server \"s\" { model \"m\"; }\n\
        cell \"a\" server=\"s\" { requests 200; }\ncell \"b\" server=\"s\" { requests 200; }\n";

    /// A gate of eight sampled requirements (one interval each) and a
    /// decision reading it `how`, asking `family-error level`.
    fn eight(how: &str, level: &str) -> String {
        let requires: String =
            (0..8).map(|i| format!("require \"cell.a.metrics.ttft_p{}_ms < 500\"; ", 50 + i)).collect();
        format!(
            "{CELLS}gate \"g\" {{ confidence 0.95; {requires}}}\n\
             decision \"d\" {{ rule label=\"l\" when=\"{how}\"; family-error {level}; }}\n"
        )
    }

    fn messages(text: &str) -> Vec<String> {
        match load_text(text) {
            Ok(_) => Vec::new(),
            Err(error) => error.problems.iter().map(|p| p.message.clone()).collect(),
        }
    }

    /// A rejection is the union of every requirement's intervals: eight
    /// cost 8 × 5%, and a decision that asks 5% of it does not load,
    /// saying what it really is; read as `passed` it is the worst one's 5%.
    #[test]
    fn a_decision_on_a_rejection_of_eight_requirements_states_their_union() {
        let refused = messages(&eight("gate.g.status == 'rejected'", "0.05"));
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].contains("can be wrong together up to 0.4 (label \"l\" 0.4)"), "{refused:?}");
        assert!(messages(&eight("gate.g.status == 'rejected'", "0.4")).is_empty());
        assert!(messages(&eight("gate.g.passed", "0.05")).is_empty());
        assert!(messages(&eight("gate.g.status == 'passed'", "0.05")).is_empty());
    }

    /// A requirement reading two cells' sampled values through a wildcard
    /// counts one interval per cell; exact counts cost nothing.
    #[test]
    fn a_wildcard_counts_each_cell_it_matches() {
        let text = format!(
            "{CELLS}gate \"g\" {{ confidence 0.95; require \"max(cell.*.metrics.ttft_p90_ms) < 500\"; require \"cell.a.completed == 200\"; }}\n\
             decision \"d\" {{ rule label=\"l\" when=\"gate.g.passed\"; family-error 0.05; }}\n"
        );
        let refused = messages(&text);
        assert!(refused.iter().any(|m| m.contains("up to 0.1")), "{refused:?}");
    }

    /// `%` cannot be judged over intervals: refused at load for a gate
    /// with `confidence`, pointing at the remainder; without it, allowed.
    #[test]
    fn a_remainder_in_a_gate_with_confidence_is_refused_where_it_is_written() {
        let text =
            format!("{CELLS}gate \"g\" {{ confidence 0.95; require \"cell.a.completed % 2 == 0\"; }}\n");
        let Err(error) = load_text(&text) else { panic!("a remainder loaded") };
        let problem = &error.problems[0];
        assert!(problem.message.contains("cannot be judged over intervals"), "{}", problem.message);
        let at = problem.span.offset();
        assert_eq!(&text[at..at + problem.span.len()], "cell.a.completed % 2");
        let plain = format!("{CELLS}gate \"g\" {{ require \"cell.a.completed % 2 == 0\"; }}\n");
        assert!(load_text(&plain).is_ok());
    }
}
