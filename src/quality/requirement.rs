//! A gate's arm comparison judged into a requirement: its status, how often
//! that can be wrong, and a detail that says what was compared and found.
//!
//! - `lossless`: `rejected` when the arm's differing prompts exceed what
//!   the engine's own nondeterminism (the control against its rerun)
//!   explains, by Fisher's exact test: wrong at most `1 − level` when the
//!   arm is in truth no worse than the rerun. Else `passed` (identical,
//!   within the engine's nondeterminism, or too few differing to tell),
//!   which states no rate: not shown lossy is not shown lossless.
//!   `undecided` with no prompt in common or no rerun of the control.
//! - `accuracy-not-worse`: `passed` when the exact interval of the arm's
//!   accuracy minus the control's lies above `−margin` (wrong at most
//!   `1 − level`: the interval missed); else `rejected` when McNemar's
//!   test finds the control better (wrong at most `1 − level` when the
//!   arms are equally accurate); else `undecided`.

use serde_json::Value;

use super::arms::{self, Arm};
use super::comparison::{ArmComparison, ArmTest};
use super::inputs::ANSWERS_INPUT;
use crate::recipe::decls::gate::SUPPORTED_CONFIDENCE;
use crate::results::{AnswerLine, Comparison, EvalStatus, Lossless, NotWorse, Requirement};

/// `check` judged over the answers in `inputs`; `Err` names the cells
/// whose answers are missing.
pub fn judge(
    check: &ArmComparison,
    inputs: &Value,
    confidence: Option<f64>,
) -> Result<Requirement, Vec<String>> {
    let level = confidence.unwrap_or(SUPPORTED_CONFIDENCE);
    let lines = |name: &str| -> Option<Vec<AnswerLine>> {
        serde_json::from_value(inputs.get(ANSWERS_INPUT)?.get(name)?.clone()).ok()
    };
    let (arm, control) = match (lines(&check.arm), lines(&check.control)) {
        (Some(a), Some(c)) => (a, c),
        (a, c) => {
            let missing = [(a.is_none(), &check.arm), (c.is_none(), &check.control)];
            return Err(missing
                .iter()
                .filter(|(m, _)| *m)
                .map(|(_, n)| format!("cell.{n}.answers"))
                .collect());
        }
    };
    let arm = Arm { name: &check.arm, lines: &arm };
    let control = Arm { name: &check.control, lines: &control };
    let (status, detail, compared) = match check.test {
        ArmTest::Lossless => match arms::lossless(&arm, &control, level) {
            Some(found) => {
                let (status, detail) = lossless_verdict(&found);
                (status, detail, Some(Comparison::Lossless(found)))
            }
            None => (EvalStatus::Undecided, format!("{}: no prompt answered by both", check.text), None),
        },
        ArmTest::AccuracyNotWorse { margin } => {
            let found = arms::not_worse(&arm, &control, level, margin);
            let (status, detail) = not_worse_verdict(&found);
            (status, detail, Some(Comparison::AccuracyNotWorse(found)))
        }
    };
    let detail = format!("{}: {detail}", check.text);
    let error_at_most = compared.as_ref().map(|c| c.error_if(status == EvalStatus::Passed));
    Ok(Requirement { error_at_most, compared, ..Requirement::plain(&check.text, status, &detail) })
}

fn share(identical: u64, n: u64) -> String {
    format!("{identical}/{n} identical")
}

fn lossless_verdict(found: &Lossless) -> (EvalStatus, String) {
    let a = &found.arm_vs_control;
    let mut detail =
        format!("{} [{:.3}, {:.3}]", share(a.identical, a.n), a.share_ci95_low, a.share_ci95_high);
    if let Some(first) = found.diverged.first() {
        detail.push_str(&format!(
            "; first divergence: {} at {} {}: {:?} vs {:?}",
            first.prompt, first.unit, first.at, first.excerpt_arm, first.excerpt_control
        ));
    }
    let Some(rerun) = &found.control_vs_rerun else {
        let why = "the control has no rerun to measure the engine's own nondeterminism (`repeat 2`)";
        return (EvalStatus::Undecided, format!("{detail}; {why}"));
    };
    detail.push_str(&format!("; the control against its rerun: {}", share(rerun.identical, rerun.n)));
    let status = match found.cause.as_str() {
        "exceeds-nondeterminism" => EvalStatus::Rejected,
        _ => EvalStatus::Passed,
    };
    let cause = match found.cause.as_str() {
        "identical" => "identical on every prompt".to_string(),
        "exceeds-nondeterminism" => {
            format!("diverges beyond the engine's own nondeterminism (Fisher p = {:.3})", found.p_value)
        }
        "within-nondeterminism" => {
            format!("within the engine's own nondeterminism (Fisher p = {:.3}); no rate", found.p_value)
        }
        _ => "too few differing prompts to tell from the engine's own nondeterminism; no rate".to_string(),
    };
    (status, format!("{detail}; {cause}"))
}

pub(super) fn not_worse_verdict(found: &NotWorse) -> (EvalStatus, String) {
    let accuracy = |a: &crate::results::PairedAccuracy| format!("{}/{}", a.correct, a.n);
    let mut detail = format!(
        "arm {} against control {} on {} items; difference [{:.3}, {:.3}], margin {}; McNemar {} (p = {:.3}, {} vs {} discordant)",
        accuracy(&found.arm_accuracy),
        accuracy(&found.control_accuracy),
        found.n,
        found.difference_low,
        found.difference_high,
        found.margin,
        found.mcnemar,
        found.p_value,
        found.only_arm,
        found.only_control,
    );
    let status = if found.n == 0 {
        detail.push_str("; no item answered by both");
        EvalStatus::Undecided
    } else if found.difference_low >= -found.margin {
        EvalStatus::Passed
    } else if found.mcnemar == "control-better" {
        EvalStatus::Rejected
    } else {
        detail.push_str("; not shown worse, nor within the margin");
        EvalStatus::Undecided
    };
    (status, detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::PairedAccuracy;

    fn accuracy(correct: u64, n: u64) -> PairedAccuracy {
        PairedAccuracy { correct, n, share: None, share_ci95_low: 0.0, share_ci95_high: 1.0 }
    }

    fn not_worse(low: f64, mcnemar: &str) -> NotWorse {
        NotWorse {
            arm: "a".into(),
            control: "c".into(),
            level: 0.95,
            margin: 0.05,
            n: 200,
            arm_accuracy: accuracy(120, 200),
            control_accuracy: accuracy(124, 200),
            only_arm: 10,
            only_control: 14,
            p_value: 0.5,
            mcnemar: mcnemar.into(),
            difference_low: low,
            difference_high: low + 0.1,
            disagreements: Vec::new(),
        }
    }

    #[test]
    fn passed_within_the_margin_rejected_when_shown_worse_else_undecided() {
        assert_eq!(not_worse_verdict(&not_worse(-0.04, "no-difference")).0, EvalStatus::Passed);
        assert_eq!(not_worse_verdict(&not_worse(-0.04, "control-better")).0, EvalStatus::Passed);
        assert_eq!(not_worse_verdict(&not_worse(-0.2, "control-better")).0, EvalStatus::Rejected);
        assert_eq!(not_worse_verdict(&not_worse(-0.2, "no-difference")).0, EvalStatus::Undecided);
        let none = NotWorse { n: 0, ..not_worse(-1.0, "too-few-discordant") };
        assert_eq!(not_worse_verdict(&none).0, EvalStatus::Undecided);
    }
}
