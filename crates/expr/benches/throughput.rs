//! Parse and evaluate throughput for typical gates. Prints a table; run with
//! `cargo bench -p anvil-expr`. Numbers are informational, never asserted.

use std::hint::black_box;
use std::time::{Duration, Instant};

use anvil_expr::{JsonResolver, evaluate_value, parse};

const GATES: &[(&str, &str)] = &[
    ("simple", "check.smoke.passed"),
    (
        "brief example",
        "check.tp2-json.passed && pct_delta(cell.tp2.aggregate_tok_s, cell.tp1.aggregate_tok_s) > 5",
    ),
    ("wildcard argmax", "argmax(cell.sglang-d*.aggregate_tok_s)"),
    (
        "ten clauses",
        "cell.tp1.aggregate_tok_s > 1 && cell.tp2.aggregate_tok_s > 1 && check.smoke.passed \
         && all(cell.sglang-d*.passed) && mean(cell.sglang-d*.aggregate_tok_s) > 100 \
         && abs(pct_delta(cell.tp2.aggregate_tok_s, cell.tp1.aggregate_tok_s)) < 50 \
         && exists(cell.tp1.ttft.p99) && cell.tp1.ttft.p99 < 2 && count(cell.sglang-d*.passed, true) >= 2 \
         && contains(check.smoke.engine, 'sglang')",
    ),
];

fn results() -> serde_json::Value {
    let mut cells = serde_json::Map::new();
    cells.insert("tp1".into(), serde_json::json!({"aggregate_tok_s": 790.1, "ttft": {"p99": 0.9}}));
    cells.insert("tp2".into(), serde_json::json!({"aggregate_tok_s": 812.4}));
    for depth in 1..=16 {
        cells.insert(
            format!("sglang-d{depth}"),
            serde_json::json!({"aggregate_tok_s": 700.0 + f64::from(depth) * 3.5, "passed": true}),
        );
    }
    serde_json::json!({
        "cell": cells,
        "check": {"smoke": {"passed": true, "engine": "sglang 0.4.6"}}
    })
}

/// Runs `work` repeatedly for about `budget`; returns mean nanoseconds per call.
fn measure(budget: Duration, mut work: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < budget {
        for _ in 0..100 {
            work();
        }
        calls += 100;
    }
    start.elapsed().as_nanos() as f64 / calls as f64
}

fn main() {
    let results = results();
    let resolver = JsonResolver::new(&results);
    let budget = Duration::from_millis(300);
    println!("{:<18} {:>12} {:>12} {:>14}", "gate", "parse ns", "eval ns", "eval+detail ns");
    for (label, src) in GATES {
        let parse_ns = measure(budget, || {
            black_box(parse(black_box(src)).ok());
        });
        let expr = match parse(src) {
            Ok(expr) => expr,
            Err(error) => {
                eprintln!("{label}: {error}");
                continue;
            }
        };
        let eval_ns = measure(budget, || {
            black_box(evaluate_value(&expr, &resolver).ok());
        });
        let detail_ns = measure(budget, || {
            black_box(expr.eval(&resolver));
        });
        println!("{label:<18} {parse_ns:>12.0} {eval_ns:>12.0} {detail_ns:>14.0}");
    }
}
