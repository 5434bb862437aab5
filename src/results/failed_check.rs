//! A check that could not complete (its server went away, its spec could
//! not run): why, as a typed document. A check that completed and judged a
//! reply wrong is not this: that is a rejection, a verdict stored like a
//! gate's. This is kept with its run's evidence
//! (`failed/<run_id>/<fingerprint>/failed-check.json`, beside the attempts
//! judged before it stopped and the server's log), never under the check's
//! fingerprint: a failure is not a result, and a rerun runs it again.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::failed_cell::{FailureClassCount, count_by_class};
use crate::words::CheckType;

/// [`FailedCheck::schema`].
pub const FAILED_CHECK_SCHEMA: &str = "anvil.failed-check/v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedCheck {
    pub schema: String,
    #[serde(rename = "type")]
    pub check_type: CheckType,
    /// The run line's words.
    pub reason: String,
    /// What stopped it, as the check client said it.
    pub stopped: String,
    /// The replica it stopped on (its base URL).
    pub target: String,
    /// Attempts judged before it stopped, over every replica, and how many
    /// of them failed.
    pub attempts: u64,
    pub failures: u64,
    /// What stopped it first (`unreachable`, count 1), then the classes of
    /// the attempts that failed before it, the most frequent first, each
    /// with its first reply.
    pub classes: Vec<FailureClassCount>,
}

/// One attempt as a check's evidence records it (`anvil_checks::Attempt`),
/// only the fields the classes read.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AttemptView {
    index: u64,
    http_status: Option<u16>,
    reply: Value,
    passed: bool,
    why: String,
}

/// At most this many characters of a reply are kept as a class's first detail.
const REPLY_CHARS: usize = 300;

impl FailedCheck {
    /// The document of a check stopped by `error` (of class `class`, at
    /// `target`), after the attempts in `evidence` (one evidence document per
    /// replica checked, each with its `attempts`).
    pub fn new(
        check_type: CheckType,
        class: &str,
        error: &str,
        target: &str,
        evidence: &[Value],
    ) -> FailedCheck {
        let attempts: Vec<AttemptView> = evidence
            .iter()
            .filter_map(|e| e["attempts"].as_array())
            .flatten()
            .filter_map(|a| serde_json::from_value(a.clone()).ok())
            .collect();
        let mut classes = count_by_class(attempts.iter().filter(|a| !a.passed).map(|a| {
            FailureClassCount {
                class: match a.http_status {
                    Some(200) => "wrong_reply",
                    Some(_) => "http_status",
                    None => "no_reply",
                }
                .to_string(),
                count: 1,
                first_request_index: a.index,
                first_http_status: a.http_status,
                first_detail: detail_of(a),
            }
        }));
        // The replica it stopped on is the last one checked.
        let stopped_at = evidence.last().and_then(|e| e["attempts"].as_array()).map_or(0, Vec::len);
        classes.insert(
            0,
            FailureClassCount {
                class: class.to_string(),
                count: 1,
                first_request_index: stopped_at as u64,
                first_http_status: None,
                first_detail: error.to_string(),
            },
        );
        let mut failed = FailedCheck {
            schema: FAILED_CHECK_SCHEMA.to_string(),
            check_type,
            reason: String::new(),
            stopped: error.to_string(),
            target: target.to_string(),
            attempts: attempts.len() as u64,
            failures: attempts.iter().filter(|a| !a.passed).count() as u64,
            classes,
        };
        failed.reason = failed.words();
        failed
    }

    /// `check could not run: unreachable: …; after 1 attempt (0 failed)`.
    fn words(&self) -> String {
        let stop = &self.classes[0];
        let mut words = format!("check could not run: {}: {}", stop.class, self.stopped);
        if self.attempts > 0 {
            let plural = if self.attempts == 1 { "" } else { "s" };
            words.push_str(&format!("; after {} attempt{plural} ({} failed", self.attempts, self.failures));
            let failed: Vec<&FailureClassCount> = self.classes[1..].iter().collect();
            if let Some(first) = failed.first() {
                let classes: Vec<String> =
                    failed.iter().map(|c| format!("{} ({})", c.class, c.count)).collect();
                words.push_str(&format!(": {}; first: {}", classes.join(", "), first.first_detail));
            }
            words.push(')');
        }
        words
    }
}

/// Why an attempt failed, and the start of what the server replied.
fn detail_of(attempt: &AttemptView) -> String {
    if attempt.reply.is_null() {
        return attempt.why.clone();
    }
    let reply = match &attempt.reply {
        Value::Object(o) if o.len() == 1 && o.get("body").is_some_and(Value::is_string) => {
            o["body"].as_str().unwrap_or_default().to_string()
        }
        other => other.to_string(),
    };
    let mut cut: String = reply.chars().take(REPLY_CHARS).collect();
    if cut.len() < reply.len() {
        cut.push('…');
    }
    format!("{}; reply: {cut}", attempt.why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_stopped_it_comes_first_then_the_failed_attempts_with_their_replies() {
        let evidence = [json!({"attempts": [
            {"index": 0, "http_status": 200, "reply": {"content": "hi"}, "passed": true, "why": "ok"},
            {"index": 1, "http_status": 500, "reply": {"body": "{\"error\":\"boom\"}"}, "passed": false, "why": "HTTP 500: boom"},
            {"index": 2, "http_status": 200, "reply": {"content": ""}, "passed": false, "why": "content is empty"},
            {"index": 3, "http_status": 500, "reply": {"body": "x"}, "passed": false, "why": "HTTP 500: x"},
        ]})];
        let failed = FailedCheck::new(
            CheckType::Smoke,
            "unreachable",
            "cannot reach http://h/v1/chat/completions: refused",
            "http://h",
            &evidence,
        );
        let classes: Vec<(&str, u64)> = failed.classes.iter().map(|c| (c.class.as_str(), c.count)).collect();
        assert_eq!(classes, [("unreachable", 1), ("http_status", 2), ("wrong_reply", 1)]);
        assert_eq!(
            (failed.classes[1].first_request_index, failed.classes[1].first_http_status),
            (1, Some(500))
        );
        assert_eq!(failed.classes[1].first_detail, "HTTP 500: boom; reply: {\"error\":\"boom\"}");
        assert_eq!(failed.classes[0].first_request_index, 4, "it stopped at the fifth attempt");
        assert_eq!(
            failed.reason,
            "check could not run: unreachable: cannot reach http://h/v1/chat/completions: refused; \
             after 4 attempts (3 failed: http_status (2), wrong_reply (1); first: HTTP 500: boom; reply: {\"error\":\"boom\"})"
        );
        let text = serde_json::to_value(&failed).unwrap();
        assert_eq!(
            (text["schema"].as_str(), text["type"].as_str()),
            (Some(FAILED_CHECK_SCHEMA), Some("smoke"))
        );
        assert_eq!(serde_json::from_value::<FailedCheck>(text).unwrap(), failed);
    }

    #[test]
    fn a_check_stopped_before_any_attempt_names_only_what_stopped_it() {
        let failed = FailedCheck::new(CheckType::JsonSchema, "unreachable", "refused", "http://h", &[]);
        assert_eq!(failed.reason, "check could not run: unreachable: refused");
        assert_eq!(failed.classes.len(), 1);
    }
}
