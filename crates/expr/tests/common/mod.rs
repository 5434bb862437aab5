//! Shared fixtures: a results document shaped like a small campaign.

#![allow(dead_code)]

use anvil_expr::{Evaluation, JsonResolver, Value, evaluate_value, parse};

pub fn campaign() -> serde_json::Value {
    serde_json::json!({
        "cell": {
            "tp1": { "aggregate_tok_s": 790.1, "ttft": { "p50": 0.21, "p99": 0.9 }, "runs": [10, 20, 30] },
            "tp2": { "aggregate_tok_s": 812.4, "ttft": { "p50": 0.25, "p99": 1.4 }, "runs": [] },
            "sglang-d4": { "aggregate_tok_s": 700.0, "passed": true },
            "sglang-d8": { "aggregate_tok_s": 910.5, "passed": true },
            "sglang-d12": { "aggregate_tok_s": 910.5, "passed": false },
            "zero": { "aggregate_tok_s": 0 }
        },
        "check": {
            "tp2-json": { "passed": true, "engine": "sglang 0.4.6", "labels": ["json", "strict"] },
            "smoke": { "passed": false, "note": null }
        },
        "param": { "depth": 8, "name": "d8" }
    })
}

/// Evaluates `src` as a gate against [`campaign`]; panics on a parse error
/// (tests pass only well-formed sources here).
pub fn gate(src: &str) -> Evaluation {
    let results = campaign();
    parse(src).unwrap_or_else(|e| panic!("{src}: {e:?}")).eval(&JsonResolver::new(&results))
}

pub fn value(src: &str) -> Value {
    let results = campaign();
    let expr = parse(src).unwrap_or_else(|e| panic!("{src}: {e:?}"));
    evaluate_value(&expr, &JsonResolver::new(&results)).unwrap_or_else(|e| panic!("{src}: {e:?}"))
}

pub fn number(src: &str) -> f64 {
    match value(src) {
        Value::Number(n) => n,
        other => panic!("{src}: expected a number, got {other:?}"),
    }
}
