//! Several measurements of one cell read as one sample: a cell's artifact
//! and the artifacts of its extra repeats (a gate or screen that measured
//! more because its verdict was undecided).
//!
//! Every figure is re-derived from the union of the artifacts' request
//! records with the definitions of [`crate::rederive`], exactly as if one
//! artifact had measured all of them as repeats: distributions and their
//! intervals over every eligible request, throughput over the summed
//! per-repeat wall spans, and `across_repeats` over each repeat of each
//! artifact. Pooling is valid because every artifact measures the same
//! configuration (the extras' fingerprints derive from the cell's) under its
//! own seed, so its requests are further draws from the same distribution.

use serde_json::{Map, Value};

use crate::columns::{Col, KEYED, Row, RowWriter};
use crate::metrics::{Derived, Group, metrics};
use crate::records::Classifier;
use crate::repeats::{REPEAT_KEYS, across};
use crate::stats::Z95_PROTOCOL;
use crate::tally::Tally;

/// What the pooled records say.
#[derive(Debug, Clone, PartialEq)]
pub struct Pooled {
    /// A `metrics` block over every record (keys as an artifact has them;
    /// a figure the records cannot give is absent).
    pub metrics: Map<String, Value>,
    /// `repeats.across_repeats` over every repeat of every artifact.
    pub across_repeats: Map<String, Value>,
    /// Requests attempted, and those that completed eligibly.
    pub attempted: u64,
    pub completed: u64,
    /// Repeats pooled (each artifact's repeats, counted apart).
    pub repeats: u64,
    /// Σ of the repeats' wall spans.
    pub wall_clock_ms: f64,
}

/// Pool `artifacts` (each an `anvil-serving.benchmark/v1` document with its
/// `request_timings`). Fails when one lacks records or their send and
/// finish times, without which no throughput can be derived.
pub fn pool(artifacts: &[&Value]) -> Result<Pooled, String> {
    let scratch = |e: std::io::Error| format!("temporary row file: {e}");
    let mut rows = RowWriter::new().map_err(scratch)?;
    let mut every = Tally::pooling();
    // Each (artifact, repeat) apart: two artifacts' repeat 0 are two repeats.
    // A row's `Col::Repeat` is its group's index here.
    let mut groups: Vec<Tally> = Vec::new();
    for (a, artifact) in artifacts.iter().enumerate() {
        let missing = || format!("artifact {a} has no request_timings");
        let obj = artifact.as_object().ok_or_else(missing)?;
        let timings = obj.get("request_timings").and_then(Value::as_array).ok_or_else(missing)?;
        let mut classify = Classifier::new(obj);
        let mut mine: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
        for t in timings {
            mine.insert(t.get("repeat").and_then(Value::as_u64).unwrap_or(0), 0);
        }
        for (slot, g) in mine.values_mut().zip(groups.len()..) {
            *slot = g;
        }
        groups.resize_with(groups.len() + mine.len(), Tally::default);
        for (pos, t) in timings.iter().enumerate() {
            let r = classify.req(pos, t.as_object().ok_or_else(missing)?);
            let g = mine.get(&r.repeat).copied().unwrap_or(0);
            every.add(&r);
            groups[g].add(&r);
            let mut row = Row::default();
            for (key, col) in KEYED {
                row.set(col, r.num(key));
            }
            row.set(Col::OutputTokensInt, r.int("output_tokens").map(|n| n as f64));
            row.set(Col::Repeat, Some(g as f64));
            row.set(Col::Eligible, Some(f64::from(u8::from(r.eligible))));
            rows.push(&row).map_err(scratch)?;
        }
    }
    let rows = rows.finish().map_err(scratch)?;
    let mut wall = 0.0;
    let mut per_key: Vec<Vec<f64>> = vec![Vec::new(); REPEAT_KEYS.len()];
    for (g, tally) in groups.iter().enumerate() {
        let span = tally.wall_ms().ok_or("records lack actual_send_ms/finished_ms")?;
        wall += span;
        let member = |r: &Row| r.repeat() == g as u64;
        let figures =
            metrics(&Group { tally, rows: &rows, member: &member }, Some(span), Z95_PROTOCOL, &|_| true);
        for (j, key) in REPEAT_KEYS.iter().enumerate() {
            if let Some(x) = value_of(&figures, key).and_then(|v| v.as_f64()) {
                per_key[j].push(x);
            }
        }
    }
    let all = |_: &Row| true;
    let metrics: Map<String, Value> =
        metrics(&Group { tally: &every, rows: &rows, member: &all }, Some(wall), Z95_PROTOCOL, &|_| true)
            .into_iter()
            .filter_map(|(key, derived)| match derived {
                Derived::Value(v) => Some((key, v)),
                Derived::Unknown(_) => None,
            })
            .collect();
    if let Some(e) = rows.error() {
        return Err(scratch(e));
    }
    let across_repeats = REPEAT_KEYS
        .iter()
        .zip(&per_key)
        .filter(|(_, values)| values.len() == groups.len())
        .map(|(key, values)| (key.to_string(), across(values)))
        .collect();
    Ok(Pooled {
        metrics,
        across_repeats,
        attempted: every.attempted,
        completed: every.eligible,
        repeats: groups.len() as u64,
        wall_clock_ms: wall,
    })
}

fn value_of<'a>(figures: &'a [(String, Derived)], key: &str) -> Option<&'a Value> {
    figures.iter().find(|(k, _)| k == key).and_then(|(_, d)| match d {
        Derived::Value(v) => Some(v),
        Derived::Unknown(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn artifact(ttfts: &[f64], start_ms: f64) -> Value {
        let timings: Vec<Value> = ttfts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let sent = start_ms + i as f64 * 10.0;
                json!({
                    "request_index": i, "repeat": 0, "performance_eligible": true,
                    "actual_send_ms": sent, "finished_ms": sent + t + 5.0,
                    "ttft_ms": t, "output_tokens": 10,
                })
            })
            .collect();
        json!({ "request_timings": timings })
    }

    #[test]
    fn two_artifacts_pool_as_two_repeats_of_one_sample() {
        let a = artifact(&[10.0, 20.0, 30.0], 0.0);
        let b = artifact(&[40.0, 50.0, 60.0], 1000.0);
        let pooled = pool(&[&a, &b]).unwrap();
        assert_eq!((pooled.attempted, pooled.completed, pooled.repeats), (6, 6, 2));
        assert_eq!(pooled.metrics["ttft_max_ms"], 60.0);
        assert_eq!(pooled.metrics["ttft_samples"], 6);
        // Each repeat's span (a: 0 → 20+30+5, b likewise) adds up; the
        // 1000 ms gap between the two measurements is not measured time.
        assert_eq!(pooled.wall_clock_ms, 55.0 + 85.0);
        assert_eq!(pooled.metrics["output_tokens"], 60);
        assert_eq!(pooled.across_repeats["throughput_tok_s"]["samples"], 2);
        // One artifact pools to its own figures.
        let alone = pool(&[&a]).unwrap();
        assert_eq!(alone.repeats, 1);
        assert_eq!(alone.metrics["ttft_p50_ms"], 20.0);
    }

    #[test]
    fn an_artifact_without_records_is_refused() {
        assert!(pool(&[&json!({})]).unwrap_err().contains("no request_timings"));
    }
}
