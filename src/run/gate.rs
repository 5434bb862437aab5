//! `gate` steps: every `require` expression must hold. With `confidence`,
//! each is judged over the intervals of what it reads
//! (`interval_verdict`), and the result states how often its `passed` and
//! its `rejected` can be wrong (`GateResult::with_confidence`).

use anvil_expr::{Evaluation, JsonResolver};
use serde_json::Value;

use super::interval_verdict::{self, IntervalVerdict};
use super::outcome::{Failure, Produced};
use crate::document::GateExec;
use crate::results::{self, EvalStatus, GateResult, Requirement};

pub fn evaluate_gate(gate: &GateExec, inputs: &Value) -> Result<Produced, Failure> {
    let resolver = JsonResolver::new(inputs);
    let mut requirements = Vec::new();
    let mut missing = Vec::new();
    for requirement in &gate.require {
        let text = &requirement.text;
        if gate.confidence.is_some() {
            let judged = interval_verdict::judge_inputs(requirement, inputs);
            let (status, detail) = match judged.verdict {
                IntervalVerdict::Passed(detail) => (EvalStatus::Passed, detail),
                IntervalVerdict::Rejected(detail) => (EvalStatus::Rejected, detail),
                IntervalVerdict::Undecided(detail) => (EvalStatus::Undecided, detail),
                IntervalVerdict::Plain(evaluation) => {
                    if let Evaluation::Error { detail } = &evaluation {
                        return Err(Failure::new(format!("require \"{text}\": {detail}")));
                    }
                    if let Evaluation::Missing { missing: m, .. } = &evaluation {
                        missing.extend(m.iter().cloned());
                    }
                    (eval_status(&evaluation), evaluation.detail().to_string())
                }
            };
            requirements
                .push(Requirement { intervals: judged.read, ..Requirement::plain(text, status, &detail) });
            continue;
        }
        let evaluation = requirement.parsed.eval(&resolver);
        match &evaluation {
            Evaluation::Passed { .. } | Evaluation::Rejected { .. } => {}
            Evaluation::Missing { missing: m, .. } => missing.extend(m.iter().cloned()),
            Evaluation::Error { detail } => {
                return Err(Failure::new(format!("require \"{text}\": {detail}")));
            }
        }
        requirements.push(Requirement::plain(text, eval_status(&evaluation), evaluation.detail()));
    }
    for check in &gate.arms {
        match crate::quality::requirement::judge(check, inputs, gate.confidence) {
            Ok(requirement) => requirements.push(requirement),
            Err(absent) => missing.extend(absent),
        }
    }
    if !missing.is_empty() {
        // An absent input is not a verdict: never stored, reported as missing.
        missing.sort();
        missing.dedup();
        return Err(Failure::new(format!("missing inputs: {}", missing.join(", ")))
            .with_detail(requirements.iter().map(|r| r.detail.as_str()).collect::<Vec<_>>().join("\n")));
    }
    let result = GateResult::new(requirements).with_confidence(gate.confidence);
    Ok(Produced {
        summary: format!("{}: {}", result.status, result.detail),
        rejected: !result.passed,
        result: results::to_value(&result),
        ..Produced::default()
    })
}

/// An expression's outcome, in the stored vocabulary.
pub(super) fn eval_status(evaluation: &Evaluation) -> EvalStatus {
    match evaluation {
        Evaluation::Passed { .. } => EvalStatus::Passed,
        Evaluation::Rejected { .. } => EvalStatus::Rejected,
        Evaluation::Missing { .. } => EvalStatus::Missing,
        Evaluation::Error { .. } => EvalStatus::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_the_expression_language_words() {
        let cases = [
            Evaluation::Passed { detail: "p".into() },
            Evaluation::Rejected { detail: "r".into() },
            Evaluation::Missing { missing: vec!["cell.x".into()], detail: "m".into() },
            Evaluation::Error { detail: "e".into() },
        ];
        for evaluation in &cases {
            assert_eq!(eval_status(evaluation).as_str(), evaluation.status());
        }
    }
}
