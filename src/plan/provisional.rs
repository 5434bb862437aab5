//! Steps whose settings read upstream results (`{screen.X.winner_server}`,
//! `{search.capacity.max_rate}`): what each still waits for, and settling
//! them once the results are stored.
//!
//! Settling loads the recipe again with the results' values
//! (`recipe::reload_with_results`, from the text the plan was first loaded
//! from: an edit to the file during a run changes nothing) and plans it: a settled step's settings hold
//! the resolved value, so its fingerprint is the one the same step written by
//! hand would have. A new winner changes exactly the steps that read it (and
//! what depends on them); an unchanged winner changes nothing.

use anvil_store::Store;
use serde::Deserialize as _;
use serde_json::Value;

use super::planned::{Plan, PlannedNode};
use crate::recipe::{Decl, Kind, Recipe, RecipeError, ResultValues, result_refs};

/// The dependencies of `step` that only its result placeholders create: they
/// order the run, but their fingerprints do not enter the step's preimage
/// (the value read does, in the settings).
pub(super) fn flow_only_deps(step: &Decl, recipe: &Recipe, deps: &[usize]) -> Vec<usize> {
    let read: Vec<&str> = super::dependencies::result_input_steps(step).collect();
    deps.iter()
        .copied()
        .filter(|&d| {
            let name = recipe.steps[d].name.as_str();
            read.contains(&name) && !step.after.iter().any(|a| a == name) && step.spec.server() != Some(name)
        })
        .collect()
}

/// What `step` waits for: the steps of its own unfilled placeholders, and
/// what the steps that shape its fingerprint (its server, its `after`s) wait for.
pub(super) fn waits_for<'a>(step: &Decl, shaping: impl Iterator<Item = &'a PlannedNode>) -> Vec<String> {
    let mut waits: Vec<String> =
        step.unresolved.iter().filter_map(|n| result_refs::parse(n)).map(|r| r.qualified()).collect();
    // A gate reading a provisional cell waits for it as for any input.
    if !super::preimage::reads_results(step.kind) {
        for node in shaping {
            waits.extend(node.waits_for.iter().cloned());
        }
    }
    waits.sort();
    waits.dedup();
    waits
}

impl Plan {
    /// Settle every step whose upstream results are now stored: load the
    /// recipe again with their values and plan it, until nothing more settles.
    pub fn settle_results(self, store: &Store) -> Result<Plan, RecipeError> {
        let mut plan = self;
        loop {
            let unresolved =
                |plan: &Plan| plan.recipe.steps.iter().map(|s| s.unresolved.len()).sum::<usize>();
            let values = stored_values(&plan, store);
            let before = unresolved(&plan);
            let fills_something =
                plan.recipe.steps.iter().flat_map(|s| &s.unresolved).any(|n| values.contains_key(n));
            if !fills_something {
                return Ok(plan);
            }
            // From the text the plan was loaded from, never the files: a
            // recipe edited during a run must not change the run.
            let recipe = crate::recipe::reload_with_results(&plan.recipe, &values)?;
            same_steps(&plan.recipe, &recipe)?;
            let next = Plan::build_once(recipe, Some(store), plan.mode)?;
            if unresolved(&next) >= before {
                // A value that fills nothing (a number where a name belongs is
                // reported by the loader): stop rather than loop.
                return Ok(next);
            }
            plan = next;
        }
    }

    /// The steps of the plan still waiting for upstream results.
    pub fn waiting(&self) -> Vec<usize> {
        (0..self.nodes.len()).filter(|&i| !self.nodes[i].waits_for.is_empty()).collect()
    }
}

/// The values of every result placeholder of the recipe whose step is
/// settled and stored.
fn stored_values(plan: &Plan, store: &Store) -> ResultValues {
    let mut values = ResultValues::new();
    for name in plan.recipe.steps.iter().flat_map(|s| &s.result_inputs) {
        let Some(reference) = result_refs::parse(name) else { continue };
        let Some(index) = plan.index_of(reference.step) else { continue };
        let node = &plan.nodes[index];
        if node.provisional {
            continue; // its fingerprint, and so its stored result, is not settled yet
        }
        let Ok(Some(result)) = store.read_result(&node.fingerprint) else { continue };
        if let Some(value) = field_of(plan, index, &result, reference.field) {
            values.insert(name.clone(), value);
        }
    }
    values
}

/// A field a step's result offers to settings: stored in the result, or
/// derived from it (a screen's `winner_server` is its winning cell's server).
fn field_of(plan: &Plan, index: usize, result: &Value, field: &str) -> Option<Value> {
    if let Some(value) = result.get(field).filter(|v| !v.is_null()) {
        return Some(value.clone());
    }
    if plan.nodes[index].kind != Kind::Screen {
        return None;
    }
    let screen = crate::results::ScreenResult::deserialize(result).ok()?;
    let winner = screen.winner.as_deref()?;
    match field {
        "winner_server" => plan.recipe.step(winner)?.spec.server().map(|s| Value::String(s.to_string())),
        "winner_value" => screen.values.get(winner).copied().flatten().map(Value::from),
        _ => None,
    }
}

/// Settling fills values; it never adds, removes or renames a step (result
/// placeholders are refused in names and sweeps). A recipe edited during a
/// run could: say so rather than mix two recipes.
fn same_steps(before: &Recipe, after: &Recipe) -> Result<(), RecipeError> {
    let names = |r: &Recipe| r.steps.iter().map(|s| (s.kind, s.name.clone())).collect::<Vec<_>>();
    if names(before) == names(after) {
        return Ok(());
    }
    let first = after.steps.first().or(before.steps.first());
    Err(RecipeError {
        recipe: after.path.display().to_string(),
        problems: first
            .map(|s| s.problem("the recipe's steps changed while upstream results were being filled in"))
            .into_iter()
            .collect(),
    })
}
