//! Comparing two results, noise-aware: cells by their headline metrics
//! (from the raw per-request samples of both sides, by `anvil-evidence`),
//! screens by their winners, gates by their statuses, decisions by their
//! labels, and what differs in configuration as the likely cause.
//!
//! A side is anything that holds results: a bundle, a recorded run, a
//! recipe's latest run, a stored cell, or a lone benchmark/v1 JSON file.

mod render;
mod report;
mod side;

pub use render::render;
pub use report::{Agreement, CellReport, Report};
pub use side::{Side, resolve};

use anvil_evidence::{CompareOptions, Verdict};
use serde_json::Value;

use crate::plan::changes::{describe, diff_values};

pub fn compare(a: &Side, b: &Side, options: &CompareOptions) -> Report {
    let mut cells = Vec::new();
    for (name, published) in &a.cells {
        let Some(reproduced) = b.cells.get(name).or_else(|| lone_pair(a, b)) else { continue };
        let metrics = anvil_evidence::compare_artifacts(&published.artifact, &reproduced.artifact, options);
        let verdict = if metrics.iter().any(|m| m.verdict == Verdict::Differs) {
            Verdict::Differs
        } else if metrics.iter().any(|m| m.verdict == Verdict::Reproduced) {
            Verdict::Reproduced
        } else {
            Verdict::Inconclusive
        };
        let mut configuration = Vec::new();
        for (left, right) in
            [(&published.preimage, &reproduced.preimage), (&published.server, &reproduced.server)]
        {
            if let (Some(left), Some(right)) = (left, right) {
                configuration.extend(
                    diff_values(left, right)
                        .iter()
                        // An upstream fingerprint changes whenever its own inputs do: name those instead.
                        .filter(|c| !c.path.starts_with("upstream"))
                        .map(describe),
                );
            }
        }
        cells.push(CellReport { name: name.clone(), metrics, verdict, configuration });
    }
    let agree = |left: &std::collections::BTreeMap<String, Value>,
                 right: &std::collections::BTreeMap<String, Value>| {
        left.iter()
            .map(|(name, a)| {
                let b = right.get(name).cloned().unwrap_or(Value::Null);
                Agreement { name: name.clone(), same: *a == b, a: a.clone(), b }
            })
            .collect::<Vec<_>>()
    };
    Report {
        a: a.label.clone(),
        b: b.label.clone(),
        threshold: options.threshold,
        cells,
        screens: agree(&a.screens, &b.screens),
        gates: agree(&a.gates, &b.gates),
        labels: a.labels.as_ref().map(|labels| {
            let other = b.labels.clone().unwrap_or(Value::Null);
            Agreement { name: "decision labels".into(), same: *labels == other, a: labels.clone(), b: other }
        }),
    }
}

/// Two lone cells (one each side, names differing) are compared with each other.
fn lone_pair<'a>(a: &Side, b: &'a Side) -> Option<&'a side::Cell> {
    (a.cells.len() == 1 && b.cells.len() == 1).then(|| b.cells.values().next()).flatten()
}
