//! anvil's `repeats` (per-repeat aggregates and their across-repeat CIs)
//! and `per_target` (per-replica) blocks.

use serde_json::{Value, json};

use std::collections::BTreeMap;

use serde_json::Map;

use crate::columns::{Col, Row, Rows, Visited};
use crate::metrics::{Derived, Group, metrics, per_second};
use crate::report::Checker;
use crate::stats::Summary;
use crate::tally::Tally;
use crate::tdist::t95_table;

/// Per-repeat aggregates anvil keeps (and summarizes across repeats).
pub const REPEAT_KEYS: [&str; 8] = [
    "throughput_tok_s",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "ttft_mean_ms",
    "tpot_mean_ms",
    "e2e_p50_ms",
    "decode_tok_s_mean",
    "request_throughput_req_s",
];

/// Checks `repeats.count`, every `repeats.runs[i]` and `repeats.across_repeats`.
/// The distributions [`REPEAT_KEYS`] draw on.
const REPEAT_DISTRIBUTIONS: [&str; 4] = ["ttft", "tpot", "e2e", "decode_tok_s"];

/// `repeats`: one [`Tally`] per repeat present.
pub fn check_repeats(
    c: &mut Checker<'_>,
    artifact: &Map<String, Value>,
    rows: &Rows,
    repeats: &BTreeMap<u64, Tally>,
    ci_z: f64,
) {
    let Some(runs) = artifact.get("repeats").and_then(|r| r.get("runs")).and_then(Value::as_array) else {
        return;
    };
    let distinct: Vec<u64> = repeats.keys().copied().collect();
    c.check("repeats.count", json!(distinct.len()));
    let mut per_key: Vec<Vec<f64>> = vec![Vec::new(); REPEAT_KEYS.len()];
    let mut all_known = true;
    for i in 0..runs.len() {
        // Runs are matched to repeats by position: runs[i] is the i-th repeat
        // number present in the records.
        let Some(repeat) = distinct.get(i).copied() else {
            c.uncheck(&format!("repeats.runs[{i}]"), "no records of this run");
            all_known = false;
            continue;
        };
        let Some(tally) = repeats.get(&repeat) else { continue };
        let p = |k: &str| format!("repeats.runs[{i}].{k}");
        c.check(&p("repeat"), json!(repeat));
        let wall = tally.wall_ms();
        c.check(&p("attempted"), json!(tally.attempted));
        c.check(&p("completed"), json!(tally.eligible));
        match wall {
            Some(w) => c.check(&p("wall_clock_ms"), json!(w)),
            None => c.uncheck(&p("wall_clock_ms"), "records lack actual_send_ms/finished_ms"),
        }
        let member = |r: &Row| r.repeat() == repeat;
        let group = Group { tally, rows, member: &member };
        let m = metrics(&group, wall, ci_z, &|name| REPEAT_DISTRIBUTIONS.contains(&name));
        let get = |k: &str| m.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        if let Some(Derived::Value(v)) = get("output_tokens") {
            c.check(&p("output_tokens"), v);
        }
        for (j, key) in REPEAT_KEYS.iter().enumerate() {
            match get(key) {
                Some(Derived::Value(v)) => {
                    if let Some(x) = v.as_f64() {
                        per_key[j].push(x);
                    }
                    c.check(&p(key), v);
                }
                Some(Derived::Unknown(why)) => {
                    all_known = false;
                    c.uncheck(&p(key), why);
                }
                None => {
                    all_known = false;
                    c.uncheck(&p(key), "not a metric of the run");
                }
            }
        }
    }
    for (j, key) in REPEAT_KEYS.iter().enumerate() {
        let base = format!("repeats.across_repeats.{key}");
        if !all_known {
            c.uncheck(&base, "some per-repeat values could not be derived");
            continue;
        }
        let derived = across(&per_key[j]);
        match derived {
            Value::Object(m) => {
                for (stat, v) in m {
                    c.check(&format!("{base}.{stat}"), v);
                }
            }
            other => c.check(&base, other),
        }
    }
}

/// mean, stddev, min, max, samples and mean ± t_{0.975, n−1} · sd / √n,
/// with t rounded to 3 decimals (the printed table); null for no values.
pub fn across(values: &[f64]) -> Value {
    let Some(s) = Summary::of(values) else { return Value::Null };
    let half = s.sd.zip(t95_table(s.n - 1)).map(|(sd, t)| t * sd / (s.n as f64).sqrt());
    let num = |v: Option<f64>| v.map_or(Value::Null, Value::from);
    json!({
        "mean": s.mean,
        "stddev": num(s.sd),
        "ci95_low": num(half.map(|h| s.mean - h)),
        "ci95_high": num(half.map(|h| s.mean + h)),
        "min": s.min,
        "max": s.max,
        "samples": s.n,
    })
}

/// Checks `per_target[i]`: the requests whose `target` is its label, with
/// throughput over the cell's whole wall span (so replicas add up).
/// `targets`: the distinct labels of the records, in order of first
/// appearance (a row's `Col::Target` is an index into it), with their tallies.
pub fn check_per_target(
    c: &mut Checker<'_>,
    artifact: &Map<String, Value>,
    rows: &Rows,
    targets: &[(String, Tally)],
    wall: Option<f64>,
) {
    let Some(table) = artifact.get("per_target").and_then(Value::as_array) else { return };
    let none = Tally::default();
    for (i, row) in table.iter().enumerate() {
        let p = |k: &str| format!("per_target[{i}].{k}");
        // Rows are matched to `targets[i]` by position (the row's own label
        // is checked against it), else by the row's label.
        let from_targets = artifact
            .get("targets")
            .and_then(|t| t.get(i))
            .and_then(|t| t.get("label"))
            .and_then(Value::as_str);
        let Some(label) = from_targets.or(row.get("label").and_then(Value::as_str)) else {
            c.uncheck(&format!("per_target[{i}]"), "row has no label");
            continue;
        };
        let id = targets.iter().position(|(l, _)| l == label);
        let tally = id.map_or(&none, |id| &targets[id].1);
        let tokens = tally.output_tokens;
        c.check(&p("attempted"), json!(tally.attempted));
        c.check(&p("completed"), json!(tally.eligible));
        c.check(&p("failed"), json!(tally.attempted - tally.eligible));
        c.check(&p("output_tokens"), json!(tokens));
        match wall {
            Some(w) => c.check(&p("throughput_tok_s"), per_second(tokens as f64, w)),
            None => c.uncheck(&p("throughput_tok_s"), "no wall-clock span known"),
        }
        let num = |v: Option<f64>| v.map_or(Value::Null, Value::from);
        // Each column visited again for its mean and its percentiles (by
        // selection): none is held.
        let of = |col: Col| {
            move |r: &Row| {
                let member = id.is_some_and(|id| r.eligible() && r.is(Col::Target, id as u64));
                member.then(|| r.get(col)).flatten()
            }
        };
        let (ttft, tpot, e2e) = (of(Col::Ttft), of(Col::Tpot), of(Col::E2e));
        let ttft = Visited::new(rows, &ttft);
        c.check(&p("ttft_p50_ms"), num(ttft.percentile(50)));
        c.check(&p("ttft_p99_ms"), num(ttft.percentile(99)));
        c.check(&p("ttft_mean_ms"), num(crate::stats::mean_of(&ttft)));
        c.check(&p("tpot_mean_ms"), num(crate::stats::mean_of(&Visited::new(rows, &tpot))));
        c.check(&p("e2e_p50_ms"), num(Visited::new(rows, &e2e).percentile(50)));
        if from_targets.is_some() {
            c.check(&p("label"), json!(label));
        }
    }
}
