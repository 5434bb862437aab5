//! The answers a gate's arm comparisons read, put beside its inputs
//! (`{"answers": {cell: [line, …]}}`, apart from the steps' results so no
//! expression can name them): read from each compared cell's stored
//! `answers.jsonl`, by the run and by `anvil verify` alike.

use anvil_store::Store;
use serde_json::{Map, Value};

use crate::plan::Plan;
use crate::recipe::{Kind, Spec};
use crate::results::ANSWERS_FILE;

/// Where in a gate's inputs the compared cells' answers are.
pub const ANSWERS_INPUT: &str = "answers";

/// Adds to `inputs` the answers of every cell `index`'s arm comparisons
/// read (none for a step without any); a cell with no stored answers is
/// left out, and its comparison reports it missing.
pub fn attach(inputs: &mut Map<String, Value>, plan: &Plan, index: usize, store: &Store) {
    let Spec::Gate(gate) = &plan.recipe.steps[index].spec else { return };
    if gate.arms.is_empty() {
        return;
    }
    let mut answers = Map::new();
    for &d in &plan.nodes[index].deps {
        let dep = &plan.nodes[d];
        let compared = gate.arms.iter().any(|a| a.arm == dep.name || a.control == dep.name);
        if dep.kind != Kind::Cell || !compared {
            continue;
        }
        let Ok(Some(entry)) = store.read(&dep.fingerprint) else { continue };
        let Ok(bytes) = std::fs::read(entry.path_of(ANSWERS_FILE)) else { continue };
        // A file that does not read as answers is left out (reported missing);
        // `anvil verify` names what is wrong with it.
        if let Ok(lines) = super::answers::read_jsonl(&bytes) {
            answers.insert(dep.name.clone(), serde_json::to_value(lines).unwrap_or_default());
        }
    }
    inputs.insert(ANSWERS_INPUT.into(), Value::Object(answers));
}
