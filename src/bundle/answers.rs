//! `anvil verify`'s check of every cell's kept answers (`answers.jsonl`):
//! the file against the digest its result states, each answer's text
//! against its own digest, and every score derived again from the
//! bundle's copy of the scored dataset (the same scorers the run used,
//! `quality::answers`), the accuracy with it. An edited answer shows as a
//! digest that no longer matches; one whose digests were fixed up as a
//! file digest, a score or an accuracy that no longer does.

use anvil_store::Store;
use serde_json::{Value, json};

use crate::plan::Plan;
use crate::plan::resolved_cell::{resolve_in_recipe, resolve_paths};
use crate::quality::answers::{accuracy_of, read_jsonl, score_lines, scored_items};
use crate::recipe::Kind;
use crate::results::{ANSWERS_FILE, AnswerLine, CellResult, KeptAnswers};

/// What did not check out: at `entries/<fp>/answers.jsonl`, the field
/// path, what the bundle claims and what was derived.
pub(super) struct AnswerFinding {
    pub at: String,
    pub path: String,
    pub claimed: Value,
    pub derived: Value,
}

/// Every stored cell of `plan` that kept answers, checked: how many
/// answers were, and what did not check out.
pub(super) fn rederive(plan: &Plan, store: &Store) -> (usize, Vec<AnswerFinding>) {
    let mut checked = 0;
    let mut findings = Vec::new();
    for node in plan.nodes.iter().filter(|n| n.kind == Kind::Cell) {
        let Ok(Some(entry)) = store.read(&node.fingerprint) else { continue };
        let Ok(result) = crate::results::from_value::<CellResult>(entry.result.clone()) else { continue };
        let Some(kept) = &result.answers else { continue };
        let member = format!("entries/{}/{ANSWERS_FILE}", node.fingerprint);
        let mut finding = |path: &str, claimed: Value, derived: Value| {
            findings.push(AnswerFinding { at: member.clone(), path: path.to_string(), claimed, derived });
        };
        let bytes = match std::fs::read(entry.path_of(ANSWERS_FILE)) {
            Ok(bytes) => bytes,
            Err(e) => {
                finding("", json!("the answers the result names"), json!(e.to_string()));
                continue;
            }
        };
        let lines = match checked_lines(&bytes, kept, &mut finding) {
            Some(lines) => lines,
            None => continue,
        };
        checked += lines.len();
        let Some(mut spec) = resolve_in_recipe(&plan.recipe, &node.name) else { continue };
        resolve_paths(&mut spec, &plan.recipe.key);
        match scored_items(&spec.traffic) {
            Ok(Some((dataset, items))) => {
                let rescored =
                    score_lines(&lines.iter().map(|l| l.answer.clone()).collect::<Vec<_>>(), &items);
                for (at, (stored, again)) in lines.iter().zip(&rescored).enumerate() {
                    if (stored.correct, &stored.extracted) != (again.correct, &again.extracted) {
                        finding(
                            &format!("line {}.correct", at + 1),
                            json!(stored.correct),
                            json!(again.correct),
                        );
                    }
                }
                let derived = serde_json::to_value(accuracy_of(&rescored, dataset, items.len() as u64));
                let claimed = serde_json::to_value(&result.accuracy);
                if let (Ok(claimed), Ok(derived)) = (claimed, derived) {
                    for change in crate::plan::changes::diff_values(&claimed, &derived) {
                        finding(&format!("result.accuracy.{}", change.path), change.a, change.b);
                    }
                }
            }
            Ok(None) => {}
            Err(why) => finding("", json!("answers scored against the bundle's dataset"), json!(why)),
        }
    }
    (checked, findings)
}

/// The answers read, the file and each text against their digests; `None`
/// when the file does not read as answers.
fn checked_lines(
    bytes: &[u8],
    kept: &KeptAnswers,
    finding: &mut impl FnMut(&str, Value, Value),
) -> Option<Vec<AnswerLine>> {
    let digest = anvil_loadgen::answer_digest(bytes);
    if digest != kept.blake3 {
        finding("blake3", json!(kept.blake3), json!(digest));
    }
    let lines = match read_jsonl(bytes) {
        Ok(lines) => lines,
        Err(why) => {
            finding("", json!("one answer a line"), json!(why));
            return None;
        }
    };
    if lines.len() as u64 != kept.kept {
        finding("kept", json!(kept.kept), json!(lines.len()));
    }
    for (at, line) in lines.iter().enumerate() {
        let text = anvil_loadgen::answer_digest(line.answer.text.as_bytes());
        if text != line.answer.text_blake3 {
            finding(&format!("line {}.text_blake3", at + 1), json!(line.answer.text_blake3), json!(text));
        }
    }
    Some(lines)
}
