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

use serde_json::{Value, json};

use crate::metrics::{Derived, metrics};
use crate::records::{Req, span_ms};
use crate::report::Checker;

pub fn check_stages(c: &mut Checker<'_>, artifact: &Value, reqs: &[Req<'_>], ci_z: f64) {
    let Some(stages) = artifact.get("stages").and_then(Value::as_array) else { return };
    let repeats = crate::records::repeats(reqs);
    let mut start = 0u64;
    for (i, stage) in stages.iter().enumerate() {
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
        let mine: Vec<&Req<'_>> = reqs.iter().filter(|r| r.int("stage") == Some(i as u64)).collect();
        let eligible = mine.iter().filter(|r| r.eligible).count();
        c.check(&p("attempted"), json!(mine.len()));
        c.check(&p("completed"), json!(eligible));
        c.check(&p("failed"), json!(mine.len() - eligible));
        let wall = repeats
            .iter()
            .map(|rep| span_ms(&mine.iter().copied().filter(|r| r.repeat == *rep).collect::<Vec<_>>()))
            .sum::<Option<f64>>();
        match wall {
            Some(w) => c.check(&p("wall_clock_ms"), json!(w)),
            None => c.uncheck(&p("wall_clock_ms"), "records lack actual_send_ms/finished_ms"),
        }
        let derived = metrics(&mine, wall, ci_z);
        let keys: Vec<String> = stage
            .get("metrics")
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for key in keys {
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
