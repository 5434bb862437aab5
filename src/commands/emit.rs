//! `anvil plan --emit DIR`: every step of the plan as a step document,
//! `DIR/<fingerprint>.json`, and `DIR/plan.json` naming them and their
//! edges, as `nix derivation show` shows what a build would realise.

use std::path::Path;

use serde::Serialize;

use crate::cli::RecipeArgs;
use crate::document::{StepDocument, document_of};

use super::common::{Exit, failed, load_plan, open_store};

/// `plan.json`: the steps in execution order, each by name and fingerprint.
#[derive(Serialize)]
struct EmittedPlan<'a> {
    format: &'static str,
    recipe: &'a Path,
    campaign: &'a str,
    steps: Vec<EmittedStep<'a>>,
}

#[derive(Serialize)]
struct EmittedStep<'a> {
    name: &'a str,
    kind: &'static str,
    fingerprint: String,
    /// The file its document is in, relative to `plan.json`.
    document: String,
    /// Fingerprints of the steps it comes after.
    needs: Vec<String>,
    /// It reads results not yet produced: its key holds placeholders and
    /// is settled when they exist.
    deferred: bool,
}

pub fn emit(store_root: &Path, args: &RecipeArgs, dir: &Path) -> Result<i32, Exit> {
    let store = open_store(store_root)?;
    let plan = load_plan(args, Some(&store))?;
    std::fs::create_dir_all(dir).map_err(|e| failed(format!("cannot create {}: {e}", dir.display())))?;
    let mut steps = Vec::with_capacity(plan.order.len());
    for &i in &plan.order {
        let node = &plan.nodes[i];
        let fingerprint = node.fingerprint.to_string();
        let file = StepDocument::file_name(&fingerprint);
        write_json(&dir.join(&file), &document_of(&plan, i))?;
        steps.push(EmittedStep {
            name: &node.name,
            kind: node.kind.as_str(),
            fingerprint,
            document: file,
            needs: node.deps.iter().map(|&d| plan.nodes[d].fingerprint.to_string()).collect(),
            deferred: node.provisional,
        });
    }
    let count = steps.len();
    let emitted = EmittedPlan {
        format: "anvil-plan/v1",
        recipe: &plan.recipe.path,
        campaign: &plan.recipe.campaign.name,
        steps,
    };
    write_json(&dir.join("plan.json"), &emitted)?;
    println!("wrote {count} step documents and plan.json to {}", dir.display());
    Ok(0)
}

fn write_json(path: &Path, value: &impl Serialize) -> Result<(), Exit> {
    let text = serde_json::to_string_pretty(value).map_err(|e| failed(format!("{}: {e}", path.display())))?;
    std::fs::write(path, text + "\n").map_err(|e| failed(format!("cannot write {}: {e}", path.display())))
}
