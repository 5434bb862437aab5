//! The decision summary's `quality` section: each cell's accuracy on its
//! scored dataset with its interval, and each arm comparison a gate made
//! (lossless outputs, accuracy not worse) with what it found: the items the
//! arms disagree on, where lossless outputs diverged. Absent from a
//! campaign that scored and compared nothing.

use anvil_store::Store;
use serde::{Deserialize, Serialize};

use crate::plan::campaign_view::{CampaignView, StepKind};
use crate::results::{CellResult, Comparison, GateResult};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QualitySummary {
    /// Every cell that scored a dataset, in the plan's order.
    pub accuracy: Vec<ArmAccuracy>,
    /// Every arm comparison of every gate, in the plan's order.
    pub comparisons: Vec<ComparisonRow>,
}

/// One cell's accuracy, as its result states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmAccuracy {
    pub cell: String,
    pub correct: u64,
    pub n: u64,
    pub share: Option<f64>,
    pub share_ci95_low: f64,
    pub share_ci95_high: f64,
    pub dataset: String,
    pub simulated: bool,
    /// The cell's configuration fingerprint.
    pub evidence: String,
}

/// One gate requirement that compared two arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRow {
    pub gate: String,
    /// The comparison as written (`lossless arm="…" control="…"`).
    pub requirement: String,
    pub status: String,
    /// How often that status can be wrong (1: no rate).
    pub error_at_most: Option<f64>,
    pub detail: String,
    pub compared: Comparison,
}

/// The section of `view`'s stored results, `None` when there is nothing to show.
pub fn quality_summary(view: &CampaignView, store: &Store) -> Option<QualitySummary> {
    let read = |fingerprint| store.read_result_bytes(fingerprint).ok().flatten();
    let mut summary = QualitySummary { accuracy: Vec::new(), comparisons: Vec::new() };
    for step in &view.steps {
        match step.kind {
            StepKind::Cell => {
                let Some(cell) =
                    read(&step.fingerprint).and_then(|b| serde_json::from_slice::<CellResult>(&b).ok())
                else {
                    continue;
                };
                let Some(a) = cell.accuracy else { continue };
                summary.accuracy.push(ArmAccuracy {
                    cell: step.name.clone(),
                    correct: a.correct,
                    n: a.n,
                    share: a.share,
                    share_ci95_low: a.share_ci95_low,
                    share_ci95_high: a.share_ci95_high,
                    dataset: a.dataset,
                    simulated: cell.simulated,
                    evidence: step.fingerprint.to_string(),
                });
            }
            StepKind::Gate => {
                let Some(gate) =
                    read(&step.fingerprint).and_then(|b| serde_json::from_slice::<GateResult>(&b).ok())
                else {
                    continue;
                };
                for r in gate.requirements {
                    let Some(compared) = r.compared else { continue };
                    summary.comparisons.push(ComparisonRow {
                        gate: step.name.clone(),
                        requirement: r.require,
                        status: r.status.as_str().to_string(),
                        error_at_most: r.error_at_most,
                        detail: r.detail,
                        compared,
                    });
                }
            }
            _ => {}
        }
    }
    (!summary.accuracy.is_empty() || !summary.comparisons.is_empty()).then_some(summary)
}
