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
    /// `reproduce`'s answer (absent from `compare`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reproduction: Option<Reproduction>,
}

/// What `reproduce` answers, and from what.
#[derive(Debug, Serialize)]
pub struct Reproduction {
    /// `reproduced`: every decision label reached again and every judged
    /// cell reproduced; `differs`: a label or a judged cell differs;
    /// `inconclusive`: anything else (a cell not shown either way, a
    /// headline cell not compared, nothing judged).
    pub answer: Verdict,
    /// Whether the decision labels were reached again (`None`: no decision).
    pub labels_reproduced: Option<bool>,
    /// The judged cells' names by their verdict.
    pub reproduced: Vec<String>,
    pub differs: Vec<String>,
    pub inconclusive: Vec<String>,
    /// Headline cells that were not compared.
    pub not_compared: Vec<String>,
}

impl Reproduction {
    /// The answer of `labels` (None: no decision) and the judged cells.
    pub fn of(labels: Option<bool>, judged: &MetricsJudged<'_>) -> Reproduction {
        let names = |v| judged.with(v).map(|c| c.name.clone()).collect::<Vec<_>>();
        let (reproduced, differs, inconclusive) =
            (names(Verdict::Reproduced), names(Verdict::Differs), names(Verdict::Inconclusive));
        let something_judged = labels.is_some() || !judged.cells.is_empty();
        let answer = if labels == Some(false) || !differs.is_empty() {
            Verdict::Differs
        } else if something_judged && inconclusive.is_empty() && judged.missing.is_empty() {
            Verdict::Reproduced
        } else {
            Verdict::Inconclusive
        };
        Reproduction {
            answer,
            labels_reproduced: labels,
            reproduced,
            differs,
            inconclusive,
            not_compared: judged.missing.clone(),
        }
    }
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
    /// between runs of one configuration must be stated to be judged.
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
    /// Whether the decision labels were reached again (`None`: no decision).
    pub fn labels_reproduced(&self) -> Option<bool> {
        self.labels.as_ref().map(|l| l.same)
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
/// metrics of some cells.
#[derive(Debug)]
pub struct MetricsJudged<'r> {
    /// The cells judged, in report order.
    pub cells: Vec<&'r CellReport>,
    /// Cells the scope names that were not compared (absent on a side).
    pub missing: Vec<String>,
}

impl<'r> MetricsJudged<'r> {
    /// The judged cells with `verdict`.
    pub fn with(&self, verdict: Verdict) -> impl Iterator<Item = &&'r CellReport> {
        self.cells.iter().filter(move |c| c.verdict == verdict)
    }

    /// `3 reproduced, 1 differs, 2 inconclusive`.
    pub fn counts_words(&self) -> String {
        let n = |v| self.with(v).count();
        format!(
            "{} reproduced, {} differs, {} inconclusive",
            n(Verdict::Reproduced),
            n(Verdict::Differs),
            n(Verdict::Inconclusive)
        )
    }

    /// `cell c: throughput_tok_s -70.1%, e2e_p50_ms +237.0%; cell d: …`,
    /// or `None` when no judged cell differs.
    pub fn differs_words(&self) -> Option<String> {
        let cells: Vec<String> = self
            .with(Verdict::Differs)
            .map(|cell| {
                let metrics: Vec<String> = cell
                    .differing()
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

    /// Each inconclusive cell and why, or `None` when none is.
    pub fn inconclusive_words(&self, threshold: f64) -> Option<String> {
        let cells: Vec<String> = self
            .with(Verdict::Inconclusive)
            .map(|c| format!("{} ({})", c.name, c.why_open(threshold)))
            .collect();
        (!cells.is_empty()).then(|| cells.join("; "))
    }
}

impl CellReport {
    /// Why an inconclusive cell is open, each cause with its metrics: no
    /// run-to-run spread to judge a once-measured side against, too few
    /// samples, or intervals too wide for the band (then the smallest
    /// change its narrowest interval would show half the time: the
    /// comparison's power, in words).
    pub fn why_open(&self, threshold: f64) -> String {
        let open: Vec<&Comparison> = self
            .metrics
            .iter()
            .filter(|m| m.n_a > 0 && m.n_b > 0 && m.verdict == Verdict::Inconclusive)
            .filter(|m| !self.by_definition.contains(&m.metric))
            .collect();
        let names =
            |rows: &[&&Comparison]| rows.iter().map(|m| m.metric.as_str()).collect::<Vec<_>>().join(", ");
        let unstated: Vec<&&Comparison> = open
            .iter()
            .filter(|m| m.spread == Spread::WithinRun || m.method.starts_with("none: one run a side"))
            .collect();
        let unsampled: Vec<&&Comparison> = open
            .iter()
            .filter(|m| m.spread == Spread::NoInterval && m.ci_low.is_none() && !unstated.contains(m))
            .collect();
        let mut causes = Vec::new();
        if !unstated.is_empty() {
            causes.push(format!(
                "{}: measured once on a side and no run-to-run spread stated (declare `run-to-run` on the cell, or give it `repeat 2` or more)",
                names(&unstated)
            ));
        }
        if !unsampled.is_empty() {
            causes.push(format!("{}: too few samples", names(&unsampled)));
        }
        let narrowest = open
            .iter()
            .filter(|m| matches!(m.spread, Spread::AcrossRepeats | Spread::Stated))
            .filter_map(|m| Some((m, m.ci_low.filter(|l| *l > 0.0)?.ln(), m.ci_high?.ln())))
            .map(|(m, low, high)| (m, (high - low) / 2.0))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((m, half)) = narrowest {
            let shown = ((1.0 + threshold).ln() + half).exp() - 1.0;
            causes.push(format!(
                "intervals too wide for ±{:.0}%: the narrowest, {}'s, calls only a change beyond +{:.0}% differs, half the time",
                threshold * 100.0,
                m.metric,
                shown * 100.0
            ));
        }
        if causes.is_empty() { "no metric judged on both sides".into() } else { causes.join("; ") }
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
