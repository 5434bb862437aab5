//! A read-only view of one record of `request_timings`, and which requests count.
//!
//! Eligibility (whether a request enters the distributions and throughput):
//! 1. the record's own `performance_eligible` flag when it has one (anvil);
//! 2. else, when it has a `failure` key: eligible iff `failure` is null;
//! 3. else (the reference format): not eligible iff `failures[]` lists its
//!    `request_index` (and `repeat`, when given) or its `request_canary.passed`
//!    is false (a failed canary is a contract violation); eligible otherwise.
//!
//! The failure class comes from the record's `failure.class`, else from its
//! `failures[]` entry.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Failure classes where the server answered but broke the measurement
/// contract: they count as successful responses, not as eligible ones.
pub const CONTRACT_VIOLATIONS: [&str; 4] =
    ["missing_usage", "truncated_capture", "canary_failure", "controlled_output"];

/// How eligibility was decided (for the report's notes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EligibilitySource {
    Flag,
    FailureField,
    FailuresList,
}

#[derive(Debug, Clone)]
pub struct Req<'a> {
    /// Position in `request_timings`.
    pub pos: usize,
    pub raw: &'a Map<String, Value>,
    pub repeat: u64,
    pub eligible: bool,
    pub failure_class: Option<String>,
}

impl<'a> Req<'a> {
    pub fn num(&self, key: &str) -> Option<f64> {
        self.raw.get(key).and_then(Value::as_f64)
    }

    pub fn int(&self, key: &str) -> Option<u64> {
        self.raw.get(key).and_then(Value::as_u64)
    }

    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.raw.get(key).filter(|v| !v.is_null())
    }

    /// The request got a whole answer (no failure, or a contract violation only).
    pub fn successful(&self) -> bool {
        self.failure_class.as_deref().is_none_or(|c| CONTRACT_VIOLATIONS.contains(&c))
    }
}

/// Classifies records one at a time: their repeat, eligibility and failure
/// class, with the artifact's `failures[]` (the reference format's only
/// eligibility input) indexed by `request_index`.
pub struct Classifier<'h> {
    listed: HashMap<Option<u64>, Vec<&'h Value>>,
    /// The weakest source any record so far was classified from.
    pub source: EligibilitySource,
}

impl<'h> Classifier<'h> {
    /// `head`: the artifact's top-level members (its `failures` at least).
    pub fn new(head: &'h Map<String, Value>) -> Self {
        let mut listed: HashMap<Option<u64>, Vec<&'h Value>> = HashMap::new();
        for f in head.get("failures").and_then(Value::as_array).into_iter().flatten() {
            listed.entry(f.get("request_index").and_then(Value::as_u64)).or_default().push(f);
        }
        Self { listed, source: EligibilitySource::Flag }
    }

    /// Record `pos` of `request_timings`.
    pub fn req<'a>(&mut self, pos: usize, raw: &'a Map<String, Value>) -> Req<'a> {
        let repeat = raw.get("repeat").and_then(Value::as_u64).unwrap_or(0);
        let index = raw.get("request_index").and_then(Value::as_u64);
        let entry = self.listed.get(&index).and_then(|fs| {
            fs.iter().find(|f| f.get("repeat").and_then(Value::as_u64).is_none_or(|r| r == repeat)).copied()
        });
        let own_class = raw.get("failure").and_then(|f| f.get("class")).and_then(Value::as_str);
        let listed_class = entry.and_then(|f| f.get("class")).and_then(Value::as_str);
        let failure_class = match raw.get("failure") {
            Some(_) => own_class.map(str::to_string),
            None => listed_class.map(str::to_string).or(entry.map(|_| "unknown".to_string())),
        };
        let eligible = if let Some(flag) = raw.get("performance_eligible").and_then(Value::as_bool) {
            flag
        } else if raw.contains_key("failure") {
            self.source = self.source.max_with(EligibilitySource::FailureField);
            failure_class.is_none()
        } else {
            self.source = self.source.max_with(EligibilitySource::FailuresList);
            let canary_failed = raw
                .get("request_canary")
                .and_then(|c| c.get("passed"))
                .and_then(Value::as_bool)
                .is_some_and(|p| !p);
            entry.is_none() && !canary_failed
        };
        Req { pos, raw, repeat, eligible, failure_class }
    }
}

impl EligibilitySource {
    fn rank(self) -> u8 {
        match self {
            Self::Flag => 0,
            Self::FailureField => 1,
            Self::FailuresList => 2,
        }
    }

    fn max_with(self, other: Self) -> Self {
        if other.rank() > self.rank() { other } else { self }
    }
}
