//! The result of a check: pass/fail, one line for people, and the
//! evidence (what was asked, what came back, and why each attempt was
//! judged as it was) that is stored with the result.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::spec::{CheckSpec, Target};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckOutcome {
    pub passed: bool,
    /// One human line, e.g. `3/3 attempts passed: …` or `1/3 attempts failed: attempt 2: …`.
    pub detail: String,
    /// `{check, type, target, …settings, attempts: [Attempt…]}`.
    pub evidence: Value,
    pub attempts: u32,
    pub failures: u32,
}

/// One request (or request pair) and its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    pub index: u32,
    /// What was sent, summarized (long prompts are cut).
    pub request: Value,
    /// HTTP status, when a response arrived.
    pub http_status: Option<u16>,
    /// Client-side wall time of the attempt (recorded, not judged).
    pub elapsed_ms: f64,
    /// What came back: extracted fields, or the raw body when it did not parse.
    pub reply: Value,
    pub passed: bool,
    /// Why it passed or failed, in one line.
    pub why: String,
}

impl Attempt {
    pub fn new(index: u32, request: Value) -> Self {
        Self {
            index,
            request,
            http_status: None,
            elapsed_ms: 0.0,
            reply: Value::Null,
            passed: false,
            why: String::new(),
        }
    }

    pub fn pass(mut self, why: impl Into<String>) -> Self {
        self.passed = true;
        self.why = why.into();
        self
    }

    pub fn fail(mut self, why: impl Into<String>) -> Self {
        self.passed = false;
        self.why = why.into();
        self
    }
}

/// Fold the attempts into the outcome. `settings` are the type-specific
/// inputs needed to re-judge the evidence (schema, tool, prompt...).
pub fn summarize(spec: &CheckSpec, target: &Target, settings: Value, attempts: Vec<Attempt>) -> CheckOutcome {
    let total = attempts.len() as u32;
    let failed: Vec<&Attempt> = attempts.iter().filter(|a| !a.passed).collect();
    let failures = failed.len() as u32;
    let passed = total > 0 && failures == 0;
    let detail = match (failed.first(), attempts.first()) {
        (Some(first), _) => {
            format!("{failures}/{total} attempts failed; attempt {}: {}", first.index, first.why)
        }
        (None, Some(first)) => format!("{total}/{total} attempts passed: {}", first.why),
        (None, None) => "no attempts were made".to_owned(),
    };
    let evidence = json!({
        "check": spec.name,
        "type": spec.check_type,
        "passed": passed,
        "model": spec.model,
        "target": target.base_url,
        "settings": settings,
        "attempts": attempts,
    });
    CheckOutcome { passed, detail, evidence, attempts: total, failures }
}
