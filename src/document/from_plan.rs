//! Each planned step as a [`StepDocument`]: its preimage as the key, and
//! what an executor needs to run it without the recipe.

use std::collections::BTreeMap;

use super::check::CheckExec;
use super::decision::DecisionExec;
use super::format::STEP_DOCUMENT_FORMAT;
use super::gate::GateExec;
use super::screen::ScreenExec;
use super::server::ServerExec;
use super::step_document::{Exec, StepDocument};
use super::task::TaskExec;
use crate::plan::resolved_cell::cell_exec;
use crate::plan::{EngineMode, Plan};
use crate::recipe::decls::{DEFAULT_MODEL, FinallyDecl};
use crate::recipe::{Kind, Spec};

/// Step `i` of `plan` as a document. Its fingerprint is its node's: the
/// key is the preimage that fingerprint hashes.
pub fn document_of(plan: &Plan, i: usize) -> StepDocument {
    let node = &plan.nodes[i];
    StepDocument {
        format: STEP_DOCUMENT_FORMAT.to_string(),
        name: node.name.clone(),
        kind: node.kind.as_str().to_string(),
        fingerprint: node.fingerprint.to_string(),
        key: node.preimage.value(),
        exec: exec_of(plan, i),
    }
}

fn exec_of(plan: &Plan, i: usize) -> Exec {
    let step = &plan.recipe.steps[i];
    match &step.spec {
        Spec::Server(server) => Exec::Server(Box::new(ServerExec::of(
            server,
            absolute(plan.recipe.dir()),
            plan.mode == EngineMode::SimulatedTwins,
        ))),
        Spec::Cell(_) => {
            let server = plan.server_of(i);
            let server_fingerprint =
                server.map(|s| plan.nodes[s].fingerprint.to_string()).unwrap_or_default();
            let server = server.map(|s| &plan.recipe.steps[s]);
            match cell_exec(step, server, plan.recipe.campaign.seed, &plan.recipe.key, server_fingerprint) {
                Some(cell) => Exec::Cell(Box::new(cell)),
                None => declared(plan, i),
            }
        }
        Spec::Check(check) => {
            let server = plan.server_of(i);
            let model = match server.map(|s| &plan.recipe.steps[s].spec) {
                Some(Spec::Server(decl)) => decl.served_model(),
                _ => DEFAULT_MODEL,
            };
            let server = server.map(|s| plan.nodes[s].fingerprint.to_string()).unwrap_or_default();
            Exec::Check(Box::new(CheckExec::of(&step.name, check, model, plan.recipe.campaign.seed, server)))
        }
        Spec::Task(task) => Exec::Task(Box::new(TaskExec::of(task, &absolute(plan.recipe.dir())))),
        Spec::Finally(FinallyDecl { task, always }) => Exec::Task(Box::new(TaskExec {
            always: *always,
            ..TaskExec::of(task, &absolute(plan.recipe.dir()))
        })),
        spec => judgement_of(spec).unwrap_or_else(|| declared(plan, i)),
    }
}

/// A gate's, screen's or decision's body: what judging it needs.
pub(super) fn judgement_of(spec: &Spec) -> Option<Exec> {
    match spec {
        Spec::Gate(gate) => Some(Exec::Gate(Box::new(GateExec::of(gate)))),
        Spec::Screen(screen) => Some(Exec::Screen(Box::new(ScreenExec::of(screen)))),
        Spec::Decision(decision) => Some(Exec::Decision(Box::new(DecisionExec::of(decision)))),
        _ => None,
    }
}

/// A step run from its declaration: its text and what it reads.
fn declared(plan: &Plan, i: usize) -> Exec {
    let step = &plan.recipe.steps[i];
    let text = step.source.inner();
    let span = step.span;
    let declaration = text.get(span.offset()..span.offset() + span.len()).unwrap_or_default().to_string();
    let reads: BTreeMap<String, String> = plan.nodes[i]
        .deps
        .iter()
        .map(|&d| {
            let dep = &plan.nodes[d];
            let role = if dep.kind == Kind::Server { "server".to_string() } else { dep.name.clone() };
            (role, dep.fingerprint.to_string())
        })
        .collect();
    Exec::Declared { declaration, reads }
}

/// A folder as an absolute path, so a document means the same from any working directory.
fn absolute(dir: std::path::PathBuf) -> std::path::PathBuf {
    std::path::absolute(&dir).unwrap_or(dir)
}
