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

use crate::metrics::{Derived, metrics};
use crate::records::{self, Req, span_ms};
use crate::repeats::{REPEAT_KEYS, across};
use crate::stats::Z95_PROTOCOL;

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
    let mut all: Vec<Req<'_>> = Vec::new();
    // Each (artifact, repeat) apart: two artifacts' repeat 0 are two repeats.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (a, artifact) in artifacts.iter().enumerate() {
        let (reqs, _) =
            records::read(artifact).ok_or_else(|| format!("artifact {a} has no request_timings"))?;
        let first = all.len();
        for repeat in records::repeats(&reqs) {
            groups.push(
                reqs.iter().enumerate().filter(|(_, r)| r.repeat == repeat).map(|(i, _)| first + i).collect(),
            );
        }
        all.extend(reqs);
    }
    let mut wall = 0.0;
    let mut per_key: Vec<Vec<f64>> = vec![Vec::new(); REPEAT_KEYS.len()];
    for group in &groups {
        let reqs: Vec<&Req<'_>> = group.iter().map(|&i| &all[i]).collect();
        let span = span_ms(&reqs).ok_or("records lack actual_send_ms/finished_ms")?;
        wall += span;
        let figures = metrics(&reqs, Some(span), Z95_PROTOCOL);
        for (j, key) in REPEAT_KEYS.iter().enumerate() {
            if let Some(x) = value_of(&figures, key).and_then(|v| v.as_f64()) {
                per_key[j].push(x);
            }
        }
    }
    let every: Vec<&Req<'_>> = all.iter().collect();
    let metrics: Map<String, Value> = metrics(&every, Some(wall), Z95_PROTOCOL)
        .into_iter()
        .filter_map(|(key, derived)| match derived {
            Derived::Value(v) => Some((key, v)),
            Derived::Unknown(_) => None,
        })
        .collect();
    let across_repeats = REPEAT_KEYS
        .iter()
        .zip(&per_key)
        .filter(|(_, values)| values.len() == groups.len())
        .map(|(key, values)| (key.to_string(), across(values)))
        .collect();
    Ok(Pooled {
        metrics,
        across_repeats,
        attempted: all.len() as u64,
        completed: all.iter().filter(|r| r.eligible).count() as u64,
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
