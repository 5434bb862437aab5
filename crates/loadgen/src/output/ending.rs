//! How a cell's measurement ended: every request sent and ended, or
//! stopped early by a rule, with what the stop left undone. A stopping
//! rule or a stalled server is one more reason here.

use anvil_words::words;
use serde::{Deserialize, Serialize};

use crate::output::drain::Drain;

words! {
    #[serde]
    /// Why a cell's measurement ended.
    pub enum EndReason {
        /// Every planned request was sent and ended.
        Completed = "completed",
        /// An open loop past capacity, stopped by the over-saturation rule
        /// (`stop-when-saturated`; docs/metrics.md "Over-saturation").
        OverSaturated = "over-saturated",
        /// The stopping rule's intervals were within its precision at a look.
        Precise = "precise",
        /// The stopping rule reached `max-requests` before its precision.
        MaxRequests = "max-requests",
        /// The stopping rule's `max-duration` ran out before its precision.
        MaxDuration = "max-duration",
        /// `abort-on-errors`: the share of failed requests reached its budget.
        ErrorStorm = "error-storm",
        /// `stall-timeout`: a request stalled and no connection of the cell had
        /// received a byte for that long: the server went silent as a whole.
        Stalled = "stalled",
    }
}

/// The artifact's `ending`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ending {
    pub reason: EndReason,
    /// The repeat it stopped in; later repeats were not run (a stopping
    /// rule's cell has one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// When it stopped, in ms after that repeat's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<f64>,
    #[serde(default)]
    pub detail: String,
    /// Requests of that repeat never sent.
    #[serde(default)]
    pub unsent: u64,
    /// Requests in flight when it stopped: cancelled, so not recorded (a
    /// stopping rule lets them end and records them).
    #[serde(default)]
    pub cancelled: u64,
    /// An open loop of its own arrivals: whether the server kept up with
    /// them over the sending window, judged from the records at the end
    /// (`output/drain.rs`), however the cell ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain: Option<Drain>,
}

impl Ending {
    pub fn completed() -> Ending {
        Ending {
            reason: EndReason::Completed,
            repeat: None,
            at_ms: None,
            detail: "every planned request was sent and ended".into(),
            unsent: 0,
            cancelled: 0,
            drain: None,
        }
    }

    /// Whether a rule ended the cell (a stopping rule or over-saturation)
    /// rather than its planned request count.
    pub fn stopped_early(&self) -> bool {
        self.reason != EndReason::Completed
    }

    /// Whether the rule that ended it found the server past capacity: its
    /// numbers are not those of a load it sustained.
    pub fn lost(&self) -> bool {
        matches!(self.reason, EndReason::OverSaturated | EndReason::ErrorStorm | EndReason::Stalled)
    }

    /// The verdict at the end, when it found the server over-saturated and
    /// the watch did not stop the cell for it: its numbers are kept, marked.
    pub fn over_saturated_at_end(&self) -> Option<&Drain> {
        self.drain.as_ref().filter(|d| d.over_saturated && self.reason != EndReason::OverSaturated)
    }
}
