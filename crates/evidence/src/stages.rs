//! anvil's `stages` block (a cell measured in consecutive load stages):
//! each stage's window and figures, re-derived from the records that
//! carry its index in `stage`.
//!
//! - `window_ms` = `[Σ earlier duration_ms, that + duration_ms]`;
//! - `attempted` / `completed` / `failed`: the stage's records, eligible
//!   or not;
//! - `wall_clock_ms`: Σ over repeats of (latest `finished_ms` − earliest
//!   `actual_send_ms`) of the stage's records in that repeat;
//! - `metrics.KEY`: the cell-level metric `KEY` (see [`crate::metrics`])
//!   over the stage's records, throughput over the stage's wall clock.
//!
//! The stage's settings (`arrival`, `concurrency`, `duration_ms`) are inputs.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::columns::{Col, Row, Rows};
use crate::metrics::{Derived, Group, metrics};
use crate::report::Checker;
use crate::tally::Tally;

/// `stages`: one [`Tally`] per stage index the records carry.
pub fn check_stages(
    c: &mut Checker<'_>,
    artifact: &Map<String, Value>,
    rows: &Rows,
    stages: &BTreeMap<u64, Tally>,
    ci_z: f64,
) {
    let Some(list) = artifact.get("stages").and_then(Value::as_array) else { return };
    let none = Tally::default();
    let mut start = 0u64;
    for (i, stage) in list.iter().enumerate() {
        let p = |k: &str| format!("stages[{i}].{k}");
        for input in ["arrival", "concurrency", "duration_ms"] {
            c.uncheck(&p(input), "the stage's setting (an input)");
        }
        c.check(&p("stage"), json!(i));
        match stage.get("duration_ms").and_then(Value::as_u64) {
            Some(d) => {
                c.check(&p("window_ms"), json!([start as f64, (start + d) as f64]));
                start += d;
            }
            None => c.uncheck(&p("window_ms"), "no integer duration_ms"),
        }
        let tally = stages.get(&(i as u64)).unwrap_or(&none);
        c.check(&p("attempted"), json!(tally.attempted));
        c.check(&p("completed"), json!(tally.eligible));
        c.check(&p("failed"), json!(tally.attempted - tally.eligible));
        // Σ over the stage's repeats (a repeat without its records adds 0).
        let wall = tally.wall_ms();
        match wall {
            Some(w) => c.check(&p("wall_clock_ms"), json!(w)),
            None => c.uncheck(&p("wall_clock_ms"), "records lack actual_send_ms/finished_ms"),
        }
        let keys: Vec<String> = stage
            .get("metrics")
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        // Only the distributions the stage's block names are loaded.
        let want = |name: &str| keys.iter().any(|k| k.starts_with(name));
        let member = |r: &Row| r.is(Col::Stage, i as u64);
        let derived = metrics(&Group { tally, rows, member: &member }, wall, ci_z, &want);
        for key in keys.iter().cloned() {
            let path = p(&format!("metrics.{key}"));
            match derived.iter().find(|(k, _)| *k == key) {
                Some((_, Derived::Value(v))) => c.check(&path, v.clone()),
                Some((_, Derived::Unknown(why))) => c.uncheck(&path, why.clone()),
                None => c.uncheck(&path, "not a metric benchmark/v1 defines"),
            }
        }
    }
    c.sweep("stages", "not a stage field anvil defines");
}
