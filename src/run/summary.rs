//! What a run returns: how each step ended.

use std::time::Duration;

use anvil_store::Fingerprint;

use crate::executor::interface::{Ending, StepOutcome};
use crate::plan::Plan;
use crate::step_kind::Kind;

/// How one step ended in this run: the step, and the executor's outcome
/// (the one outcome type; the run record stores it as an
/// `anvil_store::RunNode`, `record.rs`).
#[derive(Debug, Clone)]
pub struct StepReport {
    pub name: String,
    pub kind: Kind,
    pub fingerprint: Fingerprint,
    pub outcome: StepOutcome,
}

#[derive(Debug, Clone)]
pub struct RunSummary {
    pub run_id: String,
    pub steps: Vec<StepReport>,
    pub elapsed: Duration,
    /// RFC 3339, when the last step ended.
    pub finished_at: String,
    /// The plan as the run left it (result-reading steps settled on their inputs).
    pub plan: Plan,
    /// The exit code a signal asks for (130 for Ctrl-C), when one stopped the run.
    pub interrupted: Option<i32>,
}

impl RunSummary {
    pub fn count(&self, ending: Ending) -> usize {
        self.steps.iter().filter(|s| s.outcome.ending == ending && s.kind != Kind::Server).count()
    }

    /// A run succeeds when nothing failed and no gate rejected.
    pub fn succeeded(&self) -> bool {
        self.count(Ending::Failed) == 0 && self.count(Ending::Rejected) == 0
    }
}
