//! The plan: a recipe's steps as a DAG, each with its preimage, its
//! fingerprint, and whether a run will execute it (and why).

pub mod campaign_view;
mod canonical;
pub mod changes;
mod dependencies;
pub mod extra_repeats;
mod fingerprint;
mod graph;
pub mod inputs;
mod planned;
mod preimage;
mod preimage_text;
mod probe_verdict;
mod provisional;
pub mod resolved_cell;
mod result_digest;
pub mod search;
#[cfg(test)]
mod search_error_tests;
mod status;
mod step_index;

use std::collections::HashMap;

use anvil_store::{Fingerprint, Store};

pub use canonical::{canonical, canonical_bytes};

pub use fingerprint::{
    FINGERPRINT_CONTEXT, JUDGING_RULES, MEASUREMENT_PROTOCOL, StoredPreimage, file_digest, fingerprint_of,
};
pub use planned::{Plan, PlannedNode, Status};
pub use preimage::{EngineMode, reads_results};
pub use preimage_text::PreimageText;

use crate::recipe::{Kind, Recipe, RecipeError};
use preimage::{Upstream, World, preimage_of};

impl Plan {
    /// Build the DAG and fingerprint every step. With a store, each step is
    /// marked cached or pending, with the reason it must run.
    pub fn build(recipe: Recipe, store: Option<&Store>, mode: EngineMode) -> Result<Plan, RecipeError> {
        let plan = Plan::build_once(recipe, store, mode)?;
        match store {
            // Upstream results the store already holds settle the steps that read them.
            Some(store) if plan.nodes.iter().any(|n| !n.waits_for.is_empty()) => plan.settle_results(store),
            _ => Ok(plan),
        }
    }

    /// The plan of the recipe as loaded, result placeholders and all.
    fn build_once(recipe: Recipe, store: Option<&Store>, mode: EngineMode) -> Result<Plan, RecipeError> {
        let mut problems = Vec::new();
        let deps = dependencies::dependencies(&recipe, &mut problems);
        let order = match graph::execution_order(&deps) {
            Ok(order) => order,
            Err(_) => {
                problems.extend(graph::cycle_problems(&deps, &recipe.steps));
                Vec::new()
            }
        };
        if !problems.is_empty() {
            return Err(RecipeError { recipe: recipe.path.display().to_string(), problems });
        }

        let mut world = World::default();
        // Several result-reading steps often read one result (every gate
        // over a cell): read and hash each stored result once.
        let mut digests: HashMap<Fingerprint, Option<String>> = HashMap::new();
        let mut nodes: Vec<Option<PlannedNode>> = vec![None; recipe.steps.len()];
        for &i in &order {
            let step = &recipe.steps[i];
            // A result a setting reads enters the fingerprint as its value, in the settings.
            let flow_only = provisional::flow_only_deps(step, &recipe, &deps[i]);
            let shaping: Vec<usize> = deps[i]
                .iter()
                .copied()
                // A finally step waits for everything, but only its `after` steps shape its fingerprint.
                .filter(|&d| step.kind != Kind::Finally || step.after.contains(&recipe.steps[d].name))
                .filter(|d| !flow_only.contains(d))
                .collect();
            let upstream: Vec<(String, Upstream)> = shaping
                .iter()
                .map(|&d| {
                    let dep = nodes[d].as_ref().expect("execution order visits dependencies first");
                    let role = if recipe.steps[d].kind == Kind::Server {
                        "server".to_string()
                    } else {
                        recipe.steps[d].qualified()
                    };
                    let link = if preimage::reads_results(step.kind) && dep.kind != Kind::Server {
                        Upstream::ResultDigest(store.and_then(|s| {
                            digests
                                .entry(dep.fingerprint)
                                .or_insert_with(|| result_digest::result_digest(s, &dep.fingerprint))
                                .clone()
                        }))
                    } else {
                        Upstream::Fingerprint(dep.fingerprint.to_string())
                    };
                    (role, link)
                })
                .collect();
            let (preimage, reads_unsettled) = preimage_of(step, &recipe, &upstream, mode, &mut world);
            let waits_for = provisional::waits_for(
                step,
                shaping.iter().map(|&d| nodes[d].as_ref().expect("visited first")),
            );
            let provisional = reads_unsettled || !waits_for.is_empty();
            let (preimage, fingerprint) = PreimageText::of(&preimage);
            nodes[i] = Some(PlannedNode {
                name: step.name.clone(),
                kind: step.kind,
                deps: deps[i].clone(),
                fingerprint,
                preimage,
                provisional,
                waits_for,
                status: Status::Pending,
                reason: String::new(),
            });
        }
        let nodes: Vec<PlannedNode> =
            nodes.into_iter().map(|n| n.expect("every step is in the order")).collect();
        let mut plan = Plan { recipe, mode, nodes, order };
        status::assign(&mut plan, store);
        Ok(plan)
    }

    /// The server node step `i` measures (a cell's or a check's `server`), if any.
    pub fn server_of(&self, i: usize) -> Option<usize> {
        let wanted = self.recipe.steps[i].spec.server()?;
        self.nodes[i]
            .deps
            .iter()
            .copied()
            .find(|&d| self.nodes[d].kind == Kind::Server && self.nodes[d].name == wanted)
    }

    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Recompute a result-reading step's fingerprint now that its inputs
    /// exist (called by the runner just before evaluating it).
    pub fn settle(&mut self, index: usize, store: &Store) -> Fingerprint {
        let step = &self.recipe.steps[index];
        let upstream: Vec<(String, Upstream)> = self.nodes[index]
            .deps
            .iter()
            .map(|&d| {
                let dep = &self.nodes[d];
                let role = if dep.kind == Kind::Server {
                    "server".to_string()
                } else {
                    self.recipe.steps[d].qualified()
                };
                let link = if dep.kind == Kind::Server {
                    Upstream::Fingerprint(dep.fingerprint.to_string())
                } else {
                    Upstream::ResultDigest(result_digest::result_digest(store, &dep.fingerprint))
                };
                (role, link)
            })
            .collect();
        let (preimage, provisional) =
            preimage_of(step, &self.recipe, &upstream, self.mode, &mut World::default());
        let node = &mut self.nodes[index];
        (node.preimage, node.fingerprint) = PreimageText::of(&preimage);
        node.provisional = provisional;
        node.fingerprint
    }
}

#[cfg(test)]
mod tests;
