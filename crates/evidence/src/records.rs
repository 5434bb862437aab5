//! A read-only view of `request_timings[*]`, and which requests count.
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

    pub fn path(&self, key: &str) -> String {
        format!("request_timings[{}].{key}", self.pos)
    }

    /// The request got a whole answer (no failure, or a contract violation only).
    pub fn successful(&self) -> bool {
        self.failure_class.as_deref().is_none_or(|c| CONTRACT_VIOLATIONS.contains(&c))
    }
}

/// Parses the records of an artifact. `None` when `request_timings` is not
/// an array of objects.
pub fn read(artifact: &Value) -> Option<(Vec<Req<'_>>, EligibilitySource)> {
    let timings = artifact.get("request_timings")?.as_array()?;
    let listed: Vec<&Value> =
        artifact.get("failures").and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default();
    let mut source = EligibilitySource::Flag;
    let mut out = Vec::with_capacity(timings.len());
    for (pos, t) in timings.iter().enumerate() {
        let raw = t.as_object()?;
        let repeat = raw.get("repeat").and_then(Value::as_u64).unwrap_or(0);
        let index = raw.get("request_index").and_then(Value::as_u64);
        let entry = listed.iter().find(|f| {
            f.get("request_index").and_then(Value::as_u64) == index
                && f.get("repeat").and_then(Value::as_u64).is_none_or(|r| r == repeat)
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
            source = source.max_with(EligibilitySource::FailureField);
            failure_class.is_none()
        } else {
            source = source.max_with(EligibilitySource::FailuresList);
            let canary_failed = raw
                .get("request_canary")
                .and_then(|c| c.get("passed"))
                .and_then(Value::as_bool)
                .is_some_and(|p| !p);
            entry.is_none() && !canary_failed
        };
        out.push(Req { pos, raw, repeat, eligible, failure_class });
    }
    Some((out, source))
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

/// Values of `key` over `reqs`, skipping nulls.
pub fn values(reqs: &[&Req<'_>], key: &str) -> Vec<f64> {
    reqs.iter().filter_map(|r| r.num(key)).collect()
}

/// Whether any record carries `key` at all (null or not).
pub fn any_has(reqs: &[&Req<'_>], key: &str) -> bool {
    reqs.iter().any(|r| r.raw.contains_key(key))
}

/// Wall-clock span of one run: latest `finished_ms` − earliest
/// `actual_send_ms`, at least 0; `None` when the records lack either time.
pub fn span_ms(reqs: &[&Req<'_>]) -> Option<f64> {
    if reqs.is_empty() {
        return Some(0.0);
    }
    let mut first = f64::INFINITY;
    let mut last = f64::NEG_INFINITY;
    for r in reqs {
        first = first.min(r.num("actual_send_ms")?);
        last = last.max(r.num("finished_ms")?);
    }
    Some((last - first).max(0.0))
}

/// Distinct repeats in record order of first appearance, sorted.
pub fn repeats(reqs: &[Req<'_>]) -> Vec<u64> {
    let mut r: Vec<u64> = reqs.iter().map(|q| q.repeat).collect();
    r.sort_unstable();
    r.dedup();
    r
}
