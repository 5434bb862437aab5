//! Two arms' answers paired on the same prompts and compared with
//! anvil-quality's tests: lossless outputs (identical share, first
//! divergences, Fisher's attribution against the control's rerun) and
//! accuracy on the same items (McNemar). The figures are what a gate's
//! requirement stores (`results::Comparison`).
//!
//! Pairing: an answer's key is its item's id (a scored dataset) or else
//! its prompt's digest, with how many times that key came before it in
//! its run, so a prompt sent twice in a run pairs first with first. Each
//! arm's first run (repeat 0) is compared; the control's second run
//! (repeat 1) is its rerun.

use std::collections::HashMap;

use anvil_quality::{Output, PairedVerdict, Position};

use crate::results::{
    AnswerLine, Disagreement, Diverged, Identical, Lossless, NotWorse, PairedAccuracy, SHOWN,
};

/// The answers of one cell, by name.
pub struct Arm<'a> {
    pub name: &'a str,
    pub lines: &'a [AnswerLine],
}

/// One run's answers by their pairing key, in request order.
fn run_of(lines: &[AnswerLine], repeat: u32) -> Vec<((String, u64), &AnswerLine)> {
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut keyed = Vec::new();
    for line in lines.iter().filter(|l| l.answer.repeat == repeat) {
        let prompt = line.answer.item.clone().unwrap_or_else(|| line.answer.prompt_blake3.clone());
        let count = seen.entry(prompt.clone()).or_insert(0);
        keyed.push(((prompt, *count), line));
        *count += 1;
    }
    keyed
}

/// The answers of `a` and `b` to the same prompts, in `a`'s order.
fn paired<'l>(
    a: &[((String, u64), &'l AnswerLine)],
    b: &[((String, u64), &'l AnswerLine)],
) -> Vec<(String, &'l AnswerLine, &'l AnswerLine)> {
    let by_key: HashMap<&(String, u64), &AnswerLine> = b.iter().map(|(k, l)| (k, *l)).collect();
    a.iter().filter_map(|(key, line)| Some((key.0.clone(), *line, *by_key.get(key)?))).collect()
}

fn output(line: &AnswerLine) -> Output {
    Output { text: line.answer.text.clone(), token_ids: line.answer.token_ids.clone() }
}

/// The identical share of `pairs` (arm, control) with its divergences.
fn identity(
    pairs: &[(String, &AnswerLine, &AnswerLine)],
    level: f64,
) -> (anvil_quality::Identity, Identical) {
    let outputs: Vec<(&str, Output, Output)> =
        pairs.iter().map(|(id, a, b)| (id.as_str(), output(a), output(b))).collect();
    let refs: Vec<(&str, &Output, &Output)> = outputs.iter().map(|(id, a, b)| (*id, a, b)).collect();
    let identity = anvil_quality::identical_share(&refs, level);
    let figures = Identical {
        identical: identity.identical,
        n: identity.n,
        share: identity.share.is_finite().then_some(identity.share),
        share_ci95_low: identity.low,
        share_ci95_high: identity.high,
    };
    (identity, figures)
}

fn shown(identity: &anvil_quality::Identity) -> Vec<Diverged> {
    identity
        .diverged
        .iter()
        .take(SHOWN)
        .map(|d| {
            let (unit, at) = match d.at {
                Position::Token(at) => ("token", at),
                Position::Char(at) => ("char", at),
            };
            Diverged {
                prompt: d.id.clone(),
                unit: unit.to_string(),
                at: at as u64,
                excerpt_arm: d.excerpt_a.clone(),
                excerpt_control: d.excerpt_b.clone(),
            }
        })
        .collect()
}

/// `lossless`: the arm's first run against the control's, attributed
/// against the control's first run against its second; `None` when the
/// arm and the control answered no prompt in common.
pub fn lossless(arm: &Arm<'_>, control: &Arm<'_>, level: f64) -> Option<Lossless> {
    let control_first = run_of(control.lines, 0);
    let pairs = paired(&run_of(arm.lines, 0), &control_first);
    if pairs.is_empty() {
        return None;
    }
    let (arm_identity, arm_vs_control) = identity(&pairs, level);
    let rerun_pairs = paired(&control_first, &run_of(control.lines, 1));
    let (rerun_identity, control_vs_rerun) = identity(&rerun_pairs, level);
    let attribution = anvil_quality::attribute(&arm_identity, &rerun_identity);
    Some(Lossless {
        arm: arm.name.to_string(),
        control: control.name.to_string(),
        level,
        arm_vs_control,
        control_vs_rerun: (!rerun_pairs.is_empty()).then_some(control_vs_rerun),
        cause: attribution.cause.as_str().to_string(),
        p_value: attribution.p_value,
        diverged: shown(&arm_identity),
        rerun_diverged: shown(&rerun_identity),
    })
}

/// Each scored item's first answer, keyed by the item.
fn first_per_item(lines: &[AnswerLine]) -> Vec<((String, u64), &AnswerLine)> {
    let mut seen = std::collections::HashSet::new();
    let scored = lines.iter().filter(|l| l.correct.is_some());
    scored
        .filter_map(|l| {
            let item = l.answer.item.clone()?;
            seen.insert(item.clone()).then_some(((item, 0), l))
        })
        .collect()
}

fn accuracy_figures(a: &anvil_quality::Accuracy) -> PairedAccuracy {
    PairedAccuracy {
        correct: a.correct,
        n: a.n,
        share: a.share.is_finite().then_some(a.share),
        share_ci95_low: a.low,
        share_ci95_high: a.high,
    }
}

/// `accuracy-not-worse`: the arm (A) and the control (B) on the scored
/// items both answered, each item's first answer in each.
pub fn not_worse(arm: &Arm<'_>, control: &Arm<'_>, level: f64, margin: f64) -> NotWorse {
    let pairs = paired(&first_per_item(arm.lines), &first_per_item(control.lines));
    let outcomes: Vec<(bool, bool)> =
        pairs.iter().map(|(_, x, y)| (x.correct == Some(true), y.correct == Some(true))).collect();
    let test = anvil_quality::paired(&outcomes, level);
    let mcnemar = match test.verdict {
        PairedVerdict::Differs { better: anvil_quality::Arm::A } => "arm-better",
        PairedVerdict::Differs { better: anvil_quality::Arm::B } => "control-better",
        PairedVerdict::NoDifference => "no-difference",
        PairedVerdict::TooFewDiscordant => "too-few-discordant",
    };
    let disagreements = pairs
        .iter()
        .filter(|(_, x, y)| x.correct != y.correct)
        .take(SHOWN)
        .map(|(item, x, y)| Disagreement {
            item: item.clone(),
            arm_correct: x.correct == Some(true),
            arm_extracted: x.extracted.clone(),
            control_extracted: y.extracted.clone(),
        })
        .collect();
    NotWorse {
        arm: arm.name.to_string(),
        control: control.name.to_string(),
        level,
        margin,
        n: test.n,
        arm_accuracy: accuracy_figures(&test.a),
        control_accuracy: accuracy_figures(&test.b),
        only_arm: test.only_a,
        only_control: test.only_b,
        p_value: test.p_value,
        mcnemar: mcnemar.to_string(),
        difference_low: test.difference.0,
        difference_high: test.difference.1,
        disagreements,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anvil_loadgen::Answer;

    fn line(index: u64, repeat: u32, item: Option<&str>, text: &str, correct: Option<bool>) -> AnswerLine {
        AnswerLine {
            answer: Answer {
                request_index: index,
                repeat,
                item: item.map(str::to_string),
                prompt_blake3: format!("blake3:{}", item.unwrap_or("same-prompt")),
                text: text.into(),
                token_ids: None,
                text_blake3: String::new(),
                complete: true,
                truncated: false,
                finish_reason: None,
                simulated: false,
            },
            correct,
            extracted: None,
        }
    }

    #[test]
    fn pairs_by_item_whatever_the_order_and_the_rerun_by_its_own_run() {
        let control = vec![
            line(0, 0, Some("a"), "4", Some(true)),
            line(1, 0, Some("b"), "9", Some(true)),
            line(2, 1, Some("b"), "9", Some(true)),
            line(3, 1, Some("a"), "5", Some(false)),
        ];
        // The arm sent the items the other way round; one answer was dropped.
        let arm = vec![line(0, 0, Some("b"), "9 so", Some(true)), line(1, 0, Some("c"), "1", Some(true))];
        let (arm, control) = (Arm { name: "arm", lines: &arm }, Arm { name: "ctl", lines: &control });
        let found = lossless(&arm, &control, 0.95).unwrap();
        assert_eq!((found.arm_vs_control.identical, found.arm_vs_control.n), (0, 1), "only b in common");
        assert_eq!(found.diverged[0].prompt, "b");
        assert_eq!((found.diverged[0].unit.as_str(), found.diverged[0].at), ("char", 1));
        let rerun = found.control_vs_rerun.unwrap();
        assert_eq!((rerun.identical, rerun.n), (1, 2), "a differs in the rerun");
        let not_worse = not_worse(&arm, &control, 0.95, 0.05);
        assert_eq!((not_worse.n, not_worse.only_arm, not_worse.only_control), (1, 0, 0));
    }

    #[test]
    fn a_prompt_sent_twice_pairs_first_with_first() {
        // Synthetic prompts: no item, paired by the prompt's digest and its count.
        let control = vec![line(0, 0, None, "x", None), line(1, 0, None, "y", None)];
        let arm = vec![line(0, 0, None, "x", None), line(1, 0, None, "z", None)];
        let found =
            lossless(&Arm { name: "a", lines: &arm }, &Arm { name: "c", lines: &control }, 0.95).unwrap();
        assert_eq!((found.arm_vs_control.identical, found.arm_vs_control.n), (1, 2));
        assert!(found.control_vs_rerun.is_none(), "no second run of the control");
        assert!(
            lossless(&Arm { name: "a", lines: &[] }, &Arm { name: "c", lines: &control }, 0.95).is_none()
        );
    }
}
