//! What comparing two sides found: per cell, and the verdicts that must agree.

use anvil_evidence::compare::Spread;
use anvil_evidence::{Comparison, Verdict};
use serde::Serialize;
use serde_json::Value;

/// Two sides compared.
#[derive(Debug, Serialize)]
pub struct Report {
    pub a: String,
    pub b: String,
    pub threshold: f64,
    pub cells: Vec<CellReport>,
    pub screens: Vec<Agreement>,
    pub gates: Vec<Agreement>,
    pub labels: Option<Agreement>,
}

#[derive(Debug, Serialize)]
pub struct CellReport {
    pub name: String,
    /// Whether the two sides measured the same thing (engine, model, serve
    /// flags, workload), from their artifacts: read before any verdict.
    pub workload: super::alike::WorkloadCheck,
    pub metrics: Vec<Comparison>,
    /// Where one side is imported from a peer tool: each metric whose
    /// definition differs between the sides (src/peers/definitions.rs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub definitions: Vec<crate::peers::definitions::Between>,
    /// Metrics whose difference may come from definitions: no verdict of
    /// theirs enters the cell's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_definition: Vec<String>,
    /// The cell's overall verdict: `differs` if any metric differs, else
    /// `reproduced` if every metric with samples on both sides reproduced,
    /// else `inconclusive` (metrics in `by_definition` left out).
    pub verdict: Verdict,
    /// For an inconclusive cell: the most samples per side that one of its
    /// inconclusive metrics would need to settle (requests, or repeats).
    pub settle_n: Option<usize>,
    /// What differs in configuration between the two sides (cell and its server).
    pub configuration: Vec<String>,
    /// Runs (`repeat`) each side measured: with one on a side, the spread
    /// between runs of one configuration is unknown to the verdict.
    pub runs: [u64; 2],
}

/// A verdict that must be the same on both sides.
#[derive(Debug, Serialize)]
pub struct Agreement {
    pub name: String,
    pub a: Value,
    pub b: Value,
    pub same: bool,
}

impl Report {
    /// Whether every decision label was reached again (true without a decision).
    pub fn labels_reproduced(&self) -> bool {
        self.labels.as_ref().is_none_or(|l| l.same)
    }
}

impl CellReport {
    /// The metrics that make this cell `differs`: judged `differs` with
    /// samples on both sides, and not left out for their definitions (the
    /// metrics [`CellReport::verdict`] is decided by).
    pub fn differing(&self) -> impl Iterator<Item = &Comparison> {
        self.metrics.iter().filter(|m| {
            m.verdict == Verdict::Differs && m.n_a > 0 && m.n_b > 0 && !self.by_definition.contains(&m.metric)
        })
    }
}

/// What `reproduce` judges besides the decision labels: the headline
/// metrics of some cells, and which of them differ.
#[derive(Debug)]
pub struct MetricsJudged<'r> {
    /// The cells judged, in report order.
    pub cells: Vec<&'r CellReport>,
    /// Cells the scope names that were not compared (absent on a side).
    pub missing: Vec<String>,
}

impl CellReport {
    /// The differing metrics whose verdict holds the spread between runs
    /// (judged across repeats) or is exact (canaries): a within-run
    /// interval's `differs` may be one run's luck, and does not fail a
    /// reproduction.
    pub fn failing_metrics(&self) -> impl Iterator<Item = &Comparison> {
        self.differing().filter(|m| m.spread != Spread::WithinRun)
    }

    /// Whether both sides measured the cell more than once. A cell's
    /// intervals hold the sampling error within its run; two runs of one
    /// configuration can differ by more than that (a server's state, the
    /// schedule's phase against the engine's steps: the quickstart's single
    /// 24-request cell moved its TTFT p50 by ±75% in 5 of 15 unchanged
    /// reproductions). Only repeated runs show that spread.
    pub fn repeated_on_both_sides(&self) -> bool {
        self.runs.iter().all(|&r| r >= 2)
    }
}

impl<'r> MetricsJudged<'r> {
    /// The judged cells that fail a reproduction: measured more than once
    /// on both sides, with a metric that differs by a verdict that holds
    /// the run-to-run spread ([`CellReport::failing_metrics`]).
    pub fn failing(&self) -> impl Iterator<Item = &&'r CellReport> {
        self.cells.iter().filter(|c| c.repeated_on_both_sides() && c.failing_metrics().next().is_some())
    }

    /// `differs` cells that do not fail: measured once on a side, or
    /// differing only by within-run intervals. Said, not failed on.
    pub fn differing_single_runs(&self) -> impl Iterator<Item = &&'r CellReport> {
        self.cells.iter().filter(|c| {
            c.verdict == Verdict::Differs
                && !(c.repeated_on_both_sides() && c.failing_metrics().next().is_some())
        })
    }

    /// `cell c: throughput_tok_s -70.1%, e2e_p50_ms +237.0%; cell d: …`,
    /// or `None` when no judged cell differs.
    pub fn failure_words(&self) -> Option<String> {
        let cells: Vec<String> = self
            .failing()
            .map(|cell| {
                let metrics: Vec<String> = cell
                    .failing_metrics()
                    .map(|m| match m.relative_delta {
                        Some(d) => format!("{} {:+.1}%", m.metric, d * 100.0),
                        None => m.metric.clone(),
                    })
                    .collect();
                format!("cell {}: {}", cell.name, metrics.join(", "))
            })
            .collect();
        (!cells.is_empty()).then(|| cells.join("; "))
    }
}

impl Report {
    /// The cells whose headline metrics decide a reproduction: those named
    /// in `headline` (a decision's headline cells), or every compared cell
    /// when it names none.
    pub fn metrics_judged(&self, headline: &[String]) -> MetricsJudged<'_> {
        if headline.is_empty() {
            return MetricsJudged { cells: self.cells.iter().collect(), missing: Vec::new() };
        }
        MetricsJudged {
            cells: self.cells.iter().filter(|c| headline.contains(&c.name)).collect(),
            missing: headline.iter().filter(|h| !self.cells.iter().any(|c| &c.name == *h)).cloned().collect(),
        }
    }
}
