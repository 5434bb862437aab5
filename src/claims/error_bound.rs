//! How often a decision's claim can be wrong, from the shape of its
//! expression and the stated error of each verdict it reads.
//!
//! A claim (a rule's label, `promote-when`) is wrong when it holds while,
//! on the true values, it would not. Each verdict read positively (a gate
//! `passed`, its `status == "passed"` or `"rejected"`, a screen's `winner`)
//! errs at most as its procedure states: a gate's `passed` 5% per interval
//! its worst requirement reads, its `rejected` 5% per distinct interval
//! all its requirements read (`results/gate.rs`), a screen's winner
//! `1 − confidence`; times `budget + 1` for one that may measure more.
//! Then:
//!
//! - `a && b && …` is the intersection–union test (Berger, *Technometrics*
//!   24, 1982): it can hold falsely only if some operand that is false in
//!   truth holds, so it errs at most as often as its worst operand, with no
//!   adjustment whatever the dependence between them;
//! - `a || b || …` errs at most the sum of its operands' errors (Bonferroni);
//! - `!v` of a verdict is true whenever the verdict is undecided: no rate
//!   can be stated (the chance of an undecided verdict is the test's power,
//!   not an error it controls);
//! - a comparison that reads a sampled measurement at its point value (a
//!   latency, a throughput) states no rate either; counts, checks, tasks
//!   and settings are exact.
//!
//! The claims of one decision are a family: the chance that any of them is
//! wrong is at most the sum of their bounds (Bonferroni), which also bounds
//! the expected number of false labels and so their false-discovery rate.

use anvil_expr::{Atom, Logic, PathSegment, Reference};

pub use super::field_class::is_sampled;
use super::field_class::{FieldClass, classify};

/// How often a claim or a verdict can be wrong.
#[derive(Debug, Clone, PartialEq)]
pub enum ErrorBound {
    /// Right whenever the values it reads are what they are.
    Exact,
    /// Wrong at most this often.
    AtMost(f64),
    /// No rate can be stated, and why.
    Uncontrolled(String),
}

impl ErrorBound {
    /// The bound as a number: 0 when exact, `None` when none can be stated.
    pub fn error(&self) -> Option<f64> {
        match self {
            ErrorBound::Exact => Some(0.0),
            ErrorBound::AtMost(e) => Some(*e),
            ErrorBound::Uncontrolled(_) => None,
        }
    }

    /// `Exact` at 0, else the error capped at 1, to six decimals.
    pub fn from_error(error: f64) -> ErrorBound {
        if error <= 0.0 { ErrorBound::Exact } else { ErrorBound::AtMost(round(error.min(1.0))) }
    }
}

/// Kept to six decimals: sums of 0.05s must read 0.15, not 0.15000000000000002.
pub fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// A claim's bound and the verdicts (`gate.slo`, `screen.tp`) it reads.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimBound {
    pub bound: ErrorBound,
    pub verdicts: Vec<String>,
}

/// How a claim reads a verdict: a gate's `passed` (or `status ==
/// "passed"`), its `status == "rejected"`, a screen's winner. A gate's two
/// verdicts err differently: `passed` as its worst requirement,
/// `rejected` as the union of every requirement's intervals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerdictRead {
    Passed,
    Rejected,
    Winner,
    /// A search's answer read as a lower bound (`search.cap.max_rate >= 8`):
    /// if the SLO holds at the stated value and worsens with load, it holds
    /// at every value below, so the claim errs only when the bound does.
    Capacity,
}

/// The stated error of the verdict of step `kind.name` (a gate or a
/// screen) read this way: `Some(error)` when it judged at a confidence,
/// `None` when it judged point values.
pub type VerdictErrors<'a> = dyn Fn(&str, &str, VerdictRead) -> Option<f64> + 'a;

/// The bound of a claim of this shape.
pub fn claim_bound(logic: &Logic, verdicts: &VerdictErrors<'_>) -> ClaimBound {
    let mut read = Vec::new();
    let bound = bound_of(logic, verdicts, &mut read);
    read.sort();
    read.dedup();
    ClaimBound { bound, verdicts: read }
}

fn bound_of(logic: &Logic, verdicts: &VerdictErrors<'_>, read: &mut Vec<String>) -> ErrorBound {
    match logic {
        Logic::All(operands) => {
            let mut worst = 0.0f64;
            for operand in operands {
                match bound_of(operand, verdicts, read) {
                    ErrorBound::Uncontrolled(why) => return ErrorBound::Uncontrolled(why),
                    bound => worst = worst.max(bound.error().unwrap_or(0.0)),
                }
            }
            ErrorBound::from_error(worst)
        }
        Logic::Any(operands) => {
            let mut sum = 0.0;
            for operand in operands {
                match bound_of(operand, verdicts, read) {
                    ErrorBound::Uncontrolled(why) => return ErrorBound::Uncontrolled(why),
                    bound => sum += bound.error().unwrap_or(0.0),
                }
            }
            ErrorBound::from_error(sum)
        }
        Logic::Not(inner) => match bound_of(inner, verdicts, read) {
            ErrorBound::Exact => ErrorBound::Exact,
            ErrorBound::Uncontrolled(why) => ErrorBound::Uncontrolled(why),
            ErrorBound::AtMost(_) => ErrorBound::Uncontrolled(
                "`!` of a verdict also holds when it is undecided, which no confidence bounds".to_string(),
            ),
        },
        Logic::Atom(atom) => atom_bound(atom, verdicts, read),
    }
}

/// The field a reference reads, when it is one key (`passed`, `winner`).
fn field(reference: &Reference) -> Option<&str> {
    match reference.field.as_slice() {
        [PathSegment::Key(key)] => Some(key),
        _ => None,
    }
}

fn atom_bound(atom: &Atom, verdicts: &VerdictErrors<'_>, read: &mut Vec<String>) -> ErrorBound {
    // A verdict read the way its procedure decides it.
    let positive = match atom {
        Atom::Holds(r) if r.kind == "gate" && field(r) == Some("passed") => Some((r, VerdictRead::Passed)),
        Atom::Equals(r, word) if r.kind == "gate" && field(r) == Some("status") && word == "passed" => {
            Some((r, VerdictRead::Passed))
        }
        Atom::Equals(r, word) if r.kind == "gate" && field(r) == Some("status") && word == "rejected" => {
            Some((r, VerdictRead::Rejected))
        }
        Atom::Equals(r, _) if r.kind == "screen" && matches!(field(r), Some("winner" | "winner_server")) => {
            Some((r, VerdictRead::Winner))
        }
        Atom::AtLeast(r, _)
            if r.kind == "search"
                && matches!(field(r), Some("max_rate" | "max_concurrency" | "max_value")) =>
        {
            Some((r, VerdictRead::Capacity))
        }
        _ => None,
    };
    if let Some((r, how)) = positive {
        read.push(format!("{}.{}", r.kind, r.name));
        return match verdicts(&r.kind, &r.name, how) {
            Some(error) => ErrorBound::from_error(error),
            None => ErrorBound::Uncontrolled(format!(
                "{}.{} judges point values (no `confidence`), so its verdict has no stated error",
                r.kind, r.name
            )),
        };
    }
    let references: Vec<&Reference> = match atom {
        Atom::Holds(r) | Atom::Equals(r, _) | Atom::AtLeast(r, _) => vec![r],
        Atom::Other(read) => read.iter().collect(),
    };
    match references.into_iter().find(|r| !is_exact(r)) {
        None => ErrorBound::Exact,
        Some(r) if r.kind == "gate" || r.kind == "screen" => ErrorBound::Uncontrolled(format!(
            "{r} is read other than as the verdict its confidence decides (`passed`, `status == \"passed\"` or `\"rejected\"`, a screen's `winner`)"
        )),
        Some(r) => ErrorBound::Uncontrolled(format!("{r} is a sampled measurement read at its point value")),
    }
}

/// A value a claim may read as it is: a check's or a task's outcome, a
/// cell's count or setting (`field_class`).
fn is_exact(reference: &Reference) -> bool {
    classify(reference) == FieldClass::Exact
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gates `a` and `b` at 95% reading one interval each, `more` measured
    /// more (3 looks), `point` without a confidence, `eight` with eight
    /// requirements of one interval each (rejected: their union).
    fn verdicts(kind: &str, name: &str, read: VerdictRead) -> Option<f64> {
        match (kind, name, read) {
            ("gate", "point", _) => None,
            ("search", "cap", VerdictRead::Capacity) => Some(0.1),
            ("search", _, _) => None,
            ("gate", "more", _) => Some(0.15),
            ("gate", "eight", VerdictRead::Rejected) => Some(0.4),
            _ => Some(0.05),
        }
    }

    fn bound(src: &str) -> ErrorBound {
        claim_bound(&anvil_expr::parse(src).unwrap().logic(), &verdicts).bound
    }

    #[test]
    fn a_conjunction_errs_as_its_worst_operand() {
        assert_eq!(bound("gate.a.passed && gate.b.passed"), ErrorBound::AtMost(0.05));
        assert_eq!(bound("gate.a.passed && gate.more.passed && check.json.passed"), ErrorBound::AtMost(0.15));
        assert_eq!(bound("gate.a.status == \"rejected\" && cell.a.completed > 10"), ErrorBound::AtMost(0.05));
    }

    /// A search's answer read as a lower bound errs as the search states;
    /// read any other way (an upper bound, a point search) it states nothing.
    #[test]
    fn a_capacity_read_as_a_lower_bound_errs_as_its_search_states() {
        assert_eq!(bound("search.cap.max_rate >= 8"), ErrorBound::AtMost(0.1));
        assert_eq!(bound("4 < search.cap.max_concurrency && gate.a.passed"), ErrorBound::AtMost(0.1));
        assert!(matches!(bound("search.cap.max_rate <= 8"), ErrorBound::Uncontrolled(_)));
        assert!(matches!(bound("search.point.max_rate >= 8"), ErrorBound::Uncontrolled(_)));
    }

    #[test]
    fn a_disjunction_errs_as_its_operands_together() {
        assert_eq!(bound("gate.a.passed || gate.b.passed"), ErrorBound::AtMost(0.1));
        assert_eq!(bound("gate.a.passed || gate.b.passed && gate.more.passed"), ErrorBound::AtMost(0.2));
        assert_eq!(bound("screen.tp.winner == \"tp4\" || check.x.passed"), ErrorBound::AtMost(0.05));
    }

    #[test]
    fn a_gates_rejection_errs_as_the_union_of_its_requirements() {
        assert_eq!(bound("gate.eight.passed"), ErrorBound::AtMost(0.05));
        assert_eq!(bound("gate.eight.status == \"passed\""), ErrorBound::AtMost(0.05));
        assert_eq!(bound("gate.eight.status == \"rejected\""), ErrorBound::AtMost(0.4));
        assert_eq!(bound("gate.eight.status == \"rejected\" && gate.a.passed"), ErrorBound::AtMost(0.4));
    }

    #[test]
    fn what_no_confidence_decides_states_no_rate() {
        for src in [
            "!gate.a.passed",
            "gate.a.passed == false",
            "gate.a.status == \"undecided\"",
            "gate.point.passed",
            "gate.a.passed && cell.a.ttft_p99_ms < 500",
        ] {
            assert!(matches!(bound(src), ErrorBound::Uncontrolled(_)), "{src}");
        }
        assert_eq!(bound("!check.x.passed && cell.a.failed == 0"), ErrorBound::Exact);
    }

    #[test]
    fn a_claim_names_the_verdicts_it_reads_once() {
        let logic = anvil_expr::parse("gate.b.passed && gate.a.passed || gate.b.status == \"passed\"")
            .unwrap()
            .logic();
        assert_eq!(claim_bound(&logic, &verdicts).verdicts, ["gate.a", "gate.b"]);
    }
}
