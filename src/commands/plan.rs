//! `anvil plan` (and `anvil run --dry-run`): the steps in execution order,
//! their fingerprints, and whether and why each will run.

use std::path::Path;

use serde_json::json;

use crate::cli::RecipeArgs;
use crate::plan::Status;

use super::{Exit, load_plan, open_store};

pub async fn plan(store_root: &Path, args: &RecipeArgs, as_json: bool) -> Result<i32, Exit> {
    let store = open_store(store_root)?;
    let plan = load_plan(args, Some(&store))?;
    if as_json {
        let nodes: Vec<_> = plan
            .order
            .iter()
            .map(|&i| {
                let node = &plan.nodes[i];
                json!({
                    "name": node.name,
                    "kind": node.kind.as_str(),
                    "fingerprint": node.fingerprint.to_string(),
                    "provisional": node.provisional,
                    "status": node.status.as_str(),
                    "reason": node.reason,
                    "deps": node.deps.iter().map(|&d| plan.nodes[d].name.clone()).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"recipe": plan.recipe.path, "campaign": plan.recipe.campaign.name, "nodes": nodes})
            )
            .unwrap_or_default()
        );
        return Ok(0);
    }
    let width = plan.nodes.iter().map(|n| n.name.len()).max().unwrap_or(4).max(4);
    println!("{:<8} {:<width$}  {:<12}  {:<7}  reason", "kind", "step", "fingerprint", "status");
    for &i in &plan.order {
        let node = &plan.nodes[i];
        let fp = if node.provisional {
            format!("{}~", node.fingerprint.short())
        } else {
            node.fingerprint.short()
        };
        println!(
            "{:<8} {:<width$}  {:<12}  {:<7}  {}",
            node.kind.as_str(),
            node.name,
            fp,
            node.status.as_str(),
            node.reason
        );
    }
    let count = |status: Status| plan.nodes.iter().filter(|n| n.status == status).count();
    println!(
        "\n{} steps: {} pending, {} cached, {} idle (~ marks a fingerprint settled only once its inputs exist)",
        plan.nodes.len(),
        count(Status::Pending),
        count(Status::Cached),
        count(Status::Idle),
    );
    Ok(0)
}
