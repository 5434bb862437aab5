//! How a step of this run ended, as the scheduler keeps it.

use std::time::Duration;

use crate::executor::interface::{Ending, StepOutcome};

pub(super) struct Finished {
    pub(super) index: usize,
    pub(super) ending: Ending,
    pub(super) detail: String,
    pub(super) evidence: Option<String>,
    pub(super) duration: Duration,
    /// False for a result taken from the store.
    pub(super) executed: bool,
    pub(super) fault: Option<crate::executor::interface::Fault>,
}

impl Finished {
    pub(super) fn of(index: usize, outcome: StepOutcome) -> Finished {
        let StepOutcome { ending, detail, evidence, duration, executed, fault } = outcome;
        Finished { index, ending, detail, evidence, duration, executed, fault }
    }

    /// A step that ended without executing (skipped, or a server, which
    /// starts when its steps ask for it).
    pub(super) fn without_work(index: usize, ending: Ending, detail: String) -> Finished {
        Finished {
            index,
            ending,
            detail,
            evidence: None,
            duration: Duration::ZERO,
            executed: false,
            fault: None,
        }
    }
}
