//! `anvil plan` (and `anvil run --dry-run`): the steps in execution order,
//! their fingerprints, and whether and why each will run.

use std::path::Path;

use std::io::Write;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::cli::RecipeArgs;
use crate::plan::{Plan, PlannedNode, Status};

use super::common::{Exit, load_plan, open_store};

pub async fn plan(store_root: &Path, args: &RecipeArgs, as_json: bool) -> Result<i32, Exit> {
    let store = open_store(store_root)?;
    let plan = load_plan(args, Some(&store))?;
    // One buffered writer, not a write per line; a closed pipe (`| head`) is not an error.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let _ = if as_json { write_json(&plan, &mut out) } else { write_table(&plan, &mut out) };
    let _ = out.flush();
    Ok(0)
}

/// The plan as JSON, written node by node: a 100,000-step plan as one
/// `Value` tree cost more memory than the plan itself.
fn write_json(plan: &Plan, out: &mut impl Write) -> std::io::Result<()> {
    #[derive(Serialize)]
    struct Document<'a> {
        recipe: &'a Path,
        campaign: &'a str,
        nodes: Nodes<'a>,
    }
    struct Nodes<'a>(&'a Plan);
    impl Serialize for Nodes<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let plan = self.0;
            serializer.collect_seq(plan.order.iter().map(|&i| Node { plan, index: i, node: &plan.nodes[i] }))
        }
    }
    struct Node<'a> {
        plan: &'a Plan,
        /// Its index in `plan.nodes`, which is its step's in `plan.recipe.steps`.
        index: usize,
        node: &'a PlannedNode,
    }
    impl Serialize for Node<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let node = self.node;
            let deps: Vec<&str> = node.deps.iter().map(|&d| self.plan.nodes[d].name.as_str()).collect();
            let mut map = serializer.serialize_map(None)?;
            map.serialize_entry("name", &node.name)?;
            map.serialize_entry("kind", node.kind.as_str())?;
            map.serialize_entry("fingerprint", &node.fingerprint.to_string())?;
            map.serialize_entry("provisional", &node.provisional)?;
            map.serialize_entry("status", node.status.as_str())?;
            map.serialize_entry("reason", &node.reason)?;
            map.serialize_entry("deps", &deps)?;
            // A cell as the load generator will run it: every default applied.
            // Its server is among its dependencies: no scan of every step
            // (`recipe.step` made a 30,000-step plan quadratic).
            let steps = &self.plan.recipe.steps;
            let step = &steps[self.index];
            if let crate::recipe::Spec::Cell(cell) = &step.spec {
                let server = node.deps.iter().map(|&d| &steps[d]).find(|d| d.name == cell.server);
                let seed = self.plan.recipe.campaign.seed;
                if let Some(resolved) = crate::plan::resolved_cell::resolve_step(step, server, seed) {
                    map.serialize_entry("resolved_cell", &resolved)?;
                }
            }
            map.end()
        }
    }
    let document =
        Document { recipe: &plan.recipe.path, campaign: &plan.recipe.campaign.name, nodes: Nodes(plan) };
    serde_json::to_writer_pretty(&mut *out, &document)?;
    writeln!(out)
}

fn write_table(plan: &Plan, out: &mut impl Write) -> std::io::Result<()> {
    let width = plan.nodes.iter().map(|n| n.name.len()).max().unwrap_or(4).max(4);
    writeln!(out, "{:<8} {:<width$}  {:<12}  {:<7}  reason", "kind", "step", "fingerprint", "status")?;
    for &i in &plan.order {
        let node = &plan.nodes[i];
        let fp = if node.provisional {
            format!("{}~", node.fingerprint.short())
        } else {
            node.fingerprint.short()
        };
        writeln!(
            out,
            "{:<8} {:<width$}  {:<12}  {:<7}  {}",
            node.kind.as_str(),
            node.name,
            fp,
            node.status.as_str(),
            node.reason
        )?;
    }
    let count = |status: Status| plan.nodes.iter().filter(|n| n.status == status).count();
    writeln!(
        out,
        "\n{} steps: {} pending, {} cached, {} idle (~ marks a fingerprint settled only once its inputs exist)",
        plan.nodes.len(),
        count(Status::Pending),
        count(Status::Cached),
        count(Status::Idle),
    )
}
