//! The headline comparison of two benchmark/v1 artifacts (published A,
//! reproduced B): one [`Comparison`] row per headline metric.
//!
//! | row | samples | method |
//! |---|---|---|
//! | `throughput_tok_s` | `repeats.runs[*].throughput_tok_s`, else the single `metrics.throughput_tok_s` | [`compare_repeats`] |
//! | `ttft_p50_ms`, `ttft_p95_ms` | eligible `request_timings[*].ttft_ms`, by `repeat` | [`compare_across_repeats`], else [`compare_samples`](crate::compare::compare_samples); p50 / p95 |
//! | `tpot_p50_ms`, `tpot_p95_ms` | eligible `tpot_ms` | same |
//! | `e2e_p50_ms`, `e2e_p95_ms` | eligible `e2e_ms` | same |
//! | `decode_tok_s_mean` | eligible `decode_tok_s` | same, mean |
//! | `request_canary_passed` | `metrics.request_canary_passed` / `_samples` | exact, below |
//!
//! A per-request row is judged across repeats (the statistic within each
//! repeat, a Welch interval over them, or one run against the other side's
//! repeats: `spread` `across-repeats`) when a side has at least 2 repeats
//! with enough samples each; otherwise from the pooled requests by the
//! block bootstrap, widened by the stated run-to-run spread (`spread`
//! `stated`) or, with none stated, `inconclusive` (`spread` `within-run`,
//! the reason saying why). [`measured_spreads`] gives the spread an
//! artifact's repeats show, which a bundle states.
//!
//! TTFT and E2E rows never say `differs` for a difference no larger than
//! the two artifacts' client errors combined (`client_error.latency_bound_ms`,
//! [`within_client_error`]): it is `inconclusive`.
//!
//! Canaries are correctness, not noise: `reproduced` when both sides
//! judged canaries and every one passed on both; `differs` when every
//! canary passed on exactly one side; `inconclusive` when neither side
//! judged any, or both saw failures (a, b: passed counts; n: judged counts;
//! relative delta: ratio of pass rates − 1).

use std::path::Path;

use serde_json::{Map, Value};

use crate::bootstrap::Statistic;
use crate::columns::{self, Row, RowWriter, Rows};
use crate::compare::{
    CompareOptions, Comparison, RepeatStat, Spread, Verdict, compare_across_repeats, compare_finite,
    compare_repeats, judge_within_run,
};
use crate::records::Classifier;
use crate::rederive::RederiveError;
use crate::run_to_run::{Spreads, measured};

/// Every headline row's metric and the family a recipe's `run-to-run`
/// names it by (canaries are exact: no spread).
pub const HEADLINE_ROWS: [(&str, &str); 8] = [
    ("throughput_tok_s", "throughput"),
    ("ttft_p50_ms", "ttft"),
    ("ttft_p95_ms", "ttft"),
    ("tpot_p50_ms", "tpot"),
    ("tpot_p95_ms", "tpot"),
    ("e2e_p50_ms", "e2e"),
    ("e2e_p95_ms", "e2e"),
    ("decode_tok_s_mean", "decode"),
];

/// The per-request headline rows: metric, record key, statistic.
const LATENCY_ROWS: [(&str, &str, Statistic); 7] = [
    ("ttft_p50_ms", "ttft_ms", Statistic::Percentile(50)),
    ("ttft_p95_ms", "ttft_ms", Statistic::Percentile(95)),
    ("tpot_p50_ms", "tpot_ms", Statistic::Percentile(50)),
    ("tpot_p95_ms", "tpot_ms", Statistic::Percentile(95)),
    ("e2e_p50_ms", "e2e_ms", Statistic::Percentile(50)),
    ("e2e_p95_ms", "e2e_ms", Statistic::Percentile(95)),
    ("decode_tok_s_mean", "decode_tok_s", Statistic::Mean),
];

/// The per-request keys the headline rows compare.
const SAMPLED: [&str; 4] = ["ttft_ms", "tpot_ms", "e2e_ms", "decode_tok_s"];

/// One artifact's eligible headline samples, kept as rows of a temporary
/// file (one row per eligible record) and loaded one key at a time.
pub struct Samples {
    rows: Option<Rows>,
}

impl Samples {
    /// From the records in memory (none readable: no samples).
    pub fn of(artifact: &Value) -> Result<Self, RederiveError> {
        let (Some(obj), Some(records)) =
            (artifact.as_object(), artifact.get("request_timings").and_then(Value::as_array))
        else {
            return Ok(Self { rows: None });
        };
        let mut s = Writer::new(obj)?;
        for (pos, t) in records.iter().enumerate() {
            match t.as_object() {
                Some(raw) => s.add(pos, raw)?,
                None => return Ok(Self { rows: None }),
            }
        }
        s.finish()
    }

    /// From the artifact file at `path`, streamed; `head`: its top-level
    /// members (its `failures` decide eligibility in the reference format).
    pub fn of_file(head: &Value, path: &Path) -> Result<Self, RederiveError> {
        let empty = Map::new();
        let mut s = Writer::new(head.as_object().unwrap_or(&empty))?;
        let mut readable = true;
        let found = crate::artifact_file::for_each_record(path, |pos, record| match record {
            Value::Object(raw) => s.add(pos, &raw),
            _ => {
                readable = false;
                Ok(())
            }
        })?;
        if !(found && readable) {
            return Ok(Self { rows: None });
        }
        s.finish()
    }

    fn recycle(&self, v: Vec<f64>) {
        if let Some(rows) = &self.rows {
            rows.recycle(v);
        }
    }

    /// Eligible values of `key` (one of [`SAMPLED`]), in record order.
    fn values(&self, key: &str) -> Vec<f64> {
        match (&self.rows, columns::of_key(key)) {
            (Some(rows), Some(col)) => rows.column(col, |_| true),
            _ => Vec::new(),
        }
    }

    /// `stat` of the eligible finite values of `key` within each repeat
    /// that has some, in repeat order: one repeat's column loaded at a time.
    fn per_repeat(&self, key: &str, stat: Statistic) -> Vec<RepeatStat> {
        let (Some(rows), Some(col)) = (&self.rows, columns::of_key(key)) else { return Vec::new() };
        let mut repeats = std::collections::BTreeSet::new();
        rows.scan(|r| {
            if r.get(col).is_some_and(f64::is_finite) {
                repeats.insert(r.repeat());
            }
        });
        repeats
            .into_iter()
            .filter_map(|repeat| {
                let mut v = rows.column(col, |r| r.repeat() == repeat);
                v.retain(|x| x.is_finite());
                let found = stat.of(&mut v).map(|value| RepeatStat { samples: v.len(), value });
                rows.recycle(v);
                found
            })
            .collect()
    }
}

struct Writer<'h> {
    classify: Classifier<'h>,
    rows: RowWriter,
}

fn scratch(e: std::io::Error) -> RederiveError {
    RederiveError::Scratch(e.to_string())
}

impl<'h> Writer<'h> {
    fn new(head: &'h Map<String, Value>) -> Result<Self, RederiveError> {
        Ok(Self { classify: Classifier::new(head), rows: RowWriter::new().map_err(scratch)? })
    }

    fn add(&mut self, pos: usize, raw: &Map<String, Value>) -> Result<(), RederiveError> {
        let r = self.classify.req(pos, raw);
        if !r.eligible {
            return Ok(());
        }
        let mut row = Row::default();
        for key in SAMPLED {
            if let Some(col) = columns::of_key(key) {
                row.set(col, r.num(key));
            }
        }
        // Per-request statistics are judged repeat by repeat when both sides have repeats.
        row.set(columns::Col::Repeat, Some(r.repeat as f64));
        self.rows.push(&row).map_err(scratch)
    }

    fn finish(self) -> Result<Samples, RederiveError> {
        Ok(Samples { rows: Some(self.rows.finish().map_err(scratch)?) })
    }
}

fn repeat_values(artifact: &Value, key: &str) -> Vec<f64> {
    let runs: Vec<f64> = artifact
        .pointer("/repeats/runs")
        .and_then(Value::as_array)
        .map(|runs| runs.iter().filter_map(|r| r.get(key).and_then(Value::as_f64)).collect())
        .unwrap_or_default();
    if runs.is_empty() {
        artifact.pointer(&format!("/metrics/{key}")).and_then(Value::as_f64).into_iter().collect()
    } else {
        runs
    }
}

/// Compares two sides' canary pass counts.
pub fn compare_canaries(a: (u64, u64), b: (u64, u64)) -> Comparison {
    let ((pa, na), (pb, nb)) = (a, b);
    let rate = |p: u64, n: u64| (n > 0).then(|| p as f64 / n as f64);
    let (ra, rb) = (rate(pa, na), rate(pb, nb));
    let clean = |p: u64, n: u64| n > 0 && p == n;
    let (verdict, reason) = if na == 0 || nb == 0 {
        (Verdict::Inconclusive, "a side judged no canaries".to_string())
    } else if clean(pa, na) && clean(pb, nb) {
        (Verdict::Reproduced, format!("all canaries passed on both sides ({pa}/{na}, {pb}/{nb})"))
    } else if clean(pa, na) != clean(pb, nb) {
        (Verdict::Differs, format!("canaries failed on one side only ({pa}/{na} vs {pb}/{nb})"))
    } else {
        (Verdict::Inconclusive, format!("canary failures on both sides ({pa}/{na} vs {pb}/{nb})"))
    };
    Comparison {
        metric: "request_canary_passed".into(),
        a: Some(pa as f64),
        b: Some(pb as f64),
        relative_delta: ra.zip(rb).filter(|(a, _)| *a > 0.0).map(|(a, b)| b / a - 1.0),
        ci_low: None,
        ci_high: None,
        n_a: na as usize,
        n_b: nb as usize,
        method: "exact: canary pass counts (correctness, not noise)".into(),
        verdict,
        reason,
        settle_n: None,
        spread: Spread::NoInterval,
        repeats: None,
    }
}

/// An artifact's bound on its own latency stamps (`client_error`), ms; 0
/// for an artifact written before anvil stated one.
pub fn client_error_ms(artifact: &Value) -> f64 {
    artifact.pointer("/client_error/latency_bound_ms").and_then(Value::as_f64).unwrap_or(0.0)
}

/// Latencies that run from a send stamp to an arrival stamp (TPOT divides
/// a difference of arrivals by the tokens between them, so its share of
/// the error is smaller; it is not adjusted).
fn stamped_latency(key: &str) -> bool {
    matches!(key, "ttft_ms" | "e2e_ms")
}

/// A `differs` whose difference is no larger than the two sides' client
/// errors combined is `inconclusive`: the client cannot tell them apart.
pub fn within_client_error(row: &mut Comparison, combined_ms: f64) {
    let (Some(a), Some(b)) = (row.a, row.b) else { return };
    if row.verdict == Verdict::Differs && (b - a).abs() <= combined_ms {
        row.verdict = Verdict::Inconclusive;
        row.reason = format!(
            "{}; but the difference ({:.4} ms) is within the two cells' client error combined ({combined_ms:.4} ms)",
            row.reason,
            (b - a).abs()
        );
        row.settle_n = None;
    }
}

/// The headline rows for `published` (A) against `reproduced` (B), both in memory.
pub fn compare_artifacts(published: &Value, reproduced: &Value, opts: &CompareOptions) -> Vec<Comparison> {
    // A row file that cannot be written leaves that side without samples.
    let samples = |a: &Value| Samples::of(a).unwrap_or(Samples { rows: None });
    compare_sampled(published, &samples(published), reproduced, &samples(reproduced), opts)
}

/// [`compare_artifacts`] of two artifact files, streamed: `*_head` are
/// their top-level members (the records are read from `*_file`, one key's
/// samples held at a time). A file whose records cannot be read is an error.
pub fn compare_artifact_files(
    (published_head, published_file): (&Value, &Path),
    (reproduced_head, reproduced_file): (&Value, &Path),
    opts: &CompareOptions,
) -> Result<Vec<Comparison>, RederiveError> {
    let a = Samples::of_file(published_head, published_file)?;
    let b = Samples::of_file(reproduced_head, reproduced_file)?;
    Ok(compare_sampled(published_head, &a, reproduced_head, &b, opts))
}

/// The run-to-run spread one artifact's repeats show, per headline row
/// ([`crate::run_to_run::measured`]: the log-sd of the per-repeat figures):
/// throughput from each repeat's, a per-request statistic from each
/// repeat's own, where every repeat has the samples it needs
/// ([`samples_needed`](crate::compare::samples_needed)). Empty for a cell
/// measured once. `head`: the artifact's top-level members; `path`: its file.
pub fn measured_spreads(head: &Value, path: &Path, opts: &CompareOptions) -> Result<Spreads, RederiveError> {
    let mut spreads = Spreads::new();
    if let Some(spread) = measured(&repeat_values(head, "throughput_tok_s")) {
        spreads.insert("throughput_tok_s".into(), spread);
    }
    let samples = Samples::of_file(head, path)?;
    for (metric, key, stat) in LATENCY_ROWS {
        let per_repeat = samples.per_repeat(key, stat);
        let need = crate::compare::samples_needed(stat, opts);
        if per_repeat.iter().any(|r| r.samples < need) {
            continue;
        }
        let values: Vec<f64> = per_repeat.iter().map(|r| r.value).collect();
        if let Some(spread) = measured(&values) {
            spreads.insert(metric.into(), spread);
        }
    }
    Ok(spreads)
}

/// The headline rows of two artifacts' heads and their samples.
pub fn compare_sampled(
    published: &Value,
    a_samples: &Samples,
    reproduced: &Value,
    b_samples: &Samples,
    opts: &CompareOptions,
) -> Vec<Comparison> {
    let mut rows = vec![compare_repeats(
        "throughput_tok_s",
        &repeat_values(published, "throughput_tok_s"),
        &repeat_values(reproduced, "throughput_tok_s"),
        opts,
    )];
    // The two cells' client errors combined: no difference within it is real.
    let combined = client_error_ms(published) + client_error_ms(reproduced);
    for (metric, key, stat) in LATENCY_ROWS {
        // With repeats on both sides: the statistic of each repeat, judged
        // across repeats (the run-to-run spread in the interval).
        let (ra, rb) = (a_samples.per_repeat(key, stat), b_samples.per_repeat(key, stat));
        let mut row = match compare_across_repeats(metric, stat, &ra, &rb, opts) {
            Ok(row) => row,
            Err(why) => {
                // Else the pooled requests, one key of both sides at a time.
                let (mut a, mut b) = (a_samples.values(key), b_samples.values(key));
                // Filtered in place (no copies): JSON numbers are finite, so
                // this normally keeps all.
                a.retain(|v| v.is_finite());
                b.retain(|v| v.is_finite());
                let mut row = compare_finite(metric, stat, &a, &b, opts);
                a_samples.recycle(a);
                b_samples.recycle(b);
                judge_within_run(&mut row, &why.to_string(), [ra.len(), rb.len()], opts);
                row
            }
        };
        if stamped_latency(key) {
            within_client_error(&mut row, combined);
        }
        rows.push(row);
    }
    let canaries = |v: &Value| {
        let get = |k: &str| v.pointer(&format!("/metrics/{k}")).and_then(Value::as_u64).unwrap_or(0);
        (get("request_canary_passed"), get("request_canary_samples"))
    };
    rows.push(compare_canaries(canaries(published), canaries(reproduced)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_difference_within_the_client_error_is_not_one() {
        let mut row = compare_canaries((1, 1), (0, 1));
        assert_eq!(row.verdict, Verdict::Differs);
        row.metric = "ttft_p50_ms".into();
        (row.a, row.b) = (Some(1.0), Some(1.004));
        within_client_error(&mut row, 0.002);
        assert_eq!(row.verdict, Verdict::Differs, "0.004 ms apart, errors 0.002 ms");
        within_client_error(&mut row, 0.005);
        assert_eq!(row.verdict, Verdict::Inconclusive);
        assert!(row.reason.contains("client error"), "{}", row.reason);
    }

    /// `offsets.len()` repeats of 50 requests each, every repeat's TTFTs
    /// around 100 ms times its offset.
    fn repeated(offsets: &[f64]) -> Value {
        let mut timings = Vec::new();
        for (repeat, offset) in offsets.iter().enumerate() {
            for i in 0..50 {
                let ttft = offset * (95.0 + f64::from(i % 10));
                timings.push(serde_json::json!({
                    "request_index": i, "repeat": repeat, "performance_eligible": true,
                    "ttft_ms": ttft, "e2e_ms": ttft + 100.0, "tpot_ms": 5.0, "decode_tok_s": 200.0,
                }));
            }
        }
        serde_json::json!({ "request_timings": timings })
    }

    #[test]
    fn latencies_of_repeated_cells_are_judged_across_repeats() {
        let opts = CompareOptions::default();
        let a = repeated(&[1.0, 1.06, 0.94]);
        let b = repeated(&[1.03, 1.09, 0.97]);
        let rows = compare_artifacts(&a, &b, &opts);
        let row = |m: &str| rows.iter().find(|r| r.metric == m).unwrap();
        let ttft = row("ttft_p50_ms");
        assert_eq!((ttft.spread, ttft.repeats), (Spread::AcrossRepeats, Some([3, 3])), "{ttft:?}");
        assert_eq!((ttft.n_a, ttft.n_b), (150, 150));
        // The runs' 6% spread is in the interval: 3% apart is not shown either way.
        assert_eq!(ttft.verdict, Verdict::Inconclusive, "{ttft:?}");
        assert_eq!(row("tpot_p50_ms").verdict, Verdict::Reproduced);
        // 50 requests a repeat carry a per-repeat p95 (needs 40).
        assert_eq!(row("ttft_p95_ms").spread, Spread::AcrossRepeats);
        // One run on a side: judged against the other side's repeats.
        let one = repeated(&[1.0]);
        let rows = compare_artifacts(&a, &one, &opts);
        let ttft = rows.iter().find(|r| r.metric == "ttft_p50_ms").unwrap();
        assert_eq!((ttft.spread, ttft.repeats), (Spread::AcrossRepeats, Some([3, 1])), "{ttft:?}");
        // One run each and no spread stated: the within-run interval, not judged.
        let rows = compare_artifacts(&one, &one, &opts);
        let ttft = rows.iter().find(|r| r.metric == "ttft_p50_ms").unwrap();
        assert_eq!((ttft.spread, ttft.verdict), (Spread::WithinRun, Verdict::Inconclusive), "{ttft:?}");
        assert!(ttft.reason.contains("one run on side A and one run on side B"), "{}", ttft.reason);
    }
}
