//! How a cell's measurement ended: every request sent and ended, or
//! stopped early by a rule, with what the stop left undone. A stopping
//! rule or a stalled server is one more reason here.

use serde::{Deserialize, Serialize};

/// Why a cell's measurement ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndReason {
    /// Every planned request was sent and ended.
    Completed,
    /// An open loop past capacity, stopped by the over-saturation rule
    /// (`stop-when-saturated`; docs/metrics.md "Over-saturation").
    OverSaturated,
}

/// The artifact's `ending`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ending {
    pub reason: EndReason,
    /// The repeat it stopped in; later repeats were not run.
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
    /// Requests in flight when it stopped: cancelled, so not recorded.
    #[serde(default)]
    pub cancelled: u64,
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
        }
    }

    /// Whether a rule stopped the cell before its planned requests.
    pub fn stopped_early(&self) -> bool {
        self.reason != EndReason::Completed
    }
}
