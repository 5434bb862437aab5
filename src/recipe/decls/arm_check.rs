//! A gate's comparisons of two arms on the same prompts, judged from the
//! answers both cells kept (`src/quality/`):
//!
//! - `lossless arm="ngram" control="nospec"`: the arm's greedy outputs
//!   equal the control's, beyond the engine's own nondeterminism (the
//!   control's first run against its second, on the same prompts);
//! - `accuracy-not-worse arm="q4" control="bf16" margin=0.02`: on the same
//!   items, the arm's accuracy is at most `margin` below the control's
//!   (McNemar's paired test and its exact interval of the difference).
//!
//! What the cells must be (answers kept, a rerun, a scored dataset) is
//! checked across the recipe in `src/recipe/arm_checks.rs`.

use serde_json::Value;

use super::super::expression::Expression;
use super::super::problem::Problems;
use super::super::settings::Draft;

use crate::quality::comparison::ArmComparison;
pub use crate::quality::comparison::ArmTest;

/// One comparison as declared.
#[derive(Debug, Clone)]
pub struct ArmCheck {
    pub test: ArmTest,
    pub arm: String,
    pub control: String,
    /// As written: `lossless arm="ngram" control="nospec"`.
    pub text: String,
    /// Reads both cells' results: what makes the gate wait for them, and
    /// where a problem with them points.
    pub reads: Expression,
}

impl ArmCheck {
    /// The comparison as a gate's step document carries it.
    pub fn comparison(&self) -> ArmComparison {
        ArmComparison {
            test: self.test,
            arm: self.arm.clone(),
            control: self.control.clone(),
            text: self.text.clone(),
        }
    }
}

/// Every comparison of a gate's `key` records (`lossless` or
/// `accuracy-not-worse`), each checked on its own.
pub(super) fn build(draft: &Draft, key: &'static str, problems: &mut Problems) -> Vec<ArmCheck> {
    let Some(setting) = draft.settings.setting(key) else { return Vec::new() };
    let records = draft.settings.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
    let mut checks = Vec::new();
    for record in records {
        let mut fail = |message: String, help: &str| {
            problems.push(
                draft
                    .problem_at(key, format!("{}: {message}", draft.what()))
                    .label(key)
                    .help(help.to_string()),
            );
        };
        let text = format!("{key} {}", written(&record));
        let fields = record.as_object().cloned().unwrap_or_default();
        let allowed: &[&str] =
            if key == "lossless" { &["arm", "control"] } else { &["arm", "control", "margin"] };
        if let Some(unknown) = fields.keys().find(|k| !allowed.contains(&k.as_str())) {
            fail(format!("`{key}` takes {}, not `{unknown}`", allowed.join(", ")), &example(key));
            continue;
        }
        let name = |prop: &str| fields.get(prop).and_then(Value::as_str).map(str::to_string);
        let (Some(arm), Some(control)) = (name("arm"), name("control")) else {
            fail(format!("`{key}` names two cells: arm=\"…\" and control=\"…\""), &example(key));
            continue;
        };
        if arm == control || [&arm, &control].iter().any(|n| n.contains(['*', '?', ' '])) {
            fail(format!("`{key}` compares two different cells, each by its own name"), &example(key));
            continue;
        }
        let test = if key == "lossless" {
            ArmTest::Lossless
        } else {
            match fields.get("margin").and_then(margin) {
                Some(margin) => ArmTest::AccuracyNotWorse { margin },
                None => {
                    fail(
                        "`accuracy-not-worse` needs margin=: the accuracy the arm may lose, between 0 and 1 (0.02 or \"2%\")".into(),
                        &example(key),
                    );
                    continue;
                }
            }
        };
        let reads = format!("cell.{arm}.answers.kept >= 0 && cell.{control}.answers.kept >= 0");
        match Expression::parse(&reads, setting, (&draft.source, draft.span), &draft.what()) {
            Ok(reads) => checks.push(ArmCheck { test, arm, control, text, reads }),
            Err(_) => {
                fail(format!("`{key}` names cells by their names, not `{arm}`, `{control}`"), &example(key))
            }
        }
    }
    checks
}

/// The record's properties as written (`arm="a" control="b"`).
fn written(record: &Value) -> String {
    let fields = record.as_object().cloned().unwrap_or_default();
    let shown = fields.iter().map(|(k, v)| match v {
        Value::String(s) => format!("{k}=\"{s}\""),
        other => format!("{k}={other}"),
    });
    shown.collect::<Vec<_>>().join(" ")
}

/// A margin: a number or a share ("2%") strictly between 0 and 1.
fn margin(value: &Value) -> Option<f64> {
    let number = match value {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => match s.trim().strip_suffix('%') {
            Some(share) => share.trim().parse::<f64>().ok()? / 100.0,
            None => s.trim().parse().ok()?,
        },
        _ => return None,
    };
    (number > 0.0 && number < 1.0).then_some(number)
}

fn example(key: &str) -> String {
    match key {
        "lossless" => "e.g. lossless arm=\"ngram\" control=\"nospec\"".into(),
        _ => "e.g. accuracy-not-worse arm=\"q4\" control=\"bf16\" margin=0.02".into(),
    }
}
