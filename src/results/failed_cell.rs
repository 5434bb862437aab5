//! A cell that measured nothing: why, as a typed document. It is kept with
//! its run's evidence (`failed/<run_id>/<fingerprint>/failed-cell.json`,
//! beside the records that were sent and received), never under the cell's
//! fingerprint: a failure is not a result, and a rerun runs the cell again.

use anvil_loadgen::FailedRequest;
use serde::{Deserialize, Serialize};

/// [`FailedCell::schema`].
pub const FAILED_CELL_SCHEMA: &str = "anvil.failed-cell/v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedCell {
    pub schema: String,
    /// The run line's words.
    pub reason: String,
    /// Requests recorded, every one failed.
    pub failed: u64,
    /// Failure classes, the most frequent first, each with its first reply.
    pub classes: Vec<FailureClassCount>,
    /// How the measurement ended when a rule stopped it (`ending.detail`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureClassCount {
    pub class: String,
    pub count: u64,
    /// The first failure of the class: its request, status and detail
    /// (for a canary, the start of what the server replied).
    pub first_request_index: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_http_status: Option<u16>,
    pub first_detail: String,
}

/// Failures (each a count of 1) counted by class, each class keeping its
/// first failure; the most frequent class first, ties in order of appearance.
pub(super) fn count_by_class(
    failures: impl IntoIterator<Item = FailureClassCount>,
) -> Vec<FailureClassCount> {
    let mut classes: Vec<FailureClassCount> = Vec::new();
    for failure in failures {
        match classes.iter_mut().find(|c| c.class == failure.class) {
            Some(c) => c.count += 1,
            None => classes.push(failure),
        }
    }
    classes.sort_by_key(|c| std::cmp::Reverse(c.count));
    classes
}

impl FailedCell {
    /// Classes counted over the load generator's failed requests.
    pub fn from_failures(failures: &[FailedRequest], stopped: Option<String>) -> FailedCell {
        let classes = count_by_class(failures.iter().map(|f| FailureClassCount {
            class: f.failure.class.to_string(),
            count: 1,
            first_request_index: f.request_index,
            first_http_status: f.http_status,
            first_detail: f.failure.detail.clone(),
        }));
        let mut cell = FailedCell {
            schema: FAILED_CELL_SCHEMA.to_string(),
            reason: String::new(),
            failed: failures.len() as u64,
            classes,
            stopped,
        };
        cell.reason = cell.words();
        cell
    }

    /// `no request completed: 16 failed: canary_failure (16); first: …`.
    fn words(&self) -> String {
        let mut words = match self.classes.first() {
            None => format!("no request completed ({} failed)", self.failed),
            Some(first) => {
                let classes: Vec<String> =
                    self.classes.iter().map(|c| format!("{} ({})", c.class, c.count)).collect();
                format!(
                    "no request completed: {} failed: {}; first: {}",
                    self.failed,
                    classes.join(", "),
                    first.first_detail
                )
            }
        };
        if let Some(stopped) = &self.stopped {
            words.push_str(&format!("; stopped early: {stopped}"));
        }
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anvil_loadgen::{Failure, FailureClass};

    fn failed(
        request_index: u64,
        class: FailureClass,
        detail: &str,
        http_status: Option<u16>,
    ) -> FailedRequest {
        FailedRequest { request_index, http_status, failure: Failure { class, detail: detail.into() } }
    }

    #[test]
    fn classes_are_counted_most_frequent_first_with_their_first_reply() {
        let failures = [
            failed(0, FailureClass::HttpStatus, "HTTP 500", Some(500)),
            failed(1, FailureClass::CanaryFailure, "reply starts \"Hello\"", None),
            failed(2, FailureClass::CanaryFailure, "reply starts \"Hi\"", None),
        ];
        let cell = FailedCell::from_failures(&failures, None);
        assert_eq!(cell.classes[0].class, "canary_failure");
        assert_eq!((cell.classes[0].count, cell.classes[0].first_request_index), (2, 1));
        assert_eq!(cell.classes[1].first_http_status, Some(500));
        assert_eq!(
            cell.reason,
            "no request completed: 3 failed: canary_failure (2), http_status (1); first: reply starts \"Hello\""
        );
    }
}
