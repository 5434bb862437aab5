//! How one probe of a `search` fares against its SLO. Without
//! `confidence`, on its point values: passed or failed. With it, each SLO
//! expression is judged over the 95% intervals of the sampled metrics it
//! reads (`run/interval_verdict.rs`): passed when it holds over the whole
//! range, failed when it fails over it, undecided otherwise; the probe
//! passes when every expression passes, fails when one fails, and is
//! undecided otherwise. A probe stopped past capacity has failed whatever
//! its intervals say.

use anvil_expr::{Evaluation, PathSegment, Reference, Resolved, Resolver};
use anvil_store::Fingerprint;
use anvil_words::words;
use serde::Deserialize as _;
use serde_json::{Map, Value, json};

use crate::claims::error_bound::is_sampled;
use crate::document::expression::ExpressionText;
use crate::number_text::format_value;
use crate::recipe::Expression;
use crate::recipe::decls::SearchDecl;
use crate::results::CellResult;
use crate::run::interval_verdict::{self, IntervalVerdict};
use crate::words::SearchVariable;

words! {
    /// A probe's verdict against the SLO.
    pub enum ProbeVerdict {
        Passed = "passed",
        Failed = "failed",
        /// Its intervals allow either answer (it counts as not passing).
        Undecided = "undecided",
    }
}

/// Why a stored probe could not be judged.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Its result could not be read from the store.
    #[error("reading probe {probe}: {source}")]
    Read {
        probe: String,
        #[source]
        source: anvil_store::StoreError,
    },
    /// An SLO could not be evaluated on it (a metric it lacks, a type error).
    #[error("slo \"{slo}\" at {variable}={}: {detail}", format_value(*value))]
    Slo { slo: String, variable: SearchVariable, value: f64, detail: String },
    #[error("a stored probe does not read as a cell: {source}")]
    NotACell {
        #[source]
        source: serde_json::Error,
    },
}

/// How one probe fared against the SLO.
#[derive(Debug, Clone)]
pub struct ProbeOutcome {
    pub value: f64,
    pub fingerprint: Fingerprint,
    pub verdict: ProbeVerdict,
    /// `verdict == Passed`: what the walk and the answer read.
    pub passed: bool,
    /// Each SLO expression's detail (`probe.ttft_p99_ms = 412.3 <= 2000 → true`).
    pub details: Vec<String>,
    /// The metrics the SLO read, by name.
    pub metrics: Map<String, Value>,
    /// Output tokens per second over the probe.
    pub throughput_tok_s: Option<f64>,
    pub completed: u64,
    pub failed: u64,
    /// Measured on the simulated engine.
    pub simulated: bool,
    /// The extra repeats pooled into it (an undecided probe measured more).
    pub extra_repeats: Vec<Fingerprint>,
}

/// The probe as an SLO reads it: its cell result's fields and metrics, and
/// `failure_pct` / `goodput_pct` in percent.
pub fn probe_view(result: &Value) -> Map<String, Value> {
    let mut view = Map::new();
    if let Some(metrics) = result.get("metrics").and_then(Value::as_object) {
        view.extend(metrics.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    if let Some(top) = result.as_object() {
        view.extend(top.iter().filter(|(k, _)| *k != "metrics").map(|(k, v)| (k.clone(), v.clone())));
    }
    // The derived fields, from the result as its type reads it.
    if let Ok(cell) = CellResult::deserialize(result) {
        let attempted = cell.completed + cell.failed;
        if attempted > 0 {
            view.insert("failure_pct".into(), Value::from(100.0 * cell.failed as f64 / attempted as f64));
        }
        if let Some(rate) = cell.metric("goodput_rate").as_f64() {
            view.insert("goodput_pct".into(), Value::from(100.0 * rate));
        }
    }
    view
}

/// Resolves `probe.METRIC[.field…]` in one probe's view.
struct ProbeResolver<'a> {
    view: &'a Map<String, Value>,
}

impl Resolver for ProbeResolver<'_> {
    fn resolve(&self, reference: &Reference) -> Resolved {
        let Some(value) = self.view.get(&reference.name) else {
            return Resolved::Missing(format!("the probe has no metric `{}`", reference.name));
        };
        match reference.select(value) {
            Ok(found) => Resolved::Value(found.clone()),
            Err(why) => Resolved::Missing(why.to_string()),
        }
    }
}

/// The name a probe's view goes by when read as a cell.
const AS_CELL: &str = "probe";

/// `probe.METRIC…` as the same read of a cell (`cell.probe.METRIC…`), so a
/// probe's intervals are found exactly as a gate's are.
fn as_cell(reference: &Reference) -> Reference {
    let mut field = vec![PathSegment::Key(reference.name.clone())];
    field.extend(reference.field.iter().cloned());
    Reference { kind: "cell".into(), name: AS_CELL.into(), field, ..reference.clone() }
}

/// One SLO expression's verdict on the probe, and its detail.
fn judge_one(
    search: &SearchDecl,
    slo: &Expression,
    view: &Map<String, Value>,
    as_inputs: &Value,
) -> Result<(ProbeVerdict, String), String> {
    let resolver = ProbeResolver { view };
    let plain = |evaluation: Evaluation| match evaluation {
        Evaluation::Passed { detail } => Ok((ProbeVerdict::Passed, detail)),
        Evaluation::Rejected { detail } => Ok((ProbeVerdict::Failed, detail)),
        Evaluation::Missing { detail, .. } | Evaluation::Error { detail } => Err(detail),
    };
    if search.confidence.is_none() {
        return plain(slo.parsed.eval(&resolver));
    }
    let interval = |reference: &Reference| interval_verdict::interval_of(as_inputs, &as_cell(reference));
    let judged = interval_verdict::judge_with(&ExpressionText::from(slo), &resolver, &interval, &is_sampled);
    match judged.verdict {
        IntervalVerdict::Passed(detail) => Ok((ProbeVerdict::Passed, detail)),
        IntervalVerdict::Rejected(detail) => Ok((ProbeVerdict::Failed, detail)),
        IntervalVerdict::Undecided(detail) => Ok((ProbeVerdict::Undecided, detail)),
        IntervalVerdict::Plain(evaluation) => plain(evaluation),
    }
}

/// Judge a stored probe result (or one pooled with its extra repeats)
/// against the search's SLO.
pub fn judge(
    search: &SearchDecl,
    value: f64,
    fingerprint: Fingerprint,
    result: &Value,
) -> Result<ProbeOutcome, ProbeError> {
    let view = probe_view(result);
    let as_inputs = json!({ "cell": { AS_CELL: &view } });
    let mut verdict = ProbeVerdict::Passed;
    let mut details = Vec::new();
    let mut metrics = Map::new();
    for slo in &search.slo {
        let (one, detail) = judge_one(search, slo, &view, &as_inputs).map_err(|detail| ProbeError::Slo {
            slo: slo.text.clone(),
            variable: search.variable,
            value,
            detail,
        })?;
        verdict = worse(verdict, one);
        details.push(detail);
        for reference in slo.parsed.references() {
            if let Some(v) = view.get(&reference.name) {
                metrics.insert(reference.name.clone(), v.clone());
            }
        }
    }
    let cell = CellResult::deserialize(result).map_err(|source| ProbeError::NotACell { source })?;
    // A probe stopped past capacity has lost, whatever its completed
    // requests say (the ones it cancelled would have said more).
    if let Some(ending) = cell.stopped_early.as_ref().filter(|e| e.lost()) {
        verdict = ProbeVerdict::Failed;
        details.push(ending.detail.clone());
    }
    // Nor does a probe whose server never kept up pass: it sent everything
    // and saw it end, but at a rate the server could not carry.
    if let Some(drain) = &cell.over_saturated_at_end {
        verdict = ProbeVerdict::Failed;
        details.push(format!("over-saturated at the end: {}", drain.describe()));
    }
    Ok(ProbeOutcome {
        value,
        fingerprint,
        verdict,
        passed: verdict == ProbeVerdict::Passed,
        details,
        metrics,
        throughput_tok_s: cell.aggregate_tok_s,
        completed: cell.completed,
        failed: cell.failed,
        simulated: cell.simulated,
        extra_repeats: Vec::new(),
    })
}

/// Every expression must pass: one failure fails the probe, else one
/// undecided leaves it undecided.
fn worse(a: ProbeVerdict, b: ProbeVerdict) -> ProbeVerdict {
    use ProbeVerdict::*;
    match (a, b) {
        (Failed, _) | (_, Failed) => Failed,
        (Undecided, _) | (_, Undecided) => Undecided,
        _ => Passed,
    }
}
