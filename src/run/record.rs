//! The run record: written when the run starts (so it is a gc root while
//! the run goes on) and rewritten when it ends, with how each step ended.

use anvil_store::{NodeStatus, RunNode, RunRecord, RunStatus};
use serde_json::{Map, Value, json};

use super::StepReport;
use crate::plan::{EngineMode, Plan};
use crate::recipe::Kind;

/// The record of a run that has just started: every step listed as planned,
/// so gc keeps what this run stores even if it is killed.
pub fn started(plan: &Plan, run_id: &str, started_at: &str) -> RunRecord {
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
        extra: json!({
            "campaign": plan.recipe.campaign.name,
            "preimages": preimages(plan),
            // How to run it again: a bundle replays these.
            "invocation": {"set": plan.recipe.overrides, "sim": plan.mode == EngineMode::SimulatedTwins},
            "environment": crate::environment::capture(),
        }),
    }
}

/// How each step ended, with the evidence of failures (a log tail).
pub fn finish(
    record: &mut RunRecord,
    plan: &Plan,
    steps: &[(StepReport, Option<String>)],
    status: RunStatus,
    finished_at: &str,
) {
    record.nodes = steps
        .iter()
        .map(|(step, evidence)| RunNode {
            name: step.name.clone(),
            kind: step.kind.to_string(),
            fingerprint: step.fingerprint,
            // Servers and finally steps are never stored: their statuses say so.
            status: match step.kind {
                Kind::Server => NodeStatus::Server,
                Kind::Finally => step.ending.finally_status(),
                _ => step.ending.record_status(),
            },
            started_at: None,
            duration_ms: Some(step.duration.as_millis() as u64),
            detail: Some(match evidence {
                Some(evidence) => format!("{}\n{evidence}", step.detail),
                None => step.detail.clone(),
            }),
        })
        .collect();
    record.finished_at = Some(finished_at.to_string());
    record.status = status;
    if let Value::Object(extra) = &mut record.extra {
        extra.insert("preimages".into(), preimages(plan)); // gates settled during the run
    }
}

fn preimages(plan: &Plan) -> Value {
    let map: Map<String, Value> =
        plan.nodes.iter().map(|n| (n.fingerprint.to_string(), n.preimage.clone())).collect();
    Value::Object(map)
}
