//! A decision's claims as a family, declared when the recipe loads: its
//! promotion and each labelled rule, each bounded by `error_bound`, and the
//! chance that any of them is wrong bounded by their sum (Bonferroni).
//! `family-error α` on the decision makes that a requirement: a recipe
//! whose claims could err more together does not load, and the error says
//! which claim costs what.

use super::decl::Decl;
use super::decls::{DecisionDecl, Spec};
use super::gate_bounds;
use super::problem::{Problem, Problems};
use crate::claims::error_bound::{ErrorBound, VerdictErrors, VerdictRead};
use crate::claims::family::{Claim, claim_words, family_bound};

/// The stated error of each gate's and screen's verdict as the recipe
/// declares it, per look: a gate's `passed` and `rejected` from the sampled
/// numbers its requirements read (`gate_bounds`), a screen's winner
/// `1 − confidence`; times `extra-repeats + 1` (every look may err,
/// `src/run/measure_more.rs`). `None` for one judged at point values.
pub fn declared_verdict_errors(steps: &[Decl]) -> impl Fn(&str, &str, VerdictRead) -> Option<f64> + '_ {
    move |kind, name, read| {
        let step = steps.iter().find(|s| s.kind.as_str() == kind && s.name == name)?;
        let (per_look, extra) = match &step.spec {
            Spec::Gate(gate) => {
                let bounds = gate_bounds::declared(gate, steps)?;
                let per_look = if read == VerdictRead::Rejected { bounds.rejected } else { bounds.passed };
                (per_look, gate.extra_repeats)
            }
            Spec::Screen(screen) => (1.0 - screen.confidence?, screen.extra_repeats),
            // Its stated error counts its looks already.
            Spec::Search(search) if read == VerdictRead::Capacity => {
                return super::search_error::stated_error(search).rate;
            }
            _ => return None,
        };
        Some((extra + 1) as f64 * per_look)
    }
}

/// Each decision with `family-error α` whose claims could err more than α
/// together is a problem at its `family-error`.
pub(super) fn check(steps: &[Decl], problems: &mut Problems) {
    let verdicts = declared_verdict_errors(steps);
    for step in steps {
        let Spec::Decision(decision) = &step.spec else { continue };
        let Some(family) = &decision.family_error else { continue };
        let claims = claims(decision, &verdicts);
        let each = claims
            .iter()
            .map(|c| match c.bound.bound.error() {
                Some(e) => format!("{} {}", claim_words(&c.name), fmt(e)),
                None => format!("{} (none)", claim_words(&c.name)),
            })
            .collect::<Vec<_>>()
            .join(", ");
        let problem =
            |message: String, label: &str| Problem::new(&family.at.0, family.at.1, message).label(label);
        match family_bound(&claims) {
            ErrorBound::Uncontrolled(why) => problems.push(
                problem(
                    format!("decision `{}` asks family-error {}, but no error rate can be stated for it: {why}", step.name, fmt(family.level)),
                    "cannot be met",
                )
                .help("read gates and screens that judge with `confidence 0.95`, through `passed`, `status == \"passed\"` or a screen's `winner`"),
            ),
            ErrorBound::AtMost(total) if total > family.level + 1e-12 => problems.push(
                problem(
                    format!(
                        "decision `{}` asks family-error {}, but its claims can be wrong together up to {} ({each})",
                        step.name,
                        fmt(family.level),
                        fmt(total)
                    ),
                    "not met",
                )
                .help("raise `family-error`, or let fewer claims read fewer verdicts: a gate's `passed` errs up to 0.05 per interval its worst requirement reads, its `status == \"rejected\"` 0.05 per interval all its requirements read, a screen's winner 0.05; one that measures more (N + 1) times that"),
            ),
            _ => {}
        }
    }
}

fn fmt(x: f64) -> String {
    anvil_expr::format_number(x)
}

/// The decision's claims, as `crate::claims::family::claims` bounds them.
pub fn claims(decision: &DecisionDecl, verdicts: &VerdictErrors<'_>) -> Vec<Claim> {
    crate::claims::family::claims(
        decision.promote_when.as_ref().map(|w| &w.parsed),
        decision.rules.iter().map(|r| (r.label.as_str(), &r.when.parsed)),
        verdicts,
    )
}
