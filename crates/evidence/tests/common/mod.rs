//! Shared by the integration tests: fixtures and single-field edits.

#![allow(dead_code)]

use anvil_evidence::Report;
use anvil_evidence::report::lookup;
use serde_json::Value;

pub fn fixture(name: &str) -> Value {
    read(&fixture_path(name))
}

fn read(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The protocol's reference artifact: one copy in the workspace, with the
/// root crate's fixtures.
pub fn reference_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/reference/benchmark-v1.example.json")
}

pub fn reference() -> Value {
    read(&reference_path())
}

/// anvil's artifact of `tiny.kdl` (two replicas, two repeats, SLOs, HTTP
/// 500 and canary-leak faults), produced by `anvil run` against the sim.
pub fn anvil_tiny() -> Value {
    fixture("anvil-tiny-benchmark-v1.json")
}

/// The path of a fixture file.
pub fn fixture_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// Every path `report` checked, its per-request fields spelled out at each
/// record that carries them (the counts must say that is every such record).
pub fn every_checked(report: &Report, artifact: &Value) -> Vec<String> {
    let mut out = report.checked.clone();
    let records = artifact["request_timings"].as_array().map_or(0, Vec::len);
    for (pattern, count) in &report.checked_per_request {
        let field = pattern.strip_prefix("request_timings[*].").unwrap_or_else(|| panic!("{pattern}"));
        let at: Vec<String> = (0..records)
            .map(|i| format!("request_timings[{i}].{field}"))
            .filter(|p| lookup(artifact, p).is_some())
            .collect();
        assert_eq!(at.len() as u64, *count, "{pattern}: not checked in every record that carries it");
        out.extend(at);
    }
    out
}

/// The load generator's z before the protocol's 1.96 was adopted.
pub const LOADGEN_OLD_Z: f64 = 1.959963984540054;

/// The value at `a.b[3].c`, mutably.
pub fn at<'a>(root: &'a mut Value, path: &str) -> &'a mut Value {
    let mut cur = root;
    for part in path.split('.') {
        let (key, indices) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            cur = cur.get_mut(key).unwrap_or_else(|| panic!("no {key} in {path}"));
        }
        for idx in indices.split('[').skip(1) {
            let i: usize = idx.trim_end_matches(']').parse().unwrap();
            cur = cur.get_mut(i).unwrap();
        }
    }
    cur
}

/// Changes one value so that no tolerance could accept it.
pub fn perturb(v: &mut Value) {
    *v = match v.take() {
        Value::Number(n) if n.is_u64() => Value::from(n.as_u64().unwrap() + 1),
        Value::Number(n) if n.is_i64() => Value::from(n.as_i64().unwrap() + 1),
        Value::Number(n) => Value::from(n.as_f64().unwrap() * (1.0 + 1e-6) + 1e-6),
        Value::Bool(b) => Value::Bool(!b),
        Value::String(s) => Value::String(format!("{s}x")),
        Value::Null => Value::from(1.5),
        Value::Array(mut a) => {
            a.push(Value::from(1));
            Value::Array(a)
        }
        Value::Object(mut m) => {
            m.insert("edited".into(), Value::from(1));
            Value::Object(m)
        }
    };
}
