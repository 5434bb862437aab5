//! `search` steps: replay the walk over the stored probes, measure the next
//! probe the walk asks for exactly as a cell is measured (same executor, same
//! store entry layout, under the probe's own fingerprint), and repeat until a
//! stop rule ends it. A probe is committed as soon as it is measured, so an
//! interrupted search resumes where it stopped; a search whose probes are
//! all stored sends no request and never starts its server.

use super::context::Context;
use super::inner_cell_node::inner_cell_node;
use super::measure;
use super::outcome::{Failure, Produced};
use crate::number_text::format_value;
use crate::plan::extra_repeats::Artifacts;
use crate::plan::search::{
    Next, Probe, ProbeError, ProbeOutcome, ProbeSite, Replayed, Stop, highest_pass, stated_error, walk,
};
use crate::results::{self, ProbePoint, SEARCH_RESULT_SCHEMA, SearchCost, SearchResult, boundary_of};
use crate::step_kind::Kind;
use crate::words::SearchVariable;
use std::collections::HashMap;

pub(super) async fn run_search(
    ctx: &Context,
    site: &ProbeSite,
    server: Option<usize>,
) -> Result<Produced, Failure> {
    let mut judged: HashMap<u64, ProbeOutcome> = HashMap::new();
    let mut read = Artifacts::new();
    let mut measured = 0usize;
    loop {
        let mut needed = None;
        let walked = walk(&site.search, |value| {
            if let Some(known) = judged.get(&value.to_bits()) {
                return Ok(Some(known.clone()));
            }
            match site.replay(&ctx.store, value, &mut read)? {
                Replayed::Judged(outcome) => {
                    judged.insert(value.to_bits(), outcome.clone());
                    Ok(Some(outcome))
                }
                other => {
                    needed = Some(other);
                    Ok(None)
                }
            }
        })
        .map_err(|e: ProbeError| Failure::new(e))?;
        let server = server.ok_or_else(|| Failure::new("search has no server"));
        match (walked.next, needed) {
            (Next::Stop(stop), _) => return Ok(finish(site, walked.probes, stop, measured)),
            (Next::Probe(_), Some(Replayed::Probe(probe))) => measure(ctx, site, server?, &probe).await?,
            (Next::Probe(_), Some(Replayed::Extra(probe, extra))) => {
                let cell =
                    site.cell_of(&probe, extra.seed).ok_or_else(|| Failure::new("a probe is a cell"))?;
                super::measure_more::measure_extra_of(ctx, server?, &cell, &extra, probe.name()).await?
            }
            (Next::Probe(value), _) => measure(ctx, site, server?, &site.probe(value)).await?,
        }
        measured += 1;
    }
}

/// Measure one probe as a cell and store it under its fingerprint.
async fn measure(ctx: &Context, site: &ProbeSite, server: usize, probe: &Probe) -> Result<(), Failure> {
    let cell = site.cell_of(probe, ctx.seed).ok_or_else(|| Failure::new("a probe is a cell"))?;
    let inner = measure::Inner {
        name: probe.name(),
        cell: &cell,
        fingerprint: probe.fingerprint,
        preimage: &probe.preimage,
        what: format!("probe {}={}", site.search.variable, format_value(probe.value)),
    };
    measure::measure_and_store(ctx, server, &inner).await
}

/// The result from the judged probes.
fn finish(site: &ProbeSite, probes: Vec<ProbeOutcome>, stop: Stop, measured: usize) -> Produced {
    let search = &site.search;
    let max_value = highest_pass(&probes);
    let lowest_fail = probes.iter().filter(|p| !p.passed).map(|p| p.value).reduce(f64::min);
    let curve: Vec<ProbePoint> = probes.iter().map(probe_point).collect();
    let boundary = boundary_of(&curve);
    let detail = stop_sentence(site, stop, max_value, lowest_fail, probes.len());
    let stated = stated_error(search);
    let cost = SearchCost {
        probes: probes.len() as u64,
        extra_repeats: probes.iter().map(|p| p.extra_repeats.len() as u64).sum(),
        requests: probes.iter().map(|p| p.completed + p.failed).sum(),
    };
    let result = SearchResult {
        schema: SEARCH_RESULT_SCHEMA.into(),
        variable: search.variable.as_str().into(),
        method: search.method.as_str().into(),
        max_value,
        max_rate: max_value.filter(|_| search.variable == SearchVariable::Rate),
        max_concurrency: max_value.filter(|_| search.variable == SearchVariable::Concurrency),
        lowest_fail,
        boundary: boundary.into(),
        stopped: stop.as_str().into(),
        detail: detail.clone(),
        slo: search.slo.iter().map(|e| e.text.clone()).collect(),
        precision: search.precision.describe(),
        budget: search.budget,
        simulated: probes.iter().any(|p| p.simulated),
        curve,
        confidence: search.confidence,
        error_rate: stated.rate,
        error_basis: stated.basis,
        cost,
    };
    let summary = summary_line(&result, measured);
    Produced { result: results::to_value(&result), summary, ..Produced::default() }
}

fn probe_point(p: &ProbeOutcome) -> ProbePoint {
    ProbePoint {
        value: p.value,
        passed: p.passed,
        metrics: p.metrics.clone(),
        throughput_tok_s: p.throughput_tok_s,
        completed: p.completed,
        failed: p.failed,
        fingerprint: p.fingerprint.to_string(),
        slo: p.details.clone(),
        verdict: p.verdict.as_str().into(),
        extra_repeats: p.extra_repeats.iter().map(ToString::to_string).collect(),
    }
}

/// The terminal line: the answer (a bound with its error rate when judged
/// at a confidence), the boundary, the stop and what it cost.
fn summary_line(result: &SearchResult, measured: usize) -> String {
    let cost = &result.cost;
    let reused = (cost.probes + cost.extra_repeats).saturating_sub(measured as u64);
    format!(
        "{}, boundary {}, stopped: {}; {} ({measured} measured, {reused} stored){}",
        result.claim(),
        result.boundary,
        result.stopped,
        result.cost_words(),
        if result.simulated { " (simulated)" } else { "" }
    )
}

fn stop_sentence(
    site: &ProbeSite,
    stop: Stop,
    pass: Option<f64>,
    fail: Option<f64>,
    probes: usize,
) -> String {
    let search = &site.search;
    let var = search.variable;
    let show = |v: Option<f64>| v.map(format_value).unwrap_or_else(|| "none".into());
    match stop {
        Stop::Precision => format!(
            "the highest pass ({var}={}) and the lowest fail ({var}={}) are within the precision {}",
            show(pass),
            show(fail),
            search.precision.describe()
        ),
        Stop::Saturation => format!(
            "throughput grew by less than {}% when {var} doubled: the server is saturated",
            search.saturation_pct.unwrap_or_default()
        ),
        Stop::Errors => "a probe had failed requests (stop-on-errors)".into(),
        Stop::Budget => format!("the budget of {} probes is spent ({probes} probed)", search.budget),
        Stop::TopOfRange => {
            format!("the top of the range passed: the capacity is at least {var}={}", search.max)
        }
        // At a confidence an undecided probe does not pass either: that the
        // bottom did not pass claims no capacity, and not that it is lower.
        Stop::BottomOfRange if search.confidence.is_some() => format!(
            "the bottom of the range ({var}={}) did not pass at the stated confidence (failed, or undecided after its extra repeats): no capacity is claimed",
            format_value(search.min)
        ),
        Stop::BottomOfRange => {
            format!(
                "the bottom of the range failed: the capacity is below {var}={}",
                format_value(search.min)
            )
        }
        Stop::LadderDone => format!("every rung of the ladder was probed ({probes})"),
    }
}

/// The stored probes of this run's searches as run-record nodes, so the
/// record says which this run measured (`ran`) and which it reused
/// (`cached`), `anvil gc` keeps them and bundles carry them. A search that
/// failed or was interrupted lists the probes it stored before. (Under
/// Slurm a probe measured by a worker is `ran` in the worker's record.)
pub(super) fn probe_nodes(
    summary: &super::summary::RunSummary,
    store: &anvil_store::Store,
) -> Vec<anvil_store::RunNode> {
    let mut nodes = Vec::new();
    for (i, step) in summary.steps.iter().enumerate() {
        let Some(site) = summary.plan.probe_site(i).filter(|_| step.kind == Kind::Search) else { continue };
        let Ok(walked) = walk(&site.search, |value| site.stored(store, value).or(Ok::<_, ProbeError>(None)))
        else {
            continue;
        };
        for probe in walked.probes {
            let name = site.search.probe(probe.value).name;
            let detail = format!("probe of search {}", step.name);
            nodes.push(inner_cell_node(store, &summary.run_id, name.clone(), probe.fingerprint, detail));
            for (round, fingerprint) in (1..).zip(&probe.extra_repeats) {
                let extra = crate::plan::extra_repeats::extra_name(&name, round);
                let detail = format!("extra repeat {round} of probe {name} of search {}", step.name);
                nodes.push(inner_cell_node(store, &summary.run_id, extra, *fingerprint, detail));
            }
        }
    }
    nodes
}

/// Judge a search again from its stored probes alone, as `anvil verify`
/// does with a bundle: nothing is measured, so every probe the walk needs
/// must be stored.
pub(super) fn rejudge(
    plan: &crate::plan::Plan,
    index: usize,
    store: &anvil_store::Store,
) -> Result<Produced, Failure> {
    let site = plan.probe_site(index).ok_or_else(|| Failure::new("search has no probes planned"))?;
    let walked = walk(&site.search, |value| site.stored(store, value)).map_err(Failure::new)?;
    match walked.next {
        Next::Stop(stop) => Ok(finish(&site, walked.probes, stop, 0)),
        Next::Probe(value) => Err(Failure::new(format!(
            "probe {}={} (or an extra repeat it pooled) is not stored",
            site.search.variable,
            format_value(value)
        ))),
    }
}
