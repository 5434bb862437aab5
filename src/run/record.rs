//! The run record: written when the run starts (so it is a gc root while
//! the run stores entries) and rewritten when it ends, with how each step
//! ended. A run that executes nothing writes it once, at the end.

use std::collections::HashSet;

use anvil_store::{Fingerprint, NodeStatus, RunNode, RunRecord, RunStatus, Store};
use serde_json::{Map, Value};

use super::summary::StepReport;
use crate::environment::Environment;
use crate::plan::{EngineMode, Plan, PlannedNode, Status};
use crate::run_extra::{Invocation, RunExtra};
use crate::step_kind::Kind;

/// The record of a run that has just started: every step listed as planned,
/// so gc keeps what this run stores even if it is killed. `environment`
/// is captured now unless given (see [`carried_environment`]).
pub fn started(plan: &Plan, run_id: &str, started_at: &str, environment: Option<Environment>) -> RunRecord {
    let unstored = |n: &PlannedNode| n.status != Status::Cached;
    RunRecord {
        run_id: run_id.to_string(),
        recipe: plan.recipe.key.clone(),
        recipe_path: plan.recipe.path.display().to_string(),
        started_at: started_at.to_string(),
        finished_at: None,
        status: RunStatus::Running,
        nodes: plan
            .nodes
            .iter()
            .map(|n| RunNode {
                name: n.name.clone(),
                kind: n.kind.to_string(),
                fingerprint: n.fingerprint,
                status: NodeStatus::Planned,
                started_at: None,
                duration_ms: None,
                detail: None,
            })
            .collect(),
        extra: serde_json::to_value(RunExtra {
            campaign: Some(plan.recipe.campaign.name.clone()),
            preimages: preimages(plan, unstored),
            // How to run it again: a bundle replays these.
            invocation: Invocation {
                set: plan.recipe.overrides.clone(),
                sim: plan.mode == EngineMode::SimulatedTwins,
            },
            environment: environment.unwrap_or_else(crate::environment::capture),
            ..RunExtra::default()
        })
        // A struct of strings, maps and JSON values always serialises.
        .unwrap_or_default(),
    }
}

/// How each step ended, with the evidence of failures (a log tail).
pub fn finish(
    record: &mut RunRecord,
    plan: &Plan,
    steps: &[StepReport],
    status: RunStatus,
    finished_at: &str,
) {
    record.nodes = steps
        .iter()
        .map(|step| RunNode {
            name: step.name.clone(),
            kind: step.kind.to_string(),
            fingerprint: step.fingerprint,
            // Servers and finally steps are never stored: their statuses say so.
            status: match step.kind {
                Kind::Server => NodeStatus::Server,
                Kind::Finally => step.outcome.ending.finally_status(),
                _ => step.outcome.ending.record_status(),
            },
            started_at: None,
            duration_ms: Some(step.outcome.duration.as_millis() as u64),
            detail: Some(match &step.outcome.evidence {
                Some(evidence) => format!("{}\n{evidence}", step.outcome.detail),
                None => step.outcome.detail.clone(),
            }),
        })
        .collect();
    record.finished_at = Some(finished_at.to_string());
    record.status = status;
    // Gates settled during the run; what the run left unstored.
    let stored: HashSet<Fingerprint> =
        record.nodes.iter().filter(|n| n.status.stored()).map(|n| n.fingerprint).collect();
    let mut extra = RunExtra::of(record);
    extra.preimages = preimages(plan, |n| !stored.contains(&n.fingerprint));
    extra.write_to(record);
}

/// Preimages of the steps the store does not hold (servers, finally steps,
/// failures, steps not reached): a stored step's preimage is in its entry,
/// and every rerun would otherwise write (and every later run read) them
/// all again.
fn preimages(plan: &Plan, unstored: impl Fn(&PlannedNode) -> bool) -> Map<String, Value> {
    plan.nodes
        .iter()
        .filter(|n| unstored(n))
        .map(|n| (n.fingerprint.to_string(), n.preimage.value()))
        .collect()
}

/// For a run that executes nothing: the environment of the last run of the
/// recipe, whose results it reuses (capturing it would mean running
/// `nvidia-smi`, and this run measured nothing). None without such a run.
pub fn carried_environment(store: &Store, plan: &Plan) -> Option<Environment> {
    let last = store.last_run_of(&plan.recipe.key).ok().flatten()?;
    let mut environment = RunExtra::of(&last).environment;
    // A record without one (an older anvil's) carries nothing: capture anew.
    if environment == Environment::default() {
        return None;
    }
    // Where it was captured: a chain of no-op runs names the run that measured.
    if environment.captured_in_run.is_none() {
        environment.captured_in_run = Some(last.run_id.clone());
    }
    Some(environment)
}
