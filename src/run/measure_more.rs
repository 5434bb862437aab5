//! Measure more when undecided: a gate or screen with `confidence 0.95` and
//! `extra-repeats N` whose verdict is undecided measures the cells that
//! decide it again (a requirement's cells, a screen's leader and runner-up),
//! one round at a time, and judges again over each cell's pooled requests
//! (`anvil_evidence::pool`), until the verdict is decided or N rounds are
//! spent; then it says `undecided`.
//!
//! Each extra repeat is a stored cell of its own (`plan/extra_repeats.rs`),
//! committed as soon as it is measured, so the rounds are replayed over the
//! store: [`replay`] evaluates, and when a round needs an extra repeat that
//! is not stored it returns it to be measured, and starts over once it is.
//! A rerun, an interrupted gate or `anvil verify` replays the same rounds
//! over the same stored repeats and reaches the same verdict.
//!
//! Why repeated looks do not bias the verdict: each look judges over 95%
//! intervals, and the rule stops at the first look whose intervals decide.
//! Looking up to N + 1 times raises the chance that some look errs above 5%
//! (at most (N + 1) · 5% by the union bound), so the result states its rounds
//! and its budget: `measured_more.rounds` of `budget`. See docs/metrics.md.

use std::collections::{BTreeMap, BTreeSet};

use anvil_store::Store;
use serde_json::Value;

use super::context::Context;
use super::outcome::{Failure, Produced};
use super::{gate, measure, screen};
use crate::document::{Exec, GateExec, ScreenExec};
pub(crate) use crate::plan::extra_repeats::Artifacts;
use crate::plan::extra_repeats::{self, CellSite, ExtraRepeat};
use crate::results::{self, EvalStatus, GateResult, MeasuredMore, PooledCell, ScreenResult};

/// The step whose verdict may need more measurements.
#[derive(Clone, Copy)]
pub(crate) enum Judge<'a> {
    Gate(&'a GateExec),
    Screen(&'a ScreenExec),
}

impl<'a> Judge<'a> {
    pub(crate) fn of(exec: &'a Exec) -> Option<Judge<'a>> {
        match exec {
            Exec::Gate(gate) => Some(Judge::Gate(gate)),
            Exec::Screen(screen) => Some(Judge::Screen(screen)),
            _ => None,
        }
    }

    /// How many extra repeats it may measure while undecided.
    pub(crate) fn budget(self) -> u32 {
        let extra = match self {
            Judge::Gate(gate) => gate.confidence.map(|_| gate.extra_repeats),
            Judge::Screen(screen) => screen.confidence.map(|_| screen.extra_repeats),
        };
        extra.unwrap_or(0).min(u64::from(u32::MAX)) as u32
    }

    fn evaluate(self, inputs: &Value) -> Result<Produced, Failure> {
        match self {
            Judge::Gate(decl) => gate::evaluate_gate(decl, inputs),
            Judge::Screen(decl) => screen::run_screen(decl, inputs),
        }
    }

    /// The cells whose extra repeats could decide an undecided verdict
    /// (none when it is decided).
    fn deciding(self, result: &Value) -> BTreeSet<String> {
        match self {
            Judge::Gate(decl) => {
                let Ok(stored) = serde_json::from_value::<GateResult>(result.clone()) else {
                    return BTreeSet::new();
                };
                decl.require
                    .iter()
                    .zip(&stored.requirements)
                    .filter(|(_, r)| r.status == EvalStatus::Undecided)
                    .flat_map(|(e, _)| e.parsed.references())
                    .filter(|r| r.kind == "cell" && !r.is_wildcard())
                    .map(|r| r.name)
                    .collect()
            }
            Judge::Screen(_) => {
                let Ok(stored) = serde_json::from_value::<ScreenResult>(result.clone()) else {
                    return BTreeSet::new();
                };
                if stored.winner.is_some() || stored.confidence.is_none() {
                    return BTreeSet::new();
                }
                stored.ranking.iter().take(2).cloned().collect()
            }
        }
    }

    /// The result with what it measured more, and its terminal line.
    fn with_measured_more(self, mut produced: Produced, mut more: MeasuredMore) -> Produced {
        // A gate errs each look as the bound of the status it reached says
        // (its requirements may read several intervals), not 5%.
        if let Judge::Gate(_) = self
            && let Ok(gate) = serde_json::from_value::<GateResult>(produced.result.clone())
            && let Some(per_look) = gate.error_if(gate.status)
        {
            more = more.with_error_per_look(per_look);
        }
        let words = more.words();
        // Said where every reader of the verdict looks: a gate's detail
        // (the decision summary's gate rows), a screen's selection reason.
        let after = |text: &str| format!("{text}; after {words}");
        produced.result = match self {
            Judge::Gate(_) => serde_json::from_value::<GateResult>(produced.result.clone()).map(|r| {
                let detail = after(&r.detail);
                results::to_value(&GateResult { measured_more: Some(more), detail, ..r })
            }),
            Judge::Screen(_) => serde_json::from_value::<ScreenResult>(produced.result.clone()).map(|r| {
                let selection_reason = after(&r.selection_reason);
                results::to_value(&ScreenResult { measured_more: Some(more), selection_reason, ..r })
            }),
        }
        .unwrap_or(produced.result);
        produced.summary = after(&produced.summary);
        produced
    }
}

/// What to do about an extra repeat a round needs that is not stored.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Unstored {
    /// Return it to be measured (a run).
    Measure,
    /// Stop measuring and judge on what is pooled, saying why (a run whose
    /// cells run elsewhere, under a cluster executor).
    Stop(&'static str),
    /// Fail: the stored verdict pooled it (`anvil verify`).
    Fail,
}

/// Where the replay stands.
pub(crate) enum Replay {
    Done(Produced),
    /// Measure these (all of one round), then replay again.
    Measure(Vec<(CellSite, ExtraRepeat)>),
}

/// Replay the rounds of `judge` over the store: evaluate; while undecided
/// and under budget, pool one more extra repeat into each deciding cell.
pub(crate) fn replay(
    judge: Judge<'_>,
    budget: u32,
    sites: &[CellSite],
    inputs: &Value,
    store: &Store,
    read: &mut Artifacts,
    unstored: Unstored,
) -> Result<Replay, Failure> {
    let mut inputs = inputs.clone();
    let mut pooled: BTreeMap<String, (Vec<ExtraRepeat>, u64)> = BTreeMap::new();
    let mut round = 0u32;
    loop {
        let produced = judge.evaluate(&inputs)?;
        let deciding: Vec<&CellSite> = {
            let names = judge.deciding(&produced.result);
            sites.iter().filter(|s| names.contains(s.name())).collect()
        };
        let stop = if deciding.is_empty() {
            Some(if round == 0 { None } else { Some("decided") })
        } else if round == budget {
            Some(Some("budget spent: still undecided"))
        } else {
            None
        };
        if let Some(stopped) = stop {
            return Ok(Replay::Done(match stopped {
                None => produced,
                Some(stopped) => {
                    judge.with_measured_more(produced, measured_more(budget, round, &pooled, stopped))
                }
            }));
        }
        let next = round + 1;
        // Bring every deciding cell up to `next` extra repeats (a screen's
        // runner-up may have joined late).
        let mut missing = Vec::new();
        for site in &deciding {
            let have = pooled.get(site.name()).map_or(0, |(extras, _)| extras.len() as u32);
            for r in have + 1..=next {
                let extra = site.extra(r);
                if !store.contains(&extra.fingerprint) {
                    missing.push(((*site).clone(), extra));
                }
            }
        }
        if let Some((site, extra)) = missing.first() {
            match unstored {
                Unstored::Measure => return Ok(Replay::Measure(missing)),
                Unstored::Fail => {
                    return Err(Failure::new(format!(
                        "extra repeat {} of cell {} is not stored ({})",
                        extra.round,
                        site.name(),
                        extra.fingerprint
                    )));
                }
                Unstored::Stop(why) => {
                    let more = measured_more(budget, round, &pooled, why);
                    return Ok(Replay::Done(judge.with_measured_more(produced, more)));
                }
            }
        }
        round = next;
        for site in deciding {
            let extras: Vec<ExtraRepeat> = (1..=round).map(|r| site.extra(r)).collect();
            let value = pooled_cell(store, read, site, &extras, &inputs)?;
            let requests = value.get("requests").and_then(Value::as_u64).unwrap_or(0);
            if let Some(cells) = inputs.get_mut("cell").and_then(Value::as_object_mut) {
                cells.insert(site.name().to_string(), value);
            }
            pooled.insert(site.name().to_string(), (extras, requests));
        }
    }
}

fn measured_more(
    budget: u32,
    rounds: u32,
    pooled: &BTreeMap<String, (Vec<ExtraRepeat>, u64)>,
    stopped: &str,
) -> MeasuredMore {
    let cells = pooled
        .iter()
        .map(|(cell, (extras, requests))| PooledCell {
            cell: cell.clone(),
            extra_repeats: extras.iter().map(|e| e.fingerprint.to_string()).collect(),
            pooled_requests: *requests,
        })
        .collect();
    MeasuredMore::new(budget, rounds, cells, stopped)
}

/// The cell's result as its own artifact and `extras` pooled would give
/// it: every metric re-derived from all their request records.
fn pooled_cell(
    store: &Store,
    read: &mut Artifacts,
    site: &CellSite,
    extras: &[ExtraRepeat],
    inputs: &Value,
) -> Result<Value, Failure> {
    let base = inputs.get("cell").and_then(|c| c.get(site.name())).cloned().unwrap_or(Value::Null);
    extra_repeats::pooled_result(store, read, (site.name(), site.fingerprint), extras, base)
        .map_err(Failure::new)
}

/// A gate or screen in a run: replay, measuring what a round needs, on the
/// cells' own servers (started again if they were stopped).
pub(super) async fn judge_in_run(
    ctx: &Context,
    judge: Judge<'_>,
    budget: u32,
    sites: &[CellSite],
    inputs: &Value,
) -> Result<Produced, Failure> {
    let unstored = if ctx.cells_elsewhere {
        Unstored::Stop(
            "not measured here: under a cluster executor the cells run in jobs, and extra repeats are not dispatched to them yet",
        )
    } else {
        Unstored::Measure
    };
    let mut borrowed: BTreeSet<usize> = BTreeSet::new();
    let mut measured = 0usize;
    let mut read = Artifacts::new();
    let outcome = loop {
        match replay(judge, budget, sites, inputs, &ctx.store, &mut read, unstored) {
            Ok(Replay::Done(produced)) => break Ok(produced),
            Err(failure) => break Err(failure),
            Ok(Replay::Measure(needed)) => {
                let mut failed = None;
                for (site, extra) in needed {
                    if borrowed.insert(site.server) {
                        ctx.servers.borrow(site.server).await;
                    }
                    if let Err(failure) = measure_extra(ctx, &site, &extra).await {
                        failed = Some(failure);
                        break;
                    }
                    measured += 1;
                }
                if let Some(failure) = failed {
                    break Err(failure);
                }
            }
        }
    };
    for server in borrowed {
        ctx.servers.release(server).await;
    }
    outcome.map(|mut produced| {
        if measured > 0 {
            produced.summary = format!("{} ({measured} measured in this run)", produced.summary);
        }
        produced
    })
}

async fn measure_extra(ctx: &Context, site: &CellSite, extra: &ExtraRepeat) -> Result<(), Failure> {
    let cell = site.cell_for(extra).ok_or_else(|| Failure::new("an extra repeat is of a cell"))?;
    measure_extra_of(ctx, site.server, &cell, extra, &format!("cell {}", site.name())).await
}

/// Measure the next extra repeat of `cell` (a gate's or screen's
/// cell, a search's probe): the cell again, under the extra repeat's own
/// seed and fingerprint; `of` names it in the progress line.
pub(super) async fn measure_extra_of(
    ctx: &Context,
    server: usize,
    cell: &crate::document::CellExec,
    extra: &ExtraRepeat,
    of: &str,
) -> Result<(), Failure> {
    // Its artifact names the extra repeat (`x#extra-1`), not the cell it repeats.
    let mut cell = cell.clone();
    cell.cell.name = extra.name.clone();
    let inner = measure::Inner {
        name: &extra.name,
        cell: &cell,
        fingerprint: extra.fingerprint,
        preimage: &extra.preimage,
        what: format!("extra repeat {} of {of}", extra.round),
    };
    measure::measure_and_store(ctx, server, &inner).await
}

/// The extra repeats this run's gates and screens pooled, as run-record
/// nodes, so the record says which it measured and which it reused,
/// `anvil gc` keeps them and bundles carry them (as a search's probes).
pub(super) fn extra_nodes(summary: &super::summary::RunSummary, store: &Store) -> Vec<anvil_store::RunNode> {
    let mut nodes = Vec::new();
    for step in &summary.steps {
        if !matches!(step.kind, crate::step_kind::Kind::Gate | crate::step_kind::Kind::Screen) {
            continue;
        }
        let Ok(Some(result)) = store.read_result(&step.fingerprint) else { continue };
        let Some(more) = result.get("measured_more").cloned() else { continue };
        let Ok(more) = serde_json::from_value::<MeasuredMore>(more) else { continue };
        for cell in &more.cells {
            for (round, fingerprint) in (1..).zip(&cell.extra_repeats) {
                let Ok(fingerprint) = fingerprint.parse() else { continue };
                let name = crate::plan::extra_repeats::extra_name(&cell.cell, round);
                let detail = format!("extra repeat {round} of cell {} for {}", cell.cell, step.name);
                nodes.push(super::inner_cell_node::inner_cell_node(
                    store,
                    &summary.run_id,
                    name,
                    fingerprint,
                    detail,
                ));
            }
        }
    }
    nodes
}
