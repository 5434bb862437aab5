//! What comparing two sides found: per cell, and the verdicts that must agree.

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
