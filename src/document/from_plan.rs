//! Each planned step as a [`StepDocument`]: its preimage as the key, and
//! what an executor needs to run it without the recipe.

use std::collections::BTreeMap;

use anvil_loadgen::Balance;

use super::cell::CellExec;
use super::check::CheckExec;
use super::format::STEP_DOCUMENT_FORMAT;
use super::server::ServerExec;
use super::step_document::{Exec, StepDocument};
use super::task::TaskExec;
use crate::plan::resolved_cell::{resolve_paths, resolve_step};
use crate::plan::{EngineMode, Plan};
use crate::recipe::decls::{DEFAULT_MODEL, FinallyDecl};
use crate::recipe::{Kind, Spec, words};

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
        Spec::Server(server) => Exec::Server(Box::new(ServerExec {
            server: server.clone(),
            workdir: absolute(plan.recipe.dir()),
            simulated_twin: plan.mode == EngineMode::SimulatedTwins,
        })),
        Spec::Cell(cell) => {
            let server = plan.server_of(i);
            let server_decl = server.map(|s| &plan.recipe.steps[s]);
            let Some(mut spec) = resolve_step(step, server_decl, plan.recipe.campaign.seed) else {
                return declared(plan, i);
            };
            resolve_paths(&mut spec, &plan.recipe.key);
            Exec::Cell(Box::new(CellExec {
                cell: spec,
                balance: match cell.load.balance {
                    words::Balance::RoundRobin => Balance::RoundRobin,
                    words::Balance::LeastOutstanding => Balance::LeastOutstanding,
                },
                seed: plan.recipe.campaign.seed,
                server: server.map(|s| plan.nodes[s].fingerprint.to_string()).unwrap_or_default(),
                recipe: plan.recipe.key.clone(),
            }))
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
        Spec::Task(task) | Spec::Finally(FinallyDecl { task, .. }) => {
            Exec::Task(Box::new(TaskExec::of(task, &absolute(plan.recipe.dir()))))
        }
        _ => declared(plan, i),
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
