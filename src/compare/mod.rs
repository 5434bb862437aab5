//! Comparing two results, noise-aware: cells by their headline metrics
//! (from the raw per-request samples of both sides, by `anvil-evidence`),
//! screens by their winners, gates by their statuses, decisions by their
//! labels, and what differs in configuration as the likely cause. Against
//! a result imported from a peer tool, a metric the two define differently
//! gets no verdict: it is named as such (`crate::peers::definitions`).
//!
//! A side is anything that holds results: a bundle, a recorded run, a
//! recipe's latest run, a stored cell, or a lone benchmark/v1 JSON file.

mod alike;
mod error;
mod render;
mod report;
mod side;

pub use error::CompareError;
pub use render::render;
pub use report::{Agreement, CellReport, MetricsJudged, Report, Reproduction};
pub use side::{Cell, Side, resolve};

use anvil_evidence::{CompareOptions, Comparison, Verdict};
use serde_json::Value;

use crate::peers::definitions::{self, Alike};
use crate::plan::changes::{describe, diff_values};

/// The headline rows of two cells, their records streamed from their files
/// (one key's samples held at a time).
fn headline(
    (published, published_file): (&Value, &std::path::Path),
    (reproduced, reproduced_file): (&Value, &std::path::Path),
    options: &CompareOptions,
) -> Vec<Comparison> {
    anvil_evidence::compare_artifact_files(
        (published, published_file),
        (reproduced, reproduced_file),
        options,
    )
    // Records that cannot be read give no samples, as a side without records does.
    .unwrap_or_else(|_| anvil_evidence::compare_artifacts(published, reproduced, options))
}

/// Compares the two sides cell by cell. Each pair's heads are read when that
/// pair is compared and dropped after it (a side only locates its files).
/// Err: an artifact's head did not read (its message names the file).
pub fn compare(a: &Side, b: &Side, options: &CompareOptions) -> Result<Report, CompareError> {
    let mut cells = Vec::new();
    for (name, published_cell) in &a.cells {
        let Some(reproduced_cell) = b.cells.get(name).or_else(|| lone_pair(a, b)) else { continue };
        let read = |cell: &Cell| anvil_evidence::artifact_file::head_but_records(&cell.artifact_file);
        let (published, reproduced) = (read(published_cell)?, read(reproduced_cell)?);
        // A side measured once is judged against the spread the published side states (else B's).
        let stated = a.spreads.get(name).or_else(|| b.spreads.get(name)).cloned().unwrap_or_default();
        let options = CompareOptions { run_to_run: stated, ..options.clone() };
        let metrics = headline(
            (&published, &published_cell.artifact_file),
            (&reproduced, &reproduced_cell.artifact_file),
            &options,
        );
        let definitions = definitions::between(&published, &reproduced);
        let by_definition: Vec<String> = metrics
            .iter()
            .filter(|m| {
                definitions
                    .iter()
                    .any(|d| d.alike == Alike::Differs && d.metric == definitions::family(&m.metric))
            })
            .map(|m| m.metric.clone())
            .collect();
        let judged: Vec<Comparison> =
            metrics.iter().filter(|m| !by_definition.contains(&m.metric)).cloned().collect();
        let (verdict, settle_n) = cell_verdict(&judged);
        let workload = alike::check(&published, &reproduced);
        let mut configuration = Vec::new();
        // An imported result's preimage names files, not settings: nothing to set against a cell's.
        let imported =
            definitions::tool_of(&published).is_some() || definitions::tool_of(&reproduced).is_some();
        for (left, right) in [
            (&published_cell.preimage, &reproduced_cell.preimage),
            (&published_cell.server, &reproduced_cell.server),
        ]
        .into_iter()
        .filter(|_| !imported)
        {
            if let (Some(left), Some(right)) = (left, right) {
                configuration.extend(
                    diff_values(left, right)
                        .iter()
                        // An upstream fingerprint changes whenever its own inputs do: name those instead.
                        .filter(|c| !c.path.starts_with("upstream"))
                        .map(describe),
                );
            }
        }
        let runs = |head: &Value| {
            head.get("resolved_cell").and_then(|c| c.get("repeat")).and_then(Value::as_u64).unwrap_or(1)
        };
        cells.push(CellReport {
            name: name.clone(),
            workload,
            metrics,
            definitions,
            by_definition,
            verdict,
            settle_n,
            configuration,
            runs: [runs(&published), runs(&reproduced)],
        });
    }
    let agree = |left: &std::collections::BTreeMap<String, Value>,
                 right: &std::collections::BTreeMap<String, Value>| {
        left.iter()
            .map(|(name, a)| {
                let b = right.get(name).cloned().unwrap_or(Value::Null);
                Agreement { name: name.clone(), same: *a == b, a: a.clone(), b }
            })
            .collect::<Vec<_>>()
    };
    Ok(Report {
        a: a.label.clone(),
        b: b.label.clone(),
        threshold: options.threshold,
        cells,
        screens: agree(&a.screens, &b.screens),
        gates: agree(&a.gates, &b.gates),
        labels: a.labels.as_ref().map(|labels| {
            let other = b.labels.clone().unwrap_or(Value::Null);
            Agreement { name: "decision labels".into(), same: *labels == other, a: labels.clone(), b: other }
        }),
        reproduction: None,
    })
}

/// A cell's verdict from its metrics', which does not round up: `differs`
/// if any metric differs; `reproduced` only if every metric with samples on
/// both sides reproduced; else `inconclusive`, with the most samples per
/// side that any of its inconclusive metrics would need (`None` if none can say).
fn cell_verdict(metrics: &[Comparison]) -> (Verdict, Option<usize>) {
    let judged: Vec<&Comparison> = metrics.iter().filter(|m| m.n_a > 0 && m.n_b > 0).collect();
    if judged.iter().any(|m| m.verdict == Verdict::Differs) {
        return (Verdict::Differs, None);
    }
    if !judged.is_empty() && judged.iter().all(|m| m.verdict == Verdict::Reproduced) {
        return (Verdict::Reproduced, None);
    }
    let settle =
        judged.iter().filter(|m| m.verdict == Verdict::Inconclusive).filter_map(|m| m.settle_n).max();
    (Verdict::Inconclusive, settle)
}

/// Two lone cells (one each side, names differing) are compared with each other.
fn lone_pair<'a>(a: &Side, b: &'a Side) -> Option<&'a side::Cell> {
    (a.cells.len() == 1 && b.cells.len() == 1).then(|| b.cells.values().next()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(verdict: Verdict, n: usize, settle_n: Option<usize>) -> Comparison {
        Comparison {
            metric: "m".into(),
            a: Some(1.0),
            b: Some(1.0),
            relative_delta: Some(0.0),
            ci_low: None,
            ci_high: None,
            n_a: n,
            n_b: n,
            method: String::new(),
            verdict,
            reason: String::new(),
            settle_n,
            spread: anvil_evidence::compare::Spread::AcrossRepeats,
            repeats: Some([3, 3]),
        }
    }

    #[test]
    fn a_cell_reproduces_only_when_every_judged_metric_does() {
        use Verdict::{Differs, Inconclusive, Reproduced};
        let one_open = [metric(Reproduced, 16, None), metric(Inconclusive, 16, Some(120))];
        assert_eq!(cell_verdict(&one_open), (Inconclusive, Some(120)));
        // A metric with no samples on a side (canaries off) is not judged.
        let unjudged = [metric(Reproduced, 16, None), metric(Inconclusive, 0, None)];
        assert_eq!(cell_verdict(&unjudged), (Reproduced, None));
        let differs = [metric(Differs, 16, None), metric(Inconclusive, 16, Some(9))];
        assert_eq!(cell_verdict(&differs), (Differs, None));
        assert_eq!(cell_verdict(&[metric(Inconclusive, 0, None)]), (Inconclusive, None));
    }

    #[test]
    fn a_reproduction_answers_in_three_words() {
        let cell = |name: &str, verdict: Verdict| CellReport {
            name: name.into(),
            workload: alike::WorkloadCheck::default(),
            metrics: vec![metric(verdict, 36, None)],
            definitions: Vec::new(),
            by_definition: Vec::new(),
            verdict,
            settle_n: None,
            configuration: Vec::new(),
            runs: [1, 1],
        };
        let report = |cells: Vec<CellReport>| Report {
            a: "a".into(),
            b: "b".into(),
            threshold: 0.1,
            cells,
            screens: Vec::new(),
            gates: Vec::new(),
            labels: None,
            reproduction: None,
        };
        use Verdict::{Differs, Inconclusive, Reproduced};
        let answer = |r: &Report, labels: Option<bool>, headline: &[String]| {
            Reproduction::of(labels, &r.metrics_judged(headline)).answer
        };
        let all = report(vec![cell("c", Reproduced), cell("d", Reproduced)]);
        assert_eq!(answer(&all, None, &[]), Reproduced);
        assert_eq!(answer(&all, Some(true), &[]), Reproduced);
        assert_eq!(answer(&all, Some(false), &[]), Differs, "labels decide too");
        // A headline cell not compared leaves it open.
        assert_eq!(answer(&all, Some(true), &["c".into(), "e".into()]), Inconclusive);
        let mixed = report(vec![cell("c", Reproduced), cell("d", Inconclusive), cell("e", Differs)]);
        assert_eq!(answer(&mixed, Some(true), &[]), Differs);
        assert_eq!(answer(&mixed, Some(true), &["c".into(), "d".into()]), Inconclusive);
        assert_eq!(answer(&mixed, None, &["c".into()]), Reproduced);
        let judged = mixed.metrics_judged(&[]);
        assert_eq!(judged.counts_words(), "1 reproduced, 1 differs, 1 inconclusive");
        assert_eq!(judged.differs_words().as_deref(), Some("cell e: m +0.0%"));
        // Nothing judged: not shown to reproduce.
        assert_eq!(answer(&report(Vec::new()), None, &[]), Inconclusive);
    }

    #[test]
    fn an_open_cell_says_why_and_what_change_it_could_show() {
        use anvil_evidence::compare::Spread;
        let mut wide = metric(Verdict::Inconclusive, 36, Some(9));
        (wide.metric, wide.ci_low, wide.ci_high) = ("tpot_p50_ms".into(), Some(0.8), Some(1.25));
        let mut wider = wide.clone();
        (wider.metric, wider.ci_low, wider.ci_high) = ("ttft_p50_ms".into(), Some(0.5), Some(2.0));
        let cell = |metrics: Vec<Comparison>| CellReport {
            name: "c".into(),
            workload: alike::WorkloadCheck::default(),
            metrics,
            definitions: Vec::new(),
            by_definition: Vec::new(),
            verdict: Verdict::Inconclusive,
            settle_n: None,
            configuration: Vec::new(),
            runs: [2, 2],
        };
        // Half-width ln 1.25 around 1: a change shows beyond 1.1 × 1.25 − 1 = +37.5%.
        let why = cell(vec![wide.clone(), wider]).why_open(0.1);
        assert!(
            why.contains("the narrowest, tpot_p50_ms's, calls only a change beyond +38% differs"),
            "{why}"
        );
        let mut once = wide.clone();
        once.spread = Spread::WithinRun;
        let mut few = metric(Verdict::Inconclusive, 24, Some(40));
        (few.metric, few.spread) = ("ttft_p95_ms".into(), Spread::NoInterval);
        let why = cell(vec![once, few]).why_open(0.1);
        assert!(
            why.starts_with("tpot_p50_ms: measured once on a side and no run-to-run spread stated"),
            "{why}"
        );
        assert!(why.ends_with("ttft_p95_ms: too few samples"), "{why}");
    }
}
